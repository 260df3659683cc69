#!/usr/bin/env python3
"""PyTorch's peer for LLaVA-1.5's stage 2 (finetuning): transformers' LlavaForConditionalGeneration at
LLaVA-1.5-13B's geometry (CLIP ViT-L/14-336 tower, mlp2x_gelu projector, Vicuna-13B's LLaMA; --model
llava-1.5-7b: Vicuna-7B's), trained on
the micro-batches benchmake-train trains on (bench/llava_batches writes them: the same sampler, seed, LBS,
MPE and DP), as PyTorch recommends for a model this size:

  - FSDP2 `fully_shard` (ZeRO-3: parameters, gradients and AdamW state sharded over the ranks): one unit per
    LLaMA decoder layer, the root (embeddings, projector, final norm, head); the frozen vision tower whole in
    bf16 on every rank, outside FSDP (ignored_params);
    MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32): fp32 sharded masters, bf16 compute;
  - activation checkpointing of every decoder layer (checkpoint_wrapper, non-reentrant), as LLaVA's
    finetune.sh sets --gradient_checkpointing True;
  - torch.compile of every decoder layer (torchtitan's per-block recipe; dynamic shapes, as the rows' widths
    vary from batch to batch), SDPA attention (flash);
  - the vision tower frozen (requires_grad False, no optimizer state), the projector and the LM trained;
    AdamW (fused where DTensors allow, else foreach), clipping at 1.0, lr 2e-5, no weight decay.

Random weights (transformers' own init, seed 0): the timing does not depend on their values. The image
positions of each row get the model's image token id, whose embedding row LLaVA replaces with the projected
features; labels are the batch's next tokens where its mask is set (HF shifts them back by one).

  torchrun --standalone --nproc_per_node=N llava_reference.py --batches DIR [--model M] [--warmup 2] [--json OUT]

Prints one JSON line (rank 0) with per-step times (CUDA events, the slowest rank's) by step number, tokens as
FlagPerf's seed counts them (each micro-batch's longest actual row x its rows, as benchmake-train's metrics), peak memory, and MFU (PaLM's count:
6 x trained LM parameters + attention, 2 x the frozen tower's per image token, 6 x the projector's).
"""
import argparse
import json
import math
import os
import statistics
import time

import numpy as np
import torch
import torch.distributed as dist

PEAK = 989.4e12  # dense bf16, H100/H200 SXM datasheet


# The language models of LLaVA-1.5-13B (Vicuna-13B) and -7B (Vicuna-7B): hidden, FFN, layers, heads.
LMS = {"llava-1.5-13b": (5120, 13824, 40, 40), "llava-1.5-7b": (4096, 11008, 32, 32)}


def configs(model, vocab, image_token):
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig

    d, ffn, layers, heads = LMS[model]
    vision = CLIPVisionConfig(hidden_size=1024, intermediate_size=4096, num_hidden_layers=24,
                              num_attention_heads=16, image_size=336, patch_size=14, projection_dim=768,
                              hidden_act="quick_gelu", layer_norm_eps=1e-5)
    text = LlamaConfig(vocab_size=vocab, hidden_size=d, intermediate_size=ffn, num_hidden_layers=layers,
                       num_attention_heads=heads, num_key_value_heads=heads, max_position_embeddings=4096,
                       rms_norm_eps=1e-5, tie_word_embeddings=False)
    c = LlavaConfig(vision_config=vision, text_config=text, image_token_index=image_token,
                    projector_hidden_act="gelu", vision_feature_layer=-2,
                    vision_feature_select_strategy="default", tie_word_embeddings=False)
    c.text_config._attn_implementation = "sdpa"
    c.vision_config._attn_implementation = "sdpa"
    c._attn_implementation = "sdpa"
    return c


