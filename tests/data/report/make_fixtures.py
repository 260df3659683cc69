#!/usr/bin/env python3
"""Writes the report fixtures: metrics.json + log.jsonl per run, in the trainer's
format (docs/METRICS.md), and set.json naming which runs form which target.

Loss curves are realistic: a power-law decay towards an irreducible loss, plus
seeded step-to-step noise. Two runs of the same config differ only by small
noise (as on GPUs, which are not bit-identical), and the run with twice the
learning rate descends faster and plateaus lower: from step 21 on it differs by
several percent. Rerun after editing: python3 make_fixtures.py (deterministic).
"""
import json
import math
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
GIB = 1024**3


def curve(steps, lr_scale, seed, jitter):
    rng = random.Random(seed)  # the data order: same seed, same batches, same bumps
    jitter_rng = random.Random(seed * 7919 + 1)  # platform numerics
    out = []
    for s in range(1, steps + 1):
        # fast initial drop, then a slow power-law tail; lr scales effective time
        t = s * lr_scale
        base = 2.05 + 8.9 * (1 + t / 6.0) ** -0.9
        noise = rng.gauss(0, 0.012) * base
        out.append(base + noise + jitter_rng.gauss(0, jitter) * base)
    return out


def log_lines(losses, lr, tokens_per_s, ms, tokens):
    rng = random.Random(len(losses))
    lines = [json.dumps({"format": "benchmake-log", "version": 1})]
    for i, loss in enumerate(losses):
        step = i + 1
        lines.append(json.dumps({
            "step": step, "loss": round(loss, 6), "lr": lr * min(1.0, step / 10),
            "grad_norm": round(1.5 * math.exp(-step / 60) + 0.3 + rng.random() * 0.05, 4),
            "tokens": tokens,
            "tokens_per_s": round(tokens_per_s * (0.6 if step <= 2 else 1.0), 1),
            "ms": round(ms * (1.7 if step <= 2 else 1.0), 2)}))
    return "\n".join(lines) + "\n"


PRESETS = {
    "llama2-7b": dict(family="llama", parameters=6738415616, layers=32, hidden=4096, heads=32,
                      kv_heads=32, head_dim=128, ffn_hidden=11008, vocab=32000),
    "gpt3-6.7b": dict(family="gpt", parameters=6657351680, layers=32, hidden=4096, heads=32,
                      kv_heads=32, head_dim=128, ffn_hidden=16384, vocab=50257),
    "tiny": dict(family="llama", parameters=3473664, layers=4, hidden=256, heads=4, kv_heads=4,
                 head_dim=64, ffn_hidden=688, vocab=2048),
}
PEAK = {"H100": 989.4e12, "H200": 989.4e12, "A800": 312e12, "cpu": 332.8e9}


