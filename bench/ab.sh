#!/usr/bin/env bash
# A/B of two builds of cuda_train_bench on one GPU, in one call (how the attention kernels of
# commit e30d9dc were kept over a later variant; docs/PERFORMANCE.md). Expects
# .devtree/bin/cuda_train_bench and .devtree/bin/cuda_train_bench_old: pack with
#   AB_OLD=/path/to/old/cuda_train_bench bash bench/pack_devtree.sh build
# and run, after unpacking bin.tar.xz, bash .devtree/bench/ab.sh.
# AB_MODELS="gpt2-124m:32 llama-1b:8" picks the rows; PHASES="cross-entropy,lm head matmul" the
# profile's phases printed (default: the attention's; PHASES=all: every phase).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd); OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source "$(dirname "$0")/device_env.sh" "$here"
nvidia-smi --query-gpu=name --format=csv,noheader
for round in 1 2; do
for mb in ${AB_MODELS:-gpt2-124m:32 llama-1b:8 llama7b-8l:2}; do
  set -- ${mb/:/ }
  for v in cuda_train_bench cuda_train_bench_old; do
    ours "$here/bin/$v" --model "$1" --batch "$2" --steps 10 --profile --json "$OUT/ab_$v.jsonl" > /dev/null 2>&1
    tail -1 "$OUT/ab_$v.jsonl" | PHASES=${PHASES:-attention fwd,attention bwd} python3 -c "import json,os,sys; j=json.loads(sys.stdin.read()); p=j['phase_ms_per_step']; ph=os.environ['PHASES']; ks=sorted(p, key=lambda k: -p[k]) if ph=='all' else ph.split(','); print('$v', j['model'], j['batch'], 'step %.2f'%j['step_ms_median'], 'loss %.9f'%j['final_loss'], 'att keys/seqs %s/%s'%(j['attention_chunk'], j.get('attention_batch_per_call')), ', '.join('%s %.2f'%(k, p[k]) for k in ks))"
  done
done
done
