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

LLaVA-1.5 (trainer/checkpoint/llava_checkpoint.h reads the result):

    python3 hf_to_benchmake.py --llava llava-hf/llava-1.5-13b-hf OUT_DIR
    python3 hf_to_benchmake.py --llava --clip openai/clip-vit-large-patch14-336 \
        --llama lmsys/vicuna-13b-v1.5 OUT_DIR

The first copies a LlavaForConditionalGeneration's tensors under llava-hf's names
(vision_tower.vision_model.*, multi_modal_projector.*, language_model.model.*,
language_model.lm_head.weight; transformers >= 4.52's model.* names are mapped back) and
writes a config.json of model_type "llava" with every geometry field explicit (transformers
fills the fields llava-hf's config leaves out from CLIP's and LLaMA's defaults; benchmake
does not guess them). The second builds LLaVA's pretraining start: CLIP's vision tower, the
LLaMA model, and a projector initialised as torch's nn.Linear is (LLaVA's pretrain starts
from that); image_token_index is the LLaMA vocabulary size (the placeholder llava_data uses).
"""
import argparse
import json
import os

import torch
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModelForCausalLM


def llava_name(key):
    """llava-hf's name of a LlavaForConditionalGeneration state-dict key (either naming)."""
    if key.startswith("model.language_model."):
        return "language_model.model." + key[len("model.language_model."):]
    if key == "lm_head.weight":
        return "language_model.lm_head.weight"
    if key.startswith("model.vision_tower.") and not key.startswith("model.vision_tower.vision_model."):
        # transformers 5.x: CLIPVisionModel without its vision_model level
        return "vision_tower.vision_model." + key[len("model.vision_tower."):]
    if key.startswith("model.vision_tower.") or key.startswith("model.multi_modal_projector."):
        return key[len("model."):]
    return key


def vision_fields(v):
    return {
        "model_type": "clip_vision_model",
        "hidden_size": v.hidden_size,
        "intermediate_size": v.intermediate_size,
        "num_hidden_layers": v.num_hidden_layers,
        "num_attention_heads": v.num_attention_heads,
        "image_size": v.image_size,
        "patch_size": v.patch_size,
        "num_channels": v.num_channels,
        "layer_norm_eps": v.layer_norm_eps,
        "hidden_act": v.hidden_act,
    }


def text_fields(t):
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": t.vocab_size,
        "hidden_size": t.hidden_size,
        "intermediate_size": t.intermediate_size,
        "num_hidden_layers": t.num_hidden_layers,
        "num_attention_heads": t.num_attention_heads,
        "num_key_value_heads": getattr(t, "num_key_value_heads", None) or t.num_attention_heads,
        "max_position_embeddings": t.max_position_embeddings,
        "rms_norm_eps": t.rms_norm_eps,
        "rope_theta": getattr(t, "rope_theta", 10000.0),
        # Carried so that the trainer reads transformers 5's theta (inside rope_parameters) and
        # refuses a scaled RoPE (trainer/checkpoint/hf_config.cc) rather than drop it.
        "rope_scaling": getattr(t, "rope_scaling", None),
        "rope_parameters": getattr(t, "rope_parameters", None),
        "tie_word_embeddings": bool(getattr(t, "tie_word_embeddings", False)),
        "bos_token_id": t.bos_token_id,
        "eos_token_id": t.eos_token_id,
        "hidden_act": "silu",
    }


def llava_config(vision, text, image_token_index, feature_layer, source, dtype):
    return {
        "architectures": ["LlavaForConditionalGeneration"],
        "model_type": "llava",
        "image_token_index": image_token_index,
        "vision_feature_layer": feature_layer,
        "vision_feature_select_strategy": "default",
        "projector_hidden_act": "gelu",
        "multimodal_projector_bias": True,
        "tie_word_embeddings": False,
        "vision_config": vision_fields(vision),
        "text_config": text_fields(text),
        "torch_dtype": dtype,
        "source": source,
    }


