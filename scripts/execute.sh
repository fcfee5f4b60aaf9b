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
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=600, record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.write(nb, path)
    print(f"executed {path}")
PY
