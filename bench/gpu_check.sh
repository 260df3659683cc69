#!/usr/bin/env bash
# One call on the GPU machine: correctness tests, then the timing table side by side with the
# PyTorch peer. Run from the tree root (the device tool's working copy) as
#   bash .devtree/bench/gpu_check.sh [cudnntests] [tests] [ranks] [comm] [bench] [torch] [profile]
#                                    [fp16] [variants] [whole] [apart] [norms]
#                                    [determinism]
# determinism: the peer on each row as it is timed (flash attention's backward adds dQ with
# atomics) and under torch.use_deterministic_algorithms(True), each after a check that two
# trainings of RERUN_STEPS (default 2) steps from the same seeds agree bit for bit.
# ranks: several benchmake-train ranks sharing this GPU (DP, TP, PP, sequence parallelism against
# one rank; cuda_ranks_test, a few minutes: its own call when time is short; RANKS_FILTER picks
# tests by gtest filter).
# ATTENTIONS="flash cudnn" times each model with each attention implementation (default auto,
# the backend's default: cuDNN when usable); CHUNKS="0 512 1024" times each cuDNN backward key
# block (0: all keys in one call; default: the backend's); TUNES="on off" times each with and
# without the matmul tuner (--no-tune);
# tests run the cuDNN attention parity tests first (CUDNN_TESTS=0 skips that head start).
# fp16 times, on the same rows, our fp16 (dynamic loss scaling) and bf16 and PyTorch's fp16
# (autocast + GradScaler) and bf16 (TORCH_BF16=0 leaves PyTorch's bf16 out; OURS_ONLY=1 leaves
# PyTorch out), and prints the ratios.
# TORCH_FLAGS=--deterministic passes flags to the peer in torch (like for like: issue 16 holds
# our reruns to bit-identical).
# Binaries come prebuilt in .devtree/bin (built on the Debian machine: nvcc 13, sm_90a);
# libfmt comes from .debs when the machine lacks it. Logs go to $OUT.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)   # the .devtree
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bin=$here/bin
want() { [[ " $* " == *" all "* ]] && return 0; for w in "${MODES[@]}"; do [[ $w == "$1" ]] && return 0; done; return 1; }
MODES=("$@"); [[ ${#MODES[@]} -eq 0 ]] && MODES=(all)
source "$(dirname "$0")/device_env.sh" "$here"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
echo "cuDNN from: ${cudnn_dir:-none} $(ls "$cudnn_dir"/libcudnn.so.9* 2>/dev/null | head -1)" | tee -a "$OUT/gpu.txt"

if want cudnntests; then  # the cuDNN attention tests alone (also part of tests)
  ours "$bin/cuda_ops_test" --gtest_color=no --gtest_filter='*Cudnn*' 2>&1 | tee "$OUT/cudnn.log" | grep -E "^\[  (FAILED|PASSED|SKIPPED) |note:|Failure|Expected|Which is|failed|cuDNN" | head -40
  ours "$bin/cuda_model_test" --gtest_color=no --gtest_filter='*Cudnn*' 2>&1 | tee -a "$OUT/cudnn.log" | grep -E "^\[  (FAILED|PASSED|SKIPPED) |cudnn .*f16 grad.*e-0[0-1]|Failure|Expected|Which is|failed" | head -40
fi
if want tests; then
  ours "$bin/cuda_ops_test" --gtest_color=no 2>&1 | tee "$OUT/tests.log" | grep -E "^\[  (FAILED|PASSED|SKIPPED) |rel err|note:|Failure|Expected|Which is" | head -80
  ours "$bin/cuda_model_test" --gtest_color=no 2>&1 | tee -a "$OUT/tests.log" | grep -E "^\[  (FAILED|PASSED|SKIPPED) |worst|mean rel|Failure|Expected|Which is|f16 grad.*e-0[0-1]" | head -60
  ours "$bin/cuda_comm_timing_test" --gtest_color=no 2>&1 | tee -a "$OUT/tests.log" | grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure|Expected|Which is" | head -20
  OMP_NUM_THREADS=8 ours "$bin/cuda_backend_test" --gtest_color=no 2>&1 | tee -a "$OUT/tests.log" | grep -E "^\[  (FAILED|PASSED|SKIPPED) |worst|mean rel|note:|Failure|Expected|Which is|error" | head -60
  grep -cE "^\[       OK \]" "$OUT/tests.log" | sed 's/^/tests OK: /'
fi
if want ranks; then  # several ranks sharing this GPU (Gloo staged through host memory)
  BENCHMAKE_TRAIN=$bin/benchmake-train ours "$bin/cuda_ranks_test" --gtest_color=no \
    --gtest_filter="${RANKS_FILTER:-*}" 2>&1 | tee "$OUT/ranks.log" |
    grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[       OK|loss rel|Failure|Expected|Which is|failed" | head -80
fi
if want comm; then  # the NCCL communicator (trainer/dist/); tests needing 2+ GPUs skip on one
  ours "$bin/nccl_communicator_test" --gtest_color=no 2>&1 | tee "$OUT/comm.log" | grep -E "^\[  (FAILED|PASSED|SKIPPED|     OK) |skipped:|Failure|rank [0-9]|error while loading" | head -40
fi

# MODELS="gpt2-124m:16 llama-1b:4 llama7b-8l:1" picks other rows (bench, variants, torch)
# CLOCKS=1: nvidia-smi samples the SM clock and the power every 100 ms while each bench and torch
# row runs; "clocks NAME" prints their medians over the busy samples (power at 60% of the row's
# largest or more: the timed steps, not start-up or compilation), and the share of them in which
# the driver held the clock down for the power cap (clocks_event_reasons: SW power cap, 0x4).
# Run 68: both sides' steps run at the 700 W cap, ours at a lower clock.
clocks_start() {
  [[ ${CLOCKS:-0} == 1 ]] || return 0
  nvidia-smi --query-gpu=clocks.sm,power.draw,clocks_event_reasons.active \
    --format=csv,noheader,nounits -lms 100 \
    > "$OUT/clocks_$1.csv" 2>/dev/null &
  clocks_pid=$!
}
clocks_stop() {
  [[ -n ${clocks_pid:-} ]] || return 0
  kill "$clocks_pid" 2>/dev/null; wait "$clocks_pid" 2>/dev/null; clocks_pid=
  python3 - "$OUT/clocks_$1.csv" "$1" <<'PY' | tee -a "$OUT/bench.log"
import statistics, sys
rows = []
for line in open(sys.argv[1]):
    try:
        mhz, watts, reasons = line.split(",")
        rows.append((float(mhz), float(watts), int(reasons, 16)))
    except ValueError:
        pass
busy = [r for r in rows if rows and r[1] >= 0.6 * max(r[1] for r in rows)]
if busy:
    capped = sum(1 for r in busy if r[2] & 0x4)
    print(f"clocks {sys.argv[2]}: SM {statistics.median(r[0] for r in busy):.0f} MHz, "
          f"power {statistics.median(r[1] for r in busy):.0f} W over {len(busy)} busy samples, "
          f"power-capped in {capped}")
PY
}

models=("gpt2-124m 32" "llama-1b 8" "llama7b-8l 2")
if [[ -n ${MODELS:-} ]]; then models=(); for m in $MODELS; do models+=("${m/:/ }"); done; fi
if want bench; then
  for mb in "${models[@]}"; do
    set -- $mb
    for attn in ${ATTENTIONS:-auto}; do
      for ch in ${CHUNKS:-default}; do
        for tn in ${TUNES:-on}; do
          flags=(); [[ $ch != default ]] && flags=(--attention-chunk "$ch")
          [[ $tn == off ]] && flags+=(--no-tune)
          clocks_start "ours_$1_$2"
          ours "$bin/cuda_train_bench" --model "$1" --batch "$2" --attention "$attn" "${flags[@]}" --tuning-log --json "$OUT/bench.jsonl" > "$OUT/run.log" 2>&1
          clocks_stop "ours_$1_$2"
          grep "^tuning" "$OUT/run.log" >> "$OUT/tuning.log"
          grep -v "^tuning" "$OUT/run.log" | tail -2 | sed "s/^/[$attn $ch tune-$tn] /" | tee -a "$OUT/bench.log"
        done
      done
    done
  done
fi
if want variants; then
  ours "$bin/cuda_train_bench" --model gpt2-124m --batch 32 --unfused --json "$OUT/variants.jsonl" 2>&1 | grep SUMMARY | sed 's/^/unfused epilogues: /' | tee -a "$OUT/bench.log"
  ours "$bin/cuda_train_bench" --model llama7b-8l --batch 2 --recompute --json "$OUT/variants.jsonl" 2>&1 | grep SUMMARY | sed 's/^/recompute: /' | tee -a "$OUT/bench.log"
  ours "$bin/cuda_train_bench" --model llama-1b --batch 8 --recompute --json "$OUT/variants.jsonl" 2>&1 | grep SUMMARY | sed 's/^/recompute: /' | tee -a "$OUT/bench.log"
  # Issue 16's candidate: the norms' outputs recomputed in the backward (expected: -1.0 GiB on
  # the 7B-width row, ~1% slower; docs/PERFORMANCE.md).
  # and the classifier's logits chunk 8192 -> 2048 rows (expected: -0.37 GiB there, four head
  # GEMMs instead of one).
  for mb in "${models[@]}"; do
    set -- $mb
    ours "$bin/cuda_train_bench" --model "$1" --batch "$2" --recompute-norms --json "$OUT/variants.jsonl" 2>&1 | grep SUMMARY | sed 's/^/recompute norms: /' | tee -a "$OUT/bench.log"
    ours "$bin/cuda_train_bench" --model "$1" --batch "$2" --chunk 2048 --json "$OUT/variants.jsonl" 2>&1 | grep SUMMARY | sed 's/^/logits chunk 2048: /' | tee -a "$OUT/bench.log"
  done
fi
if want variants || want whole; then  # whole: this variant alone
  # the masters whole in fp32 beside the bf16 copy instead of split into it and a 16-bit low
  # half (the default since run 27: +3.5 GiB on the 7B-width row, the same bits)
  for mb in "${models[@]}"; do
    set -- $mb
    ours "$bin/cuda_train_bench" --model "$1" --batch "$2" --whole-masters --json "$OUT/variants.jsonl" 2>&1 | grep SUMMARY | sed 's/^/whole masters: /' | tee -a "$OUT/bench.log"
  done
fi
if want variants || want apart; then  # apart: this variant alone
  # every layer's activations in storage of their own instead of as many as fit over the
  # gradients written after their backward (the default since run 29 with one micro-batch a
  # step: 7 of 8 layers on the 7B-width row since run 30, 3 of 16 on LLaMA 1B, none on GPT-2)
  for mb in "${models[@]}"; do
    set -- $mb
    ours "$bin/cuda_train_bench" --model "$1" --batch "$2" --activations-apart --json "$OUT/variants.jsonl" 2>&1 | grep SUMMARY | sed 's/^/activations apart: /' | tee -a "$OUT/bench.log"
  done
fi
if want norms; then  # the norms recomputed alone (variants has it too)
  for mb in "${models[@]}"; do
    set -- $mb
    ours "$bin/cuda_train_bench" --model "$1" --batch "$2" --recompute-norms --json "$OUT/variants.jsonl" 2>&1 | grep SUMMARY | sed 's/^/recompute norms: /' | tee -a "$OUT/bench.log"
  done
fi
if want profile; then  # PROFILE_MODELS="llama-1b:8" profiles those rows only; PRECISIONS="bf16 fp16"
  prof=(); for m in ${PROFILE_MODELS:-}; do prof+=("${m/:/ }"); done
  [[ ${#prof[@]} -eq 0 ]] && prof=("${models[@]}")
  for mb in "${prof[@]}"; do
    set -- $mb
    for attn in ${ATTENTIONS:-auto}; do
      for p in ${PRECISIONS:-bf16}; do
        ours "$bin/cuda_train_bench" --model "$1" --batch "$2" --precision "$p" --steps 10 --profile --attention "$attn" --json "$OUT/profile.jsonl" >> "$OUT/profile.log" 2>&1
        tail -1 "$OUT/profile.jsonl" | python3 -c "import json,sys; j=json.loads(sys.stdin.read()); p=j.get('phase_ms_per_step',{}); t=sum(p.values()); print(j['model'], j.get('dtype','bf16'), j.get('attention','flash'), 'step', round(j['step_ms_median'],1), 'ms;', ', '.join(f'{k} {v:.1f} ({100*v/t:.0f}%)' for k,v in sorted(p.items(), key=lambda x:-x[1])))"
      done
    done
  done
fi
if want torch; then
  cp "$here/bench/torch_reference.py" /tmp/torch_reference.py
  for mb in "${models[@]}"; do
    set -- $mb
    clocks_start "torch_$1_$2"
    PYTHONUNBUFFERED=1 python3 /tmp/torch_reference.py --model "$1" --batch "$2" ${TORCH_FLAGS:-} --json "$OUT/torch.jsonl" 2>&1 | grep SUMMARY | tee -a "$OUT/bench.log"
    clocks_stop "torch_$1_$2"
  done
fi
if want determinism; then
  cp "$here/bench/torch_reference.py" /tmp/torch_reference.py
  for mb in "${models[@]}"; do
    set -- $mb
    for det in "" --deterministic; do
      PYTHONUNBUFFERED=1 python3 /tmp/torch_reference.py --model "$1" --batch "$2" $det --rerun-check "${RERUN_STEPS:-2}" --json "$OUT/determinism.jsonl" 2>&1 | grep -E '^SUMMARY|"error"|Error' | tee -a "$OUT/bench.log"
    done
  done
fi
if want fp16; then
  cp "$here/bench/torch_reference.py" /tmp/torch_reference.py
  for mb in "${models[@]}"; do
    set -- $mb
    for p in fp16 bf16; do
      ours "$bin/cuda_train_bench" --model "$1" --batch "$2" --precision $p --json "$OUT/fp16.jsonl" 2>&1 | grep SUMMARY | tee -a "$OUT/fp16.log"
    done
    [[ ${OURS_ONLY:-0} == 1 ]] && continue
    for p in fp16 $([[ ${TORCH_BF16:-1} == 1 ]] && echo bf16); do
      PYTHONUNBUFFERED=1 python3 /tmp/torch_reference.py --model "$1" --batch "$2" --precision $p --json "$OUT/fp16-torch.jsonl" 2>&1 | grep SUMMARY | tee -a "$OUT/fp16.log"
    done
  done
  echo "== fp16 table (tokens/s; ratios in the same call)"
  python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
def load(p):
    return [json.loads(l) for l in open(p)] if os.path.exists(p) else []
ours = {(r["model"], r.get("dtype", "bf16")): r for r in load(f"{out}/fp16.jsonl")}
torch = {(r["model"], r.get("dtype", "bf16")): r for r in load(f"{out}/fp16-torch.jsonl") if "tokens_per_s" in r}
def tps(d, k):
    return d[k]["tokens_per_s"] if k in d else None
def ratio(a, b):
    return f"{a / b:.3f}" if a and b else "-"
def num(x):
    return f"{x:9.0f}" if x else "        -"
for m in dict.fromkeys(k[0] for k in ours):
    o16, o16b, t16, t16b = tps(ours, (m, "f16")), tps(ours, (m, "bf16")), tps(torch, (m, "fp16")), tps(torch, (m, "bf16"))
    r = ours.get((m, "f16"), {})
    print(f"{m:12s} ours fp16 {num(o16)} bf16 {num(o16b)} | torch fp16 {num(t16)} bf16 {num(t16b)} | "
          f"ours fp16/bf16 {ratio(o16, o16b)}, fp16 ours/torch {ratio(o16, t16)}, bf16 ours/torch {ratio(o16b, t16b)}, "
          f"torch fp16/bf16 {ratio(t16, t16b)} | ours fp16 skipped {r.get('skipped_steps', '-')} scale {r.get('loss_scale', '-')} "
          f"loss {r.get('final_loss', float('nan')):.3f} plan {r.get('plan_GiB', float('nan')):.1f} GiB")
PY
fi
echo "== table"
python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
def load(p):
    return [json.loads(l) for l in open(p)] if os.path.exists(p) else []
ours = {(r["model"], r.get("batch"), r.get("attention", "flash") + (f"/{r['attention_chunk']}" if r.get("attention") == "cudnn" else "") + ("" if r.get("matmul_tuning", True) else "/notune")): r for r in load(f"{out}/bench.jsonl")}
torch = {(r["model"], r.get("batch")): r for r in load(f"{out}/torch.jsonl") if "tokens_per_s" in r}
for (m, b, attn), r in ours.items():
    t = torch.get((m, b))
    line = f"{m:12s} B={b} {attn:17s} ours {r['tokens_per_s']:9.0f} tok/s MFU6N {100*r['mfu_6n_all']:.1f}% PaLM {100*r['mfu_palm_all']:.1f}% mem plan {r['plan_GiB']:.1f} used {r['device_used_GiB']:.1f} (after Create {r.get('device_used_after_create_GiB', float('nan')):.1f}) GiB loss {r['final_loss']:.3f}"
    if t:
        line += f" | torch {t['tokens_per_s']:9.0f} tok/s PaLM {100*t['mfu_all']:.1f}% mem {t['peak_mem_alloc_GiB']:.1f}/{t['peak_mem_reserved_GiB']:.1f} GiB | ratio {r['tokens_per_s']/t['tokens_per_s']:.3f}"
        # NVML's energy counters, where both timed windows last long enough for them (nvml_gpu.h)
        if min(r.get("energy_window_s", 0), t.get("energy_window_s", 0)) >= 3:
            line += f" | J/step ours {r['joules_per_step']:.1f} ({r['watts_mean']:.0f} W) torch {t['joules_per_step']:.1f} ({t['watts_mean']:.0f} W)"
    print(line)
PY
