#!/usr/bin/env python3
"""Checks benchmake's CPU vision tower and projector against transformers and LLaVA.

Run where torch and transformers are installed (the GPU machine), after building
clip_vision_dump (cmake --build build --target clip_vision_dump):

    python3 tests/gpu/clip_vision_check.py --dump build/tests/trainer/clip_vision_dump

clip_vision_dump (tests/trainer/clip_vision_dump.cc) runs VisionTower<float> and
Projector<float> on random weights and random pixel values and writes the weights with
transformers' CLIPVisionModel names (tower.safetensors), the pixels and its outputs
(outputs.safetensors) and the tower's geometry (config.json). This script builds
CLIPVisionModel(CLIPVisionConfig(...)) of that geometry (hidden_act quick_gelu), loads the
weights strictly (only the position_ids buffer may be absent), runs it in fp32 (TF32 off)
with output_hidden_states=True and compares hidden_states[feature_layer][:, 1:] (LLaVA's
features: -2 for LLaVA-1.5) with benchmake's features; then LLaVA's mlp2x_gelu projector
(nn.Sequential(Linear, GELU(), Linear), as LLaVA's build_vision_projector) on those features
with benchmake's projected rows. Passes when max |difference| <= 1e-4 * max(1, max |ref|) for
both. Exits 0 when every preset passes, 1 otherwise.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def check(dump, preset, images, device):
    import torch
    from safetensors.torch import load_file
    from transformers import CLIPVisionConfig, CLIPVisionModel

    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([dump, tmp, preset, str(images)], check=True)
        cfg = json.load(open(os.path.join(tmp, "config.json")))
        weights = load_file(os.path.join(tmp, "tower.safetensors"))
        outputs = load_file(os.path.join(tmp, "outputs.safetensors"))

    config = CLIPVisionConfig(hidden_size=cfg["hidden"], intermediate_size=cfg["mlp"],
                              num_hidden_layers=cfg["layers"], num_attention_heads=cfg["heads"],
                              num_channels=cfg["channels"], image_size=cfg["image_size"],
                              patch_size=cfg["patch"], hidden_act="quick_gelu",
                              layer_norm_eps=cfg["norm_eps"], attention_dropout=0.0)
    model = CLIPVisionModel(config).eval().to(device, torch.float32)
    tower = {k: v for k, v in weights.items() if k.startswith("vision_model.")}
    # transformers 4.x's CLIPVisionModel holds its tower as .vision_model; 5.x's state dict
    # names the tower's tensors without that prefix: load by the names the model has.
    if not any(k.startswith("vision_model.") for k in model.state_dict()):
        tower = {k[len("vision_model."):]: v for k, v in tower.items()}
    missing, unexpected = model.load_state_dict(tower, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        print(f"{preset}: state dict mismatch: missing {missing}, unexpected {unexpected}")
        return False

    with torch.no_grad():
        pixels = outputs["pixel_values"].to(device)
        out = model(pixel_values=pixels, output_hidden_states=True)
        ref = out.hidden_states[cfg["feature_layer"]][:, 1:].float().cpu()
        ours = outputs["features"]
        ok = True
        scale = max(1.0, ref.abs().max().item())
        err = (ours - ref).abs().max().item()
        print(f"{preset}: features {tuple(ours.shape)}: max |diff| {err:.3e} (max |ref| {scale:.3g})")
        ok &= ours.shape == ref.shape and err <= 1e-4 * scale

        H = weights["multi_modal_projector.linear_2.weight"].shape[0]
        projector = torch.nn.Sequential(torch.nn.Linear(cfg["hidden"], H), torch.nn.GELU(),
                                        torch.nn.Linear(H, H)).to(device, torch.float32)
        projector[0].weight.copy_(weights["multi_modal_projector.linear_1.weight"])
        projector[0].bias.copy_(weights["multi_modal_projector.linear_1.bias"])
        projector[2].weight.copy_(weights["multi_modal_projector.linear_2.weight"])
        projector[2].bias.copy_(weights["multi_modal_projector.linear_2.bias"])
        # from benchmake's features, so that the projector is checked alone
        pref = projector(ours.reshape(-1, cfg["hidden"]).to(device)).cpu()
        pscale = max(1.0, pref.abs().max().item())
        perr = (outputs["projected"] - pref).abs().max().item()
        print(f"{preset}: projected {tuple(pref.shape)}: max |diff| {perr:.3e} (max |ref| {pscale:.3g})")
        ok &= perr <= 1e-4 * pscale
    print(f"{preset}: {'PASS' if ok else 'FAIL'}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True, help="the clip_vision_dump executable")
    ap.add_argument("--presets", default="clip-tiny,clip-vit-l-14-336")
    ap.add_argument("--images", type=int, default=2)
    ap.add_argument("--device", default=None, help="cuda (default when available) or cpu")
    args = ap.parse_args()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    results = [check(args.dump, p, args.images, device) for p in args.presets.split(",")]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
