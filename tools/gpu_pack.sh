#!/usr/bin/env bash
# tools/gpu_pack.sh: builds kjit with LLVM linked statically (build-gpu/)
# and packs it for the GPU machine with ../shared/device/pack.sh. Then run
# bench/gpu/run_gpu.sh there (its header says how).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DKJIT_LLVM_STATIC=ON -DKJIT_TESTS=OFF >/dev/null
cmake --build build-gpu -j"$(nproc)" --target kjit_module   # (and kjit_llvm.so)
pack=${KJIT_PACK:-../shared/device/pack.sh}
mkdir -p "$(git rev-parse --git-dir)/info"   # pack.sh records .gpu/ there
# LLVM is in kjit_llvm.so (x86-64 Linux), which kjit.so loads from its own
# directory on the first compile: both go, into one directory
files=(build-gpu/kjit.so)
[[ -f build-gpu/kjit_llvm.so ]] && files+=(build-gpu/kjit_llvm.so)
bash "$pack" "${files[@]}"
