#!/usr/bin/env python3
"""A stand-in for benchmake-train in end-to-end tests of reports, compare and
--remeasure: writes model.bin (bytes that depend only on --lr and --steps),
log.jsonl and metrics.json in the trainer's formats (docs/METRICS.md). The
loss curve is deterministic; the throughput differs on every run, as real
measurements do. Each run appends a line to --count (to count runs)."""
import argparse
import json
import math
import os
import random
import time

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--count", required=True)
a = p.parse_args()

with open(a.count, "a") as f:
    f.write("run\n")
rng = random.Random(1234)  # the data order: identical for every run
losses = []
for s in range(1, a.steps + 1):
    t = s * a.lr / 3e-4
    losses.append((2.1 + 8.8 * (1 + t / 6.0) ** -0.9) * (1 + rng.gauss(0, 0.01)))
tps = 2000.0 + random.SystemRandom().uniform(-150, 150)  # a measurement: differs per run
with open(os.path.join(a.out, "model.bin"), "wb") as f:
    f.write(json.dumps({"lr": a.lr, "steps": a.steps, "w": losses[-5:]}).encode())
with open(os.path.join(a.out, "log.jsonl"), "w") as f:
    f.write(json.dumps({"format": "benchmake-log", "version": 1}) + "\n")
    for i, l in enumerate(losses):
        f.write(json.dumps({"step": i + 1, "loss": l, "lr": a.lr, "ms": 100.0}) + "\n")
n = 1_000_000
metrics = {
    "format": "benchmake-metrics", "version": 1, "kind": "pretrain",
    "model": {"family": "llama", "preset": "tiny", "parameters": n, "layers": 2, "hidden": 64,
              "heads": 2, "head_dim": 32, "overrides": {}},
    "config": {"lbs": 4, "mpe": 64, "gas": 1, "dp": 1, "tp": 1, "pp": 1, "gbs": 4,
               "layout": "TP1PP1DP1", "precision": "fp32", "lr": a.lr, "steps": a.steps,
               "seed": 1234, "device": "cpu"},
    "throughput": {"tokens_per_s": tps, "tokens_per_device_per_s": tps, "step_ms_median": 128.0},
    "flops_per_token": {"6N": 6 * n, "palm": 6 * n + 12 * 2 * 64 * 64},
    "mfu": {"6N": tps * 6 * n / 1e11, "palm": tps * (6 * n + 12 * 2 * 64 * 64) / 1e11,
            "peak_flops_per_device": 1e11, "peak_source": "table: cpu fp32"},
    "memory": {"peak_bytes": 50 * 2**20, "device_total_bytes": 8 * 2**30},
    "loss": {"first": losses[0], "final": sum(losses[-10:]) / 10, "final_window": 10},
    "eval": None, "tokens": 4 * 64 * a.steps, "wall_s": 1.0,
    "platform": {"cpu": {"model": "test cpu", "cores": 2}, "gpus": []},
    "provenance": {"host": os.uname().nodename,
                   "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "trainer_build": "fake_trainer.py"},
}
with open(os.path.join(a.out, "metrics.json"), "w") as f:
    json.dump(metrics, f, indent=1)
