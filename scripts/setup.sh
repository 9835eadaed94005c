#!/usr/bin/env bash
# Installs the Debian packages rl-kernel builds with, then configures and builds it in build/.
# Usage: scripts/setup.sh            (CUDA plugin included; needs nvcc on PATH or in /usr/local/cuda)
#        RLK_CMAKE_ARGS="-DRLK_BUILD_CUDA=OFF" scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config libyaml-cpp-dev libboost-dev libgtest-dev
          libdlpack-dev nlohmann-json3-dev libcli11-dev libssl-dev libamdhip64-dev)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  as_root=""
  [ "$(id -u)" -ne 0 ] && as_root="sudo"
  $as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

# CUTLASS/CuTe headers for the sm_90a GEMMs of the CUDA plugin: the pinned nvidia-cutlass wheel
# from PyPI, unpacked into .deps/ (pip download installs nothing into any Python environment).
cutlass_version=4.2.0.0
cutlass_dir=.deps/nvidia-cutlass-$cutlass_version
if command -v nvcc >/dev/null 2>&1 && [ ! -f "$cutlass_dir/cutlass_library/source/include/cutlass/cutlass.h" ]; then
  if ! python3 -m pip --version >/dev/null 2>&1; then
    as_root=""
    [ "$(id -u)" -ne 0 ] && as_root="sudo"
    DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq --no-install-recommends python3-pip
  fi
  rm -rf "$cutlass_dir.download"
  python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$cutlass_dir.download" \
    "nvidia-cutlass==$cutlass_version"
  python3 -m zipfile -e "$cutlass_dir.download"/nvidia_cutlass-"$cutlass_version"-*.whl "$cutlass_dir"
  rm -rf "$cutlass_dir.download"
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release ${RLK_CMAKE_ARGS:-}
cmake --build build -j "$(nproc)"
