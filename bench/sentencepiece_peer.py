#!/usr/bin/python3
"""The SentencePiece peer of bench/tokenizer_bench: Debian's python3-sentencepiece
EncodeAsIds over a whole text held in memory, one call, single-threaded (the
library encodes one input on the calling thread). Prints one JSON line per model:
  {"peer", "version", "vocab", "seconds" (best of rounds), "tokens", "fnv1a"}
Usage: /usr/bin/python3 bench/sentencepiece_peer.py FILE ROUNDS MODEL...
"""
import json
import sys
import time

import sentencepiece as spm


def fnv1a(ids):
    h = 0x811C9DC5
    for i in ids:
        for k in range(4):
            h ^= (i >> (8 * k)) & 0xFF
            h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def main():
    text = open(sys.argv[1], encoding="utf-8").read()
    rounds = int(sys.argv[2])
    for model in sys.argv[3:]:
        sp = spm.SentencePieceProcessor(model_file=model)
        ids = sp.EncodeAsIds(text)  # warm-up
        best = float("inf")
        for _ in range(rounds):
            t0 = time.perf_counter()
            ids = sp.EncodeAsIds(text)
            best = min(best, time.perf_counter() - t0)
        print(json.dumps({"peer": "python3-sentencepiece", "version": spm.__version__,
                          "vocab": model, "seconds": best, "tokens": len(ids),
                          "fnv1a": fnv1a(ids)}), flush=True)


if __name__ == "__main__":
    main()