def metrics(preset, overrides, device, gpu_name, dp, tp, pp, lbs, mpe, gas, lr, steps, tps,
            peak_gib, total_gib, losses, host, started, build, precision="bf16", evals=None,
            watts=None):
    m = dict(PRESETS[preset])
    params = m["parameters"]
    f6n = 6 * params
    fpalm = 6 * params + 12 * m["layers"] * m["heads"] * m["head_dim"] * mpe
    peak = PEAK.get(device, 0)
    devices = dp * tp * pp
    step_ms = lbs * mpe * gas * dp / (tps * devices) * 1000
    out = {
        "format": "benchmake-metrics", "version": 1, "kind": "pretrain",
        "model": dict(m, preset=preset, overrides=overrides),
        "config": {"lbs": lbs, "mpe": mpe, "gas": gas, "dp": dp, "tp": tp, "pp": pp,
                   "gbs": lbs * gas * dp, "layout": "TP%dPP%dDP%d" % (tp, pp, dp), "zero": 0, "precision": precision,
                   "recompute": False, "flash_attention": device != "cpu",
                   "lr": lr, "steps": steps, "warmup_steps": 10, "seed": 1234,
                   "device": "cpu" if device == "cpu" else "cuda"},
        "throughput": {"tokens_per_s": round(tps * devices, 1),
                       "tokens_per_device_per_s": tps, "step_ms_median": round(step_ms, 2),
                       "measured_steps": steps - 2, "excluded_warmup_steps": 2},
        "flops_per_token": {"6N": f6n, "palm": fpalm},
        "mfu": ({"6N": tps * f6n / peak, "palm": tps * fpalm / peak,
                 "peak_flops_per_device": peak, "peak_source": "table: %s %s" % (device, precision)}
                if peak else {}),
        "memory": {"peak_bytes": int(peak_gib * GIB), "device_total_bytes": int(total_gib * GIB)},
        "loss": {"final": sum(losses[-10:]) / 10, "final_window": 10, "first": losses[0]},
        "tokens": lbs * mpe * gas * dp * steps,
        "wall_s": round(step_ms * steps / 1000, 1),
        "platform": ({"cpu": {"model": "AMD EPYC 7B13", "cores": 2}, "gpus": []}
                     if device == "cpu" else
                     {"cpu": {"model": "Intel Xeon Platinum 8480+", "cores": 112},
                      "gpus": [{"name": gpu_name, "memory_bytes": int(total_gib * GIB)}] * devices,
                      "driver": "550.54.15", "cuda": "12.4"}),
        "provenance": {"host": host, "started_at": started, "trainer_build": build},
    }
    out["eval"] = evals
    # What the GPUs drew over the steps (NVML's counter): none on the CPU.
    seconds = out["wall_s"]
    out["energy"] = ({"joules": watts * devices * seconds,
                      "joules_per_token": watts * devices * seconds / out["tokens"],
                      "watts_per_device": watts, "seconds": seconds, "devices": devices,
                      "tokens": out["tokens"], "source": "nvml"} if watts else None)
    return out


def write_run(name, m, losses, lr, ms):
    d = os.path.join(HERE, "runs", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "metrics.json"), "w") as f:
        json.dump(m, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(d, "log.jsonl"), "w") as f:
        f.write(log_lines(losses, lr, m["throughput"]["tokens_per_s"], ms,
                          m["config"]["lbs"] * m["config"]["mpe"] * m["config"]["gas"] *
                          m["config"]["dp"]))


