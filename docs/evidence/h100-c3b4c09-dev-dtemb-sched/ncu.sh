#!/usr/bin/env bash
# Optional second part of the call, where device time is left after call.sh: why the 128 x 128
# d_temb is slow at B = 928 ... 992 (../h100-3ae67a2-dev-dtemb-960/: 229.4 us at 960 against 185.5
# at 1023, with the same persistent grid and tile count). Nsight Compute on `rlk bench` with the
# development plugins (build-dev/lib/), d_temb on 128 x 128 up to 1024 (RLK_DEV_DTEMB_TALL_ABOVE=1024)
# at B = 704, 832, 896, 928, 960, 1023, at 960 with its tiles handed out along M
# (RLK_DEV_DTEMB_SCHED=1M, ../dev-dtemb-sched-prepared/), and on 256 x 128 at 960 (=896): only the CUTLASS kernels
# (the forward, grid 132 x 1, and d_temb, grid 1 x 132), each replayed alone with its caches
# flushed; its time, DRAM bytes each way, L2 hit rate and SM / memory throughput. If 960 moves
# more DRAM bytes than 1023, the tiles' order re-reads W or dy; if not, the time is in the SMs.
# ncu-<above>-<B>-<sched>.csv.gz into $OUT/ncu.tar; summarize with ncu_summary.py DIR.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
echo "ncu: $ncu"
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
metrics=$metrics,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
mkdir -p /tmp/ncu
for case in 1024:704:1H 1024:832:1H 1024:896:1H 1024:928:1H 1024:960:1H 1024:960:1M 1024:1023:1H 896:960:1H; do
  IFS=: read -r above b sched <<< "$case"
  RLK_PLUGIN_PATH=$PWD/build-dev/lib RLK_DEV_DTEMB_TALL_ABOVE=$above RLK_DEV_DTEMB_SCHED=$sched timeout 100 "$ncu" --clock-control none \
    --kernel-name regex:device_kernel --metrics "$metrics" --csv --page raw \
    build-cuda/bin/rlk bench qwenimage_adaln_mod_projection --device cuda:0 --dtype bf16 --batch "$b" \
    --warmup 1 --warmup-ms 0 --repeats 5 > /tmp/ncu/ncu-$above-$b-$sched.csv 2> /tmp/ncu/ncu-$above-$b-$sched.err
  echo "above $above B=$b $sched exit $? lines $(wc -l < /tmp/ncu/ncu-$above-$b-$sched.csv) after ${SECONDS}s"
  tail -n 2 /tmp/ncu/ncu-$above-$b-$sched.err
done
gzip /tmp/ncu/*.csv; tar -cf "$OUT/ncu.tar" -C /tmp/ncu .
