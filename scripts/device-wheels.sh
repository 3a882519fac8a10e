#!/usr/bin/env bash
# Pack the 37 wheels that run vime on the lent GPU machine (../shared/device/ship-vllm.md, last
# section) into pieces of 55 MiB (the checkout travels with each, under 64 MiB in all) under .whl-vllm/parts (ignored by git), and print each call.
# vLLM 0.26.0 because it is the newest whose wheel pins the device's torch 2.11.0.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl-vllm/' .git/info/exclude 2>/dev/null || echo '/.whl-vllm/' >> .git/info/exclude
P="--no-deps --only-binary=:all: --python-version 3.12 --implementation cp"
for n in 28 27 17 31 24 26 5; do P="$P --platform manylinux_2_${n}_x86_64"; done
P="$P --platform manylinux2014_x86_64 --platform manylinux1_x86_64"
python3 -m pip download -q $P -d .whl-vllm vllm==0.26.0
python3 -m pip download -q $P -d .whl-vllm/deps \
  fastapi==0.136.3 starlette==1.10.0 uvicorn==0.54.0 \
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
  openai==3.57.0 httpx2==2.16.2 httpcore2==2.16.2 truststore==0.10.5 sniffio==1.3.1 jiter==0.19.0 \
  openai-harmony==0.0.8 cbor2==6.3.0 pyzmq==27.3.0 msgspec==0.23.0 pybase64==1.5.1 cachetools==8.0.2 \
  llguidance==1.7.6 xgrammar==0.2.7 apache-tvm-ffi==0.1.10 watchfiles==1.3.0 partial-json-parser==0.2.1.1.post7 \
  model-hosting-container-standards==0.1.16 jmespath==1.1.0 prometheus-fastapi-instrumentator==8.1.0 \
  setproctitle==1.3.8 \
  ray==2.60.0 vllm-router==0.1.17 megatron-core==0.16.1 \
  jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 orjson==3.13.0
ls .whl-vllm/deps/*.whl | wc -l
bash ../shared/device/split-wheels.sh -S -o .whl-vllm -n vime37 -s 55 \
  .whl-vllm/vllm-0.26.0-*.whl .whl-vllm/deps/*.whl
