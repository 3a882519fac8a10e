#!/usr/bin/env bash
# Command 2: set everything up (reusing .venv when it is current), lint and check formatting, then run
# the whole test suite, slow end-to-end tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
exec .venv/bin/python -m pytest "$@"
