#!/bin/bash
# twentieth session, development call 4: ncu of the tf32x3 forward kernel (experiment.patch, call 3's
# state) at B = 1 (the 8-row tiles) and B = 2048 (128 x 128 tiles): where its time goes.
source devrun/setup.sh
mkdir -p $OUT/ev
key=qwenimage_adaln_mod_projection
NCU=/usr/local/cuda/bin/ncu
for B in 1 2048; do
  timeout 200 $NCU --clock-control none --kernel-name forward_kernel --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section InstructionStats --section Occupancy --section LaunchStats \
    build/bin/rlk bench $key --device cuda:0 --dtype fp32 --batch $B --warmup 1 --repeats 5 > $OUT/ev/ncu-B$B.txt 2>&1
  echo "== B=$B rc $? $SECONDS s"
  grep -E "Duration|Throughput|Stall|Issued|Eligible|Warp Cycles|No Eligible|Registers|Achieved Occupancy|Pipe" $OUT/ev/ncu-B$B.txt | head -40
done
