#!/usr/bin/env bash
# On the GPU machine: issue 36's checks of LLaVA-1.5 part 1, in one call. Run from the tree
# root of the device tool's copy after bench/pack_devtree.sh (carry .devtree):
#   bash bench/llava_gpu.sh [kernels] [tower] [splice] [trainer] [pixels] [vision] [preprocess]
#                           [hf] [decode]                          (default: all of them)
# kernels     cuda_ops_test: the new kernels (GELU, quick-GELU, im2col, non-causal attention)
#             and the unchanged causal ones against their CPU twins
# tower       cuda_vision_tower_test: CudaVisionTower / CudaProjector against the CPU tower
# splice      cuda_model_spliced_test: CudaModel with image rows spliced in against Model<float>
# trainer     cuda_llava_trainer_test (when packed): the CUDA LLaVA trainer against the CPU one, ranks
#             sharing this GPU
# pixels      tests/gpu/clip_pixels_check.py: our pixel values against CLIPImageProcessor
# vision      tests/gpu/clip_vision_check.py: our CPU tower against CLIPVisionModel
# preprocess  tests/gpu/llava_preprocess_golden.py: llava_data against LLaVA's own preprocess
#             with transformers' tokenizer (LLaVA's files in .devtree/llava, see pack_devtree.sh)
# hf          tests/gpu/llava_hf_check.py: our checkpoints in LlavaForConditionalGeneration and
#             back, fp32 and bf16
# decode      the CUDA greedy decoder (MMMU's model half): tests/trainer/llava_tiny_reference.py
#             --greedy --device cuda (float64 numpy), tests/gpu/llava_generate_check.py (cpu and
#             cuda against transformers' generate), trainer_llava_mmmu_test (MMMU on the GPU
#             gives the CPU's responses)
# Logs go to $OUT; the exit status counts the failed parts.
set -uo pipefail
root=$(pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
dev=$root/.devtree
[[ ! -d $dev/bin && -f $dev/bin.tar.xz ]] && tar -C "$dev" -xJf "$dev/bin.tar.xz"
bin=$dev/bin
source "$root/bench/device_env.sh" "$dev"
MODES=("$@"); [[ ${#MODES[@]} -eq 0 ]] && MODES=(all)
want() { for w in "${MODES[@]}"; do [[ $w == all || $w == "$1" ]] && return 0; done; return 1; }
# Our binaries run from Python through wrappers that give them their libraries, so the
# Python process keeps its own LD_LIBRARY_PATH (torch's cuDNN; GPU-MACHINE.md).
wrap=/tmp/bm-wrappers; mkdir -p $wrap
for b in "$bin"/*; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$ours_path" "$b" > "$wrap/$(basename "$b")"
  chmod +x "$wrap/$(basename "$b")"
done
failed=0
part() {  # part NAME CMD...: runs CMD, its log in $OUT/NAME.log, a one-line verdict
  local name=$1; shift
  local t0=$SECONDS
  "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  printf '%-11s rc=%d %4ds  ' "$name" $rc $((SECONDS - t0))
  grep -E "^\[  (PASSED|FAILED) |PASS|FAIL|tests passed|skipped" "$OUT/$name.log" | tail -3 | tr '\n' ' '
  echo
  [[ $rc -eq 0 ]] || { failed=$((failed + 1)); grep -E "Failure|Expected|Which is|error|Error|FAIL" "$OUT/$name.log" | head -20; }
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
gtest() { ours "$bin/$1" --gtest_color=no "${@:2}"; }
want kernels && part kernels gtest cuda_ops_test
want tower && part tower gtest cuda_vision_tower_test
want splice && [[ -x $bin/cuda_model_spliced_test ]] && part splice gtest cuda_model_spliced_test
want trainer && [[ -x $bin/cuda_llava_trainer_test ]] && part trainer env BENCHMAKE_TRAIN=$wrap/benchmake-train \
  "$wrap/cuda_llava_trainer_test" --gtest_color=no
want pixels && part pixels python3 tests/gpu/clip_pixels_check.py "$dev"
want vision && part vision python3 tests/gpu/clip_vision_check.py --dump "$wrap/clip_vision_dump"
if want preprocess; then
  for a in "--pixels" "--legacy" "--model-max-length 60"; do
    # shellcheck disable=SC2086
    part "preprocess${a// /}" python3 tests/gpu/llava_preprocess_golden.py --llava "$dev/llava" \
      --benchmake "$wrap/benchmake" --tokenizer transformers $a
  done
fi
if want hf && [[ -x $bin/llava_dump ]]; then
  part hf_fp32 python3 tests/gpu/llava_hf_check.py --dump "$wrap/llava_dump"
  part hf_bf16 python3 tests/gpu/llava_hf_check.py --dump "$wrap/llava_dump" --dtype bfloat16
fi
if want decode && [[ -x $bin/llava_dump ]]; then
  part decode_ref python3 tests/trainer/llava_tiny_reference.py --dump "$wrap/llava_dump" --greedy \
    --device cuda
  part decode_hf python3 tests/gpu/llava_generate_check.py --dump "$wrap/llava_dump"
  [[ -x $bin/trainer_llava_mmmu_test ]] && part decode_mmmu env BENCHMAKE_SOURCE_DIR="$root" \
    "$wrap/trainer_llava_mmmu_test" --gtest_color=no
fi
echo "llava_gpu: $failed part(s) failed"
exit $failed
