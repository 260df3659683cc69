#!/usr/bin/env bash
# On the GPU machine: find which kernel faults in CudaModel's spliced-rows step (the
# "RmsNormForwardKernel failed: an illegal memory access" of cuda_model_spliced_test and
# cuda_llava_trainer_test). An illegal access is sticky and reported by whichever launch check
# comes next, so: each test in its own process (no cascade), the plain model at the same shape
# (B=2, T=32: NoRowsGiveThePlainBits) before the spliced one, then the failing test under
# CUDA_LAUNCH_BLOCKING=1 (the error names the faulting kernel) and compute-sanitizer (the
# kernel, the address and the allocation it missed). Run from the tree root of the device
# tool's copy after bench/pack_devtree.sh (carry .devtree):
#   bash bench/splice_isolate.sh
set -uo pipefail
root=$(pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
dev=$root/.devtree
[[ ! -d $dev/bin && -f $dev/bin.tar.xz ]] && tar -C "$dev" -xJf "$dev/bin.tar.xz"
source "$root/bench/device_env.sh" "$dev"
t=$dev/bin/cuda_model_spliced_test
one() {  # one NAME FILTER [ENV...]: the filtered tests alone, log in $OUT/NAME.log
  local name=$1 filter=$2; shift 2
  env "$@" LD_LIBRARY_PATH="$ours_path" "$t" --gtest_color=no --gtest_filter="$filter" \
    > "$OUT/$name.log" 2>&1
  printf '%-28s rc=%d  ' "$name" $?
  grep -E "^\[  (PASSED|FAILED) |failed:|illegal" "$OUT/$name.log" | head -3 | tr '\n' ' '; echo
}
one plain_shape 'Presets/CudaSplicedTest.NoRowsGiveThePlainBits/0'
one pointers 'Presets/CudaSplicedTest.WrongPointerKindsAreRefused/*'
one onestep 'Presets/CudaSplicedTest.OneStepMatchesCpuModel/0'
one onestep_blocking 'Presets/CudaSplicedTest.OneStepMatchesCpuModel/0' CUDA_LAUNCH_BLOCKING=1
one lookup_rows 'Presets/CudaSplicedTest.LookupRowsGiveThePlainModel/0'
one gpt 'Presets/CudaSplicedTest.*/1'
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [[ -n $san ]]; then
  LD_LIBRARY_PATH="$ours_path" "$san" --tool memcheck --print-limit 20 "$t" --gtest_color=no \
    --gtest_filter='Presets/CudaSplicedTest.OneStepMatchesCpuModel/0' > "$OUT/sanitizer.log" 2>&1
  echo "compute-sanitizer rc=$?: $(grep -m3 -E 'Invalid|at .*Kernel|Address' "$OUT/sanitizer.log" | tr '\n' ' ')"
else
  echo "no compute-sanitizer on this machine"
fi
