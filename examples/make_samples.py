#!/usr/bin/python3
"""Writes the examples' small sample data, in the formats of the real datasets,
from the repository's public-domain corpus (data/kjv.txt, data/kjv_instruct_*.json).
Deterministic: the same inputs give the same bytes. Run once; the output is committed:

    /usr/bin/python3 examples/make_samples.py --benchmake build/benchmake

Needs Debian's python3-numpy (the Paddle files are written by NumPy itself, as
PaddleNLP writes them) and a built `benchmake` (GPT-2 ids, `benchmake tokenize`).

Writes:
  llama2_7b_pretrain_*/data/openwebtext.tar.xz
      OpenWebText's release layout: openwebtext/urlsf_subsetNN-M_data.xz shards,
      each an xz-compressed tar of NNNNNNN-<md5>.txt files, one document each
  aquila2_7b_finetune/data/alpaca_data_train.jsonl
      FlagScale/Aquila conversation JSONL: {"id", "conversations": [{"from", "value"}],
      "instruction"}, made from the Alpaca-format data/kjv_instruct_train.json
  gpt3_paddle/data/gpt_en_dataset_300m_ids.npy, _idx.npz
      PaddleNLP create_pretraining_data.py output: GPT-2 ids (uint16) of whole
      documents with end-of-text appended (--append_eos), lens int32 (one entry per
      document: GPT data is made without --split_sentences), docs int64 = 0..N, in
      np.savez's zip layout
  llava1.5_13b/data/llava_v1_5_mix665k.json
      LLaVA's instruction mix: a JSON list of {"id", "image"?, "conversations"}
  aquila2_7b_finetune/data/flagscale_train.log
      a SYNTHETIC Megatron-LM/FlagScale log (Megatron's training_log line format) whose
      step times and losses reproduce FlagPerf's published A800 TP1PP1DP8 row
      (3813.2 token/p/s, loss 2.61): what the external-trainer smoke target parses in CI
  llava1.5_13b/data/deepspeed_finetune.log
      a SYNTHETIC DeepSpeed + Hugging Face Trainer log (DeepSpeed's log_dist and
      ThroughputTimer lines, the Trainer's loss dicts) reproducing FlagPerf's published
      A800 LLaVA-1.5-13B finetune row (1622.90 token/p/s at MPE 2048, loss 0.7759)
Neither log is a measurement; each says so in its first line.
"""
import argparse
import hashlib
import io
import json
import lzma
import os
import re
import subprocess
import tarfile
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHAPTER = re.compile(r"^([1-3] )?[A-Z][a-z]+( [A-Za-z]+)* [0-9]+$")


def chapters():
    """The corpus's chapters: (heading, text including the heading line)."""
    out, current = [], None
    with open(os.path.join(ROOT, "data/kjv.txt"), encoding="ascii") as f:
        for line in f:
            if CHAPTER.search(line.rstrip("\n")):
                current = [line.rstrip("\n"), line]
                out.append(current)
            elif current is not None:
                current[1] += line
    return [(h, t) for h, t in out]


