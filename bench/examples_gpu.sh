#!/usr/bin/env bash
# On the GPU machine: every example's smoke variant (examples/*/BENCHFILE.toml, the
# targets named smoke and smoke_*) with `device = "cuda"`, through the real engine
# (benchmake + ninja), then each example's report. The smoke targets say
# device = "cpu" so that CI runs them; this script rewrites that line in a copy, the
# only difference from the CPU runs. Run from the tree root of the device tool's copy
# (after bench/pack_devtree.sh, carrying .devtree):
#   bash .devtree/bench/examples_gpu.sh [EXAMPLE...]        (default: every example)
# TARGETS="a b" builds those targets of each example instead of its smoke ones (e.g. the
# LLaMA-2-7B example's sample_dp4: the full-size model on 4 GPUs).
# DEVICE=cpu checks the script itself on a machine without a GPU.
# Binaries: $BIN (default .devtree/bin: benchmake and benchmake-train built with CUDA);
# the Debian libraries they need travel packed in .devtree/lib/extra-libs.tar.xz, as
# for bench/gpu_pipeline.sh. Logs and reports go to $OUT; exit status 1 if a build failed.
set -uo pipefail
root=$(pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bin=${BIN:-$root/.devtree/bin}
[[ -z ${BIN:-} && ! -d $bin && -f $root/.devtree/bin.tar.xz ]] && tar -C "$root/.devtree" -xJf "$root/.devtree/bin.tar.xz"
device=${DEVICE:-cuda}
source "$(dirname "$0")/device_env.sh" "$root/.devtree"
bm() { ours "$bin/benchmake" "$@"; }
gpus=0
if [[ $device == cuda ]]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
  gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
fi

examples=("$@")
if [[ ${#examples[@]} -eq 0 ]]; then
  for f in "$root"/examples/*/BENCHFILE.toml; do examples+=("$(basename "$(dirname "$f")")"); done
fi
tree=/tmp/examples-gpu; rm -rf $tree; mkdir -p $tree/examples
ln -s "$root/data" $tree/data
cp -r "$root/examples/tools" $tree/examples/
export BENCHMAKE_CACHE_DIR=$tree/cache
unset BENCHMAKE_GPUS BENCHMAKE_PLATFORM
failed=0
for ex in "${examples[@]}"; do
  ws=$tree/examples/$ex
  cp -r "$root/examples/$ex" $ws
  # Every smoke target on $device, but one whose layout needs more GPUs than the machine has
  # stays on the CPU (its ranks are CPU processes there), as bench/gpu_pipeline.sh does.
  awk -v device="$device" -v gpus="$gpus" '
    NR == FNR { if (/^\[target\./) t = $0
                if ($0 ~ /^layout = "TP[0-9]+PP[0-9]+DP[0-9]+"/) {
                  n = $0; gsub(/[^0-9]+/, " ", n); split(n, d, " "); ranks[t] = d[1] * d[2] * d[3] }
                next }
    /^\[target\./ { t = $0 }
    { if (!(device == "cuda" && ranks[t] > gpus)) sub(/^device = "cpu"/, "device = \"" device "\"")
      print }' $ws/BENCHFILE.toml $ws/BENCHFILE.toml > $ws/BENCHFILE.toml.new && mv $ws/BENCHFILE.toml.new $ws/BENCHFILE.toml
  if [[ -n ${TARGETS:-} ]]; then
    read -ra targets <<< "$TARGETS"
  else
    mapfile -t targets < <(sed -n 's/^\[target\.\(smoke[a-z0-9_.-]*\)\]$/\1/p' $ws/BENCHFILE.toml)
  fi
  {
    echo "== $ex: benchmake build ${targets[*]} (device = $device: $(grep -c "^device = \"$device\"" $ws/BENCHFILE.toml) targets)"
    start=$(date +%s%N)
    if bm -C $ws build "${targets[@]}"; then
      echo "$ex: built in $(( ($(date +%s%N) - start) / 1000000 )) ms"
      bm -C $ws report --format md
      bm -C $ws report --format json -o "$OUT/$ex-report.json"
    else
      echo "$ex: FAILED"; failed=1
    fi
  } 2>&1 | tee "$OUT/$ex.log"
  [[ ${PIPESTATUS[0]} -ne 0 ]] && failed=1
  grep -q "^$ex: FAILED" "$OUT/$ex.log" && failed=1
done
echo "examples_gpu: $([[ $failed -eq 0 ]] && echo all built || echo some FAILED)" | tee -a "$OUT/summary.txt"
exit $failed
