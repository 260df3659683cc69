#!/usr/bin/env bash
# On the GPU machine: metrics.json's "energy" (docs/METRICS.md) beside two other readings of the
# same GPU in one call. The run is LLaMA 1B (the llama2-7b preset at hidden 2048, 16 layers,
# 32 heads, SwiGLU 5632, vocabulary 32,000; the bytes of the KJV as data) at 8 x 2048, bf16,
# STEPS steps (default 60), LAYOUT (default TP1PP1DP1: DP2 puts 8 x 2048 on each of 2 GPUs),
# built by the real engine; during it nvidia-smi samples the board's
# power every 200 ms. Then cuda_train_bench times the same geometry and reads the same counter
# over its 30 timed steps. Expect watts_per_device near nvidia-smi's mean over the busy samples,
# and joules_per_token near the bench's joules a step / 16,384 tokens (both leave the warm-up
# steps out).
# nvidia-smi's samples are every GPU's. Run from the tree root of the device tool's copy (after bench/pack_devtree.sh, carrying
# .devtree): bash .devtree/bench/energy_gpu.sh. Logs go to $OUT.
set -uo pipefail
root=$(pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bin=$root/.devtree/bin
source "$(dirname "$0")/device_env.sh" "$root/.devtree"
ws=/tmp/energy-ws; rm -rf $ws; mkdir -p $ws
cp -r "$root/data" $ws/
cat > $ws/BENCHFILE.toml <<TOML
[target.kjv]
rule = "download"
url = "file:data/kjv.txt"
sha256 = "38c828bc0001a8e33f88a4a98917665cff1dbb6964a549ad51b34ea5293f752d"

[target.kjv_bytes]
rule = "tokenize"
input = ["kjv"]
tokenizer = "bytes"
valid_fraction = 0.05
seed = 1234

[target.llama_1b]
rule = "pretrain"
data = "kjv_bytes"
model = "llama2-7b"
overrides = { vocab = 32000, hidden = 2048, layers = 16, heads = 32, kv_heads = 32, ffn_hidden = 5632, max_seq = 2048 }
device = "cuda"
precision = "bf16"
layout = "${LAYOUT:-TP1PP1DP1}"
lbs = 8
mpe = 2048
steps = ${STEPS:-60}
lr = 3e-4
warmup_steps = 10
seed = 1234
TOML
export BENCHMAKE_CACHE_DIR=$ws/cache
ours "$bin/benchmake" -C $ws build kjv_bytes > "$OUT/energy_build.log" 2>&1
nvidia-smi --query-gpu=power.draw,clocks.sm,utilization.gpu --format=csv,noheader,nounits -lms 200 \
  > "$OUT/energy_smi.csv" 2>/dev/null &
smi=$!
ours "$bin/benchmake" -C $ws build llama_1b >> "$OUT/energy_build.log" 2>&1 || { echo "energy_gpu: the build FAILED"; tail -20 "$OUT/energy_build.log"; }
kill $smi 2>/dev/null; wait $smi 2>/dev/null
cp $ws/out/llama_1b/metrics.json "$OUT/energy_metrics.json" 2>/dev/null
ours "$bin/cuda_train_bench" --model llama-1b --batch 8 --json "$OUT/energy_bench.jsonl" 2>&1 | grep SUMMARY
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
m = json.load(open(f"{out}/energy_metrics.json"))
e = m["energy"]
print(f"metrics.json: {e['joules']:.0f} J over {e['seconds']:.1f} s on {e['devices']} GPU(s), "
      f"{e['tokens']} tokens: {e['joules_per_token'] * 1e3:.2f} mJ/token, "
      f"{e['watts_per_device']:.1f} W; {m['throughput']['tokens_per_device_per_s']:.0f} token/p/s")
busy = []
for line in open(f"{out}/energy_smi.csv"):
    try:
        w, mhz, util = (float(x) for x in line.split(","))
    except ValueError:
        continue
    if util >= 90:
        busy.append(w)
if busy:
    smi = sum(busy) / len(busy)
    print(f"nvidia-smi: {smi:.1f} W mean over {len(busy)} busy samples; "
          f"metrics/nvidia-smi = {e['watts_per_device'] / smi:.3f}")
b = [json.loads(l) for l in open(f"{out}/energy_bench.jsonl")][-1]
tokens = b["batch"] * b["seq"]
print(f"cuda_train_bench: {b['joules_per_step']:.1f} J a step over {b['energy_window_s']:.1f} s: "
      f"{b['joules_per_step'] / tokens * 1e3:.2f} mJ/token, {b['watts_mean']:.1f} W; "
      f"metrics/bench per token = {e['joules_per_token'] / (b['joules_per_step'] / tokens):.3f}")
PY
