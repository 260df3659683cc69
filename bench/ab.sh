#!/usr/bin/env bash
# A/B of two builds of cuda_train_bench on one GPU, in one call (how the attention kernels of
# commit e30d9dc were kept over a later variant: run 4, docs/perf-history.md). Expects
# .devtree/bin/cuda_train_bench and .devtree/bin/cuda_train_bench_old: pack with
#   AB_OLD=/path/to/old/cuda_train_bench bash bench/pack_devtree.sh build
# and run, after unpacking bin.tar.xz, bash .devtree/bench/ab.sh.
# AB_MODELS="gpt2-124m:32 llama-1b:8" picks the rows; PHASES="cross-entropy,lm head matmul" the
# profile's phases printed (default: the attention's; PHASES=all: every phase).
# AB_FLAG="--recompute-norms": the one build with and without that flag instead of two
# builds. AB_CUBLAS=torch: the one build, "new" with the cuBLAS of torch's wheel on the library
# path, "old" with the toolkit's (each row prints the cuBLASLt version it loaded).
# AB_PROFILE=0: without --profile (step times only). ROUNDS (default 2).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd); OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source "$(dirname "$0")/device_env.sh" "$here"
nvidia-smi --query-gpu=name --format=csv,noheader
profile=--profile; [[ ${AB_PROFILE:-1} == 0 ]] && profile=
for round in $(seq "${ROUNDS:-2}"); do
for mb in ${AB_MODELS:-gpt2-124m:32 llama-1b:8 llama7b-8l:2}; do
  set -- ${mb/:/ }
  for v in new old; do
    bin=$here/bin/cuda_train_bench flag= runner=ours
    if [[ -n ${AB_CUBLAS:-} ]]; then [[ $v == new ]] && runner=ours_torch_cublas
    elif [[ -n ${AB_FLAG:-} ]]; then [[ $v == old ]] && flag=$AB_FLAG
    else [[ $v == old ]] && bin=$here/bin/cuda_train_bench_old; fi
    if ! $runner "$bin" --model "$1" --batch "$2" --steps 10 $profile $flag --json "$OUT/ab_$v.jsonl" \
        > "$OUT/ab_$v.log" 2>&1; then
      echo "$v $1 $2: $runner $bin failed:"; tail -3 "$OUT/ab_$v.log"; continue
    fi
    tail -1 "$OUT/ab_$v.jsonl" | PHASES=${PHASES:-attention fwd,attention bwd} python3 -c "
import json,os,sys
j=json.loads(sys.stdin.read()); p=j.get('phase_ms_per_step', {}); ph=os.environ['PHASES']
ks=sorted(p, key=lambda k: -p[k]) if ph=='all' else [k for k in ph.split(',') if k in p]
print('$v${flag:+ $flag}', j['model'], j['batch'], 'cublasLt %s'%j.get('cublaslt_version'), 'step %.2f'%j['step_ms_median'], 'loss %.9f'%j['final_loss'], 'att keys %s'%j['attention_chunk'], 'host queue %.2f'%j.get('host_queue_ms_per_step', 0), ', '.join('%s %.2f'%(k, p[k]) for k in ks))"
  done
done
done
