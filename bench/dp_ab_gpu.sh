#!/usr/bin/env bash
# A/B of two builds of cuda_train_bench on LLaMA 1B data parallel, in one call on the GPU
# machine: for each of ROUNDS (default 2) rounds, each build's one-GPU row and its rows on every
# GPU at DP_ZEROS (default "0 1 2 3") and DP_BATCHES (default 2) rows of 2048, no accumulation,
# with DP_FLAGS (default: bf16 sums, the arena as an NCCL window at NCCL_CTA_POLICY=2, 100
# steps), through bench/multi_gpu.sh dpbatches (DP_PEER=0); then per batch and stage the step,
# the scaling against the same build's one GPU, the joules a step, the device memory used and the
# final loss and gradient norm, old and new side by side.
# Expects .devtree/bin/cuda_train_bench_old: pack with AB_OLD=FILE bash bench/pack_devtree.sh.
# Run from the tree root (the device tool's working copy): bash .devtree/bench/dp_ab_gpu.sh
# Logs and JSON go to $OUT.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)  # the .devtree
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source "$(dirname "$0")/device_env.sh" "$here"
export NCCL_CTA_POLICY=${NCCL_CTA_POLICY:-2}
for round in $(seq "${ROUNDS:-2}"); do
  for way in old new; do
    exe=cuda_train_bench; [[ $way == old ]] && exe=cuda_train_bench_old
    OUT=$OUT/$way-$round RANK_EXE=$exe DP_PEER=0 GRAD_REDUCE=${GRAD_REDUCE:-bf16} \
      DP_BATCHES=${DP_BATCHES:-2} DP_ZEROS=${DP_ZEROS:-0 1 2 3} \
      DP_FLAGS=${DP_FLAGS:---steps 100 --nccl-window} \
      bash "$(dirname "$0")/multi_gpu.sh" dpbatches | grep -E 'fail' | head -n 20
  done
done
python3 - "$OUT" "${ROUNDS:-2}" <<'PY'
import json, os, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(way, r):
    f = f"{out}/{way}-{r}/batches.jsonl"
    return [json.loads(l) for l in open(f) if l.startswith("{")] if os.path.exists(f) else []
def cell(rows, b, z):
    one = [x for x in rows if x["gpus"] == 1 and x["batch"] == b]
    dp = [x for x in rows if x["gpus"] > 1 and x["batch"] == b and x["zero"] == z]
    if not one or not dp:
        return "—", None
    o, d = one[-1], dp[-1]
    s = d["tokens_per_s"] / o["tokens_per_s"]
    return (f"{d['step_ms_median']:6.2f} ms {s:6.1%} {d.get('joules_per_step', float('nan')):5.1f} J"
            f" {d.get('device_used_GiB', float('nan')):5.1f} GiB (1 GPU {o['step_ms_median']:.2f})"), d
print(f"{'round':>5} {'batch':>5} {'ZeRO':>4} {'old':>50} {'new':>50}  same loss / norm bits")
for r in range(1, rounds + 1):
    old, new = load("old", r), load("new", r)
    for b in sorted({x["batch"] for x in new}):
        for z in sorted({x["zero"] for x in new if x["gpus"] > 1}):
            (co, do), (cn, dn) = cell(old, b, z), cell(new, b, z)
            same = (do and dn and (do["final_loss"] == dn["final_loss"], do["grad_norm"] == dn["grad_norm"]))
            print(f"{r:>5} {b:>5} {z:>4} {co:>50} {cn:>50}  {same}")
PY
