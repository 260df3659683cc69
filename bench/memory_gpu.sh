#!/usr/bin/env bash
# On the GPU machine, in one call: the checks of a change to what the CUDA trainer holds in device
# memory (ZeRO-3's 16-bit copy cast at gather time, the frozen vision tower's forward-only arena),
# then LLaMA-2-7B's ZeRO-3 against FSDP2 on this machine's GPUs (bench/multi_gpu.sh zero3).
#   tower    cuda_vision_tower_test (the frozen tower's features are the trained tower's bits)
#   llava    cuda_llava_trainer_test (frozen parts, stages against the CPU, ranks sharing the GPU)
#   zero     cuda_model_test and cuda_backend_test whole (activations over the gradients at zero
#            0-3; every ZeRO stage of one rank equals stage 0 bit for bit,
#            one-rank NCCL equals none, ZeRO-3 resumes) and cuda_ranks_test's ZeRO and model-parallel
#            layouts against one rank
#   fsdp     GPUS (default all) x ZERO3_BATCHES (default "1") through multi_gpu.sh zero3
# Run from the tree root after bench/pack_devtree.sh (carry .devtree):
#   bash bench/memory_gpu.sh [tower] [llava] [zero] [fsdp]      (default: all)
# The tests' whole log goes to $OUT/tests.log.xz.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
[[ ! -d .devtree/bin ]] && tar -C .devtree -xJf .devtree/bin.tar.xz
source bench/device_env.sh .devtree
B=.devtree/bin
MODES=("$@"); [[ ${#MODES[@]} -eq 0 ]] && MODES=(tower llava zero fsdp)
want() { for w in "${MODES[@]}"; do [[ $w == "$1" ]] && return 0; done; return 1; }
g() {
  ours "$B/$1" --gtest_color=no "${@:2}" 2>&1 | tee -a "$OUT/tests.log" |
    grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure|Expected|Which is|error" | head -30
}
export BENCHMAKE_TRAIN=$B/benchmake-train OMP_NUM_THREADS=8
want tower && { echo "== tower"; g cuda_vision_tower_test; }
want llava && { echo "== llava trainer"; g cuda_llava_trainer_test; }
if want zero; then
  echo "== one rank, every ZeRO stage; activations over the gradients"
  g cuda_model_test
  g cuda_backend_test
  echo "== ranks sharing the GPU"
  g cuda_ranks_test --gtest_filter='*Zero*:*ModelParallelMatchesOneRank/gloo*'
fi
if want fsdp; then
  echo "== LLaMA-2-7B ZeRO-3 vs FSDP2"
  GPUS=${GPUS:-$(nvidia-smi -L | wc -l)} ZERO3_BATCHES=${ZERO3_BATCHES:-1} ROW_LIMIT_S=${ROW_LIMIT_S:-240} \
    bash .devtree/bench/multi_gpu.sh zero3 2>&1 | tail -8
fi
[[ -f $OUT/tests.log ]] && xz -9 "$OUT/tests.log"
exit 0
