#!/usr/bin/env python3
"""Converts a Hugging Face checkpoint of the LLaMA architecture (LLaMA-2, Vicuna,
Aquila2) into the checkpoint directory benchmake-train starts a `finetune` from
(docs/TRAINER.md, "Checkpoints"): one model.safetensors with Hugging Face's tensor
names, and a config.json of model_type "llama" (trainer/checkpoint/hf_config.h reads it).

    python3 hf_to_benchmake.py BAAI/Aquila2-7B OUT_DIR [--revision SHA]

Aquila2's own config.json says model_type "aquila" (its modeling code is LLaMA's
with other class names), so the config is rewritten; the tensors are copied as
they are (bf16; benchmake-train widens them to fp32 master weights).
Needs torch, transformers and safetensors, and the network or a local copy.
"""
import argparse
import json
import os

import torch
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModelForCausalLM


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a Hugging Face repository or a local directory")
    parser.add_argument("out", help="the directory to write (benchmake's {out})")
    parser.add_argument("--revision", default=None, help="a commit of the repository")
    args = parser.parse_args()

    cfg = AutoConfig.from_pretrained(args.model, revision=args.revision, trust_remote_code=True)
    model = AutoModelForCausalLM.from_pretrained(args.model, revision=args.revision,
                                                 torch_dtype=torch.bfloat16,
                                                 trust_remote_code=True)
    # Rotary frequencies are recomputed from rope_theta, not weights.
    state = {k: v.contiguous() for k, v in model.state_dict().items()
             if not k.endswith("rotary_emb.inv_freq")}
    os.makedirs(args.out, exist_ok=True)
    save_file(state, os.path.join(args.out, "model.safetensors"), metadata={"format": "pt"})
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_hidden_layers": cfg.num_hidden_layers,
        "num_attention_heads": cfg.num_attention_heads,
        "num_key_value_heads": getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads,
        "max_position_embeddings": cfg.max_position_embeddings,
        "rms_norm_eps": cfg.rms_norm_eps,
        "rope_theta": getattr(cfg, "rope_theta", 10000.0),
        "tie_word_embeddings": bool(getattr(cfg, "tie_word_embeddings", False)),
        "bos_token_id": cfg.bos_token_id,
        "eos_token_id": cfg.eos_token_id,
        "hidden_act": "silu",
        "torch_dtype": "bfloat16",
        "source": {"model": args.model, "revision": args.revision},
    }
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(f"{args.model}: {sum(v.numel() for v in state.values()):,} parameters -> {args.out}")


if __name__ == "__main__":
    main()
