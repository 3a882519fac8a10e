#!/usr/bin/env bash
# Command 2: set everything up (reusing .venv when it is current), lint, then run the whole test suite,
# slow end-to-end tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check .
exec .venv/bin/python -m pytest "$@"
