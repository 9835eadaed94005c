#!/usr/bin/env bash
# The main job on the default CPU device: random Qwen-Image AdaLN inputs, forward and
# backward through the CPU reference, outputs written as safetensors under build/example/.
set -euo pipefail
cd "$(dirname "$0")/.."
rlk=build/bin/rlk
key=qwenimage_adaln_mod_projection
mkdir -p build/example
$rlk make-inputs $key --dtype bf16 --batch 4 --seed 0 --out build/example/forward_inputs.safetensors
$rlk run $key --device cpu --dtype bf16 --inputs build/example/forward_inputs.safetensors \
    --out build/example/forward_outputs.safetensors
$rlk make-inputs $key --dtype bf16 --batch 4 --seed 0 --backward --out build/example/backward_inputs.safetensors
$rlk run $key --device cpu --dtype bf16 --backward --inputs build/example/backward_inputs.safetensors \
    --out build/example/backward_outputs.safetensors
echo "outputs: build/example/forward_outputs.safetensors build/example/backward_outputs.safetensors"
