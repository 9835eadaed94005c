#!/bin/bash
# fourteenth session: the first-large-batch-call graph test (both dtypes, one process each) and
# dev/fp32_simt_check with the forward computed directly (s transposed, W as a column-major B, bias as C)
source build-dev/s14/setup_device.sh
rm -rf build-cuda && ln -s build-slim build-cuda
ctest --test-dir build -R 'TheVeryFirst' --output-on-failure > $OUT/ctest-first-call.log 2>&1
echo "ctest rc $? $SECONDS s"; tail -6 $OUT/ctest-first-call.log
build-dev/s14/fp32_simt_check > $OUT/fp32_simt_check-direct.log 2>&1
echo "simt check rc $? $SECONDS s"; cat $OUT/fp32_simt_check-direct.log
