#!/usr/bin/env bash
# Attention alone, ours against PyTorch's SDPA backends, one GPU, in one call:
#   ours  cuda_train_bench --model llama7b-8l (the 7B's width, 8 layers) --profile at each
#         ATT_BATCHES micro-batch of 4096 tokens, once per ATT_VARIANTS entry (default: the
#         deterministic backward over the plan's key blocks; one call over all keys; cuDNN's
#         non-deterministic backward), its "attention fwd" / "attention bwd" phases divided by the
#         8 layers: ms a call
#   ours alone  cuda_attention_bench at the same shape: the same calls outside a training step,
#         timed as the peer times its own (ATT_SURVEY=1 adds every engine configuration of the
#         one-call backward)
#   peer  bench/attention_peer.py at the same shape (32 heads of 128), each backend PyTorch has
#         (flash, cuDNN, memory-efficient), as it runs by default and deterministic
# and prints one table, ms a call and TFLOP/s by the causal count. Run from the tree root as
#   bash .devtree/bench/attention_gpu.sh
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)  # the .devtree
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source "$(dirname "$0")/device_env.sh" "$here"
IFS=, read -ra variants <<<"${ATT_VARIANTS:-,--attention-chunk 0,--nondeterministic-attention}"
for b in ${ATT_BATCHES:-2 4}; do
  for v in "${variants[@]}"; do
    ours "$here/bin/cuda_train_bench" --model llama7b-8l --batch "$b" --seq 4096 --profile $v \
      --json "$OUT/ours_att.jsonl" >"$OUT/ours_att_b$b${v//[ -]/}.log" 2>&1 ||
      echo "ours b=$b '$v' failed: $(tail -2 "$OUT/ours_att_b$b${v//[ -]/}.log")"
  done
  # ours alone, as the peer: the forward and each backward (ATT_SURVEY=1: every engine
  # configuration of the one-call backward too)
  ours "$here/bin/cuda_attention_bench" --batch "$b" --seq 4096 --heads 32 --head-dim 128 \
    ${ATT_SURVEY:+--survey} >>"$OUT/ours_alone.jsonl" 2>"$OUT/ours_alone_b$b.err"
  for d in "" --deterministic; do
    (cd "$here/peer" && python3 attention_peer.py --batch "$b" --seq 4096 --heads 32 --head-dim 128 $d) \
      >>"$OUT/peer_att.jsonl" 2>"$OUT/peer_att_b$b$d.err"
  done
done
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
rows = lambda f: [json.loads(l) for l in open(f"{out}/{f}") if l.startswith("{")] if os.path.exists(f"{out}/{f}") else []
layers, T, H, D = 8, 4096, 32, 128
print(f"{'attention, 32 heads of 128, causal, bf16':62} {'fwd ms':>7} {'TFLOP/s':>8} {'bwd ms':>7} {'TFLOP/s':>8}")
for r in rows("ours_att.jsonl"):
    p, B = r.get("phase_ms_per_step", {}), r["batch"]
    mm = 2 * B * H * T * T * D / 2
    f, b = p.get("attention fwd", float("nan")) / layers, p.get("attention bwd", float("nan")) / layers
    how = ("deterministic" if r.get("deterministic_attention") else "non-deterministic") + f", keys a call {r.get('attention_chunk')}"
    print(f"{f'ours cuDNN B={B} ({how})':62} {f:7.3f} {2*mm/f/1e9:8.0f} {b:7.3f} {5*mm/b/1e9:8.0f}")
for r in rows("ours_alone.jsonl"):
    if r.get("kind") == "benchmake-cuda-attention-survey":
        print(f"{'  survey: ' + r['config'][:52]:62} {'':7} {'':8} {r.get('ms', float('nan')):7.3f} "
              f"{r.get('tflops', float('nan')):8.0f} {'repeatable' if r.get('repeatable') else r.get('error', 'not repeatable')[:40]}")
        continue
    name = f"ours alone B={r['batch']} {r['what']}, keys a call {r['keys_per_call']}"
    cols = (f"{r['ms']:7.3f} {r['tflops']:8.0f} {'':7} {'':8}" if r["what"] == "forward"
            else f"{'':7} {'':8} {r['ms']:7.3f} {r['tflops']:8.0f}")
    print(f"{name:62} {cols}")
for r in rows("peer_att.jsonl"):
    name = f"torch {r['torch']} {r['backend']} B={r['batch']}" + (" deterministic" if r["deterministic"] else "")
    if "error" in r:
        print(f"{name:62} {r['error']}")
    else:
        print(f"{name:62} {r['fwd_ms']:7.3f} {r['fwd_tflops']:8.0f} {r['bwd_ms']:7.3f} {r['bwd_tflops']:8.0f}")
PY