def write(out, state, config):
    os.makedirs(out, exist_ok=True)
    save_file(state, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(f"{sum(v.numel() for v in state.values()):,} parameters -> {out}")


def convert_llava(args):
    from transformers import LlavaForConditionalGeneration

    model = LlavaForConditionalGeneration.from_pretrained(
        args.model, revision=args.revision, torch_dtype=getattr(torch, args.dtype))
    cfg = model.config
    if cfg.vision_feature_select_strategy != "default" or cfg.projector_hidden_act != "gelu":
        raise SystemExit(f"{args.model}: not LLaVA-1.5 (vision_feature_select_strategy "
                         f"{cfg.vision_feature_select_strategy}, projector_hidden_act "
                         f"{cfg.projector_hidden_act})")
    state = {llava_name(k): v.contiguous() for k, v in model.state_dict().items()
             if not k.endswith("rotary_emb.inv_freq") and not k.endswith("position_ids")}
    index = getattr(cfg, "image_token_index", None)
    if index is None:
        index = cfg.image_token_id
    write(args.out, state, llava_config(cfg.vision_config, cfg.text_config, index,
                                        cfg.vision_feature_layer,
                                        {"model": args.model, "revision": args.revision},
                                        args.dtype))


def convert_llava_parts(args):
    from transformers import CLIPVisionModel

    torch.manual_seed(args.seed)
    dtype = getattr(torch, args.dtype)
    clip = CLIPVisionModel.from_pretrained(args.clip, torch_dtype=dtype)
    llama = AutoModelForCausalLM.from_pretrained(args.llama, torch_dtype=dtype)
    vision, text = clip.config, llama.config
    state = {"vision_tower." + k: v.contiguous() for k, v in clip.state_dict().items()
             if not k.endswith("position_ids")}
    state.update({"language_model." + k: v.contiguous() for k, v in llama.state_dict().items()
                  if not k.endswith("rotary_emb.inv_freq")})
    # LLaVA's build_vision_projector: Linear(C_v, H), GELU, Linear(H, H), torch's default init
    l1 = torch.nn.Linear(vision.hidden_size, text.hidden_size)
    l2 = torch.nn.Linear(text.hidden_size, text.hidden_size)
    for name, layer in (("linear_1", l1), ("linear_2", l2)):
        state[f"multi_modal_projector.{name}.weight"] = layer.weight.detach().to(dtype)
        state[f"multi_modal_projector.{name}.bias"] = layer.bias.detach().to(dtype)
    write(args.out, state, llava_config(vision, text, text.vocab_size, -2,
                                        {"clip": args.clip, "llama": args.llama,
                                         "projector_seed": args.seed}, args.dtype))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", nargs="?", help="a Hugging Face repository or a local directory")
    parser.add_argument("out", help="the directory to write (benchmake's {out})")
    parser.add_argument("--revision", default=None, help="a commit of the repository")
    parser.add_argument("--llava", action="store_true", help="a LLaVA-1.5 model (see above)")
    parser.add_argument("--clip", help="with --llava: the CLIP model of the vision tower")
    parser.add_argument("--llama", help="with --llava: the language model")
    parser.add_argument("--seed", type=int, default=0, help="the new projector's seed")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"],
                        help="with --llava: the tensors' dtype (float32 for exact checks)")
    args = parser.parse_args()
    if args.llava:
        if args.clip or args.llama:
            if not (args.clip and args.llama) or args.model:
                parser.error("--clip and --llama go together, without a model")
            return convert_llava_parts(args)
        if not args.model:
            parser.error("--llava needs a model (or --clip and --llama)")
        return convert_llava(args)
    if not args.model:
        parser.error("a model is needed")

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
        "rope_scaling": getattr(cfg, "rope_scaling", None),  # as text_fields says
        "rope_parameters": getattr(cfg, "rope_parameters", None),
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
