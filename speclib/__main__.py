"""``python -m speclib``: the same command line as the ``speclib`` script."""
from .cli import main

raise SystemExit(main())
