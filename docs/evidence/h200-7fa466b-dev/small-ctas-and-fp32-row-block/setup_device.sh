# Sourced at the start of every device command: the carried slim build tree as build/ and build-cuda/,
# its configured source path linked to the checkout, the CUDA libraries on the path.
rm -rf build build-cuda && ln -s build-slim build && ln -s build-slim build-cuda
configured=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt)
if [ "$configured" != "$PWD" ] && [ ! -e "$configured" ]; then mkdir -p "$(dirname "$configured")" && ln -s "$PWD" "$configured"; fi
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
