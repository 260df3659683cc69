#!/usr/bin/env bash
# One call on a one-GPU machine after a session's merges: the CUDA tests (gpu_check.sh tests),
# the default BENCHFILE on cuda through the engine (gpu_pipeline.sh), every example's smoke
# targets on cuda (examples_gpu.sh), then a check that no process a step started is left
# (the guardian, docs/ARCHITECTURE.md). Pack first:
#   ONLY="benchmake benchmake-train cuda_ops_test cuda_model_test cuda_comm_timing_test \
#         cuda_backend_test" bash bench/pack_devtree.sh build-ci
# then run with carry [".devtree"]: bash bench/session_check_gpu.sh. Logs: $OUT/session.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
logs=$(mktemp -d)
tar -C .devtree -xJf .devtree/bin.tar.xz
t0=$(date +%s)
OUT=$logs bash .devtree/bench/gpu_check.sh tests > "$logs/check.log" 2>&1; echo "gpu_check tests: rc=$?"
grep -hE '^\[  (PASSED|FAILED) |tests? failed|FAILED TEST' "$logs/check.log" | head -20
OUT=$logs bash bench/gpu_pipeline.sh > "$logs/pipeline.log" 2>&1; echo "gpu_pipeline: rc=$?"
tail -15 "$logs/pipeline.log"
OUT=$logs bash .devtree/bench/examples_gpu.sh > "$logs/examples.log" 2>&1; echo "examples_gpu: rc=$?"
grep -hE 'failed|FAILED|built|error' "$logs/examples.log" | tail -15
echo "left running after the builds (none expected):"
ps -eo pid,ppid,etimes,args | grep -E 'benchmake|sleep' | grep -v grep || echo "  none"
echo "wall: $(( $(date +%s) - t0 )) s"
tar -C "$logs" -cJf "$OUT/session.tar.xz" .
