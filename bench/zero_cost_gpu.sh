#!/usr/bin/env bash
# What each ZeRO stage costs a step on one GPU (issue 38, goal 2: ZeRO-3 >= 1.2x FSDP2): the
# same model and batch at zero 0, 1, 2 and 3 on a world of one, each with --profile (the compute
# stream's phases), so that the step time each stage adds shows beside the phases that did not
# move. At a world of one the collectives are local copies; what is left over the phases is the
# stage's own work (casts, copies into slices, the optimizer over fp32 masters).
#   bash bench/zero_cost_gpu.sh      (from the tree root; MODELS default "llama7b-8l:1:0,1,2,3 llama2-7b:1:3")
# MODELS: MODEL:BATCH:STAGES entries, 4096 tokens a row; FLAGS: added to every run (e.g. --nccl,
# or --whole-masters: the fp32 masters whole, and ZeRO-3's cast at gather time; such rows say
# "whole"). Calls append to the same table.
# Binaries from .devtree/bin (bench/pack_devtree.sh; ONLY="cuda_train_bench" suffices).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
[[ ! -d .devtree/bin ]] && tar -C .devtree -xJf .devtree/bin.tar.xz
source bench/device_env.sh .devtree
flags=$(tr -c 'a-z0-9\n' _ <<<"${FLAGS:-}")
for entry in ${MODELS:-llama7b-8l:1:0,1,2,3 llama2-7b:1:3}; do
  IFS=: read -r model batch stages <<<"$entry"
  for z in ${stages//,/ }; do
    ours .devtree/bin/cuda_train_bench --model "$model" --batch "$batch" --seq 4096 --zero "$z" \
      --warmup "${WARMUP:-5}" --steps "${STEPS:-15}" --profile ${FLAGS:-} \
      --json "$OUT/zero_cost.jsonl" >"$OUT/$model-b$batch-z$z$flags.log" 2>&1 ||
      { echo "$model zero $z failed:"; tail -n 5 "$OUT/$model-b$batch-z$z$flags.log"; }
    grep SUMMARY "$OUT/$model-b$batch-z$z$flags.log"
  done
done
python3 - "$OUT/zero_cost.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
names = sorted({k for r in rows for k in r.get("phase_ms_per_step", {})})
print(f"{'run':24} {'step ms':>8} {'phases':>8} {'rest':>7} {'comm wait':>9} " + " ".join(f"{n[:12]:>12}" for n in names))
for r in rows:
    ph = r.get("phase_ms_per_step", {})
    tot = sum(ph.values())
    tag = f"{r['model']} b{r['batch']} z{r['zero']}" + ("" if r.get("split_masters", True) else " whole")
    print(f"{tag:24} {r['step_ms_median']:8.1f} {tot:8.1f} {r['step_ms_median'] - tot:7.1f} "
          f"{r['comm_wait_ms_per_step']:9.1f} " + " ".join(f"{ph.get(n, 0):12.1f}" for n in names))
PY
