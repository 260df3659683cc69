#!/usr/bin/env bash
# ZeRO-3's kept units (zero3_keep_params; cuda_train_bench --zero3-keep N) on the GPU machine, in
# one call:
#   1. the test: cuda_ranks_test's ZeroThreeKeptUnitsChangeNoBit (DP2 and, with 4 GPUs over NCCL,
#      TP1PP2DP2: the plain runs' losses, gradient norms and weights bit for bit);
#   2. LLaMA 1B data parallel on every GPU at DP_BATCHES (default "2 4") rows of 2048, no
#      accumulation, ZeRO-2, ZeRO-3 and ZeRO-3 keeping KEEP parameters (default 2e9: every unit
#      but the embeddings), sums in GRAD_REDUCE (default bf16), the arena as an NCCL window at
#      NCCL_CTA_POLICY=2 unless WINDOW=0 (the best of runs 148-149), each against one GPU in the
#      same call (bench/multi_gpu.sh dpbatches, DP_PEER=0), then the rows side by side: scaling,
#      step, joules, memory, and whether ZeRO-3 kept ends with plain ZeRO-3's loss and norm bits.
# Run from the tree root (the device tool's working copy): bash .devtree/bench/zero3_keep_gpu.sh
# Logs and JSON go to $OUT. KEEP_TESTS=0 leaves the test out.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)  # the .devtree
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source "$(dirname "$0")/device_env.sh" "$here"
if [[ ${KEEP_TESTS:-1} != 0 ]]; then
  BENCHMAKE_TRAIN=$here/bin/benchmake-train ours timeout 300 "$here/bin/cuda_ranks_test" \
    --gtest_filter='*ZeroThreeKept*' 2>&1 | grep -vE '^\[ +(RUN|OK) +\]' | tail -n 40
fi
flags="--steps 100"; [[ ${WINDOW:-1} != 0 ]] && flags+=" --nccl-window"
for way in plain kept; do
  zeros="2 3"; f=$flags
  [[ $way == kept ]] && { zeros=3; f+=" --zero3-keep ${KEEP:-2e9}"; }
  (export NCCL_CTA_POLICY=2
   OUT=$OUT/$way DP_PEER=0 GRAD_REDUCE=${GRAD_REDUCE:-bf16} DP_BATCHES=${DP_BATCHES:-2 4} \
     DP_ZEROS=$zeros DP_FLAGS=$f bash "$(dirname "$0")/multi_gpu.sh" dpbatches | grep -E 'x2048|fail')
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
rows = {w: [json.loads(l) for l in open(f"{out}/{w}/batches.jsonl") if l.startswith("{")]
        for w in ("plain", "kept")}
def one(way, b):
    return [x for x in rows[way] if x["gpus"] == 1 and x["batch"] == b][-1]
def tail(r):  # the reductions still running when the backward ended (reductions_ms)
    red = r.get("reductions_ms", {})
    return "".join(f" [unit {u}: queued {red[u]['queued']:.2f} reduce {red[u]['reduce']:.2f} "
                   f"+{red[u]['after_backward']:.2f} ms]"
                   for u in sorted(red, key=int) if red[u]["after_backward"] > 0)
def row(way, b, z):
    r = [x for x in rows[way] if x["gpus"] > 1 and x["batch"] == b and x["zero"] == z]
    return r[-1] if r else None
print(f"{'batch':>6} {'row':>14} {'step':>9} {'scaling':>8} {'J/step':>7} {'GiB':>6}")
for b in sorted({x["batch"] for x in rows["plain"]}):
    for name, way, z in (("ZeRO-2", "plain", 2), ("ZeRO-3", "plain", 3), ("ZeRO-3 kept", "kept", 3)):
        r = row(way, b, z)
        if not r:
            continue
        print(f"{b:>6} {name:>14} {r['step_ms_median']:6.1f} ms {r['tokens_per_s'] / one(way, b)['tokens_per_s']:8.1%}"
              f" {r.get('joules_per_step', float('nan')):7.1f} {r['device_used_GiB']:6.1f}"
              f"  (one GPU {one(way, b)['step_ms_median']:.1f} ms; keep {r.get('zero3_keep_params')}; waited"
              + "".join(f" {k} {v:.2f}" for k, v in sorted(r.get("comm_wait_ms_per_step_by_site", {}).items()))
              + " ms a step)" + tail(r))
    p, k = row("plain", b, 3), row("kept", b, 3)
    if p and k:
        print(f"{b:>6} kept ZeRO-3 ends with plain ZeRO-3's loss and norm bits: "
              f"{k['final_loss'] == p['final_loss'] and k['grad_norm'] == p['grad_norm']}")
PY
