#!/usr/bin/env bash
# Several GPUs of one machine, ours against PyTorch in the same call (issue "Several GPUs"):
#   1. LLaMA 1B, 8 x 2048 per GPU: one GPU, then data parallel on every GPU (accum 1 and 4, and
#      ZeRO-2 at accum 1): ours (cuda_train_bench, NCCL) vs PyTorch DDP + torch.compile;
#      scaling efficiency = tokens/s/GPU on N GPUs / tokens/s on one GPU of the same machine.
#   2. Full LLaMA-2-7B, 1, 2 and 4 x 4096 per GPU (ZERO3_BATCHES): our ZeRO-3 vs PyTorch FSDP2 +
#      compile, the memory beside the peer's peak allocation.
#   3. Tensor and pipeline parallel on 4 GPUs, the suites' cases (Megatron's layouts): Aquila2-7B
#      TP2PP1DP2 (ZeRO-1, LBS 1 x 2048, GAS 8, bf16) against PyTorch's DTensor tensor parallel
#      (bench/tp_reference.py: TP2 x FSDP2 DP2 with sequence parallelism, loss_parallel and
#      per-block compile, torchtitan's 2-D recipe; with and without async TP), and GPT-3 6.7B TP2PP2
#      (vocabulary 50304, LBS 4 x 2048, GAS 16, fp16) against torch.distributed.pipelining
#      (bench/pp_reference.py: Schedule1F1B over 16 micro-batches, the same TP + SP inside each
#      stage, fp16 autocast with dynamic loss scaling), each peer right after ours; the table
#      prints both tokens/s/GPU, the ratio, both MFUs, the peer's MFU by torchtitan's formula
#      beside PyTorch's published figure (the peers' docstrings say why the shapes compare), both
#      memories, and the suites' published A800/A100 figures for context (other GPUs, other
#      frameworks, the whole 8-GPU layouts).
# Run from the tree root (the device tool's working copy) as
#   bash .devtree/bench/multi_gpu.sh [dp] [zero3] [tp] [sharding] [pp]  (default: all; tp: the
#       Aquila2 row and its peer; sharding: GPT-3 6.7B TP2 with ZeRO-2 over DP2, gpt3_paddle's
#       TP2PP1SH2SP4 at 4 GPUs, ours only so far; pp: the GPT-3 TP2PP2 row and its
#       pipeline peer; 4 GPUs. On 2 GPUs tp runs the Aquila2 row's TP2 half (DP1) and pp the
#       GPT-3 row's pipeline half (TP1PP2, GAS 8), each beside its peer at the same geometry)
#   zero3: ZERO3_BATCHES, ZERO3_FLAGS (ours' variants) and ZERO3_PEER_REDUCE (FSDP2's reduce_dtype) below
#   bash .devtree/bench/multi_gpu.sh dpbatches   ours only, LLaMA 1B at each micro-batch of DP_BATCHES
#       (default 2 4 8) on one GPU and data parallel on N at ZeRO 0-3, GRAD_REDUCE (default "fp32
#       bf16") on the wire, and PyTorch DDP at each micro-batch; prints the scaling of each and
#       ZeRO-0 against DDP (issue 38's goal 1). DP_ZEROS (default "0 1 2 3") picks the stages,
#       DP_FLAGS adds to every run of ours (e.g. "--steps 100", a longer window than the 30 steps'
#       1.6 s at 2 x 2048)
#   bash .devtree/bench/multi_gpu.sh overlap   bench/nccl_overlap_bench on N GPUs (OVERLAP_FLAGS adds
#       to it): ZeRO's all-gather and reduce-scatter beside bf16 products, NCCL's default kernels
#       against a symmetric window (ncclMemAlloc + ncclCommWindowRegister) at each CTA policy:
#       the products' slowdown, the collectives' bus bandwidth and the watts of each
#   bash .devtree/bench/multi_gpu.sh dpsweep   ours only, LLaMA 1B 8 (SWEEP_BATCH) x 2048 on one GPU and data
#       parallel on N without accumulation, once per SWEEP entry ZERO:CHANNELS[:ALGO[:PROTO]]
#       (NCCL's NCCL_MAX_NCHANNELS, NCCL_ALGO, e.g. Ring or Tree, and NCCL_PROTO, e.g. Simple or
#       LL128; "-" or left out: NCCL's own choice; default "0:- 1:- 2:- 0:8 0:4"; e.g. "0:-:Tree
#       0:-:Ring:LL128"), with SWEEP_FLAGS added to every run (e.g. --profile or --grad-reduce
#       bf16; the one-GPU row leaves --grad-reduce out); prints each one's scaling, where the
#       compute stream waited, and the reductions still running when the backward ended.
# Binaries come prebuilt in .devtree/bin (as for bench/gpu_check.sh); the PyTorch peer is
# ../shared/bench/multi_reference.py, carried unchanged into .devtree/peer/ with
# torch_reference.py beside it, and bench/tp_reference.py, bench/pp_reference.py (which import it). GPUS (default: all) sets N. Logs and JSON go to $OUT.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)   # the .devtree
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bin=$here/bin peer=$here/peer
MODES=("$@"); [[ ${#MODES[@]} -eq 0 ]] && MODES=(dp zero3 tp sharding pp)
want() { for w in "${MODES[@]}"; do [[ $w == "$1" ]] && return 0; done; return 1; }
# NVLink multicast stays off on these machines, for us and for PyTorch (GPU-MACHINE.md).
source "$(dirname "$0")/device_env.sh" "$here"
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
N=${GPUS:-$(nvidia-smi -L | wc -l)}
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv | tee "$OUT/gpus.txt"
nvidia-smi topo -m >> "$OUT/gpus.txt" 2>&1

# N ranks of cuda_train_bench (or RANK_EXE), torchrun-style environment (trainer/dist/rank_env.h);
# each rank's log in $OUT/TAG.rankR.log. ROW_LIMIT_S (default 0: none) stops a row (ours or the
# peer) after that long.
ranks() {
  local tag=$1 n=$2; shift 2
  local rdv; rdv=$(mktemp -d)
  local pids=()
  for ((r = 0; r < n; r++)); do
    RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n BENCHMAKE_RENDEZVOUS=$rdv \
      ours timeout "${ROW_LIMIT_S:-0}" "$bin/${RANK_EXE:-cuda_train_bench}" "$@" > "$OUT/$tag.rank$r.log" 2>&1 &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  grep -v "^tuning" "$OUT/$tag.rank0.log"
  [[ $rc -eq 0 ]] || { echo "a rank of $tag failed:"; tail -n 5 "$OUT/$tag".rank*.log; }
  rm -rf "$rdv"
}
torch_peer() {  # runs the peer from its folder, as its docstring says (ROW_LIMIT_S too)
  (cd "$peer" && PYTHONUNBUFFERED=1 timeout "${ROW_LIMIT_S:-0}" "$@")
}

if want dp; then
  ranks dp1 1 --model llama-1b --batch 8 --json "$OUT/ours.jsonl"
  for acc in 1 4; do ranks "dp$N-accum$acc" "$N" --model llama-1b --batch 8 --accum $acc --json "$OUT/ours.jsonl"; done
  # ZeRO-2: the gradients reduce-scattered, each rank updating its slices, the weights gathered.
  ranks "dp$N-zero2" "$N" --model llama-1b --batch 8 --zero 2 --json "$OUT/ours.jsonl"
  torch_peer python3 multi_reference.py --mode single --model llama-1b --batch 8 --json "$OUT/torch.jsonl"
  torch_peer torchrun --standalone --nproc_per_node="$N" multi_reference.py --mode ddp \
    --model llama-1b --batch 8 --accum 1,4 --json "$OUT/torch.jsonl"
fi
if want dpbatches; then
  # Issue 38's goal 1: scaling without accumulation at every ZeRO stage and every micro-batch of
  # DP_BATCHES (default "2 4 8" rows of 2048), each against one GPU at the same micro-batch;
  # GRAD_REDUCE (default "fp32 bf16") the gradients' type on the wire (--grad-reduce); DP_PEER=0
  # leaves PyTorch DDP out (a second call with other DP_FLAGS).
  rm -f "$OUT/batches.jsonl"
  for b in ${DP_BATCHES:-2 4 8}; do
    ranks "dp1-b$b" 1 --model llama-1b --batch "$b" ${DP_FLAGS:-} --json "$OUT/batches.jsonl"
    for g in ${GRAD_REDUCE:-fp32 bf16}; do
      for z in ${DP_ZEROS:-0 1 2 3}; do
        ranks "dp$N-b$b-zero$z-$g" "$N" --model llama-1b --batch "$b" --zero "$z" --grad-reduce "$g" \
          ${DP_FLAGS:-} --json "$OUT/batches.jsonl"
      done
    done
    [[ ${DP_PEER:-1} == 0 ]] ||
      torch_peer torchrun --standalone --nproc_per_node="$N" multi_reference.py --mode ddp \
        --model llama-1b --batch "$b" --json "$OUT/batches-torch.jsonl"
  done
  python3 - "$OUT/batches.jsonl" "$N" "$OUT/batches-torch.jsonl" <<'PY3'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
n = int(sys.argv[2])
ddp = {r["batch"]: r["tokens_per_s_per_gpu"] for r in
       ([json.loads(l) for l in open(sys.argv[3]) if l.startswith("{")] if os.path.exists(sys.argv[3]) else [])
       if r.get("kind") == "train" and r.get("world") == n}
one = {r["batch"]: r["tokens_per_s"] for r in rows if r["gpus"] == 1}
print(f"{'micro-batch':>11} {'reduce':>6} " + " ".join(f"{'ZeRO-' + str(z):>16}" for z in range(4)))
for b in sorted(one):
    for g in ("fp32", "bf16"):
        cells = []
        for z in range(4):
            r = [x for x in rows if x["gpus"] == n and x["batch"] == b and x["zero"] == z and x.get("grad_reduce", "fp32") == g]
            cells.append(f"{r[-1]['tokens_per_s']:8.0f} {r[-1]['tokens_per_s'] / one[b]:6.1%}" if r else f"{'-':>15}")
        if any(c.strip() != "-" for c in cells):
            z0 = [x for x in rows if x["gpus"] == n and x["batch"] == b and x["zero"] == 0 and x.get("grad_reduce", "fp32") == g]
            vs = f"  ZeRO-0 / DDP {z0[-1]['tokens_per_s'] / ddp[b]:.3f}" if z0 and b in ddp else ""
            print(f"{b:>8}x2048 {g:>6} " + " ".join(f"{c:>16}" for c in cells) + vs)
print(f"tok/s/GPU on {n} GPUs and the scaling against one GPU at the same micro-batch (target >= 97%); "
      f"ZeRO-0 against PyTorch DDP + compile at the same micro-batch (target >= 1.15)")
PY3
fi
if want overlap; then  # a collective beside the products, NCCL's ways (bench/nccl_overlap_bench.cc)
  RANK_EXE=nccl_overlap_bench ranks overlap "$N" ${OVERLAP_FLAGS:-}
fi
if want dpsweep; then
  rm -f "$OUT/sweep.jsonl"
  sb=${SWEEP_BATCH:-8}
  # The one-GPU baseline without --grad-reduce: a world of one rounds its gradients to bf16 too,
  # which is no part of the step the scaling compares against (run 159).
  one_flags=$(sed -E 's/--grad-reduce +[a-z0-9]+//' <<<"${SWEEP_FLAGS:-}")
  ranks sweep-dp1 1 --model llama-1b --batch "$sb" $one_flags --json "$OUT/sweep.jsonl"
  tags=(one-GPU)
  for v in ${SWEEP:-0:- 1:- 2:- 0:8 0:4}; do
    IFS=: read -r z ch algo proto <<<"$v"
    tag=dp$N-zero$z-channels${ch:--}
    nccl=()  # the entry's NCCL settings, each only where given
    [[ ${ch:--} != - ]] && nccl+=("NCCL_MAX_NCHANNELS=$ch")
    [[ ${algo:--} != - ]] && { nccl+=("NCCL_ALGO=$algo"); tag+=-$algo; }
    [[ ${proto:--} != - ]] && { nccl+=("NCCL_PROTO=$proto"); tag+=-$proto; }
    (for e in "${nccl[@]}"; do export "${e?}"; done
     ranks "$tag" "$N" --model llama-1b --batch "$sb" --zero "$z" ${SWEEP_FLAGS:-} --json "$OUT/sweep.jsonl")
    tags+=("$tag")
  done
  python3 - "$OUT/sweep.jsonl" "${tags[@]}" <<'PY2'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
if len(rows) != len(sys.argv) - 2: print(f"sweep: {len(rows)} rows for {len(sys.argv) - 2} runs")
one = rows[0]["tokens_per_s"] if rows else float("nan")
def tail(r):  # the reductions still running when the backward ended (reductions_ms)
    red = r.get("reductions_ms", {})
    return "".join(f" [unit {u}: queued {red[u]['queued']:.2f} reduce {red[u]['reduce']:.2f} "
                   f"+{red[u]['after_backward']:.2f} ms]"
                   for u in sorted(red, key=int) if red[u]["after_backward"] > 0)
for tag, r in zip(sys.argv[2:], rows):
    print(f"{tag:24} {r['tokens_per_s']:8.0f} tok/s/GPU  scaling {r['tokens_per_s'] / one:6.1%}  "
          f"step {r['step_ms_median']:6.1f} ms  comm wait {r['comm_wait_ms_per_step']:5.1f} ms"
          + "".join(f" ({k} {v:.2f})" for k, v in sorted(r.get("comm_wait_ms_per_step_by_site", {}).items()))
          + tail(r) + "  "
          f"J/step {r.get('joules_per_step', float('nan')):6.1f}  {r['device_used_GiB']:5.1f} GiB"
          + ("  " + " ".join(f"{k} {v:.1f}" for k, v in sorted(r["phase_ms_per_step"].items()))
             if "phase_ms_per_step" in r else ""))
PY2
fi
if want zero3; then  # at each micro-batch of ZERO3_BATCHES (default "1 2 4", issue 38's); ZERO3_FLAGS
  # adds to ours: one variant, or several separated by commas, each its own row before the peer
  # (e.g. ",--nccl-window": plain, then the window, with NCCL_CTA_POLICY=2 exported; "--zero3-keep
  # 6e9" keeps the last units' gathered weights, up to 6e9 parameters, to their backward);
  # ZERO3_STAGES (default 3) the stages of ours, "2 3" adds ZeRO-2 (the same without the gathers)
  IFS=, read -ra z3_variants <<<"${ZERO3_FLAGS:-}"; [[ ${#z3_variants[@]} -eq 0 ]] && z3_variants=("")
  for b in ${ZERO3_BATCHES:-1 2 4}; do
    for z in ${ZERO3_STAGES:-3}; do  # e.g. "2 3": ZeRO-2 beside, what ZeRO-3's own work costs
      for v in "${z3_variants[@]}"; do
        ranks "zero$z-b$b${v//[ -]/}" "$N" --model llama2-7b --batch "$b" --zero "$z" $v --json "$OUT/ours.jsonl"
      done
    done
    # The peer: multi_reference.py's FSDP2 through fsdp_reference.py (its device use recorded),
    # at each reduce_dtype of ZERO3_PEER_REDUCE (default fp32; "fp32 bf16": both, bf16 the same
    # arithmetic as ours with --grad-reduce bf16)
    for pr in ${ZERO3_PEER_REDUCE:-fp32}; do
      torch_peer torchrun --standalone --nproc_per_node="$N" fsdp_reference.py --reduce-dtype "$pr" \
        --model llama2-7b --batch "$b" --json "$OUT/torch.jsonl"
    done
  done
fi
if want tp && [[ $N -ge 2 ]]; then
  # 5 warm-up and 10 timed steps, as the peer (steps of seconds each). On 4 GPUs the suite's
  # TP2PP1DP2; on 2 its TP2 half (DP1), where the peer has no FSDP2 and one sync setting.
  tp_dp=$((N >= 4 ? 2 : 1)) tp_world=$((N >= 4 ? 4 : 2))
  ranks "aquila-tp2dp$tp_dp" "$tp_world" --model aquila2-7b --batch 1 --seq 2048 --accum 8 --tp 2 --zero 1 \
    --warmup 5 --steps 10 --json "$OUT/ours.jsonl"
  # The peer as FSDP2 does by default (gradients reduce-scattered every micro-batch) and with the
  # sync only on the step's last micro-batch (as ours); the table takes the faster.
  # Both with sequence parallelism (the peer's default); then async TP (torchtitan's
  # --enable_async_tensor_parallel) on the faster sync; where it fails the row says why
  # (async_tp_error) and ran without it.
  # At DP1 (no FSDP2, so one sync) also without SP: the table takes the peer's fastest.
  syncs=(every last "last --async-tp"); [[ $tp_dp == 1 ]] && syncs=(last "last --no-sp" "last --async-tp")
  for sync in "${syncs[@]}"; do
    torch_peer torchrun --standalone --nproc_per_node="$tp_world" tp_reference.py --model aquila2-7b --tp 2 \
      --batch 1 --seq 2048 --accum 8 --accum-sync $sync --json "$OUT/torch.jsonl"
  done
fi
if want sharding && [[ $N -ge 4 ]]; then
  # gpt3_paddle's TP2PP1SH2SP4 row at its 4-GPU equivalent: TP2 with ZeRO-2 (sharding stage 2)
  # over DP2, LBS 4 x 2048, fp16; GAS 16 where the suite has 64 (the step's length only).
  ranks gpt3-tp2dp2-zero2 4 --model gpt3-6.7b --vocab 50304 --batch 4 --seq 2048 --accum 16 --tp 2 \
    --zero 2 --precision fp16 --warmup 5 --steps 10 --json "$OUT/ours.jsonl"
fi
if want pp && [[ $N -ge 2 ]]; then
  # On 4 GPUs the suite's TP2PP2 at GAS 16; on 2 its pipeline half, TP1PP2 at GAS 8 (the same
  # bubble share on both sides: 1/9), PP_ACCUM overrides.
  pp_tp=$((N >= 4 ? 2 : 1)) pp_acc=${PP_ACCUM:-$((N >= 4 ? 16 : 8))}
  ranks "gpt3-tp${pp_tp}pp2" $((2 * pp_tp)) --model gpt3-6.7b --vocab 50304 --batch 4 --seq 2048 --accum "$pp_acc" \
    --tp "$pp_tp" --pp 2 --precision fp16 --warmup "${PP_WARMUP:-5}" --steps "${PP_STEPS:-10}" --json "$OUT/ours.jsonl"
  # PyTorch's pipeline peer on the same geometry: the micro-batches of 4 x 2048 through Schedule1F1B,
  # TP + SP inside each stage where TP > 1, fp16 autocast with dynamic loss scaling; PP_PEER_FLAGS adds to it
  # (e.g. --async-tp, or --schedule interleaved once ours has an interleaved schedule).
  torch_peer torchrun --standalone --nproc_per_node=$((2 * pp_tp)) pp_reference.py --model gpt3-6.7b --vocab 50304 \
    --tp "$pp_tp" --pp 2 --batch 4 --seq 2048 --accum "$pp_acc" --precision fp16 --warmup "${PP_WARMUP:-5}" \
    --steps "${PP_STEPS:-10}" ${PP_PEER_FLAGS:-} --json "$OUT/torch.jsonl"
fi

python3 - "$OUT" "$N" <<'PY'
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
import os
rows = lambda f: [json.loads(l) for l in open(f"{out}/{f}") if l.strip().startswith("{")] if os.path.exists(f"{out}/{f}") else []
ours = [r for r in rows("ours.jsonl")]
torch = [r for r in rows("torch.jsonl") if r.get("kind") == "train"]
def o(model, gpus, accum=1, zero=0):
    r = [x for x in ours if x["model"] == model and x["gpus"] == gpus and x["accum"] == accum and x["zero"] == zero]
    return r[-1] if r else None
def t(mode, model, world, accum=1):
    r = [x for x in torch if x["mode"] == mode and x["model"] == model and x["world"] == world and x.get("accum", 1) == accum]
    return r[-1] if r else None
print(f"\n{'row':44} {'ours tok/s/GPU':>15} {'torch tok/s/GPU':>16} {'ratio':>6} {'ours scaling':>13} {'torch scaling':>14} {'ours GiB':>9} {'torch GiB':>10}")
o1, t1 = o("llama-1b", 1), t("single", "llama-1b", 1)
for acc, zero in ((1, 0), (4, 0), (1, 2)):
    a, b = o("llama-1b", n, acc, zero), t("ddp", "llama-1b", n, acc)
    if not a or not b: continue
    so = a["tokens_per_s"] / o1["tokens_per_s"] if o1 else float("nan")
    st = b["tokens_per_s_per_gpu"] / t1["tokens_per_s_per_gpu"] if t1 else float("nan")
    print(f"{f'LLaMA 1B 8x2048 DP{n} ZeRO-{zero} accum {acc} (vs DDP)':44} {a['tokens_per_s']:15.0f} {b['tokens_per_s_per_gpu']:16.0f} {a['tokens_per_s']/b['tokens_per_s_per_gpu']:6.3f} {so:13.1%} {st:14.1%} {a['device_used_GiB']:9.1f} {b['peak_alloc_GiB_max']:10.1f}")
# Model-parallel rows: ours and its PyTorch peer (tp_reference.py, pp_reference.py) of the same
# model, TP and PP degrees; the fastest peer row where several ran. Scaling is not defined for
# them (neither model trains at these batches on one GPU). "MFU 6N" is 6 x all parameters on the
# 989.4 TFLOP/s peak for both; the peer's "titan" MFU is torchtitan's own formula, the one its
# published figure uses (printed beside it).
TITAN = "torchtitan Llama3 8B FSDP8xTP8 bf16, 64 H100: 25.6% (async TP 28.2%); FSDP-only 33-39%"
mp = [("aquila2-7b", 2, 1, "FlagScale TP2PP1DP4 on 8 A800: 3639.8 token/p/s", TITAN),
      ("gpt3-6.7b", 2, 1, "PaddleNLP TP2PP1 sharding 2 over 4 on 8 A100: 3811 token/p/s", None),
      ("gpt3-6.7b", 2, 2, "PaddleNLP TP2PP4 on 8 A100: 3791 token/p/s", TITAN + "; no published PP figure"),
      ("gpt3-6.7b", 1, 2, "PaddleNLP TP2PP4 on 8 A100: 3791 token/p/s (another layout)", TITAN + "; no published PP figure")]
if any(x.get("tp", 1) > 1 or x.get("pp", 1) > 1 for x in ours):
    print(f"\n{'model-parallel row (scaling: n/a)':44} {'ours tok/s/GPU':>15} {'torch tok/s/GPU':>16} {'ratio':>6} "
          f"{'ours MFU 6N':>11} {'torch MFU 6N':>12} {'torch titan':>11} {'ours GiB':>9} {'torch GiB':>10}")
for model, tp, pp, published, pt_pub in mp:
    r = [x for x in ours if x["model"] == model and x.get("tp") == tp and x.get("pp") == pp]
    p = [x for x in torch if x["model"] == model and x.get("tp") == tp and x.get("pp", 1) == pp
         and "tokens_per_s_per_gpu" in x]
    if not r:
        continue
    a, b = r[-1], (max(p, key=lambda x: x["tokens_per_s_per_gpu"]) if p else None)
    name = f"{model} TP{tp}PP{pp}DP{a['dp']} ZeRO-{a['zero']} ({a['dtype']})"
    if b:
        peer = (f"{b['tokens_per_s_per_gpu']:16.0f} {a['tokens_per_s'] / b['tokens_per_s_per_gpu']:6.3f} "
                f"{a['mfu_6n_all']:11.1%} {b['mfu_6N']:12.1%} {b.get('mfu_matmul', float('nan')):11.1%} "
                f"{a['device_used_GiB']:9.1f} {b['peak_alloc_GiB_max']:10.1f}")
    else:
        peer = f"{'-':>16} {'-':>6} {a['mfu_6n_all']:11.1%} {'-':>12} {'-':>11} {a['device_used_GiB']:9.1f} {'-':>10}"
    print(f"{name:44} {a['tokens_per_s']:15.0f} {peer}")
    print(f"{'':4}published: {published}")
    if b:
        how = ", ".join(k for k, on in (("SP", b.get("sequence_parallel")), ("async TP", b.get("async_tp")),
                                        (b.get("schedule", ""), "schedule" in b)) if on)
        print(f"{'':4}torch peer: {b['mode']} {how}, {b.get('precision', '')}; its MFU by torchtitan's formula "
              f"{b.get('mfu_matmul', float('nan')):.1%} against PyTorch's published {pt_pub or '-'}"
              + (f"; async TP off: {b['async_tp_error']}" if b.get("async_tp_error") else "")
              + (f"; {len(p)} peer rows, the fastest shown" if len(p) > 1 else ""))
print()
if any(x["model"] == "llama2-7b" and x["zero"] >= 2 for x in ours):
    print(f"{'ZeRO-2/3 row':66} {'ours':>9} {'FSDP2':>9} {'ratio':>6} {'allocated GiB':>14} {'used GiB':>13}  "
          "(tok/s/GPU; allocated: our arena / FSDP2's peak allocation; used: total - free, each side's)")
for mb in (1, 2, 4):
    rows = [x for x in ours if x["model"] == "llama2-7b" and x["gpus"] == n and x["zero"] >= 2 and x["batch"] == mb]
    b = [x for x in torch if x["mode"] == "fsdp2" and x["model"] == "llama2-7b" and x["world"] == n and x["batch"] == mb]
    # one row per ZERO3_FLAGS variant against each peer (FSDP2 reducing in fp32, and in bf16 where
    # ZERO3_PEER_REDUCE ran it); a bf16 row of ours beside the fp32 peer is the recommended peer,
    # beside the bf16 one the same arithmetic
    for a in rows if b else []:
        window = (" window" if a.get("nccl_window") else "") + (
            f" keep {a['zero3_keep_params']:.2g}" if a.get("zero3_keep_params") else "") + (
            " bf16 sums" if a.get("grad_reduce") == "bf16" else "") + (
            " attention one call" if a.get("attention_chunk") == a.get("seq") else "")
        for pr in ("fp32", "bf16"):
            p = [x for x in b if x.get("reduce_dtype", "fp32") == pr]
            if not p or (pr == "bf16" and a.get("grad_reduce") != "bf16"):
                continue
            b1, nan = p[-1], float("nan")
            outside = ", ".join(f"{k} {v:.2f}" for k, v in a.get("device_outside_arena_GiB", {}).items())
            name = f"LLaMA-2-7B {mb}x4096 ZeRO-{a['zero']}{window} on {n} (vs FSDP2 {pr})"
            print(f"{name:66} {a['tokens_per_s']:9.0f} {b1['tokens_per_s_per_gpu']:9.0f} {a['tokens_per_s']/b1['tokens_per_s_per_gpu']:6.3f} "
                  f"{a.get('plan_GiB', nan):6.1f} / {b1['peak_alloc_GiB_max']:5.1f} {a['device_used_GiB']:5.1f} / {b1.get('device_used_GiB', nan):5.1f}"
                  f"  (torch reserved {b1.get('peak_reserved_GiB_max', nan):.1f}; torch MFU PaLM {b1.get('mfu_palm_all', nan):.1%}"
                  + (f"; ours outside the arena: {outside}" if outside else "") + ")")
print("targets: scaling >= 97% on 4 GPUs without accumulation; ZeRO-3 >= 1.2x FSDP2 tokens/s/GPU at no more memory than its peak allocation; TP and PP rows >= 1.1x their PyTorch peer")
PY
