#!/usr/bin/env python3
"""Independent float64 numpy reference for LLaVA's forward, checked against llava_dump.

Computes LlavaForConditionalGeneration's forward as transformers writes it — CLIPVisionModel
(patch convolution, class token, positions, pre_layrnorm, pre-LN layers with quick_gelu),
hidden_states[vision_feature_layer] without the class token, the mlp2x_gelu projector (erf
GELU), the features written over the image tokens' embeddings in order, LlamaForCausalLM
(RMSNorm, rotate_half RoPE, grouped-query causal attention, SwiGLU) — in numpy from those
formulas, not from benchmake's code, reading the weights by their llava-hf names from the
model.safetensors that `llava_dump save` writes. Then runs `llava_dump run` on the same inputs
and compares the next-token log-probabilities (max |diff| <= 1e-4 * max(1, max |ref|)) and
the loss (relative 1e-5). Exits 0 when both pass.

With --greedy, checks greedy decoding instead (`llava_dump generate`, MMMU's model half, on
--device cpu: LlavaModel::GenerateGreedy, or cuda: CudaLlavaTrainer::GenerateGreedy in fp32): from a prompt with an image in the middle, the reference appends the argmax
of its last position's next-token logits and reruns, as transformers' generate does with
do_sample=False and num_beams=1; ours must make the same tokens (compared up to the first step
whose two best logits lie within 1e-6 of each other, a tie float32 may break either way), stop
after the reference's third token (or the first after it not made before) when that token is
the end-of-sequence id, and, with no
end-of-sequence id, run until the sequence outgrows max_seq (the token made after max_seq tokens
is the last).

    /usr/bin/python3 tests/trainer/llava_tiny_reference.py --dump build/tests/trainer/llava_dump
    /usr/bin/python3 tests/trainer/llava_tiny_reference.py --dump ... --greedy
    /usr/bin/python3 tests/trainer/llava_tiny_reference.py --dump ... --greedy --device cuda
"""
import argparse
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:  # ctest counts exit 77 as skipped
    print("llava_tiny_reference: numpy is not installed; skipped")
    sys.exit(77)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (name, t["dtype"])
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(body[a:b], "<f4").reshape(t["shape"]).astype(np.float64)
    return out


