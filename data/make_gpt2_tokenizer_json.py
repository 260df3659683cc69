#!/usr/bin/env python3
"""Writes GPT-2's tokenizer as a Hugging Face tokenizer.json from data/gpt2.tiktoken.

Standard library only, deterministic. Run from anywhere:
    python3 data/make_gpt2_tokenizer_json.py [OUT]     (default data/gpt2_tokenizer.json)

The result is what Hugging Face's own gpt2 tokenizer.json holds: a byte-level
BPE model whose vocabulary is the rank file's tokens written in GPT-2's
bytes_to_unicode alphabet (id = rank), the merges that rebuild each token
(for the token of rank r, the two parts that BPE with ranks below r leaves,
as transformers' TikTokenConverter derives them), <|endoftext|> = 50256 as
an added special token, the ByteLevel pre-tokenizer (GPT-2's regex, no prefix
space), the ByteLevel post-processor and decoder, and no normalizer.
"""
import base64
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EOT = "<|endoftext|>"
EOT_ID = 50256


def bytes_to_unicode():
    """GPT-2's map of the 256 bytes to printable characters."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def bpe(ranks, token, max_rank):
    """tiktoken's merge loop, stopping at merges of rank >= max_rank."""
    parts = [bytes([b]) for b in token]
    while True:
        best, at = None, None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < max_rank and (best is None or r < best):
                best, at = r, i
        if best is None:
            return parts
        parts = parts[:at] + [parts[at] + parts[at + 1]] + parts[at + 2:]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "gpt2_tokenizer.json")
    ranks = {}
    with open(os.path.join(HERE, "gpt2.tiktoken"), "rb") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    b2u = bytes_to_unicode()
    text = lambda b: "".join(b2u[x] for x in b)
    vocab = {text(t): r for t, r in sorted(ranks.items(), key=lambda kv: kv[1])}
    vocab[EOT] = EOT_ID
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) == 1:
            continue
        parts = bpe(ranks, token, rank)
        assert len(parts) == 2, (token, parts)
        merges.append(text(parts[0]) + " " + text(parts[1]))
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": EOT_ID, "content": EOT, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": dict(byte_level, trim_offsets=False),
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                  "byte_fallback": False, "ignore_merges": False, "vocab": vocab,
                  "merges": merges},
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"{out}: {len(vocab)} tokens, {len(merges)} merges")


if __name__ == "__main__":
    main()
