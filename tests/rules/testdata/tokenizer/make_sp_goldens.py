#!/usr/bin/python3
"""SentencePiece goldens, made with Debian's python3-sentencepiece (the reference).

Run by make_goldens.sh (after make_goldens.js has written cases.json); the
output is committed. For each model it writes sp_NAME.json:
  {"model", "reference", "cases": [{"name", "text" | "hex", "ids"}],
   "kjv_slice": {"bytes", "ids"}, "kjv": {"tokens", "fnv1a"}}
ids are EncodeAsIds (no BOS/EOS) of the case's text (or of the bytes "hex"
spells: invalid UTF-8, which SentencePiece reads as U+FFFD per bad byte), of
the first SLICE_BYTES of data/kjv.txt, and of the whole of data/kjv.txt in
one call (its count and FNV-1a over the ids' little-endian bytes).

    /usr/bin/python3 make_sp_goldens.py NAME=MODEL_PATH ...
"""
import json
import os
import sys

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "../../../.."))
SLICE_BYTES = 65536

EXTRA = [
    ("control_piece_text", "<s> hello </s> <unk> <0x41> <pad>"),
    ("leading_spaces_newlines", "\n\n  x\n \n\t\n"),
    ("cr_only", "a\rb\r\rc"),
    ("only_newlines", "\n\n\n"),
    ("long_line", "word " * 400),
]
INVALID = [
    ("invalid_ff", b"\xff"),
    ("invalid_continuation", b"abc\x80\x80 def"),
    ("invalid_truncated", b"x\xc3"),
    ("invalid_surrogate", b"\xed\xa0\x80 y"),
    ("invalid_overlong", b"\xc0\xaf z\n\xfe"),
]


def fnv1a(ids):
    h = 0x811C9DC5
    for i in ids:
        for k in range(4):
            h ^= (i >> (8 * k)) & 0xFF
            h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def main():
    cases = json.load(open(os.path.join(HERE, "cases.json"), encoding="utf-8"))
    kjv = open(os.path.join(ROOT, "data/kjv.txt"), "rb").read()
    for arg in sys.argv[1:]:
        name, path = arg.split("=", 1)
        if not os.path.exists(path):
            print(f"make_sp_goldens: {path} missing; {name} skipped")
            continue
        sp = spm.SentencePieceProcessor(model_file=path)
        out_cases = [{"name": c["name"], "text": c["text"], "ids": sp.EncodeAsIds(c["text"])}
                     for c in cases]
        out_cases += [{"name": n, "text": t, "ids": sp.EncodeAsIds(t)} for n, t in EXTRA]
        out_cases += [{"name": n, "hex": b.hex(), "ids": sp.EncodeAsIds(b)} for n, b in INVALID]
        whole = sp.EncodeAsIds(kjv.decode("utf-8"))
        golden = {
            "model": os.path.relpath(path, ROOT) if path.startswith(ROOT) else os.path.basename(path),
            "reference": f"python3-sentencepiece {spm.__version__} EncodeAsIds",
            "cases": out_cases,
            "kjv_slice": {"bytes": SLICE_BYTES,
                          "ids": sp.EncodeAsIds(kjv[:SLICE_BYTES].decode("utf-8"))},
            "kjv": {"tokens": len(whole), "fnv1a": fnv1a(whole)},
        }
        out = os.path.join(HERE, f"sp_{name}.json")
        with open(out, "w", encoding="utf-8") as f:
            f.write(json.dumps(golden, ensure_ascii=False, separators=(",", ":"))
                    .replace('},{"name"', '},\n{"name"') + "\n")
        print(f"make_sp_goldens: {out}: {len(out_cases)} cases, kjv {len(whole)} tokens")


if __name__ == "__main__":
    main()
