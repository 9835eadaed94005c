#!/bin/bash
# seventeenth session, development call 2: variants of the wgmma grad_weight kernel (variants.sh) against
# HEAD's plugin (base), rlk bench bf16 alternated in three rounds; nsys kernel times at B = 48 if present.
source build-dev/s17/setup.sh
mkdir -p $OUT/ev
key=qwenimage_adaln_mod_projection
cp build/lib/librlk_backend_cuda.so build/new.so
B=24,33,40,48,64
for r in 1 2 3; do
  for v in base v_s4b2 v_s8b2 v_s8b3 v_s4b3 v_nostore; do
    cp build/$v.so build/lib/librlk_backend_cuda.so
    timeout 60 build/bin/rlk bench $key --device cuda:0 --dtype bf16 --batch $B --warmup 5 --repeats 30 --json $OUT/ev/ab-$v-$r.json > $OUT/ev/ab-$v-$r.log 2>&1 || echo "$v r$r failed"
  done
  echo "round $r $SECONDS s"
done
python3 build-dev/s17/summary_multi.py $OUT/ev | tee $OUT/ev/summary.txt
if command -v nsys > /dev/null; then
  for v in base v_s4b2 v_s8b2; do
    cp build/$v.so build/lib/librlk_backend_cuda.so
    timeout 90 nsys profile -o $OUT/ev/nsys-$v --force-overwrite true build/bin/rlk bench $key --device cuda:0 --dtype bf16 --batch 48 --warmup 3 --repeats 10 > /dev/null 2>&1
    nsys stats -r cuda_gpu_kern_sum -f csv $OUT/ev/nsys-$v.nsys-rep > $OUT/ev/nsys-$v.csv 2>/dev/null
    rm -f $OUT/ev/nsys-$v.nsys-rep $OUT/ev/nsys-$v.sqlite
    echo "== nsys $v"; python3 -c "
import csv,sys
r=list(csv.DictReader(open('$OUT/ev/nsys-$v.csv')))
for x in r[:14]: print(x.get('Instances'), x.get('Med (ns)'), x.get('Name','')[:110])
"
  done
else echo "no nsys"; fi
cp build/new.so build/lib/librlk_backend_cuda.so
cp build-dev/s17/*.sh build-dev/s17/*.py $OUT/ev/
cd $OUT && tar cf ev.tar ev && rm -rf ev && ls -la ev.tar
