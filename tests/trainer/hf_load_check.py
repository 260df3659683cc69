#!/usr/bin/env python3
"""Loads benchmake-train checkpoints with Hugging Face transformers and checks
that they compute what benchmake-train computes.

Run where transformers and torch are installed (the GPU machine):

    python3 tests/trainer/hf_load_check.py --trainer build/benchmake-train

For each family (llama with grouped-query attention, gpt) it writes a tiny
dataset, trains a few steps with benchmake-train on the CPU, loads
out/model.safetensors + config.json with AutoModelForCausalLM (expecting
LlamaForCausalLM / GPT2LMHeadModel), and compares the per-token losses of
the validation windows with benchmake's evaluate run: mean loss equal within
1e-4 relative. Exits 0 when both families pass, 1 otherwise.
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys
import tempfile


def write_megatron(prefix, docs):
    """Megatron indexed dataset, int32 tokens (dtype code 4)."""
    with open(prefix + ".bin", "wb") as f:
        pointers, offset = [], 0
        for d in docs:
            pointers.append(offset)
            f.write(struct.pack("<%di" % len(d), *d))
            offset += 4 * len(d)
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00")
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", 4))
        f.write(struct.pack("<Q", len(docs)))
        f.write(struct.pack("<Q", len(docs) + 1))
        f.write(struct.pack("<%di" % len(docs), *[len(d) for d in docs]))
        f.write(struct.pack("<%dq" % len(docs), *pointers))
        f.write(struct.pack("<%dq" % (len(docs) + 1), *range(len(docs) + 1)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trainer", required=True)
    args = ap.parse_args()
    import torch
    from transformers import AutoModelForCausalLM

    vocab, eot, mpe = 96, 95, 32
    ok = True
    for family, preset, cls in (("llama", "llama-tiny", "LlamaForCausalLM"),
                                ("gpt", "gpt-tiny", "GPT2LMHeadModel")):
        tmp = tempfile.mkdtemp(prefix="hfcheck_")
        data = os.path.join(tmp, "data")
        os.makedirs(data)
        docs = [[(i * 7 + d * 3) % (vocab - 1) for i in range(40)] + [eot] for d in range(30)]
        write_megatron(os.path.join(data, "train"), docs)
        write_megatron(os.path.join(data, "valid"), docs[:4])
        json.dump({"vocab_size": vocab, "eot_id": eot}, open(os.path.join(data, "stats.json"), "w"))
        out = os.path.join(tmp, "out")
        run = {"mode": "pretrain", "data": data, "out_dir": out, "steps": 20, "lbs": 4, "mpe": mpe,
               "lr": 3e-3, "warmup_steps": 2, "threads": 1,
               "model": {"preset": preset, "overrides": {"max_seq": 64}}}
        json.dump(run, open(os.path.join(tmp, "run.json"), "w"))
        subprocess.run([args.trainer, "--config", os.path.join(tmp, "run.json")], check=True)
        ev = {"mode": "evaluate", "data": data, "out_dir": os.path.join(tmp, "eval"), "init": out,
              "lbs": 4, "mpe": mpe, "threads": 1}
        json.dump(ev, open(os.path.join(tmp, "eval.json"), "w"))
        subprocess.run([args.trainer, "--config", os.path.join(tmp, "eval.json")], check=True)
        ours = json.load(open(os.path.join(tmp, "eval", "metrics.json")))["eval"]["val_loss"]

        model = AutoModelForCausalLM.from_pretrained(out, torch_dtype=torch.float32).eval()
        got_cls = type(model).__name__
        stream = [t for d in docs[:4] for t in d]
        windows = (len(stream) - 1) // mpe
        total, count = 0.0, 0
        with torch.no_grad():
            for w in range(windows):
                x = torch.tensor([stream[w * mpe:w * mpe + mpe]])
                y = torch.tensor([stream[w * mpe + 1:w * mpe + mpe + 1]])
                logits = model(x).logits[0]
                loss = torch.nn.functional.cross_entropy(logits, y[0], reduction="sum")
                total += loss.item()
                count += mpe
        theirs = total / count
        rel = abs(theirs - ours) / ours
        passed = got_cls == cls and rel < 1e-4
        ok &= passed
        print(f"{family}: {got_cls} (expected {cls}); val loss benchmake {ours:.6f} "
              f"transformers {theirs:.6f} rel diff {rel:.2e} -> {'PASS' if passed else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
