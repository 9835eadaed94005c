#!/bin/bash
# dev call 1 of the tenth session: swapped 64-row forward / d_temb tiles: kernel_check (bytes + timings), test_kernel_paths, SASS
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
ln -sfn build-slim build-cuda
configured=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-cuda/CMakeCache.txt)
if [ "$configured" != "$PWD" ] && [ ! -e "$configured" ]; then mkdir -p "$(dirname "$configured")" && ln -s "$PWD" "$configured"; fi
mkdir -p $OUT/t
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/t/gpu.txt 2>&1
SECONDS=0
lib=$(ls build-cuda/lib*/librlk_backend_cuda*.so build-cuda/*/librlk_backend_cuda*.so 2>/dev/null | head -1)
echo "lib=$lib"
cuobjdump -sass "$lib" 2>/dev/null | awk '/Function :/{name=$3} /HGMMA/{c[name]++} END{for(k in c) print c[k], k}' | c++filt > $OUT/t/sass_hgmma.txt 2>&1
grep -o '^[0-9]* \|C<64>, cute::C<1[49][42]>, cute::C<64>\|C<128>, cute::C<144>, cute::C<64>' $OUT/t/sass_hgmma.txt | paste -s -d' '
timeout 200 build-cuda/bin/test_kernel_paths > $OUT/t/test_kernel_paths.log 2>&1; echo "tests rc=$? ${SECONDS}s"
tail -4 $OUT/t/test_kernel_paths.log
timeout 300 build-cuda/bin/rlk_kernel_check --bf16-only --compare-gemms > $OUT/t/kernel_check-bf16.log 2>&1; echo "kc rc=$? ${SECONDS}s"
grep -E "FAIL|failures" $OUT/t/kernel_check-bf16.log | head
grep -A18 "bf16 per GEMM" $OUT/t/kernel_check-bf16.log
tar cf $OUT/dev1.tar -C $OUT t
