#!/usr/bin/env bash
# On the GPU machine: loss alignment of benchmake-train against PyTorch from the same initial
# weights and batches (examples/pytorch_peer/BENCHFILE.toml, issue 34 part 4), and the live
# transformers Trainer runs (examples/pytorch_peer/hf_trainer/, part 3), through the real engine
# (benchmake + ninja, the GPU pool). Builds nothing: benchmake and benchmake-train come from the
# carried .devtree (bench/pack_devtree.sh), PyTorch and transformers are the machine's.
# Run from the tree root of the device tool's copy:
#   bash bench/align_gpu.sh [align] [trainer]     (default: both; align first)
# align: every pair the machine has GPUs for (1 GPU: the one-GPU pairs; 2: + DP2; 4: + DP4),
#   then per pair `benchmake compare` (A = benchmake-train, B = PyTorch) and a table:
#   variant, steps, mean and largest relative loss gap from step 21, the verdict, token/p/s of
#   each side; the lr-changed pair must say NOT ALIGNED.
# trainer: transformers' Trainer on 1 GPU and under torchrun on 4 (2 when only 2), parsed with
#   log_format = "trainer" when this benchmake has it; otherwise only their logs are kept.
# Everything lands in $OUT (default /tmp/out): build logs, compare outputs (md + json), the HTML
# report (all curves) and one per pair (align-VARIANT.html: its two curves), and align.tar.gz
# (the peers' train.log, every log.jsonl and metrics.json, compares, reports).
# JOBS=N overrides the BENCHFILE's jobs = 4 (JOBS=1: one run at a time, cleaner token/p/s).
# Exit status: 0 when every pair's verdict is the expected one and every build succeeded.
set -uo pipefail
root=$(pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
bin=${BIN:-$root/.devtree/bin}
[[ -z ${BIN:-} && ! -d $bin && -f $root/.devtree/bin.tar.xz ]] && tar -C "$root/.devtree" -xJf "$root/.devtree/bin.tar.xz"
# The machine's own library path for PyTorch (torch_align.py re-executes itself with it): ours
# below holds Debian libraries that torch must not load (GPU-MACHINE.md).
export BENCHMAKE_PEER_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
source "$root/bench/device_env.sh" "$root/.devtree"
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
bm() { ours "$bin/benchmake" "$@"; }
MODES=("$@"); [[ ${#MODES[@]} -eq 0 ]] && MODES=(align trainer)
want() { for w in "${MODES[@]}"; do [[ $w == "$1" ]] && return 0; done; return 1; }
N=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv | tee "$OUT/gpus.txt"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" 2>&1 | tee -a "$OUT/gpus.txt"

# A fresh copy of the example each call; the cache stays (a second call on a warm machine, e.g.
# `align` then `trainer`, reuses the tokens and the benchmake-train runs).
tree=/tmp/align-gpu; rm -rf $tree/examples $tree/data; mkdir -p $tree/examples
ln -s "$root/data" $tree/data
cp -r "$root/examples/tools" "$root/examples/pytorch_peer" $tree/examples/
export BENCHMAKE_CACHE_DIR=$tree/cache
unset BENCHMAKE_GPUS BENCHMAKE_PLATFORM
ws=$tree/examples/pytorch_peer
[[ -n ${JOBS:-} ]] && sed -i "s/^jobs = .*/jobs = $JOBS/" $ws/BENCHFILE.toml $ws/hf_trainer/BENCHFILE.toml
failed=0

# variant  reference(benchmake-train)  candidate(PyTorch)  GPUs  expected verdict
pairs=(
  "llama_1gpu        bm_llama_1gpu       torch_llama_1gpu             1 ALIGNED"
  "gpt_1gpu          bm_gpt_1gpu         torch_gpt_1gpu               1 ALIGNED"
  "llama_1gpu_lr/4   bm_llama_1gpu       torch_llama_1gpu_lr4x_lower  1 NOT"
  "llama_dp2_ddp     bm_llama_dp2_zero0  torch_llama_ddp2             2 ALIGNED"
  "llama_dp2z3_fsdp2 bm_llama_dp2_zero3  torch_llama_fsdp2            2 ALIGNED"
  "llama_dp4_ddp     bm_llama_dp4_zero0  torch_llama_ddp4             4 ALIGNED"
  "llama_dp4z3_fsdp2 bm_llama_dp4_zero3  torch_llama_fsdp4            4 ALIGNED"
)

run_align() {
  targets=()
  for p in "${pairs[@]}"; do
    read -r _ _ b gpus _ <<< "$p"
    (( gpus <= N )) && targets+=("$b")
  done
  echo "== align: benchmake build ${targets[*]} ($N GPUs)"
  start=$(date +%s)
  bm -C $ws build -k 0 "${targets[@]}" 2>&1 | tee "$OUT/align-build.log"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "align: the build FAILED (align-build.log)"; failed=1; }
  echo "align: built in $(( $(date +%s) - start )) s"
  rows=()
  for p in "${pairs[@]}"; do
    read -r v a b gpus expect <<< "$p"
    (( gpus <= N )) || continue
    tag=${v//\//_}
    bm -C $ws compare "$a" "$b" > "$OUT/compare-$tag.md" 2>&1
    bm -C $ws compare "$a" "$b" --format json -o "$OUT/compare-$tag.json" > /dev/null 2>&1
    bm -C $ws report "$a" "$b" --format html -o "$OUT/align-$tag.html" > /dev/null 2>&1
    rows+=("$v $a $b $expect $tag")
  done
  bm -C $ws report --format md > "$OUT/report.md" 2>&1
  bm -C $ws report --format html -o "$OUT/report.html" > /dev/null 2>&1
  printf '%s\n' "${rows[@]}" > "$OUT/pairs.txt"
  python3 - "$ws" "$OUT" <<'EOF' | tee "$OUT/align-table.md"
import json, os, sys
ws, out = sys.argv[1], sys.argv[2]
def tps(target):
    try:
        with open(os.path.join(ws, "out", target, "metrics.json")) as f:
            v = json.load(f)["throughput"]["tokens_per_device_per_s"]
        return f"{v:,.0f}" if v else "-"
    except (OSError, KeyError, TypeError, ValueError):
        return "-"
print("| variant | steps | mean gap | largest gap (step) | verdict | expected | bm token/p/s | torch token/p/s |")
print("|---|---:|---:|---:|---|---|---:|---:|")
bad = 0
for line in open(os.path.join(out, "pairs.txt")):
    v, a, b, expect, tag = line.split()
    try:
        with open(os.path.join(out, f"compare-{tag}.json")) as f:
            c = json.load(f)
        al = c["alignment"]
    except (OSError, ValueError, KeyError):
        al = None
    if not al:
        print(f"| {v} | - | - | - | not checked | {expect} | {tps(a)} | {tps(b)} |")
        bad += 1
        continue
    verdict = "ALIGNED" if al["pass"] else "NOT ALIGNED"
    ok = (verdict == "ALIGNED") == (expect == "ALIGNED")
    bad += not ok
    lg = al.get("largest") or {}
    print(f"| {v} | {al['first_step']}-{al['last_step']} ({al['compared_steps']}) | "
          f"{100 * al['mean_rel_diff']:.2f}% | {100 * lg.get('rel_diff', float('nan')):.2f}% "
          f"({lg.get('step', '-')}) | {verdict} | {'as expected' if ok else 'UNEXPECTED'} | "
          f"{tps(a)} | {tps(b)} |")
print(f"\n{bad} pair(s) not as expected" if bad else "\nevery pair as expected")
sys.exit(1 if bad else 0)
EOF
  [[ ${PIPESTATUS[0]} -eq 0 ]] || failed=1
}

run_trainer() {
  tws=$ws/hf_trainer
  if (( N < 4 )); then
    sed -i "s/--nproc 4/--nproc $N/; s/^gpus = 4/gpus = $N/; s/^layout = \"TP1PP1DP4\"/layout = \"TP1PP1DP$N\"/; s/^lbs = 4$/lbs = $((16 / N))/" $tws/BENCHFILE.toml
  fi
  if bm -C $tws build -n > "$OUT/trainer-plan.txt" 2>&1; then
    targets=(trainer_llama_1gpu); (( N >= 2 )) && targets+=(trainer_llama_4gpu)
  else
    echo "trainer: this benchmake cannot load log_format = \"trainer\" ($(grep -m1 -i 'log_format' "$OUT/trainer-plan.txt")); running the Trainer without parsing its logs"
    awk 'function flush() { if (block !~ /log_format = "trainer"/) printf "%s", block; block = "" }
         /^\[/ { flush() } { block = block $0 "\n" } END { flush() }' $tws/BENCHFILE.toml > $tws/B.toml &&
      mv $tws/B.toml $tws/BENCHFILE.toml
    targets=(trainer_llama_1gpu_run); (( N >= 2 )) && targets+=(trainer_llama_4gpu_run)
  fi
  echo "== trainer: benchmake build ${targets[*]}"
  start=$(date +%s)
  bm -C $tws build -k 0 "${targets[@]}" 2>&1 | tee "$OUT/trainer-build.log"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "trainer: the build FAILED (trainer-build.log)"; failed=1; }
  echo "trainer: built in $(( $(date +%s) - start )) s"
  for t in trainer_llama_1gpu_run trainer_llama_4gpu_run; do
    [[ -f $tws/out/$t/train.log ]] && cp "$tws/out/$t/train.log" "$OUT/$t.log"
  done
  bm -C $tws report --format md 2>&1 | tee "$OUT/trainer-report.md"
  bm -C $tws report --format html -o "$OUT/trainer-report.html" > /dev/null 2>&1
  bm -C $tws compare bm_llama_1gpu trainer_llama_1gpu > "$OUT/compare-trainer_1gpu.md" 2>&1 &&
    tail -n 3 "$OUT/compare-trainer_1gpu.md"
}

# Both: the Trainer's build runs beside the alignment's (the engines share the machine's GPU
# locks, so their steps pack the GPUs together); its output goes to trainer-section.log.
if want trainer && want align; then
  run_trainer > "$OUT/trainer-section.log" 2>&1 &
  trainer_pid=$!
  run_align
  wait $trainer_pid || true
  cat "$OUT/trainer-section.log"
  grep -q "trainer: the build FAILED" "$OUT/trainer-section.log" && failed=1
elif want align; then
  run_align
elif want trainer; then
  run_trainer
fi

# The small tarball: logs, curves, metrics, compares, reports (no checkpoints).
for w in align:$ws trainer:$ws/hf_trainer; do
  d=$OUT/step-logs/${w%%:*}
  [[ -d ${w#*:}/.benchmake/log ]] && mkdir -p "$d" && cp "${w#*:}"/.benchmake/log/* "$d/" 2>/dev/null
done
(cd $tree/examples && find pytorch_peer/out pytorch_peer/hf_trainer/out \
   \( -name train.log -o -name log.jsonl -o -name metrics.json -o -name config.json \) 2>/dev/null) > $tree/files.txt
(cd "$OUT" && ls -d *.md *.json *.html *.txt *.log step-logs 2>/dev/null | grep -v '^align.tar.gz$') > $tree/own.txt
tar -czf "$OUT/align.tar.gz" -C $tree/examples -T $tree/files.txt -C "$OUT" -T $tree/own.txt
du -h "$OUT/align.tar.gz"
echo "align_gpu: $([[ $failed -eq 0 ]] && echo 'all as expected' || echo 'something FAILED or was not as expected')"
exit $failed
