# sourced on the device: the carried build-slim as ./build, the configured source path reachable
rm -rf build && ln -s build-slim build
configured=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt)
if [ "$configured" != "$PWD" ] && [ ! -e "$configured" ]; then mkdir -p "$(dirname "$configured")" && ln -s "$PWD" "$configured"; fi
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/gpu.txt 2>&1
