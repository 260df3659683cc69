#!/usr/bin/env python3
"""Writes LLaMA-2's 32,000-token SentencePiece model from npm llama-tokenizer-js.

LLaMA-2's tokenizer.model is under Meta's Llama 2 Community License, so the
repository does not carry it. npm `llama-tokenizer-js` (MIT code; the data are
Meta's vocabulary and merges) ships the vocabulary (ids in order) and the BPE
merges (in priority order) of the same tokenizer; this script writes them back
as a SentencePiece ModelProto with LLaMA-2's settings: BPE, byte fallback,
<unk> = 0, <s> = 1, </s> = 2, <0x00>..<0xFF> as byte pieces, the "identity"
normalizer with the dummy "▁" prefix and no removal of extra white space. A
piece's score is minus the rank of the first merge that makes it, which is the
order SentencePiece's BPE merges in (the merges were listed by that score).
Standard library only; the protobuf wire format is written by hand.

    python3 make_llama2_model.py LLAMA_TOKENIZER_JS OUT.model [--if-present]

With --if-present a missing LLAMA_TOKENIZER_JS is not an error: nothing is
written (the tests that need the model then skip). The tests' fixture and
make_goldens.sh run it on bench/node_modules/llama-tokenizer-js/llama-tokenizer.js
(installed by `npm ci --prefix bench`, which scripts/bootstrap.sh test runs).
"""
import base64
import os
import re
import struct
import sys


def varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def field_bytes(number, data):
    return varint((number << 3) | 2) + varint(len(data)) + data


def field_float(number, value):
    return varint((number << 3) | 5) + struct.pack("<f", value)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        sys.exit(__doc__)
    source, out = args
    if not os.path.exists(source):
        if "--if-present" in sys.argv:
            print(f"make_llama2_model: {source} is not installed; not writing {out}")
            return
        sys.exit(f"make_llama2_model: {source} does not exist (npm ci --prefix bench)")
    js = open(source, encoding="utf-8").read()
    vocab_b64 = re.search(r'const llama_vocab_base64 = "([^"]*)"', js).group(1)
    merges_b64 = re.search(r'const llama_merges_binary = "([^"]*)"', js).group(1)
    vocab = base64.b64decode(vocab_b64).decode("utf-8").split("\n")
    ids = struct.unpack(f"<{len(base64.b64decode(merges_b64)) // 2}H",
                        base64.b64decode(merges_b64))
    assert len(vocab) == 32000, len(vocab)
    index = {piece: i for i, piece in enumerate(vocab)}
    score = {}
    for rank in range(len(ids) // 2):
        merged = vocab[ids[2 * rank]] + vocab[ids[2 * rank + 1]]
        assert merged in index, merged
        score.setdefault(index[merged], -float(rank))
    pieces = b""
    unmade = 0
    for i, piece in enumerate(vocab):
        if i == 0:
            kind, s = 2, 0.0  # UNKNOWN
        elif i in (1, 2):
            kind, s = 3, 0.0  # CONTROL
        elif re.fullmatch(r"<0x[0-9A-F]{2}>", piece):
            kind, s = 6, 0.0  # BYTE
        else:
            kind = 1  # NORMAL
            if i in score:
                s = score[i]
            else:
                # Single characters: never made by a merge, so their score is
                # never compared; below every merge, in id order.
                unmade += len(piece) > 1
                s = -1e6 - i
        pieces += field_bytes(1, field_bytes(1, piece.encode("utf-8")) + field_float(2, s) +
                              field_varint(3, kind))
    trainer = (field_varint(3, 2) + field_varint(4, 32000) + field_varint(35, 1) +
               field_varint(40, 0) + field_varint(41, 1) + field_varint(42, 2) +
               field_varint(43, -1))
    normalizer = (field_bytes(1, b"identity") + field_varint(3, 1) + field_varint(4, 0) +
                  field_varint(5, 1))
    model = pieces + field_bytes(2, trainer) + field_bytes(3, normalizer)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".tmp", "wb") as f:
        f.write(model)
    os.replace(out + ".tmp", out)
    print(f"make_llama2_model: {out}: 32000 pieces, {len(ids) // 2} merges, "
          f"{unmade} multi-character pieces made by no merge")


if __name__ == "__main__":
    main()
