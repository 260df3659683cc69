#!/usr/bin/env python3
"""Makes a small Alpaca-format instruction set from data/kjv.txt.

Deterministic (no randomness: every choice is a SHA-256 of the verse
reference), standard library only. Run from anywhere:
    python3 data/make_kjv_instruct.py [OUT_DIR]
Writes (into OUT_DIR, default data/) kjv_instruct_train.json and data/kjv_instruct_valid.json, lists of
{"instruction", "input", "output"} as Stanford Alpaca. The held-out split is
by whole chapters, so no valid verse has a neighbour from its chapter in train.

Tasks, one per chosen verse:
  quote     "Quote Genesis 1:3."                  -> the verse text
  locate    "Give the book, chapter and verse."   + input: the verse -> "Genesis 1:3"
  continue  "Continue this verse from Genesis 1:3." + input: its first words -> the rest
"""
import hashlib
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KEEP_ONE_IN = 20        # verses chosen: hash % KEEP_ONE_IN == 0 (about 1,550)
VALID_ONE_IN = 10       # chapters held out: hash % VALID_ONE_IN == 0 (about 10%)
HEADING = re.compile(r"^((?:[1-3] )?[A-Z][a-z]+(?: [A-Za-z]+)*) ([0-9]+)$")
VERSE = re.compile(r"^([0-9]+) (.*)$")


def h(text):
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def verses(path):
    book = chapter = None
    with open(path, encoding="ascii") as f:
        for line in f:
            line = line.rstrip("\n")
            m = HEADING.match(line)
            if m:
                book, chapter = m.group(1), int(m.group(2))
                continue
            m = VERSE.match(line)
            if m and book:
                yield book, chapter, int(m.group(1)), m.group(2).strip()


def example(book, chapter, verse, text):
    ref = f"{book} {chapter}:{verse}"
    words = text.split()
    kind = h("task " + ref) % 3
    if kind == 2 and len(words) >= 6:
        cut = max(3, len(words) // 3)
        return {"instruction": f"Continue this verse from {ref} in the King James Bible.",
                "input": " ".join(words[:cut]), "output": " ".join(words[cut:])}
    if kind != 0:
        return {"instruction": "Give the book, chapter and verse of this King James Bible verse.",
                "input": text, "output": ref}
    return {"instruction": f"Quote {ref} from the King James Bible.", "input": "", "output": text}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else HERE
    train, valid = [], []
    for book, chapter, verse, text in verses(os.path.join(HERE, "kjv.txt")):
        if h(f"keep {book} {chapter}:{verse}") % KEEP_ONE_IN != 0:
            continue
        side = valid if h(f"chapter {book} {chapter}") % VALID_ONE_IN == 0 else train
        side.append(example(book, chapter, verse, text))
    for name, data in (("train", train), ("valid", valid)):
        with open(os.path.join(out_dir, f"kjv_instruct_{name}.json"), "w", encoding="ascii") as f:
            json.dump(data, f, indent=1, ensure_ascii=True)
            f.write("\n")
    print(f"train {len(train)} examples, valid {len(valid)} examples")


if __name__ == "__main__":
    main()
