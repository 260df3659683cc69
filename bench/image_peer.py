#!/usr/bin/env python3
"""The Pillow side of bench/image_bench.sh, and the images it measures.

    image_peer.py make DIR          writes the benchmark's images (photo-like content, the
                                    sizes and formats of LLaVA's pretraining images)
    image_peer.py run ROUNDS PROCESSES FILE...
        Pillow doing LLaVA-1.5's steps on each file: Image.open().convert("RGB"),
        expand2square with (122, 116, 104), shortest edge to 336 with BICUBIC
        (reducing_gap=None, as transformers calls it), center crop 336, np.asarray; in this
        process when PROCESSES is 1, else on a multiprocessing pool of that many (started
        before the clock). Prints one JSON line: the best of ROUNDS passes in wall seconds
        and in CPU seconds of this process (meaningful for PROCESSES 1 only), and the SHA-256
        of the uint8 outputs concatenated in FILE order (image_bench compares it with its
        own).
"""
import hashlib
import json
import multiprocessing
import os
import sys
import time

import numpy as np
import PIL
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "support"))
from pil_images import expand2square  # noqa: E402  LLaVA's, llava/mm_utils.py

SIZE = 336
PAD = (122, 116, 104)  # tuple(int(x * 255) for x in CLIP's image_mean)


def preprocess(path):
    img = expand2square(Image.open(path).convert("RGB"), PAD)
    w, h = img.size
    short, long = (w, h) if w <= h else (h, w)
    new_long = int(SIZE * long / short)
    out_w, out_h = (SIZE, new_long) if w <= h else (new_long, SIZE)
    img = img.resize((out_w, out_h), resample=Image.BICUBIC, reducing_gap=None)
    left, top = (out_w - SIZE) // 2, (out_h - SIZE) // 2
    return np.asarray(img.crop((left, top, left + SIZE, top + SIZE)))


def photo(w, h, seed):
    """Smooth shapes, gradients and mild noise: JPEG sizes like photographs'."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.zeros((h, w, 3), np.float32)
    for c in range(3):
        img[..., c] = 128 + 60 * np.sin(x / rng.uniform(15, 60) + c) * np.cos(y / rng.uniform(15, 60))
    for _ in range(6):
        cx, cy, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(10, min(w, h) / 3)
        img[(x - cx) ** 2 + (y - cy) ** 2 < r * r] = rng.uniform(0, 255, 3)
    img += rng.normal(0, 6, img.shape)
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))


def make(out):
    os.makedirs(out, exist_ok=True)
    sizes = [(500, 375), (640, 480), (375, 500), (500, 333), (1024, 768), (336, 224),
             (800, 533), (480, 640), (500, 500), (612, 612)]
    for i in range(40):
        w, h = sizes[i % len(sizes)]
        img = photo(w, h, i)
        if i % 10 == 9:
            img.save(os.path.join(out, f"img{i:03d}.png"))
        else:
            img.save(os.path.join(out, f"img{i:03d}.jpg"), quality=90)


def preprocess_bytes(path):
    return preprocess(path).tobytes()


def run(rounds, processes, files):
    pool = multiprocessing.Pool(processes) if processes > 1 else None
    mapper = pool.map if pool else (lambda fn, xs: [fn(x) for x in xs])
    digest = hashlib.sha256()
    for out in mapper(preprocess_bytes, files):  # also the warm-up
        digest.update(out)
    wall, cpu = float("inf"), float("inf")
    for _ in range(rounds):
        w0, c0 = time.perf_counter(), time.process_time()
        if pool:
            pool.map(preprocess_bytes, files)
        else:
            for f in files:
                preprocess(f)
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    if pool:
        pool.close()
        cpu = wall  # the children's CPU time is not this process's
    print(json.dumps({"peer": f"Pillow {PIL.__version__} + NumPy {np.__version__}",
                      "images": len(files), "processes": processes, "seconds": wall,
                      "cpu_seconds": cpu, "images_per_s": len(files) / wall,
                      "sha256": digest.hexdigest()}))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        run(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