def load(batches, entry, image_token, dev):
    p = os.path.join(batches, entry["prefix"])
    B, T, n, S = entry["B"], entry["T"], entry["images"], entry["image_size"]
    inputs = np.fromfile(p + ".inputs", dtype=np.int32).reshape(B, T).astype(np.int64)
    targets = np.fromfile(p + ".targets", dtype=np.int32).reshape(B, T).astype(np.int64)
    mask = np.fromfile(p + ".mask", dtype=np.uint8).reshape(B, T)
    pos = np.fromfile(p + ".positions", dtype=np.int64)
    if (pos < 0).any():
        raise SystemExit(f"{p}: an image cut by the sequence length; LlavaForConditionalGeneration needs whole ones")
    flat = inputs.reshape(-1)
    flat[pos] = image_token
    labels = np.full((B, T), -100, dtype=np.int64)
    labels[:, 1:] = np.where(mask[:, :-1] != 0, targets[:, :-1], -100)
    pixels = np.fromfile(p + ".pixels", dtype=np.float32).reshape(n, 3, S, S)
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(dev, non_blocking=True)
    # the seed's tokens: the longest actual row (index.json's width; T is that rounded up to 64)
    return t(inputs), t(labels), t(pixels).to(torch.bfloat16), B * entry["width"], n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", required=True)
    ap.add_argument("--model", default="llava-1.5-13b", choices=sorted(LMS))
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--json", default="")
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args()

    rank, world, local = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    if world > 1:
        dist.init_process_group("nccl", device_id=dev)
    torch.backends.cuda.matmul.allow_tf32 = True
    for name in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 64)

    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.tensor import DTensor
    from transformers import LlavaForConditionalGeneration

    index = json.load(open(os.path.join(args.batches, "index.json")))
    if any(e["micro"] != 0 for e in index):
        raise SystemExit("llava_reference: one micro-batch a step (GAS 1) only")
    mine = sorted((e for e in index if e["rank"] == rank), key=lambda e: e["step"])
    if len(mine) <= args.warmup:
        raise SystemExit(f"llava_reference: {len(mine)} steps for rank {rank}, warm-up {args.warmup}")

    vocab, image_token = 32000, 31999  # the batches' text ids are below 8,000 (the sample's tokenizer)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    with torch.device(dev):
        model = LlavaForConditionalGeneration(configs(args.model, vocab, image_token))
    init_s = time.perf_counter() - t0
    inner = model.model
    tower, projector, lm = inner.vision_tower, inner.multi_modal_projector, inner.language_model
    tower.requires_grad_(False)
    n_tower = sum(p.numel() for p in tower.parameters())
    n_proj = sum(p.numel() for p in projector.parameters())
    n_lm = sum(p.numel() for p in lm.parameters()) + model.lm_head.weight.numel()
    layers = lm.layers
    for i in range(len(layers)):
        layers[i] = checkpoint_wrapper(layers[i], preserve_rng_state=False)
        if not args.no_compile:
            layers[i] = torch.compile(layers[i], dynamic=True)  # rows' widths vary by batch
    mesh = init_device_mesh("cuda", (world,))
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    # The frozen tower stays out of FSDP, whole in bf16 on every rank (as ours keeps it): FSDP2 swaps a
    # wrapped module's class, and transformers 5 finds the layers whose outputs it records
    # (hidden_states[-2], LLaVA's feature layer) by the class (utils/output_capturing.py).
    tower.to(torch.bfloat16)
    for layer in layers:
        fully_shard(layer, mesh=mesh, mp_policy=mp, reshard_after_forward=True)
    fully_shard(model, mesh=mesh, mp_policy=mp, ignored_params=set(tower.parameters()))
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    sharded_GiB = torch.cuda.memory_allocated() / 2**30
    params = [p for p in model.parameters() if p.requires_grad]
    opt_kind = "fused"
    try:
        opt = torch.optim.AdamW(params, lr=2e-5, betas=(0.9, 0.999), weight_decay=0.0, fused=True)
    except Exception:  # noqa: BLE001
        opt_kind, opt = "foreach", torch.optim.AdamW(params, lr=2e-5, betas=(0.9, 0.999), weight_decay=0.0, foreach=True)

    d, _, L, _ = LMS[args.model]

    def step(entry):
        nonlocal opt, opt_kind
        x, y, px, tokens, images = load(args.batches, entry, image_token, dev)
        # a micro-batch of text-only rows has no image for the tower (it refuses an empty batch)
        out = model(input_ids=x, pixel_values=px if images else None, labels=y, use_cache=False)
        out.loss.backward()
        grads = [p.grad for p in params if p.grad is not None]
        total = torch.nn.utils.get_total_norm(grads, 2.0, False, True)
        if isinstance(total, DTensor):
            total = total.full_tensor()
        torch.nn.utils.clip_grads_with_norm_(params, 1.0, total, True)
        try:
            opt.step()
        except Exception:  # noqa: BLE001  fused AdamW on DTensors unsupported: foreach, once
            if opt_kind != "fused":
                raise
            opt_kind = "foreach"
            opt = torch.optim.AdamW(params, lr=2e-5, betas=(0.9, 0.999), weight_decay=0.0, foreach=True)
            opt.step()
        opt.zero_grad(set_to_none=True)
        T = entry["width"]
        flops = (6 * n_lm + 12 * L * d * T) * tokens + (2 * n_tower + 6 * n_proj) * images * 576
        return out.loss, tokens, flops

    t0 = time.perf_counter()
    for e in mine[: args.warmup]:
        loss, _, _ = step(e)
    torch.cuda.synchronize()
    warm_s = time.perf_counter() - t0
    torch.cuda.reset_peak_memory_stats()
    timed = []
    for e in mine[args.warmup:]:
        if world > 1:
            dist.barrier()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        loss, tokens, flops = step(e)
        b.record()
        torch.cuda.synchronize()
        timed.append((e["step"], a.elapsed_time(b) / 1e3, tokens, flops, float(loss)))
    mine_rows = dict(steps=[t[0] for t in timed], s=[t[1] for t in timed], tokens=[t[2] for t in timed],
                     flops=[t[3] for t in timed], loss=[t[4] for t in timed],
                     peak_alloc_GiB=torch.cuda.max_memory_allocated() / 2**30,
                     peak_reserved_GiB=torch.cuda.max_memory_reserved() / 2**30)
    rows = [None] * world
    if world > 1:
        dist.all_gather_object(rows, mine_rows)
    else:
        rows = [mine_rows]
    if rank == 0:
        step_s = [max(r["s"][i] for r in rows) for i in range(len(timed))]  # the slowest rank's
        tokens = sum(sum(r["tokens"]) for r in rows)
        flops = sum(sum(r["flops"]) for r in rows)
        res = dict(kind="train", mode="fsdp2", model=args.model, world=world, torch=torch.__version__,
                   transformers=__import__("transformers").__version__, device=torch.cuda.get_device_name(dev),
                   compile=("per decoder layer" if not args.no_compile else False),
                   activation_checkpointing="every decoder layer (checkpoint_wrapper)", optimizer=opt_kind,
                   precision="FSDP2 MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32); fp32 sharded masters",
                   n_tower=n_tower, n_projector=n_proj, n_lm=n_lm, init_s=init_s, warmup_s=warm_s,
                   sharded_state_after_init_GiB=sharded_GiB, steps=rows[0]["steps"],
                   step_ms=[round(s * 1e3, 2) for s in step_s], step_ms_median=statistics.median(step_s) * 1e3,
                   tokens_per_s_per_gpu=tokens / sum(step_s) / world,
                   mfu_palm=flops / sum(step_s) / world / PEAK,
                   loss=[round(x, 4) for x in rows[0]["loss"]], ln_vocab=math.log(vocab),
                   peak_alloc_GiB_max=max(r["peak_alloc_GiB"] for r in rows),
                   peak_reserved_GiB_max=max(r["peak_reserved_GiB"] for r in rows))
        print(json.dumps(res), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(res) + "\n")
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
