#!/usr/bin/env python3
"""PyTorch's peer for benchmake's MMMU decoder: transformers' LlavaForConditionalGeneration
.generate, greedy (do_sample=False, num_beams=1, its KV cache on), on the prompts and images an
mmmu_data directory holds and the LLaVA checkpoint benchmake wrote (Hugging Face's layout), in
bf16 on one GPU: the peer of `sample_llava_mmmu` (bench/llava_13b.sh runs both in one call).

Reads LlavaData's files for the split "mmmu" (docs/DATA.md): mmmu.bin/.idx (each question's
prompt, its image placeholder the data's image token id, stats.json), mmmu_images.bin/.idx
(image_1's index), images.u8 + images.json (pixels as benchmake normalizes them: x / 255, then
(x - mean) / std per channel). The placeholder becomes the checkpoint's image_seq_length copies
of its image_token_index, as LlavaProcessor expands it; ids at or past benchmake's text
vocabulary are suppressed (the zero rows benchmake pads the vocabulary with), and generation
stops at the tokenizer's end-of-sequence id (2) or after --max-new-tokens, as ours does.

Prints one JSON line: seconds and new tokens over the questions (after one untimed warm-up
question), ms a new token, peak allocated memory, and how many questions' tokens equal ours
when --ours names benchmake's responses.json (bf16 on both sides: equal prefixes are expected,
not guaranteed).

    python3 bench/llava_decode_reference.py --data OUT/sample_mmmu_data \
        --checkpoint OUT/sample_llava_pretrain --max-new-tokens 32 [--ours responses.json]
"""
import argparse
import json
import os
import struct
import sys
import time


def read_indexed(prefix):
    """Megatron's indexed dataset (MMIDIDX v1, int32): a list of sequences."""
    with open(prefix + ".idx", "rb") as f:
        idx = f.read()
    if idx[:9] != b"MMIDIDX\x00\x00":
        sys.exit(f"{prefix}.idx: not a Megatron indexed dataset")
    version, dtype = struct.unpack("<QB", idx[9:18])
    if version != 1 or dtype != 4:
        sys.exit(f"{prefix}.idx: version {version}, dtype {dtype} (want 1, int32)")
    count, _docs = struct.unpack("<QQ", idx[18:34])
    sizes = struct.unpack(f"<{count}i", idx[34:34 + 4 * count])
    pointers = struct.unpack(f"<{count}q", idx[34 + 4 * count:34 + 12 * count])
    with open(prefix + ".bin", "rb") as f:
        data = f.read()
    return [list(struct.unpack(f"<{n}i", data[p:p + 4 * n])) for n, p in zip(sizes, pointers)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="an mmmu_data target's out/ directory")
    parser.add_argument("--checkpoint", required=True, help="a LLaVA checkpoint benchmake wrote")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--ours", help="benchmake's responses.json, to count equal answers")
    args = parser.parse_args()
    import numpy as np
    import torch
    import transformers
    from transformers import LlavaForConditionalGeneration

    stats = json.load(open(os.path.join(args.data, "stats.json")))
    placeholder = stats["image_token_id"]
    prompts = read_indexed(os.path.join(args.data, "mmmu"))
    images = [s[0] for s in read_indexed(os.path.join(args.data, "mmmu_images"))]
    meta = json.load(open(os.path.join(args.data, "images.json")))
    size = meta["size"]
    raw = np.fromfile(os.path.join(args.data, "images.u8"), dtype=np.uint8)
    raw = raw.reshape(-1, size, size, 3)
    mean = np.array(meta["mean"], dtype=np.float32)[:, None, None]
    std = np.array(meta["std"], dtype=np.float32)[:, None, None]
    cfg = json.load(open(os.path.join(args.checkpoint, "config.json")))
    vocab = cfg["benchmake"]["text"]["vocab"]
    total = cfg["text_config"]["vocab_size"]
    image_id, k = cfg["image_token_index"], cfg["image_seq_length"]

    model = LlavaForConditionalGeneration.from_pretrained(args.checkpoint, dtype=torch.bfloat16)
    model.to("cuda").eval()
    torch.cuda.reset_peak_memory_stats()

    def decode(q):
        ids = []
        for t in prompts[q]:
            ids.extend([image_id] * k if t == placeholder else [t])
        px = (raw[images[q]].transpose(2, 0, 1).astype(np.float32) / 255.0 - mean) / std
        input_ids = torch.tensor([ids], device="cuda")
        with torch.no_grad():
            out = model.generate(input_ids=input_ids,
                                 pixel_values=torch.from_numpy(px)[None].to("cuda", torch.bfloat16),
                                 attention_mask=torch.ones_like(input_ids), do_sample=False,
                                 num_beams=1, max_new_tokens=args.max_new_tokens, eos_token_id=2,
                                 pad_token_id=0, suppress_tokens=list(range(vocab, total)))
        return out[0, len(ids):].tolist()

    decode(0)  # warm-up (kernels, allocator), not timed
    torch.cuda.synchronize()
    start, tokens, answers = time.perf_counter(), 0, []
    for q in range(len(prompts)):
        answers.append(decode(q))
        tokens += len(answers[-1])
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    result = {"questions": len(prompts), "new_tokens": tokens, "seconds": seconds,
              "ms_per_token": 1e3 * seconds / max(tokens, 1),
              "peak_alloc_GiB": torch.cuda.max_memory_allocated() / 2**30,
              "torch": torch.__version__, "transformers": transformers.__version__}
    if args.ours:
        ours = json.load(open(args.ours))
        ids = [json.loads(line)["id"] for line in open(os.path.join(args.data, "questions.jsonl"))]
        same = [ours[i]["tokens"] == answers[q] for q, i in enumerate(ids) if i in ours]
        prefix = [next((j for j, (a, b) in enumerate(zip(ours[i]["tokens"], answers[q]))
                        if a != b), min(len(ours[i]["tokens"]), len(answers[q])))
                  for q, i in enumerate(ids) if i in ours]
        result["equal_to_ours"] = sum(same)
        result["common_prefix_tokens"] = prefix
    print(json.dumps(result))


if __name__ == "__main__":
    main()
