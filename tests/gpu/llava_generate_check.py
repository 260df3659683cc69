#!/usr/bin/env python3
"""Checks benchmake's greedy decoding with an image (LlavaModel::GenerateGreedy, MMMU's model
half) against transformers' LlavaForConditionalGeneration.generate.

Run where torch, transformers (>= 4.45) and safetensors are installed (the GPU machine; a CPU
works too), after building llava_dump (cmake --build build --target llava_dump):

    python3 tests/gpu/llava_generate_check.py --dump build/tests/trainer/llava_dump

`llava_dump save` writes a llava-tiny model with random weights as benchmake saves LLaVA
checkpoints; transformers loads that directory with from_pretrained and decodes, in fp32 with
TF32 off, a prompt with an image in the middle (image tokens expanded as LlavaProcessor
expands them) with do_sample=False, num_beams=1 — the settings benchmake decodes with — and
the ids from the text vocabulary only (suppress_tokens drops the zero rows benchmake's
checkpoint pads the vocabulary with up to image_token_index). `llava_dump generate` decodes the
same prompt and pixels on each of --ours's devices (default: the cpu's LlavaModel and the cuda
CudaLlavaTrainer, both fp32). Compared: the new tokens, for max_new_tokens 12 and no end-of-sequence
id, and with the end-of-sequence id set to transformers' third token (both must stop there,
keeping it). Exits 0 when all match.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dump", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=12)
    parser.add_argument("--ours", nargs="+", default=["cpu", "cuda"],
                        help="benchmake's decoders to check (llava_dump generate's DEVICE)")
    args = parser.parse_args()
    import random

    import torch
    from safetensors.torch import save_file
    from transformers import LlavaForConditionalGeneration
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = args.device if torch.cuda.is_available() or args.device == "cpu" else "cpu"
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "ours")
        subprocess.run([args.dump, "save", ckpt, "llava-tiny", str(args.seed)], check=True)
        cfg = json.load(open(os.path.join(ckpt, "config.json")))
        vocab = cfg["benchmake"]["text"]["vocab"]
        total = cfg["text_config"]["vocab_size"]
        image, k = cfg["image_token_index"], cfg["image_seq_length"]
        size = cfg["vision_config"]["image_size"]
        rng = random.Random(args.seed)
        prompt = [1] + [rng.randrange(3, vocab) for _ in range(5)] + [image] * k + [
            rng.randrange(3, vocab) for _ in range(8)]
        pixels = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(args.seed))
        with open(os.path.join(tmp, "inputs.json"), "w") as f:
            json.dump({"input_ids": [prompt]}, f)
        save_file({"pixel_values": pixels.contiguous()}, os.path.join(tmp, "pixels.safetensors"))

        def ours(max_new, eos):
            return {dev: json.loads(subprocess.run(
                [args.dump, "generate", ckpt, os.path.join(tmp, "inputs.json"),
                 os.path.join(tmp, "pixels.safetensors"), str(max_new), str(eos), dev],
                check=True, capture_output=True, text=True).stdout)["tokens"]
                for dev in args.ours}

        model = LlavaForConditionalGeneration.from_pretrained(ckpt, torch_dtype=torch.float32)
        model.to(device).eval()
        input_ids = torch.tensor([prompt], device=device)

        def theirs(max_new, eos):
            with torch.no_grad():
                out = model.generate(input_ids=input_ids, pixel_values=pixels.to(device),
                                     attention_mask=torch.ones_like(input_ids), do_sample=False,
                                     num_beams=1, max_new_tokens=max_new, eos_token_id=eos,
                                     pad_token_id=0, suppress_tokens=list(range(vocab, total)))
            return out[0, len(prompt):].tolist()

        ref = theirs(args.max_new_tokens, None)
        print(f"transformers    {ref}")
        for dev, got in ours(args.max_new_tokens, -1).items():
            print(f"benchmake {dev:5} {got}")
            ok &= got == ref
        if len(ref) >= 3 and ref[2] not in ref[:2]:  # an earlier copy would stop sooner
            ref_eos = theirs(args.max_new_tokens, ref[2])
            print(f"eos {ref[2]}: transformers {ref_eos}")
            ok &= ref_eos == ref[:3]
            for dev, got in ours(args.max_new_tokens, ref[2]).items():
                print(f"eos {ref[2]}: benchmake {dev:5} {got}")
                ok &= got == ref_eos
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
