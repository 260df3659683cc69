#!/usr/bin/env bash
# On the GPU machine: the repository's default BENCHFILE.toml with every training
# step on `device = "cuda"`, run by the real engine (benchmake + ninja), then its
# report; then the Hugging Face load check of the trainer's checkpoints.
# Run from the tree root of the device tool's copy as
#   bash bench/gpu_pipeline.sh
# Binaries come prebuilt in .devtree/bin (benchmake and benchmake-train, built on the
# Debian machine with CUDA, sm_90a); the Debian libraries they need that the GPU
# machine lacks travel packed in .devtree/lib/extra-libs.tar.xz. Logs go to $OUT.
set -uo pipefail
root=$(pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bin=$root/.devtree/bin
source "$(dirname "$0")/device_env.sh" "$root/.devtree"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"

ws=/tmp/ws; rm -rf $ws; mkdir -p $ws
cp -r "$root/data" "$root/README.md" "$root/docs" $ws/
# Every training step on cuda; the data-parallel one (a rank per GPU, NCCL) only where the
# machine has 2 GPUs or more (on one GPU it stays on the CPU: its ranks are CPU processes).
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
awk -v gpus="$gpus" '/^\[target\./ { dp = ($0 ~ /_dp[0-9]/) && gpus < 2 }
  !dp { sub(/^device = "cpu"/, "device = \"cuda\"") } { print }' \
  "$root/BENCHFILE.toml" > $ws/BENCHFILE.toml
grep -c '^device = "cuda"' $ws/BENCHFILE.toml | sed 's/^/targets on cuda: /'
export BENCHMAKE_CACHE_DIR=$ws/cache
{
  echo "== benchmake build (device = cuda)"
  time LD_LIBRARY_PATH=$ours_path "$bin/benchmake" -C $ws build
  echo "== second build (nothing to do)"
  time LD_LIBRARY_PATH=$ours_path "$bin/benchmake" -C $ws build
  echo "== report"
  LD_LIBRARY_PATH=$ours_path "$bin/benchmake" -C $ws report --format md
  LD_LIBRARY_PATH=$ours_path "$bin/benchmake" -C $ws report --format json -o "$OUT/report.json"
  echo "== compare pretrain pretrain_dp2 (one device against the data-parallel pair)"
  LD_LIBRARY_PATH=$ours_path "$bin/benchmake" -C $ws compare pretrain pretrain_dp2
} 2>&1 | tee "$OUT/pipeline.log"
cp $ws/out/pretrain/metrics.json "$OUT/pretrain-metrics.json" 2>/dev/null

echo "== Hugging Face load check"
cat > /tmp/train-wrapper <<EOF
#!/bin/sh
LD_LIBRARY_PATH=$ours_path exec "$bin/benchmake-train" "\$@"
EOF
chmod +x /tmp/train-wrapper
PYTHONUNBUFFERED=1 python3 "$root/tests/trainer/hf_load_check.py" --trainer /tmp/train-wrapper 2>&1 |
  tee "$OUT/hf_load_check.log"
echo "hf_load_check exit: ${PIPESTATUS[0]}"
