#!/bin/bash
# Builds plugin variants of the wgmma grad_weight kernel (dev macros RLK_GG_*) into build-s17/v_NAME.so:
# the bf16_stream object recompiled with the macros, the plugin relinked with the other objects unchanged.
set -e
cd /work/main/build
compile=$(sed -n 1p /tmp/cmds.txt)
link=$(sed -n 2p /tmp/cmds.txt | sed 's/^: && //; s/ && :$//')
obj=backends/cuda/CMakeFiles/rlk_cuda_kernels.dir/model_specific/qwenimage/adaln_mod_projection_bf16_stream.cu.o
cp $obj /tmp/bf16_stream.default.o
while read name flags; do
  [ -z "$name" ] && continue
  eval "$compile $flags"
  eval "${link/-o lib\/librlk_backend_cuda.so/-o /work/main/build-s17/v_$name.so}"
  echo "built v_$name ($flags)"
done <<'LIST'
vec
nowg -DRLK_GG_DISABLE=1
nostore -DRLK_GG_NO_STORES=1
LIST
cp /tmp/bf16_stream.default.o $obj
