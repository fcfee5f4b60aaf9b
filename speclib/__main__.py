"""``python -m speclib``: the ``speclib`` command."""
from .tools.cli import main

raise SystemExit(main())
