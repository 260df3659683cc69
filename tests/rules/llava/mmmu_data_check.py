#!/usr/bin/env python3
"""The mmmu_data rule's output against python sentencepiece and MMMU's own prompts.

Builds an mmmu_data target on examples/llava1.5_13b/mmmu_sample with data/kjv_sp.model (a
LLaMA-format SentencePiece model) through `benchmake build`, then checks, with the
`sentencepiece` module (the library HF's slow LlamaTokenizer wraps) and nothing of ours:
  - each question's prompt ids: BOS, the text before "<image>" and after it decode
    (DecodeIds) to the two halves of the LLaVA prompt that MMMU's and LLaVA's own code
    wrote for that question (tests/data/mmmu/golden.json, "llava_prompt"), with exactly one
    placeholder (the vocabulary size) between them;
  - the decode table (trainer/eval/decode_table.h, through decode_table_dump): on every
    prompt's ids and on 400 random id sequences (control, unknown, byte and text pieces
    mixed, stray bytes that are not UTF-8 included) its text equals DecodeIds of the ids
    without the special ones (skip_special_tokens);
  - the table's eos_id is the model's </s>.
Exit 0 when all hold, 1 otherwise, 77 (skipped) without the sentencepiece module.

    /usr/bin/python3 tests/rules/llava/mmmu_data_check.py --benchmake build/benchmake \\
        --decode-dump build/tests/trainer/decode_table_dump
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

try:
    import sentencepiece as spm
except ImportError:
    print("mmmu_data_check: python3 has no sentencepiece module; skipped")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))


def read_indexed(prefix):
    """Megatron's indexed dataset (MMIDIDX v1): a list of int32 sequences."""
    with open(prefix + ".idx", "rb") as f:
        idx = f.read()
    assert idx[:9] == b"MMIDIDX\x00\x00", prefix
    version, dtype = struct.unpack("<QB", idx[9:18])
    assert version == 1 and dtype == 4, (version, dtype)  # int32
    count, _docs = struct.unpack("<QQ", idx[18:34])
    sizes = struct.unpack(f"<{count}i", idx[34:34 + 4 * count])
    pointers = struct.unpack(f"<{count}q", idx[34 + 4 * count:34 + 12 * count])
    with open(prefix + ".bin", "rb") as f:
        data = f.read()
    return [list(struct.unpack(f"<{n}i", data[p:p + 4 * n])) for n, p in zip(sizes, pointers)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--benchmake", required=True)
    parser.add_argument("--decode-dump", required=True)
    args = parser.parse_args()
    args.benchmake, args.decode_dump = map(os.path.abspath, (args.benchmake, args.decode_dump))
    model = os.path.join(ROOT, "data/kjv_sp.model")
    sp = spm.SentencePieceProcessor(model_file=model)
    golden = {p["id"]: p["llava_prompt"] for p in
              json.load(open(os.path.join(ROOT, "tests/data/mmmu/golden.json")))["prompts"]}
    with tempfile.TemporaryDirectory() as ws:
        shutil.copytree(os.path.join(ROOT, "examples/llava1.5_13b/mmmu_sample"),
                        os.path.join(ws, "mmmu_sample"))
        with open(os.path.join(ws, "BENCHFILE.toml"), "w") as f:
            f.write(f'[target.m]\nrule = "mmmu_data"\ninput = "mmmu_sample"\n'
                    f'vocab = "{model}"\nimage_size = 28\nimage_tokens = 4\n')
        env = dict(os.environ, BENCHMAKE_CACHE_DIR=os.path.join(ws, "cache"))
        subprocess.run([args.benchmake, "build", "m"], cwd=ws, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        out = os.path.join(ws, "out/m")
        prompts = read_indexed(os.path.join(out, "mmmu"))
        ids_order = [json.loads(line)["id"] for line in open(os.path.join(out, "questions.jsonl"))]
        table = json.load(open(os.path.join(out, "decode.json")))
        stats = json.load(open(os.path.join(out, "stats.json")))

        failures = []
        image = stats["image_token_id"]
        if image != sp.vocab_size():
            failures.append(f"image_token_id {image}, the vocabulary has {sp.vocab_size()}")
        if table["eos_id"] != sp.eos_id():
            failures.append(f"eos_id {table['eos_id']}, the model's </s> is {sp.eos_id()}")
        if len(prompts) != len(golden) or sorted(ids_order) != sorted(golden):
            failures.append(f"{len(prompts)} prompts for {len(golden)} golden questions")
        sequences = []
        for qid, ids in zip(ids_order, prompts):
            before, after = golden[qid].split("<image>")
            if ids.count(image) != 1 or ids[0] != sp.bos_id():
                failures.append(f"{qid}: not BOS + text + one placeholder + text")
                continue
            p = ids.index(image)
            if sp.decode(ids[1:p]) != before or sp.decode(ids[p + 1:]) != after:
                failures.append(f"{qid}: ids decode to {sp.decode(ids[1:p])!r} <image> "
                                f"{sp.decode(ids[p + 1:])!r}")
            sequences.append([i for i in ids if i != image])
        rng = random.Random(7)
        special = [i for i in range(sp.vocab_size()) if sp.is_control(i) or sp.is_unknown(i)]
        byte = [i for i in range(sp.vocab_size()) if sp.is_byte(i)]
        for _ in range(400):
            n = rng.randrange(0, 12)
            pick = lambda: rng.choice([rng.randrange(sp.vocab_size()), rng.choice(special),
                                       rng.choice(byte), sp.piece_to_id("\u2581")])
            sequences.append([pick() for _ in range(n)])
        r = subprocess.run([args.decode_dump, os.path.join(out, "decode.json")],
                           input="".join(json.dumps(s) + "\n" for s in sequences),
                           capture_output=True, text=True, check=True)
        ours = [json.loads(line) for line in r.stdout.splitlines()]
        mismatched = 0
        for seq, text in zip(sequences, ours):
            want = sp.decode([i for i in seq if i not in special])
            if text != want:
                mismatched += 1
                if mismatched <= 5:
                    failures.append(f"decode {seq} ({[sp.id_to_piece(i) for i in seq]}): ours "
                                    f"{text!r}, sentencepiece {want!r}")
        if len(ours) != len(sequences):
            failures.append(f"{len(ours)} decoded lines for {len(sequences)} sequences")
    print(f"{len(prompts)} prompts, {len(sequences)} decoded sequences, {mismatched} mismatched")
    for f in failures:
        print("FAIL " + f)
    print("PASS" if not failures else "FAIL")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