def tar_bytes(members):
    """A GNU tar of (name, bytes) with fixed metadata, so the bytes are reproducible."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1555555555  # 2019-04-18, around OpenWebText's release
            info.mode = 0o644
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    print(f"{os.path.relpath(path, ROOT)}: {len(data)} bytes, sha256 "
          f"{hashlib.sha256(data).hexdigest()}")


def openwebtext(docs):
    """openwebtext.tar.xz: shards of 8 documents, named as in the release."""
    shards = []
    for s in range(0, len(docs), 8):
        members = []
        for i, (_, text) in enumerate(docs[s:s + 8]):
            data = text.encode("ascii")
            n = 1000000 + s + i
            members.append((f"{n:07d}-{hashlib.md5(data).hexdigest()}.txt", data))
        subset, part = divmod(s // 8, 3)
        name = f"openwebtext/urlsf_subset{subset:02d}-{part + 1}_data.xz"
        shards.append((name, lzma.compress(tar_bytes(members))))
    return lzma.compress(tar_bytes(shards))


def gpt2_ids(benchmake, text):
    out = subprocess.run([benchmake, "tokenize", "--vocab", os.path.join(ROOT, "data/gpt2.tiktoken"),
                          "--eot", "-"], input=text.encode(), capture_output=True, check=True)
    return [int(x) for x in out.stdout.split()]


def jitter(i, scale):
    """A reproducible wobble in [-scale, scale] (no random module state)."""
    h = int(hashlib.sha256(str(i).encode()).hexdigest()[:8], 16)
    return scale * (2 * h / 0xFFFFFFFF - 1)


def megatron_log():
    """Megatron-LM's training_log lines for FlagPerf's aquila2_7b_finetune (A800,
    TP1PP1DP8, LBS 1, GAS 4, MPE 2048: GBS 32 = 65,536 tokens per iteration)."""
    total, gbs, lr, warmup = 1526, 32, 9.65e-6, 153
    lines = [
        "# SYNTHETIC log for benchmake's CI (examples/make_samples.py), not a measurement: "
        "Megatron-LM's format, numbers set to FlagPerf's published A800 TP1PP1DP8 row",
        "using world size: 8, data-parallel size: 8, tensor-model-parallel size: 1, "
        "pipeline-model-parallel size: 1",
        "using torch.bfloat16 for parameters ...",
        "------------------------ arguments ------------------------",
    ]
    # Megatron's argument dump: name, dots to column 50, value.
    for name, value in (("bf16", "True"), ("data_parallel_size", "8"), ("fp16", "False"),
                        ("global_batch_size", "32"), ("hidden_size", "4096"),
                        ("micro_batch_size", "1"), ("num_attention_heads", "32"),
                        ("num_layers", "32"), ("pipeline_model_parallel_size", "1"),
                        ("seq_length", "2048"), ("tensor_model_parallel_size", "1"),
                        ("world_size", "8")):
        lines.append(f"  {name} {'.' * (48 - len(name))} {value}")
    lines += [
        "-------------------- end of arguments ---------------------",
        "[after dataloaders are built] datetime: 2024-01-10 10:02:11",
        "training ...",
    ]
    for i in range(1, 21):
        ms = 9120.4 if i == 1 else 2148.3 * (1 + jitter(i, 0.004))
        loss = 2.61 + 0.35 * 0.8 ** i + jitter(100 + i, 0.01)
        lines.append(
            f" iteration {i:8d}/{total:8d} | consumed samples: {i * gbs:12d} | elapsed time per "
            f"iteration (ms): {ms:.1f} | learning rate: {lr * i / warmup:.3E} | global batch size: "
            f"{gbs:5d} | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: {1.9 + jitter(200 + i, 0.3):.3f} "
            f"| number of skipped iterations:   0 | number of nan iterations:   0 |")
        if i == 1:  # Megatron's report_memory after the first iteration; 76,800 MB = 75 GiB
            lines.append("[Rank 0] (after 1 iterations) memory (MB) | allocated: 41327.2 | max "
                         "allocated: 70412.9 | reserved: 76800.0 | max reserved: 76800.0")
    return ("\n".join(lines) + "\n").encode("ascii")


def deepspeed_log():
    """DeepSpeed 0.13 + transformers Trainer lines for LLaVA-1.5-13B's finetune stage
    (8 GPUs, LBS 16, ZeRO-3, bf16): steps_per_print 10, logging_steps 1."""
    lines = [
        "# SYNTHETIC log for benchmake's CI (examples/make_samples.py), not a measurement: "
        "DeepSpeed's format, numbers set to FlagPerf's published A800 LLaVA-1.5-13B finetune row",
        "[2024-03-01 09:00:01,117] [INFO] [real_accelerator.py:191:get_accelerator] Setting "
        "ds_accelerator to cuda (auto detect)",
        "[2024-03-01 09:00:09,834] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed info: "
        "version=0.13.1, git-hash=unknown, git-branch=unknown",
        "[2024-03-01 09:00:09,901] [INFO] [config.py:988:print]   train_batch_size ............. 128",
        "[2024-03-01 09:00:09,901] [INFO] [config.py:988:print]   train_micro_batch_size_per_gpu  16",
        "[2024-03-01 09:00:09,901] [INFO] [config.py:988:print]   gradient_accumulation_steps .. 1",
        "[2024-03-01 09:00:09,902] [INFO] [config.py:988:print]   zero_optimization_stage ...... 3",
        "[2024-03-01 09:00:09,902] [INFO] [config.py:988:print]   bfloat16_enabled ............. True",
        "[2024-03-01 09:00:09,902] [INFO] [config.py:988:print]   world_size ................... 8",
    ]
    seconds = 0
    for step in range(1, 31):
        seconds += 20.2 * (1 + jitter(300 + step, 0.01))
        loss = 0.7759 + 0.45 * 0.85 ** step + jitter(400 + step, 0.01)
        lr = 2e-5 * min(1.0, step / 157)
        # DeepSpeed reports inside engine.step(); the Trainer logs the step after it.
        if step % 10 == 0:
            stamp = f"[2024-03-01 {9 + int(seconds) // 3600:02d}:{int(seconds) // 60 % 60:02d}:" \
                    f"{int(seconds) % 60:02d},000]"
            lines.append(f"{stamp} [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, "
                         f"skipped=0, lr=[{lr:.6g}], mom=[(0.9, 0.999)]")
            avg = 6.34 * (1 + jitter(500 + step, 0.002))
            lines.append(f"{stamp} [INFO] [timer.py:260:stop] epoch=0/micro_step={step}/"
                         f"global_step={step}, RunningAvgSamplesPerSec={avg:.15g}, "
                         f"CurrSamplesPerSec={avg * (1 + jitter(600 + step, 0.01)):.15g}, "
                         f"MemAllocated=31.47GB, MaxMemAllocated=76.12GB")
        lines.append(f"{{'loss': {loss:.4f}, 'learning_rate': {lr:.4g}, 'epoch': {step / 5198:.2f}}}")
    return ("\n".join(lines) + "\n").encode("ascii")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--benchmake", default=os.path.join(ROOT, "build/benchmake"))
    args = parser.parse_args()
    all_chapters = chapters()
    assert len(all_chapters) == 1189, len(all_chapters)

    # LLaMA-2 pretraining: 36 chapters spread over the book, 6 shards.
    owt = openwebtext(all_chapters[::33][:36])
    for case in ("llama2_7b_pretrain_fp16", "llama2_7b_pretrain_mpe4096"):
        write(os.path.join(HERE, case, "data/openwebtext.tar.xz"), owt)

    with open(os.path.join(ROOT, "data/kjv_instruct_train.json"), encoding="utf-8") as f:
        alpaca = json.load(f)

    # Aquila2 finetuning: 240 conversations of one or two turns.
    lines = []
    for i in range(240):
        a, b = alpaca[2 * i], alpaca[2 * i + 1]
        turns = []
        for item in (a, b) if i % 3 == 0 else (a,):
            question = item["instruction"] + ("\n" + item["input"] if item["input"] else "")
            turns += [{"from": "human", "value": question}, {"from": "gpt", "value": item["output"]}]
        lines.append(json.dumps({"id": f"kjv_instruct_{i}", "conversations": turns,
                                 "instruction": ""}, ensure_ascii=False))
    write(os.path.join(HERE, "aquila2_7b_finetune/data/alpaca_data_train.jsonl"),
          ("\n".join(lines) + "\n").encode("utf-8"))

    # GPT-3 (PaddleNLP): 40 chapters, GPT-2 ids, end-of-text appended.
    ids, lens = [], []
    for _, text in all_chapters[5::29][:40]:
        doc = gpt2_ids(args.benchmake, text)
        ids += doc
        lens.append(len(doc))
    assert max(ids) < 65535
    buf = io.BytesIO()
    np.save(buf, np.array(ids, dtype=np.uint16))
    write(os.path.join(HERE, "gpt3_paddle/data/gpt_en_dataset_300m_ids.npy"), buf.getvalue())
    # np.savez's layout (stored members lens.npy, docs.npy, in that order) with a
    # fixed member time: np.savez stamps the current time, which is not reproducible.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, array in (("lens", np.array(lens, dtype=np.int32)),
                            ("docs", np.arange(len(lens) + 1, dtype=np.int64))):
            member = io.BytesIO()
            np.save(member, array)
            z.writestr(zipfile.ZipInfo(name + ".npy", date_time=(2019, 4, 18, 0, 0, 0)),
                       member.getvalue())
    write(os.path.join(HERE, "gpt3_paddle/data/gpt_en_dataset_300m_idx.npz"), buf.getvalue())

    # LLaVA-1.5 instruction mix: 160 records, two in three with an image.
    records = []
    for i in range(160):
        item = alpaca[600 + i]
        question = item["instruction"] + ("\n" + item["input"] if item["input"] else "")
        record = {"id": f"{100000 + i:012d}"}
        if i % 3 != 2:
            record["image"] = f"coco/train2017/{100000 + i:012d}.jpg"
            question = "<image>\n" + question
        record["conversations"] = [{"from": "human", "value": question},
                                   {"from": "gpt", "value": item["output"]}]
        records.append(record)
    write(os.path.join(HERE, "llava1.5_13b/data/llava_v1_5_mix665k.json"),
          json.dumps(records, indent=1, ensure_ascii=False).encode("utf-8") + b"\n")

    write(os.path.join(HERE, "aquila2_7b_finetune/data/flagscale_train.log"), megatron_log())
    write(os.path.join(HERE, "llava1.5_13b/data/deepspeed_finetune.log"), deepspeed_log())


if __name__ == "__main__":
    main()
