#!/usr/bin/env bash
# The trainer's arena as the DP group's NCCL window (nccl_window; cuda_train_bench --nccl-window)
# on the GPU machine, in one call:
#   1. the tests: nccl_communicator_test's window tests (two GPUs at NCCL's default and zero-CTA
#      policies; a group of one) and cuda_ranks_test's NcclWindowRanksTest (DP2 over NCCL at
#      every ZeRO stage and both policies: losses, gradient norms and weights bit for bit);
#   2. LLaMA 1B data parallel on every GPU at DP_BATCHES (default 2) rows of 2048, ZeRO 0-3, sums
#      in GRAD_REDUCE (default fp32; or bf16), plain
#      and as a window at NCCL_CTA_POLICY=2 (NCCL's all-gathers on the copy engines), each
#      against one GPU in the same call (bench/multi_gpu.sh dpbatches, DP_PEER=0), then the
#      scaling of both side by side.
# Run from the tree root (the device tool's working copy): bash .devtree/bench/nccl_window_gpu.sh
# Logs and JSON go to $OUT. WINDOW_TESTS=0 leaves the tests out.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)  # the .devtree
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source "$(dirname "$0")/device_env.sh" "$here"
if [[ ${WINDOW_TESTS:-1} != 0 ]]; then
  ours timeout 300 "$here/bin/nccl_communicator_test" --gtest_filter='*Window*' 2>&1 | tail -n 25
  BENCHMAKE_TRAIN=$here/bin/benchmake-train ours timeout 400 "$here/bin/cuda_ranks_test" \
    --gtest_filter='NcclWindow*' 2>&1 | tail -n 25
fi
for way in plain window; do
  flags="--steps 100"; [[ $way == window ]] && flags+=" --nccl-window"
  (export NCCL_CTA_POLICY=2
   OUT=$OUT/$way DP_PEER=0 GRAD_REDUCE=${GRAD_REDUCE:-fp32} DP_BATCHES=${DP_BATCHES:-2} DP_FLAGS=$flags \
     bash "$(dirname "$0")/multi_gpu.sh" dpbatches | grep -E 'x2048|fail')
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
rows = {w: [json.loads(l) for l in open(f"{out}/{w}/batches.jsonl") if l.startswith("{")]
        for w in ("plain", "window")}
print(f"{'batch':>6} {'ZeRO':>4} {'plain':>16} {'window':>16}  same loss and norm bits")
for r in rows["window"]:
    if r["gpus"] == 1:
        continue
    one_w = [x for x in rows["window"] if x["gpus"] == 1 and x["batch"] == r["batch"]][-1]
    p = [x for x in rows["plain"] if x["gpus"] == r["gpus"] and x["batch"] == r["batch"] and x["zero"] == r["zero"]]
    one_p = [x for x in rows["plain"] if x["gpus"] == 1 and x["batch"] == r["batch"]][-1]
    if not p:
        continue
    p = p[-1]
    same = r["final_loss"] == p["final_loss"] and r["grad_norm"] == p["grad_norm"]
    print(f"{r['batch']:>6} {r['zero']:>4} {p['step_ms_median']:7.1f} ms {p['tokens_per_s'] / one_p['tokens_per_s']:6.1%}"
          f" {r['step_ms_median']:7.1f} ms {r['tokens_per_s'] / one_w['tokens_per_s']:6.1%}  {same}"
          f"  (window: {r.get('nccl_window')}, {r['joules_per_step']:.1f} J against {p['joules_per_step']:.1f})")
PY
