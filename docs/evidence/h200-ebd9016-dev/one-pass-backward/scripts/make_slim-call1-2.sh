#!/bin/bash
# build-s19: the build tree without objects, ninja state and local test outputs, to carry
set -e
cd /work/main
rm -rf build-s19 && cp -a build build-s19
find build-s19 -name '*.o' -delete -o -name '*.a' -delete
rm -rf build-s19/.ninja_* build-s19/backends/cuda/stream_timeline build-s19/tests/conform/out
for f in build-s19/bin/rlk_fp32_* build-s19/bin/rlk_int8_gemm_rate build-s19/bin/rlk_gradw_check build-s19/bin/rlk_pipeline_check build-s19/bin/rlk_write_check build-s19/bin/rlk_stream_check build-s19/bin/rlk_tf32_chain_check build-s19/bin/rlk_stream_timeline build-s19/bin/test_strict_math_probe_*; do rm -f "$f"; done
find build-s19 -path '*CMakeFiles*' -type f ! -name '*.cmake' -delete
cp build-dev/base-ebd9016.so build-s19/base.so
du -sh build-s19
