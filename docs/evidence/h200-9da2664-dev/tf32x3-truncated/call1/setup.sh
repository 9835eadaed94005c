# Sourced at the start of every device command: the carried build folder as build/, its configured
# source path linked to the checkout, the CUDA libraries on the path.
rm -rf build && ln -s build-s21 build
configured=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt)
if [ "$configured" != "$PWD" ] && [ ! -e "$configured" ]; then mkdir -p "$(dirname "$configured")" && ln -s "$PWD" "$configured"; fi
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
