#!/usr/bin/env bash
# Re-execute notebooks in place in a fresh kernel of the project's venv, the way
# the book build and nbval run them, and store their outputs.
#
#   bash scripts/execute.sh book/pricing.ipynb [book/other.ipynb ...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
[ $# -gt 0 ] || { echo "usage: bash scripts/execute.sh NOTEBOOK.ipynb..." >&2; exit 2; }
python - "$@" <<'PY'
import sys
from pathlib import Path

import nbclient
import nbformat

for name in sys.argv[1:]:
    path = Path(name)
    nb = nbformat.read(path, as_version=4)
    # No timings and no widget state: a re-run must not change the file, and
    # the state (a widget's pictures, hundreds of kB) is read by nothing; the
    # text of each widget output says how to bring it to life.
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=600, record_timing=False,
                            store_widget_state=False,
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)
    print(f"executed {path}")
PY
