#!/usr/bin/env python3
"""Independent float64 numpy reference for tests/trainer/vision_tower_test.cc's hand case.

Computes Hugging Face CLIPVisionModel's forward (embeddings, pre_layrnorm, pre-LN encoder
layers with quick_gelu, hidden_states[feature_layer] without the class token) and LLaVA's
mlp2x_gelu projector in numpy, from the formulas of transformers' modeling_clip.py and
LLaVA's multimodal_projector/builder.py, not from benchmake's code. Prints the values the C++
test pastes in. Run: /usr/bin/python3 tests/trainer/clip_tiny_reference.py

The case: channels 2, image 2, patch 1 (4 patches, 5 positions), hidden 4, 2 heads, mlp 5,
2 layers, feature_layer -2 (only layer 0 runs), LayerNorm eps 1e-5; projector to H = 3.
Every parameter, in Hugging Face's order (the llava-hf checkpoint's), is
value(i) = 0.5 * sin(0.37 * i + 0.1) for its index i in the flat concatenation;
pixel_values[j] = sin(0.9 * j) - 0.2 for j over the [1, 2, 2, 2] tensor, row-major.
"""
import math

import numpy as np

CH, S, P, C, NH, M, LAYERS, FEATURE_LAYER, EPS, H = 2, 2, 1, 4, 2, 5, 2, -2, 1e-5, 3
HD = C // NH
G = S // P
T = G * G + 1


def tensors():
    """(name, shape) in the checkpoint's order (CLIPVisionModel's state_dict order)."""
    out = [("embeddings.class_embedding", (C,)),
           ("embeddings.patch_embedding.weight", (C, CH, P, P)),
           ("embeddings.position_embedding.weight", (T, C)),
           ("pre_layrnorm.weight", (C,)), ("pre_layrnorm.bias", (C,))]
    for l in range(LAYERS):
        p = f"encoder.layers.{l}."
        out += [(p + "layer_norm1.weight", (C,)), (p + "layer_norm1.bias", (C,)),
                (p + "self_attn.q_proj.weight", (C, C)), (p + "self_attn.k_proj.weight", (C, C)),
                (p + "self_attn.v_proj.weight", (C, C)), (p + "self_attn.q_proj.bias", (C,)),
                (p + "self_attn.k_proj.bias", (C,)), (p + "self_attn.v_proj.bias", (C,)),
                (p + "self_attn.out_proj.weight", (C, C)), (p + "self_attn.out_proj.bias", (C,)),
                (p + "layer_norm2.weight", (C,)), (p + "layer_norm2.bias", (C,)),
                (p + "mlp.fc1.weight", (M, C)), (p + "mlp.fc1.bias", (M,)),
                (p + "mlp.fc2.weight", (C, M)), (p + "mlp.fc2.bias", (C,))]
    out += [("post_layernorm.weight", (C,)), ("post_layernorm.bias", (C,))]
    return out


def layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * w + b


def main():
    W, at = {}, 0
    for name, shape in tensors():
        n = int(np.prod(shape))
        W[name] = np.array([0.5 * math.sin(0.37 * (at + j) + 0.1) for j in range(n)]).reshape(shape)
        at += n
    total = at
    pixels = np.array([math.sin(0.9 * j) - 0.2 for j in range(CH * S * S)]).reshape(1, CH, S, S)

    # patch embedding: Conv2d(CH, C, P, stride P, bias=False), flattened over the grid
    conv = np.zeros((C, G, G))
    for o in range(C):
        for gy in range(G):
            for gx in range(G):
                conv[o, gy, gx] = np.sum(W["embeddings.patch_embedding.weight"][o] *
                                         pixels[0, :, gy * P:(gy + 1) * P, gx * P:(gx + 1) * P])
    patch = conv.reshape(C, G * G).T  # [np, C]
    emb = np.concatenate([W["embeddings.class_embedding"][None], patch]) + \
        W["embeddings.position_embedding.weight"]
    hidden = [layer_norm(emb, W["pre_layrnorm.weight"], W["pre_layrnorm.bias"])]
    x = hidden[0]
    for l in range(LAYERS):
        p = f"encoder.layers.{l}."
        lin = lambda v, n: v @ W[p + n + ".weight"].T + W[p + n + ".bias"]
        h = layer_norm(x, W[p + "layer_norm1.weight"], W[p + "layer_norm1.bias"])
        q, k, v = lin(h, "self_attn.q_proj"), lin(h, "self_attn.k_proj"), lin(h, "self_attn.v_proj")
        heads = []
        for hh in range(NH):  # head hh: channels [hh*HD, (hh+1)*HD) of q, k, v
            cols = slice(hh * HD, (hh + 1) * HD)
            scores = (q[:, cols] * HD ** -0.5) @ k[:, cols].T
            a = np.exp(scores - scores.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            heads.append(a @ v[:, cols])
        x = x + lin(np.concatenate(heads, -1), "self_attn.out_proj")
        h = layer_norm(x, W[p + "layer_norm2.weight"], W[p + "layer_norm2.bias"])
        f = lin(h, "mlp.fc1")
        f = f / (1 + np.exp(-1.702 * f))  # quick_gelu
        x = x + lin(f, "mlp.fc2")
        hidden.append(x)
    features = hidden[FEATURE_LAYER][1:]  # [np, C]

    # projector: Linear(C, H), GELU (erf), Linear(H, H); parameters after the tower's
    proj = {}
    for name, shape in [("linear_1.weight", (H, C)), ("linear_1.bias", (H,)),
                        ("linear_2.weight", (H, H)), ("linear_2.bias", (H,))]:
        n = int(np.prod(shape))
        proj[name] = np.array([0.5 * math.sin(0.37 * (at + j) + 0.1) for j in range(n)]).reshape(shape)
        at += n
    y = features @ proj["linear_1.weight"].T + proj["linear_1.bias"]
    y = 0.5 * y * (1 + np.vectorize(math.erf)(y / math.sqrt(2)))
    y = y @ proj["linear_2.weight"].T + proj["linear_2.bias"]

    print(f"tower parameters {total}")
    print("features", ", ".join(f"{v:.15g}" for v in features.ravel()))
    print("projected", ", ".join(f"{v:.15g}" for v in y.ravel()))


if __name__ == "__main__":
    main()