def write_pixels(path, px):
    px = px.astype("<f4")
    header = json.dumps({"pixel_values": {"dtype": "F32", "shape": list(px.shape),
                                          "data_offsets": [0, px.nbytes]}}).encode()
    header += b" " * ((8 - len(header) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + px.tobytes())


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def softmax(x):
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


def clip_features(W, v, pixels, feature_layer):
    p = "vision_tower.vision_model."
    C, P, NH = v["hidden_size"], v["patch_size"], v["num_attention_heads"]
    n, ch, S, _ = pixels.shape
    g = S // P
    conv = W[p + "embeddings.patch_embedding.weight"]  # [C, ch, P, P]
    patches = pixels.reshape(n, ch, g, P, g, P).transpose(0, 2, 4, 1, 3, 5).reshape(n, g * g, -1)
    emb = patches @ conv.reshape(C, -1).T
    cls = np.broadcast_to(W[p + "embeddings.class_embedding"], (n, 1, C))
    x = np.concatenate([cls, emb], 1) + W[p + "embeddings.position_embedding.weight"]
    eps = v["layer_norm_eps"]
    x = layer_norm(x, W[p + "pre_layrnorm.weight"], W[p + "pre_layrnorm.bias"], eps)
    hidden = [x]
    HD = C // NH
    for l in range(v["num_hidden_layers"]):
        q = f"{p}encoder.layers.{l}."
        lin = lambda y, name: y @ W[q + name + ".weight"].T + W[q + name + ".bias"]
        h = layer_norm(x, W[q + "layer_norm1.weight"], W[q + "layer_norm1.bias"], eps)
        T = h.shape[1]
        heads = lambda y: y.reshape(n, T, NH, HD).transpose(0, 2, 1, 3)
        Q, K, V = heads(lin(h, "self_attn.q_proj")), heads(lin(h, "self_attn.k_proj")), heads(
            lin(h, "self_attn.v_proj"))
        a = softmax(Q @ K.transpose(0, 1, 3, 2) / math.sqrt(HD)) @ V
        x = x + lin(a.transpose(0, 2, 1, 3).reshape(n, T, C), "self_attn.out_proj")
        h = layer_norm(x, W[q + "layer_norm2.weight"], W[q + "layer_norm2.bias"], eps)
        h = lin(h, "mlp.fc1")
        h = h / (1 + np.exp(-1.702 * h))  # quick_gelu
        x = x + lin(h, "mlp.fc2")
        hidden.append(x)
    return hidden[feature_layer][:, 1:]


def project(W, f):
    p = "multi_modal_projector."
    h = f @ W[p + "linear_1.weight"].T + W[p + "linear_1.bias"]
    erf = np.vectorize(math.erf)
    h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
    return h @ W[p + "linear_2.weight"].T + W[p + "linear_2.bias"]


def llama_logits(W, t, embeds):
    p = "language_model.model."
    B, T, C = embeds.shape
    NH, KVH = t["num_attention_heads"], t["num_key_value_heads"]
    HD, eps, theta = C // NH, t["rms_norm_eps"], t["rope_theta"]
    rms = lambda x, w: x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w
    inv = 1.0 / theta ** (np.arange(0, HD, 2) / HD)
    ang = np.outer(np.arange(T), inv)
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))
    rot = lambda x: np.concatenate([-x[..., HD // 2:], x[..., :HD // 2]], -1)
    rope = lambda x: x * cos + rot(x) * sin
    causal = np.triu(np.full((T, T), -np.inf), 1)
    x = embeds
    for l in range(t["num_hidden_layers"]):
        q = f"{p}layers.{l}."
        h = rms(x, W[q + "input_layernorm.weight"])
        Q = (h @ W[q + "self_attn.q_proj.weight"].T).reshape(B, T, NH, HD).transpose(0, 2, 1, 3)
        K = (h @ W[q + "self_attn.k_proj.weight"].T).reshape(B, T, KVH, HD).transpose(0, 2, 1, 3)
        V = (h @ W[q + "self_attn.v_proj.weight"].T).reshape(B, T, KVH, HD).transpose(0, 2, 1, 3)
        Q, K = rope(Q), rope(K)
        K, V = np.repeat(K, NH // KVH, 1), np.repeat(V, NH // KVH, 1)
        a = softmax(Q @ K.transpose(0, 1, 3, 2) / math.sqrt(HD) + causal) @ V
        x = x + a.transpose(0, 2, 1, 3).reshape(B, T, C) @ W[q + "self_attn.o_proj.weight"].T
        h = rms(x, W[q + "post_attention_layernorm.weight"])
        gate, up = h @ W[q + "mlp.gate_proj.weight"].T, h @ W[q + "mlp.up_proj.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ W[q + "mlp.down_proj.weight"].T
    x = rms(x, W[p + "norm.weight"])
    return x @ W["language_model.lm_head.weight"].T


def llava_embeds(W, cfg, ids, pixels):
    v = cfg["vision_config"]
    image = cfg["image_token_index"]
    features = project(W, clip_features(W, v, pixels, cfg["vision_feature_layer"]))
    features = features.reshape(-1, features.shape[-1])
    ids_np = np.array(ids)
    embeds = W["language_model.model.embed_tokens.weight"][np.where(ids_np == image, 0, ids_np)]
    embeds[ids_np == image] = features
    return embeds


def greedy(args):
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "ckpt")
        subprocess.run([args.dump, "save", ckpt, "llava-tiny", str(args.seed)], check=True,
                       stdout=subprocess.DEVNULL)
        cfg = json.load(open(os.path.join(ckpt, "config.json")))
        W = read_safetensors(os.path.join(ckpt, "model.safetensors"))
        v, t = cfg["vision_config"], cfg["text_config"]
        vocab = cfg["benchmake"]["text"]["vocab"]
        max_seq = cfg["benchmake"]["text"]["max_seq"]
        image, k, S = cfg["image_token_index"], cfg["image_seq_length"], v["image_size"]
        rng = random.Random(args.seed)
        prompt = [1] + [rng.randrange(3, vocab) for _ in range(5)] + [image] * k + [
            rng.randrange(3, vocab) for _ in range(8)]
        pixels = np.random.default_rng(args.seed).standard_normal((1, 3, S, S))
        pixels = pixels.astype(np.float32).astype(np.float64)
        inputs = os.path.join(tmp, "inputs.json")
        with open(inputs, "w") as f:
            json.dump({"input_ids": [prompt]}, f)
        px = os.path.join(tmp, "pixels.safetensors")
        write_pixels(px, pixels)

        def ours(max_new, eos):
            r = subprocess.run([args.dump, "generate", ckpt, inputs, px, str(max_new), str(eos),
                                args.device], capture_output=True, text=True)
            if r.returncode == 77:  # device cuda without a GPU
                print(f"skipped: {r.stderr.strip()}")
                sys.exit(77)
            if r.returncode != 0:
                sys.exit(f"llava_dump generate failed: {r.stderr.strip()}")
            return json.loads(r.stdout)

        # The reference: the whole forward on the sequence so far, argmax of the last position.
        embeds = llava_embeds(W, cfg, prompt, pixels)[None]
        table = W["language_model.model.embed_tokens.weight"]
        ref, exact = [], None
        while embeds.shape[1] <= max_seq:
            logits = llama_logits(W, t, embeds)[0, -1, :vocab]
            top2 = np.sort(logits)[-2:]
            if exact is None and top2[1] - top2[0] < 1e-6:
                exact = len(ref)  # tokens before this one must match exactly
            nxt = int(np.argmax(logits))
            ref.append(nxt)
            embeds = np.concatenate([embeds, table[nxt][None, None]], 1)
        exact = len(ref) if exact is None else exact
        long = ours(1000, -1)
        # the end-of-sequence id: the first token from the third on that was not made before
        stop = next(j for j in range(2, len(ref)) if ref[j] not in ref[:j])
        eos_run = ours(1000, ref[stop])
        short = ours(5, -1)
    expected_len = max_seq - len(prompt) + 1
    ok = True
    checks = [
        ("no eos: one token per position up to max_seq, then the one after",
         len(long["tokens"]) == expected_len and long["context_full"]),
        (f"no eos: the reference's tokens (the first {exact} of {len(ref)}, before any tie)",
         long["tokens"][:exact] == ref[:exact]),
        (f"eos = the reference's token {stop + 1}: stops there, eos kept",
         eos_run["tokens"] == ref[:stop + 1] and not eos_run["context_full"]),
        ("max_new_tokens 5: five tokens", short["tokens"] == ref[:5]),
    ]
    for what, good in checks:
        print(("ok   " if good else "FAIL ") + what)
        ok = ok and good
    print(f"reference {ref[:12]}...; ours {long['tokens'][:12]}...")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dump", required=True)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--greedy", action="store_true")
    parser.add_argument("--device", default="cpu",
                        help="--greedy: the decoder's device (cpu, or cuda: exit 77 without a GPU)")
    args = parser.parse_args()
    if args.greedy:
        return greedy(args)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "ckpt")
        subprocess.run([args.dump, "save", ckpt, "llava-tiny", str(args.seed)], check=True)
        cfg = json.load(open(os.path.join(ckpt, "config.json")))
        W = read_safetensors(os.path.join(ckpt, "model.safetensors"))
        v, t = cfg["vision_config"], cfg["text_config"]
        vocab = cfg["benchmake"]["text"]["vocab"]
        image, k, S = cfg["image_token_index"], cfg["image_seq_length"], v["image_size"]
        rng = random.Random(args.seed)
        text = lambda n: [rng.randrange(3, vocab) for _ in range(n)]
        # an image after BOS; an image in the middle; a row without an image
        ids = [[1] + [image] * k + text(11), [1] + text(5) + [image] * k + text(6),
               [1] + text(15)]
        labels = [[0] * (4 + k) + [1] * (12 - k), [0] * (6 + k) + [1] * (10 - k),
                  [0] * 4 + [1] * 12]
        with open(os.path.join(tmp, "inputs.json"), "w") as f:
            json.dump({"input_ids": ids, "label_mask": labels}, f)
        pixels = np.random.default_rng(args.seed).standard_normal((2, 3, S, S))
        pixels = pixels.astype(np.float32).astype(np.float64)
        write_pixels(os.path.join(tmp, "pixels.safetensors"), pixels)
        out = os.path.join(tmp, "out.safetensors")
        subprocess.run([args.dump, "run", ckpt, os.path.join(tmp, "inputs.json"),
                        os.path.join(tmp, "pixels.safetensors"), out], check=True)
        ours = read_safetensors(out)

    features = project(W, clip_features(W, v, pixels, cfg["vision_feature_layer"]))
    features = features.reshape(-1, features.shape[-1])
    ids_np = np.array(ids)
    embeds = W["language_model.model.embed_tokens.weight"][ids_np]  # the padded row exists
    embeds[ids_np == image] = features  # in order: row-major over the image tokens
    logits = llama_logits(W, t, embeds)[..., :vocab]
    logprobs = logits - logits.max(-1, keepdims=True)
    logprobs -= np.log(np.exp(logprobs).sum(-1, keepdims=True))
    mask = np.array(labels)[:, 1:] == 1
    nxt = np.where(ids_np[:, 1:] == image, 0, ids_np[:, 1:])  # image tokens are never labels
    nll = -np.take_along_axis(logprobs[:, :-1], nxt[..., None], -1)[..., 0]
    loss = nll[mask].mean()

    diff = np.abs(ours["logprobs"] - logprobs).max()
    tol = 1e-4 * max(1.0, np.abs(logprobs).max())
    loss_diff = abs(ours["loss"][0] - loss) / abs(loss)
    print(f"log-probs: max |diff| {diff:.3e} (tolerance {tol:.3e}); loss ours "
          f"{ours['loss'][0]:.7f} numpy {loss:.7f} (rel {loss_diff:.2e})")
    ok = diff <= tol and loss_diff <= 1e-5
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
