#!/usr/bin/env bash
# The default pipeline (BENCHFILE.toml) as a new user runs it, against the same pipeline with
# OpenBLAS's kernels forced by hand, in the same call (README.md's figure; docs/PERFORMANCE.md).
#
#   bash bench/pipeline_bench.sh [BUILD_DIR]      (default: build)
#
# Each run: a fresh copy of the repository's BENCHFILE.toml and data/ in a temporary
# workspace, a fresh cache, `benchmake build` then `benchmake report`, timed. First as is
# (benchmake-train picks the kernels: trainer/cpu/blas_core.h), then with
# OPENBLAS_CORETYPE=$CORE (default: the newest core the probe says this CPU runs).
# OPENBLAS_VERBOSE=2 makes OpenBLAS print the core it loaded ("Core: SkylakeX") into each
# step's log; the pretrain step's lines are printed. ALSO="Prescott ..." adds a run with each
# of those cores forced (Prescott: what benchmake ran before it chose the kernels itself).
# CPUS=0,1 pins the runs to those CPUs (taskset): the trainer still starts a thread per core
# of the machine, so this measures oversubscription, not a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
repo=$PWD
pin=()
[[ -n ${CPUS:-} ]] && pin=(taskset -c "$CPUS")
core=${CORE:-$(env -u OPENBLAS_CORETYPE "$build/benchmake-train" --probe |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["blas"]["core"])')}

run() {  # NAME [VAR=VALUE...]: prints the seconds it took
  local name=$1; shift
  local ws
  ws=$(mktemp -d /tmp/bm-pipeline-XXXXXX)
  mkdir -p "$ws/docs"
  cp "$repo/BENCHFILE.toml" "$repo/README.md" "$ws/"
  cp "$repo/docs/ARCHITECTURE.md" "$ws/docs/"
  cp -r "$repo/data" "$ws/data"
  local start end
  start=$EPOCHREALTIME
  (cd "$ws" && env "$@" BENCHMAKE_CACHE_DIR="$ws/.cache" OPENBLAS_VERBOSE=2 \
    "${pin[@]}" "$build/benchmake" build --color never > "$ws/build.out" 2>&1 &&
    "${pin[@]}" "$build/benchmake" report > "$ws/report.out" 2>&1) ||
    { cat "$ws/build.out"; echo "pipeline_bench: $name failed" >&2; exit 1; }
  end=$EPOCHREALTIME
  echo "$name: $(grep -h -m2 '^Core:' "$ws/.benchmake/log/pretrain.log" | tr '\n' ' ')" >&2
  awk -v a="$start" -v b="$end" 'BEGIN{printf "%.2f\n", b - a}'
  rm -rf "$ws"
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores${CPUS:+, pinned to CPUs $CPUS}"
echo "OpenBLAS by itself: $(env -u OPENBLAS_CORETYPE OPENBLAS_VERBOSE=2 "$build/benchmake-train" --presets 2>&1 >/dev/null | grep -m1 '^Core:')"
as_is=$(run "as is" -u OPENBLAS_CORETYPE)
forced=$(run "forced $core" OPENBLAS_CORETYPE="$core")
awk -v a="$as_is" -v f="$forced" -v c="$core" 'BEGIN{
  printf "default pipeline: as is %.1f s, with OPENBLAS_CORETYPE=%s %.1f s, ratio %.2f\n", a, c, f, a / f}'
for other in ${ALSO:-}; do
  t=$(run "forced $other" OPENBLAS_CORETYPE="$other")
  awk -v a="$as_is" -v t="$t" -v c="$other" 'BEGIN{
    printf "default pipeline with OPENBLAS_CORETYPE=%s: %.1f s, %.2fx as is\n", c, t, t / a}'
done
