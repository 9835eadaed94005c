#!/usr/bin/env bash
# Prints the path of Nsight Compute's ncu on the device machine (on PATH, or where the CUDA toolkit
# or an Nsight Compute install puts it); fails when there is none. For the device calls' scripts:
#   ncu=$(scripts/ncu_path.sh) || exit 1
set -euo pipefail
found=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1 || true)
if [ -z "$found" ]; then
  echo "ncu_path.sh: no ncu on PATH, in /opt/nvidia/nsight-compute/*/ or in /usr/local/cuda/bin/" >&2
  exit 1
fi
echo "$found"
