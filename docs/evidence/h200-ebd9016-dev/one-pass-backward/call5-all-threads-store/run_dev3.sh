#!/bin/bash
# nineteenth session, development call 5: the one-pass backward with every thread storing grad_weight's
# staging tiles (v5; the test binary is v5's) against v0 (three store warps) and ebd9016 (base).
source build-dev/s19/setup.sh
mkdir -p $OUT/ev
timeout 120 build/bin/test_kernel_paths --gtest_filter='*Bf16OnePass*' > $OUT/ev/test_kernel_paths-v5.log 2>&1
echo "== test_kernel_paths (v5) rc $? after ${SECONDS}s"; grep -E "PASSED|FAILED|OK \]|SKIP|differs" $OUT/ev/test_kernel_paths-v5.log | head
cp build/lib/librlk_backend_cuda.so build/v5.so
key=qwenimage_adaln_mod_projection
for r in 1 2 3; do
  for v in base v0 v5; do
    if [ -e build/$v.so ]; then cp build/$v.so build/lib/librlk_backend_cuda.so; else cp build-dev/s19/v/$v.so build/lib/librlk_backend_cuda.so; fi
    timeout 60 build/bin/rlk bench $key --device cuda:0 --dtype bf16 --batch 1,3,8 --warmup 5 --repeats 40 --json $OUT/ev/ab-$v-$r.json > $OUT/ev/ab-$v-$r.log 2>&1
    echo "$v r$r rc $? $SECONDS s"
  done
done
python3 build-dev/s19/summary_multi.py $OUT/ev base v0 v5 | tee $OUT/ev/summary.txt
cp build-dev/s19/run_dev3.sh $OUT/ev/
cd $OUT && tar cf ev.tar ev && rm -rf ev && ls -la ev.tar