def main():
    steps = 100
    base = curve(steps, 1.0, seed=7, jitter=0)
    same = curve(steps, 1.0, seed=7, jitter=0.004)
    lr2x = curve(steps, 2.0, seed=9, jitter=0)
    lr2x = [l - 0.08 * min(1.0, i / 40) for i, l in enumerate(lr2x)]  # and a lower plateau
    build = "benchmake-train 0.1.0 (g62c15d3, cuda 12.4)"
    sets = []

    def run(name, **kw):
        losses = kw.pop("losses")
        m = metrics(losses=losses, **kw)
        write_run(name, m, losses, kw["lr"], m["throughput"]["step_ms_median"])
        return "runs/" + name

    common7b = dict(preset="llama2-7b", overrides={}, dp=8, tp=1, pp=1, lbs=1, mpe=4096, gas=8,
                    lr=3e-4, steps=steps)
    r = []
    for i, (tps, peak, origin, day) in enumerate([(3912.4, 61.8, "fresh", "2026-11-20T09:12:03Z"),
                                                  (3890.1, 61.9, "cache", "2026-11-19T17:40:51Z"),
                                                  (3935.7, 61.8, "fresh", "2026-11-21T08:02:44Z")]):
        path = run("llama2_7b.h100.r%d" % (i + 1), device="H100", gpu_name="NVIDIA H100 80GB HBM3",
                   tps=tps, peak_gib=peak, total_gib=79.6, losses=base, host="h100-node-3",
                   watts=688.0 + i,
                   started=day, build=build, **common7b)
        r.append({"metrics": path + "/metrics.json", "log": path + "/log.jsonl", "origin": origin,
                  "source": "cache ac/%02x3f9e0c7d21" % i})
    sets.append({"target": "llama2_7b.h100", "rule": "pretrain", "measurements": r})

    path = run("llama2_7b.a800", device="A800", gpu_name="NVIDIA A800-SXM4-80GB", tps=1710.2,
               watts=391.5,
               peak_gib=63.4, total_gib=80.0, losses=same, host="a800-box",
               started="2026-11-18T22:05:10Z", build=build, **common7b)
    sets.append({"target": "llama2_7b.a800", "rule": "pretrain", "measurements": [
        {"metrics": path + "/metrics.json", "log": path + "/log.jsonl", "origin": "cache",
         "source": "cache ac/77d1e04b5a"}]})

    path = run("llama2_7b.h100_lr2x", device="H100", gpu_name="NVIDIA H100 80GB HBM3",
               tps=3908.8, peak_gib=61.8, total_gib=79.6, losses=lr2x, host="h100-node-3",
               watts=689.5,
               started="2026-11-21T08:30:00Z", build=build,
               **dict(common7b, lr=6e-4))
    sets.append({"target": "llama2_7b.h100_lr2x", "rule": "pretrain", "measurements": [
        {"metrics": path + "/metrics.json", "log": path + "/log.jsonl", "origin": "fresh",
         "source": "cache ac/0be1d2c3f4"}]})

    path = run("gpt3_6.7b.h200", preset="gpt3-6.7b", overrides={"layers": 16}, device="H200",
               gpu_name="NVIDIA H200", dp=4, tp=2, pp=1, lbs=2, mpe=2048, gas=4, lr=1.2e-4,
               steps=steps, tps=5281.9, peak_gib=97.25, total_gib=139.8, watts=676.0,
               losses=curve(steps, 1.3, seed=3, jitter=0), host="h200-a|b", started="2026-11-21T07:45:31Z",
               build=build)
    sets.append({"target": "gpt3_6.7b.h200", "rule": "pretrain", "measurements": [
        {"metrics": path + "/metrics.json", "log": path + "/log.jsonl", "origin": "fresh",
         "source": "cache ac/9a8b7c6d5e"}]})

    tiny_eval = {"val_loss": 3.4178, "perplexity": 30.5062, "tokens": 51200, "task": "copa",
                 "accuracy": 0.4125, "examples": 400, "choices": 2, "chance": 0.5,
                 "exact_match": None, "exact_match_examples": 0}
    path = run("tiny.cpu", preset="tiny", overrides={"hidden": 256, "layers": 4}, device="cpu",
               gpu_name="", dp=1, tp=1, pp=1, lbs=8, mpe=256, gas=1, lr=1e-3, steps=steps,
               tps=2351.37, peak_gib=0.412, total_gib=7.7, losses=curve(steps, 0.7, seed=5, jitter=0),
               host="laptop, \"dev\"", started="2026-11-21T08:55:00Z",
               build="benchmake-train 0.1.0 (g62c15d3, cpu)", precision="fp32", evals=tiny_eval)
    sets.append({"target": "tiny.cpu", "rule": "pretrain", "measurements": [
        {"metrics": path + "/metrics.json", "log": path + "/log.jsonl", "origin": "fresh",
         "source": "cache ac/1a2b3c4d5e"}]})

    d = os.path.join(HERE, "runs", "tiny.eval")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "metrics.json"), "w") as f:
        json.dump({"format": "benchmake-metrics", "version": 1, "kind": "evaluate",
                   "config": {"lbs": 8, "mpe": 256, "device": "cpu"},
                   "throughput": None, "loss": None, "tokens": None,
                   "eval": {"val_loss": 3.1127, "perplexity": 22.4811, "tokens": 40960,
                            "task": "instructions", "accuracy": 0.6125, "examples": 160,
                            "choices": 4, "chance": 0.25, "exact_match": 0.1875,
                            "exact_match_examples": 160},
                   "provenance": {"host": "laptop", "started_at": "2026-11-21T08:58:12Z",
                                  "trainer_build": "benchmake-train 0.1.0 (g62c15d3, cpu)"}},
                  f, indent=2, sort_keys=True)
        f.write("\n")
    sets.append({"target": "tiny.eval", "rule": "evaluate", "measurements": [
        {"metrics": "runs/tiny.eval/metrics.json", "origin": "fresh",
         "source": "cache ac/5e4d3c2b1a"}]})

    with open(os.path.join(HERE, "set.json"), "w") as f:
        json.dump(sets, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
