#!/usr/bin/env python3
"""Checks benchmake's LLaVA (LlavaModel<float>, its checkpoints) against transformers'
LlavaForConditionalGeneration, both directions.

Run where torch, transformers (>= 4.45) and safetensors are installed (the GPU machine), after
building llava_dump (cmake --build build --target llava_dump):

    python3 tests/gpu/llava_hf_check.py --dump build/tests/trainer/llava_dump

benchmake -> transformers: `llava_dump save` writes a llava-tiny model with random weights as
benchmake saves LLaVA checkpoints (trainer/checkpoint/llava_checkpoint.h);
LlavaForConditionalGeneration.from_pretrained loads that directory as it is; both run the same
inputs (two rows: one with an image after BOS and one with an image in the middle, image tokens
expanded as LlavaProcessor expands them) and pixel values.
transformers -> benchmake: a random LlavaForConditionalGeneration of the same geometry is saved
with save_pretrained, converted by examples/tools/hf_to_benchmake.py --llava, and run by
`llava_dump run`.

Compared: the next-token log-probabilities over benchmake's text vocabulary (the logits up to
a per-row constant; benchmake's saved vocabulary has a zero row for image_token_index, which
transformers' softmax would include, so the log-softmax is taken over the first V logits) and
the loss (the mean over labelled next tokens, HF's shift). Passes when max |difference| <=
tol * max(1, max |reference|) for the log-probabilities and |difference| <= tol * |loss| for
the loss, with tol 1e-4 in fp32 (TF32 off) and 1e-2 with transformers in bf16 (--dtype
bfloat16: the reference then runs in bf16; benchmake stays fp32). Exits 0 when all pass.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONVERTER = os.path.join(HERE, "..", "..", "examples", "tools", "hf_to_benchmake.py")


def inputs(image_token, image_tokens, seed):
    """Two rows of transformers-style ids and label masks (1 = a label)."""
    import random
    rng = random.Random(seed)
    text = lambda n: [rng.randrange(3, 500) for _ in range(n)]
    row0 = [1] + [image_token] * image_tokens + text(11)
    row1 = [1] + text(5) + [image_token] * image_tokens + text(6)
    ids = [row0, row1]
    labels = [[0] * (1 + image_tokens + 3) + [1] * 8, [0] * 6 + [0] * image_tokens + [1] * 6]
    return ids, labels


def compare(name, ours, ref, tol):
    scale = max(1.0, float(ref.abs().max()))
    diff = float((ours - ref).abs().max())
    ok = diff <= tol * scale
    print(f"{name}: max |diff| {diff:.3e} (tolerance {tol * scale:.3e}) {'ok' if ok else 'FAIL'}")
    return ok


def run_ours(dump, ckpt, ids, labels, pixels, tmp):
    import torch
    from safetensors.torch import load_file, save_file
    with open(os.path.join(tmp, "inputs.json"), "w") as f:
        json.dump({"input_ids": ids, "label_mask": labels}, f)
    save_file({"pixel_values": pixels.float().contiguous()}, os.path.join(tmp, "pixels.safetensors"))
    out = os.path.join(tmp, "ours.safetensors")
    subprocess.run([dump, "run", ckpt, os.path.join(tmp, "inputs.json"),
                    os.path.join(tmp, "pixels.safetensors"), out], check=True)
    return load_file(out)


def run_hf(model, ids, labels, pixels, vocab, device, dtype):
    import torch
    input_ids = torch.tensor(ids, device=device)
    with torch.no_grad():
        logits = model(input_ids=input_ids, pixel_values=pixels.to(device, dtype),
                       attention_mask=torch.ones_like(input_ids)).logits.float()
    logprobs = torch.log_softmax(logits[..., :vocab], dim=-1)
    target = input_ids[:, 1:]
    mask = torch.tensor(labels, device=device)[:, 1:].bool()
    # Positions that are not labels may hold the image token (outside the V kept): gather id 0
    # there; they are masked out of the loss anyway.
    target = torch.where(mask, target, torch.zeros_like(target))
    nll = -logprobs[:, :-1].gather(-1, target.unsqueeze(-1)).squeeze(-1)
    return logprobs.cpu(), float(nll[mask].mean())


def check(dump, dtype_name, device, seed):
    import torch
    from transformers import (CLIPVisionConfig, LlamaConfig, LlavaConfig,
                              LlavaForConditionalGeneration)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dtype = getattr(torch, dtype_name)
    tol = 1e-4 if dtype == torch.float32 else 1e-2
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        # benchmake -> transformers
        ours_dir = os.path.join(tmp, "ours")
        subprocess.run([dump, "save", ours_dir, "llava-tiny", str(seed)], check=True)
        cfg = json.load(open(os.path.join(ours_dir, "config.json")))
        vocab = cfg["benchmake"]["text"]["vocab"]
        image_token, k = cfg["image_token_index"], cfg["image_seq_length"]
        size = cfg["vision_config"]["image_size"]
        model = LlavaForConditionalGeneration.from_pretrained(ours_dir, torch_dtype=dtype)
        model.to(device).eval()
        ids, labels = inputs(image_token, k, seed)
        g = torch.Generator().manual_seed(seed)
        pixels = torch.randn(2, 3, size, size, generator=g)
        ours = run_ours(dump, ours_dir, ids, labels, pixels, tmp)
        ref_lp, ref_loss = run_hf(model, ids, labels, pixels, vocab, device, dtype)
        # positions before an image token predict nothing in benchmake's losses; compare all
        ok &= compare("benchmake->transformers log-probs", ours["logprobs"], ref_lp, tol)
        loss = float(ours["loss"][0])
        print(f"benchmake->transformers loss: ours {loss:.6f} transformers {ref_loss:.6f}")
        ok &= abs(loss - ref_loss) <= tol * abs(ref_loss)

        # transformers -> benchmake
        v = cfg["vision_config"]
        t = cfg["text_config"]
        config = LlavaConfig(
            vision_config=CLIPVisionConfig(
                hidden_size=v["hidden_size"], intermediate_size=v["intermediate_size"],
                num_hidden_layers=v["num_hidden_layers"],
                num_attention_heads=v["num_attention_heads"], image_size=size,
                patch_size=v["patch_size"], hidden_act="quick_gelu",
                layer_norm_eps=v["layer_norm_eps"]),
            text_config=LlamaConfig(
                vocab_size=t["vocab_size"], hidden_size=t["hidden_size"],
                intermediate_size=t["intermediate_size"],
                num_hidden_layers=t["num_hidden_layers"],
                num_attention_heads=t["num_attention_heads"],
                num_key_value_heads=t["num_key_value_heads"],
                max_position_embeddings=t["max_position_embeddings"],
                rms_norm_eps=t["rms_norm_eps"], rope_theta=t["rope_theta"]),
            image_token_index=image_token, vision_feature_layer=-2,
            vision_feature_select_strategy="default", projector_hidden_act="gelu",
            image_seq_length=k)
        torch.manual_seed(seed + 1)
        hf = LlavaForConditionalGeneration(config)
        with torch.no_grad():
            for name, p in hf.named_parameters():
                if "norm" in name and name.endswith("weight"):
                    p.copy_(1 + 0.1 * torch.randn_like(p))
                else:
                    p.copy_(0.05 * torch.randn_like(p))
        hf_dir, conv_dir = os.path.join(tmp, "hf"), os.path.join(tmp, "conv")
        hf.save_pretrained(hf_dir, safe_serialization=True)
        subprocess.run([sys.executable, CONVERTER, "--llava", "--dtype", "float32", hf_dir,
                        conv_dir], check=True)
        hf = hf.to(device, dtype).eval()
        ours = run_ours(dump, conv_dir, ids, labels, pixels, tmp)
        full = t["vocab_size"]  # no benchmake key: the model's vocabulary is the whole 513
        ref_lp, ref_loss = run_hf(hf, ids, labels, pixels, full, device, dtype)
        ok &= compare("transformers->benchmake log-probs", ours["logprobs"], ref_lp, tol)
        loss = float(ours["loss"][0])
        print(f"transformers->benchmake loss: ours {loss:.6f} transformers {ref_loss:.6f}")
        ok &= abs(loss - ref_loss) <= tol * abs(ref_loss)
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dump", required=True, help="the llava_dump binary")
    parser.add_argument("--dtype", default="all", choices=["float32", "bfloat16", "all"])
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cuda if present)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    import torch
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtypes = ["float32", "bfloat16"] if args.dtype == "all" else [args.dtype]
    ok = True
    for d in dtypes:
        print(f"== {d} on {device}")
        ok &= check(os.path.abspath(args.dump), d, device, args.seed)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
