# Sourced by scripts/fuzz.sh and scripts/sanitize.sh: configures build/fuzz,
# the clang build with ASan+UBSan and libFuzzer coverage that the fuzz
# targets and the sanitized unit tests share (each object compiled once).
BUILD=build/fuzz
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DKVMESH_BUILD_FUZZERS=ON -DKVMESH_SANITIZE=ON -DKVMESH_BUILD_TESTS=ON -DKVMESH_CUDA=OFF >/dev/null
fi
