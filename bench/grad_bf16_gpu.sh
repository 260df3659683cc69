#!/usr/bin/env bash
# Gradients reduced in bf16 (grad_reduce = "bf16") with the backward's products writing the
# matrices' gradients in bf16 themselves (CudaDataParallel::GradBf16) against the
# build before it, which wrote them in fp32 for a staging pass to round, on the GPU machine in
# one call:
#   1. the tests: cuda_backend_test's bf16 reductions (the products' bf16 against the host's
#      rounding of the fp32 gradients; one rank's stages train stage 0's bits) and cuda_ranks_test's
#      (DP2 at every ZeRO stage, fp32 and bf16 work, against fp32 sums: the suites' 2% from step 21);
#   2. LLaMA 1B data parallel on every GPU at DP_BATCHES (default 2) rows of 2048, ZeRO 0-3, bf16
#      sums, the old build (.devtree/bin/cuda_train_bench_old: pack with AB_OLD=FILE) and this one,
#      each against one GPU in the same call (bench/multi_gpu.sh dpbatches, DP_PEER=0), and this
#      one's fp32 sums; then the scaling and joules a step of each side by side.
# Run from the tree root (the device tool's working copy): bash .devtree/bench/grad_bf16_gpu.sh
# Logs and JSON go to $OUT. GRAD_TESTS=0 leaves the tests out.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)  # the .devtree
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source "$(dirname "$0")/device_env.sh" "$here"
if [[ ${GRAD_TESTS:-1} != 0 ]]; then
  ours timeout 300 "$here/bin/cuda_backend_test" --gtest_filter='*Bf16*' 2>&1 | grep -E 'note|OK|FAIL|PASSED|Failure|Expected|Which|actual' | head -n 40
  BENCHMAKE_TRAIN=$here/bin/benchmake-train ours timeout 240 "$here/bin/cuda_ranks_test" \
    --gtest_filter='*Bf16*' 2>&1 | grep -E 'note|OK|FAIL|PASSED|SKIP|Failure' | head -n 40
fi
for way in staged direct fp32; do
  exe=cuda_train_bench reduce=bf16
  [[ $way == staged ]] && exe=cuda_train_bench_old
  [[ $way == fp32 ]] && reduce=fp32
  OUT=$OUT/$way RANK_EXE=$exe DP_PEER=0 GRAD_REDUCE=$reduce DP_BATCHES=${DP_BATCHES:-2} \
    DP_FLAGS="--steps 100" bash "$(dirname "$0")/multi_gpu.sh" dpbatches | grep -E 'x2048|fail'
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
ways = ("fp32", "staged", "direct")
rows = {w: [json.loads(l) for l in open(f"{out}/{w}/batches.jsonl") if l.startswith("{")] for w in ways}
def one(w, b):
    return [x for x in rows[w] if x["gpus"] == 1 and x["batch"] == b][-1]
print(f"{'batch':>6} {'ZeRO':>4} " + " ".join(f"{w + ' sums':>26}" for w in ways))
for r in rows["direct"]:
    if r["gpus"] == 1:
        continue
    cells = []
    for w in ways:
        m = [x for x in rows[w] if x["gpus"] == r["gpus"] and x["batch"] == r["batch"] and x["zero"] == r["zero"]]
        if not m:
            cells.append(f"{'-':>26}")
            continue
        m = m[-1]
        cells.append(f"{m['step_ms_median']:6.1f} ms {m['tokens_per_s'] / one(w, r['batch'])['tokens_per_s']:6.1%} "
                     f"{m['joules_per_step']:5.1f} J")
    print(f"{r['batch']:>6} {r['zero']:>4} " + " ".join(cells)
          + f"   final loss {r['final_loss']:.5f} (staged: "
          + ", ".join(f"{x['final_loss']:.5f}" for x in rows['staged'] if x['gpus'] == r['gpus']
                      and x['batch'] == r['batch'] and x['zero'] == r['zero']) + ")")
for w in ways:
    print(f"one GPU ({w} build), per batch: " + ", ".join(
        f"{x['batch']}x2048 {x['step_ms_median']:.1f} ms {x['joules_per_step']:.1f} J" for x in rows[w] if x["gpus"] == 1))
PY
