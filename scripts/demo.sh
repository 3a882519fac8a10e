#!/usr/bin/env bash
# Command 1: set everything up, then run vime-sync on the embedded demo (no arguments needed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/vime-sync demo "$@"
