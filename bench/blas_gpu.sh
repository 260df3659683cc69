#!/usr/bin/env bash
# One call on the GPU machine for OpenBLAS's kernels (trainer/cpu/blas_core.h): that machine's
# Debian OpenBLAS 0.3.21 (carried in .devtree/lib) does not know its CPU and falls back to
# "Prescott". Run from the tree root (the device tool's working copy, with .devtree carried:
# bench/pack_devtree.sh) as
#   bash bench/blas_gpu.sh [oracle] [parity] [cpubench] [pipeline]
# oracle:   the CPU oracle's tests (ops and whole-model gradient checks) under every core
#           benchmake may pick (CORES), and under the detected one
# parity:   CPU vs CUDA parity (cuda_ops_test, cuda_model_test) under each of CORES
# cpubench: trainer_cpu_bench as is, with Prescott forced (the old behaviour), and with each core
# pipeline: bench/pipeline_bench.sh: as is against the best core forced by hand, and against
#           Prescott forced (the old behaviour)
set -uo pipefail
here=$PWD/.devtree
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bin=$here/bin
[[ -d $bin ]] || tar -C "$here" -xJf "$here/bin.tar.xz"
MODES=("$@"); [[ ${#MODES[@]} -eq 0 ]] && MODES=(oracle parity cpubench pipeline)
want() { for w in "${MODES[@]}"; do [[ $w == "$1" ]] && return 0; done; return 1; }
source bench/device_env.sh "$here"
# Debian 12's OpenBLAS itself (0.3.21, the version that does not know this CPU), from the
# packages carried in .debs (apt-get download libopenblas0-pthread libgfortran5), ahead of any
# other: the machine's own (Ubuntu's 0.3.26) knows the CPU.
if compgen -G ".debs/libopenblas0-pthread_*.deb" > /dev/null; then
  for f in .debs/libopenblas0-pthread_*.deb .debs/libgfortran5_*.deb; do dpkg -x "$f" /tmp/debian-blas; done
  ours_path=/tmp/debian-blas/usr/lib/x86_64-linux-gnu/openblas-pthread:/tmp/debian-blas/usr/lib/x86_64-linux-gnu:$ours_path
fi
CORES=${CORES:-"Nehalem Sandybridge Haswell Zen SkylakeX Cooperlake"}
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "OpenBLAS alone: $(OPENBLAS_VERBOSE=2 ours "$bin/benchmake-train" --version 2>&1 | grep -m1 Core:)"
ours "$bin/benchmake-train" --probe | python3 -c 'import json,sys; print("probe:", json.load(sys.stdin)["blas"])'

result() {  # LABEL LOG: the gtest summary line of LOG
  printf '%-44s %s\n' "$1" "$(grep -E '^\[  (PASSED|FAILED)  \]|^skipped:' "$2" | tr '\n' ' ')"
}
if want cpubench; then
  for core in "" Prescott $CORES; do
    echo "== trainer_cpu_bench ${core:-as is} (8 threads)"
    if [[ -z $core ]]; then ours "$bin/trainer_cpu_bench" --threads 8 --steps 3 2>&1
    else OPENBLAS_CORETYPE=$core ours "$bin/trainer_cpu_bench" --threads 8 --steps 3 2>&1; fi |
      grep -E "^OpenBLAS|^llama-small +V=257"
  done
fi
if want pipeline; then
  mkdir -p /tmp/bmbuild && cp "$bin/benchmake" "$bin/benchmake-train" /tmp/bmbuild/
  # The binaries find their libraries through LD_LIBRARY_PATH, which the engine passes on.
  export LD_LIBRARY_PATH=$ours_path
  ALSO=Prescott bash bench/pipeline_bench.sh /tmp/bmbuild 2>&1 | tee "$OUT/pipeline.txt"
fi
if want oracle; then
  for core in detected $CORES; do
    for t in trainer_ops_test trainer_model_test trainer_blas_core_test; do
      log=$OUT/oracle-$t-$core.log
      if [[ $core == detected ]]; then ours "$bin/$t" --gtest_color=no > "$log" 2>&1
      else OPENBLAS_CORETYPE=$core ours "$bin/$t" --gtest_color=no > "$log" 2>&1; fi
      result "$t @ $core (exit $?)" "$log"
    done
  done
fi
if want parity; then
  for core in $CORES; do
    for t in ${PARITY_TESTS:-cuda_ops_test cuda_model_test}; do
      log=$OUT/parity-$t-$core.log
      OPENBLAS_CORETYPE=$core LD_LIBRARY_PATH=$ours_path timeout 300 "$bin/$t" --gtest_color=no \
        > "$log" 2>&1
      result "$t @ $core (exit $?)" "$log"
    done
  done
fi
