#!/usr/bin/env bash
# Issue 38's 4-GPU acceptance rows, cut into device calls of under 10 minutes each, in the order
# that matters if the session's device time runs out (a 4-GPU machine is lent rarely, with about
# 30 minutes of device time a session). Each PART is one call of the device tool, from the tree
# root, after `bash bench/pack_devtree.sh BUILD` (ONLY= to stay under 64 MiB: cuda_train_bench,
# cuda_ranks_test, benchmake-train) and `tar -C .devtree -xJf .devtree/bin.tar.xz`:
#   bash .devtree/bench/x4_session.sh PART          (in this order, as the budget allows)
#   dp24   goal 1 at 2 and 4 x 2048: LLaMA 1B on one GPU and DP4 at ZeRO 0-3, bf16 sums, the arena
#          as an NCCL window at CTA policy 2, 100 steps, PyTorch DDP beside each micro-batch
#          (multi_gpu.sh dpbatches)                                                  (~6 min)
#   zero3a goal 2 at 1 and 2 x 4096: LLaMA-2-7B ZeRO-3 on 4, window, bf16 sums, the attention
#          backward in one call, against FSDP2
#          reducing in fp32 (multi_gpu.sh zero3)                                     (~8 min)
#   mp     goals 3-4: Aquila2-7B TP2PP1DP2 against tp_reference.py, GPT-3 6.7B TP2 with ZeRO-2
#          over DP2 (gpt3_paddle's TP2PP1SH2SP4 at 4 GPUs), GPT-3 6.7B TP2PP2 against
#          pp_reference.py (multi_gpu.sh tp sharding pp)                             (~9 min)
#   tests  cuda_ranks_test over NCCL, a rank per GPU (DP, TP x PP, ZeRO 2-3 with TP, bf16 sums,
#          kept units, the window: each equal to one rank)                           (~4 min)
#   dp8    goal 1 at 8 x 2048, and the issue's first table: DP4 ZeRO-0 accum 1 and 4 and ZeRO-2
#          against DDP (multi_gpu.sh dp)                                             (~8 min)
#   zero3b goal 2 at 4 x 4096, with the last units kept gathered (KEEP, default 7e9)  (~6 min)
# Logs and JSON go to $OUT/PART, packed into $OUT/PART.tgz (the device tool brings few files back).
set -uo pipefail
part=${1:-}
case $part in
  dp24 | zero3a | mp | tests | dp8 | zero3b) ;;
  *) echo "x4_session.sh: PART is dp24, zero3a, mp, tests, dp8 or zero3b, not '$part'" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)  # the .devtree
bench=$(dirname "$0")
OUT=${OUT:-/tmp/out}
out=$OUT/$part
mkdir -p "$out"
source "$bench/device_env.sh" "$here"
n=$(nvidia-smi -L | wc -l)
[[ $n -ge 4 ]] || echo "x4_session.sh: $n GPU(s) here; the rows are issue 38's 4-GPU ones"
export NCCL_CTA_POLICY=2
# goal 2's rows: the attention backward in one call (runs 183-184: -1.4 / -2.2% a step at 2 / 4 x 4096)
one_call="--nccl-window --grad-reduce bf16 --attention-chunk 0"
dp_batches() {
  OUT=$out GRAD_REDUCE=bf16 DP_BATCHES=$1 DP_FLAGS="--steps 100 --nccl-window" \
    bash "$bench/multi_gpu.sh" dpbatches
}
case $part in
  dp24)
    dp_batches "2 4" ;;
  tests)
    BENCHMAKE_TRAIN=$here/bin/benchmake-train ours timeout 500 "$here/bin/cuda_ranks_test" \
      --gtest_filter='*/nccl:NcclWindow*' ;;
  dp8)
    dp_batches 8
    OUT=$out bash "$bench/multi_gpu.sh" dp ;;
  zero3a)
    OUT=$out ROW_LIMIT_S=170 ZERO3_BATCHES="1 2" ZERO3_FLAGS="$one_call" \
      bash "$bench/multi_gpu.sh" zero3 ;;
  zero3b)
    OUT=$out ROW_LIMIT_S=200 ZERO3_BATCHES=4 \
      ZERO3_FLAGS="$one_call,$one_call --zero3-keep ${KEEP:-7e9}" \
      bash "$bench/multi_gpu.sh" zero3 ;;
  mp)
    OUT=$out ROW_LIMIT_S=170 bash "$bench/multi_gpu.sh" tp sharding pp ;;
esac > "$out/console.log" 2>&1
rc=$?
grep -E 'x2048|x4096|SUMMARY|PASSED|FAILED|tests ran|ratio|targets|fail' "$out/console.log" | tail -n 60
tar -C "$OUT" -czf "$OUT/$part.tgz" "$part" && rm -rf "$out"
exit $rc
