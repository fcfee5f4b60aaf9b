#!/usr/bin/env bash
# Install what the browser stages need from Debian (chromium, poppler-utils)
# and nothing else: .ci/run starts it in the background at the beginning, so
# that a fresh machine's minutes of apt overlap the test suite (at the lowest
# CPU and disk priority, beside it) and the build.
# browser_test.sh and build_pdf.sh install the same on demand when run alone.
#
#   bash scripts/install_browser.sh
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
source "$REPO_ROOT/scripts/_browser.sh"
_need_chromium
_need_poppler
_log "chromium and poppler-utils are installed"
