#!/usr/bin/python3
"""Writes PaddleNLP-style and plain .npy fixtures with NumPy itself (Debian's
python3-numpy), so the tests read files NumPy wrote, not files our writer
wrote. Run once; the output is committed:
    /usr/bin/python3 tests/rules/testdata/pretokenized/make_fixtures.py
Writes beside this script:
    tiny_ids.npy, tiny_idx.npz  as PaddleNLP create_pretraining_data.py:
                                ids uint16, lens int32, docs int64 (np.savez)
    plain.npy                   int64 ids, documents ended by 50256
    expected.json               the same arrays as JSON lists
"""
import json
import os

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(3)
n_docs = 23
lens, docs, ids = [], [0], []
for d in range(n_docs):
    sentences = int(rng.integers(1, 5))
    for s in range(sentences):
        n = int(rng.integers(1, 40))
        sentence = rng.integers(0, 50256, size=n).tolist()
        if s == sentences - 1:
            sentence[-1] = 50256  # --append_eos
        ids += sentence
        lens.append(n)
    docs.append(len(lens))
np.save(os.path.join(here, "tiny_ids.npy"), np.array(ids, dtype=np.uint16))
np.savez(os.path.join(here, "tiny_idx.npz"), lens=np.array(lens, dtype=np.int32),
         docs=np.array(docs, dtype=np.int64))

plain_docs = [rng.integers(0, 50256, size=int(rng.integers(1, 30))).tolist() + [50256]
              for _ in range(9)]
plain_tail = rng.integers(0, 50256, size=5).tolist()  # no end-of-text after the last
plain = [t for d in plain_docs for t in d] + plain_tail
np.save(os.path.join(here, "plain.npy"), np.array(plain, dtype=np.int64))

with open(os.path.join(here, "expected.json"), "w") as f:
    json.dump({"ids": ids, "lens": lens, "docs": docs,
               "plain_documents": plain_docs + [plain_tail]}, f)
print(f"{n_docs} documents, {len(lens)} sentences, {len(ids)} ids; plain {len(plain)} ids")
