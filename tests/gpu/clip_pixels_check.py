#!/usr/bin/env python3
"""Our LLaVA-1.5 pixel_values against transformers' CLIPImageProcessor, on the GPU machine
(transformers 5.x and a recent Pillow there; no internet, so the processor is built from
openai/clip-vit-large-patch14-336's preprocessor_config.json, written below, through
from_pretrained on a local folder).

    python3 tests/gpu/clip_pixels_check.py [DIR]      (from the repository root)

DIR (default .devtree) holds our clip_pixels tool (bench/clip_pixels.cc): DIR/bin/clip_pixels,
DIR/bench/clip_pixels (a build folder), inside DIR/bin.tar.xz (bench/pack_devtree.sh), or DIR
is the tool itself; DIR/lib/extra-libs.tar.xz, when there, gives it the Debian libraries it
links (libjpeg-turbo, libpng, fmt).

20 images of mixed sizes and modes are written here with Pillow (JPEG: RGB 4:2:0, 4:4:4,
4:2:2, progressive, grayscale, CMYK; PNG: RGB, RGBA, P, P with tRNS, L, LA, 1-bit, 2-bit,
16-bit gray, 16-bit RGB, 16-bit RGBA, interlaced, RGB with tRNS; 1x1 to 1500x1000). For each,
the reference is LLaVA's own sequence (llava/train/train.py): Image.open(f).convert("RGB"),
expand2square with tuple(int(x * 255) for x in image_mean), then
processor.preprocess(image)["pixel_values"][0]; and the same without expand2square. Our
values must be within 1e-5 of it (max abs over all 3 x 336 x 336). Exit 0 when all 40 are.
The processor is the PIL one (CLIPImageProcessorPil in transformers >= 5.x's backends layout,
else CLIPImageProcessor, the slow class), which LLaVA-1.5 used; the difference from what
AutoImageProcessor loads by default (the torchvision processor where it is) is printed too,
for information, not checked.
"""
import json
import os
import subprocess
import sys
import tarfile
import tempfile

import numpy as np
import PIL
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from pil_images import content, expand2square, sub_rows, write_png  # noqa: E402

SIZE = 336
TOLERANCE = 1e-5
# openai/clip-vit-large-patch14-336's preprocessor_config.json (LLaVA-1.5's vision tower).
PREPROCESSOR_CONFIG = {
    "crop_size": 336,
    "do_center_crop": True,
    "do_normalize": True,
    "do_resize": True,
    "feature_extractor_type": "CLIPFeatureExtractor",
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "resample": 3,
    "size": 336,
}


def make_images(out):
    """(name, path) of the 20 test images."""
    os.makedirs(out, exist_ok=True)
    made = []

    def add(name, ext, save):
        path = os.path.join(out, f"{name}.{ext}")
        save(path)
        made.append((name, path))

    def rgb(w, h, seed):
        return Image.fromarray(content(w, h, seed))

    add("jpeg420_640x480", "jpg", lambda p: rgb(640, 480, 1).save(p, quality=90))
    add("jpeg444_375x500", "jpg", lambda p: rgb(375, 500, 2).save(p, quality=95, subsampling=0))
    add("jpeg422_1500x1000", "jpg",
        lambda p: rgb(1500, 1000, 3).save(p, quality=75, subsampling=1))
    add("jpeg_progressive_1024x200", "jpg",
        lambda p: rgb(1024, 200, 4).save(p, quality=85, progressive=True))
    add("jpeg_gray_333x334", "jpg", lambda p: rgb(333, 334, 5).convert("L").save(p, quality=90))
    add("jpeg_cmyk_500x375", "jpg", lambda p: rgb(500, 375, 6).convert("CMYK").save(p, quality=90))
    add("jpeg_1x1", "jpg", lambda p: rgb(1, 1, 7).save(p, quality=90))
    add("png_rgb_336x336", "png", lambda p: rgb(336, 336, 8).save(p))
    add("png_rgba_200x1024", "png", lambda p: rgb(200, 1024, 9).convert("RGBA").save(p))
    add("png_palette_500x333", "png",
        lambda p: rgb(500, 333, 10).convert("P", palette=Image.ADAPTIVE, colors=200).save(p))
    add("png_palette_trns_17x11", "png", lambda p: rgb(17, 11, 11).convert(
        "P", palette=Image.ADAPTIVE, colors=16).save(p, transparency=3))
    add("png_gray_1200x900", "png", lambda p: rgb(1200, 900, 12).convert("L").save(p))
    add("png_la_96x160", "png", lambda p: rgb(96, 160, 13).convert("LA").save(p))
    add("png_1bit_300x200", "png", lambda p: rgb(300, 200, 14).convert("1").save(p))
    add("png_rgb_trns_7x3", "png", lambda p: rgb(7, 3, 15).save(p, transparency=(0, 0, 0)))
    base = content(120, 90, 16)
    # 16-bit gray: values above 255 (Pillow's convert clips them to white) and below.
    g16 = (base[..., 0].astype(np.uint32) * 257 // 3).astype(np.uint16)
    g16[:30] = base[:30, :, 1] // 2
    add("png_gray16_120x90", "png", lambda p: write_png(
        p, lambda *a: sub_rows(g16, *a, lambda r: r.astype(">u2").tobytes()), 120, 90, 16, 0))
    rgb16 = base.astype(np.uint16) * 257 + np.arange(120, dtype=np.uint16)[None, :, None]
    add("png_rgb16_120x90", "png", lambda p: write_png(
        p, lambda *a: sub_rows(rgb16, *a, lambda r: r.astype(">u2").tobytes()), 120, 90, 16, 2))
    rgba16 = np.concatenate([rgb16, rgb16[..., :1]], axis=-1)[:70, :45]
    add("png_rgba16_45x70", "png", lambda p: write_png(
        p, lambda *a: sub_rows(rgba16, *a, lambda r: r.astype(">u2").tobytes()), 45, 70, 16, 6))
    g2 = (content(64, 48, 17)[..., 1] >> 6).astype(np.uint8)

    def pack2(r):
        vals = list(r) + [0] * ((-len(r)) % 4)
        return bytes(sum(int(v) << (6 - 2 * k) for k, v in enumerate(vals[j:j + 4]))
                     for j in range(0, len(vals), 4))
    add("png_gray2bit_64x48", "png", lambda p: write_png(
        p, lambda *a: sub_rows(g2, *a, pack2), 64, 48, 2, 0))
    inter = content(45, 31, 18)
    add("png_interlaced_45x31", "png", lambda p: write_png(
        p, lambda *a: sub_rows(inter, *a, lambda r: r.tobytes()), 45, 31, 8, 2, interlace=True))
    return made


def extract(archive, into, members=None):
    with tarfile.open(archive) as t:
        chosen = [t.getmember(m) for m in members] if members else None
        if hasattr(tarfile, "data_filter"):  # Python >= 3.12: no paths outside `into`
            t.extractall(into, members=chosen, filter="data")
        else:
            t.extractall(into, members=chosen)


def find_tool(where, scratch):
    """Our clip_pixels and the LD_LIBRARY_PATH it needs."""
    libs = os.path.join(where, "lib", "extra-libs.tar.xz")
    lib_dir = ""
    if os.path.isfile(libs):
        lib_dir = os.path.join(scratch, "lib")
        extract(libs, lib_dir)
    if os.path.isfile(where):
        return where, lib_dir
    for rel in ("bin/clip_pixels", "bench/clip_pixels"):
        if os.path.isfile(os.path.join(where, rel)):
            return os.path.join(where, rel), lib_dir
    packed = os.path.join(where, "bin.tar.xz")
    if os.path.isfile(packed):
        extract(packed, scratch, ["bin/clip_pixels"])
        return os.path.join(scratch, "bin", "clip_pixels"), lib_dir
    sys.exit(f"clip_pixels_check: no clip_pixels under {where} (bin/, bench/ or bin.tar.xz); "
             "build it (cmake --build BUILD --target clip_pixels) or pack .devtree "
             "(bench/pack_devtree.sh)")


def ours(tool, lib_dir, paths, pad, scratch):
    out = os.path.join(scratch, "ours_pad.f32" if pad else "ours_nopad.f32")
    env = dict(os.environ)
    if lib_dir:
        env["LD_LIBRARY_PATH"] = lib_dir + ":" + env.get("LD_LIBRARY_PATH", "")
    cmd = [tool] + ([] if pad else ["--no-pad"]) + [out] + paths
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"clip_pixels_check: {' '.join(cmd[:3])} ... failed ({r.returncode}): "
                 f"{r.stderr.strip()}")
    return np.fromfile(out, dtype="<f4").reshape(len(paths), 3, SIZE, SIZE)


def processors(scratch):
    import transformers
    folder = os.path.join(scratch, "clip-vit-large-patch14-336")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "preprocessor_config.json"), "w") as f:
        json.dump(PREPROCESSOR_CONFIG, f)
    cls = getattr(transformers, "CLIPImageProcessorPil", None) or transformers.CLIPImageProcessor
    pil = cls.from_pretrained(folder)
    backend = getattr(pil, "backend", "pil")
    if backend != "pil" or getattr(pil, "is_fast", False) is True:
        sys.exit(f"clip_pixels_check: {type(pil).__name__} is not the PIL processor "
                 f"(backend {backend})")
    try:
        auto = transformers.AutoImageProcessor.from_pretrained(folder)
    except Exception as e:  # information only
        print(f"(AutoImageProcessor default: not loaded: {e})")
        auto = None
    return transformers.__version__, pil, auto


def pixel_values(processor, image):
    try:
        out = processor.preprocess(image, return_tensors="np")["pixel_values"][0]
    except Exception:  # a torchvision processor returns torch tensors only
        out = processor.preprocess(image, return_tensors="pt")["pixel_values"][0].numpy()
    return np.asarray(out, dtype=np.float32)


def main():
    where = sys.argv[1] if len(sys.argv) > 1 else ".devtree"
    with tempfile.TemporaryDirectory() as scratch:
        tool, lib_dir = find_tool(where, scratch)
        images = make_images(os.path.join(scratch, "images"))
        paths = [p for _, p in images]
        version, proc, auto = processors(scratch)
        colour = tuple(int(x * 255) for x in proc.image_mean)
        print(f"transformers {version}, Pillow {PIL.__version__}, NumPy {np.__version__}; "
              f"reference {type(proc).__name__}, AutoImageProcessor default "
              f"{type(auto).__name__ if auto else 'none'}; pad colour {colour}")
        ours_pad = ours(tool, lib_dir, paths, True, scratch)
        ours_nopad = ours(tool, lib_dir, paths, False, scratch)
        worst, failed = 0.0, 0
        print(f"{'image':28} {'mode':6} {'size':>10}  {'pad':>9} {'no pad':>9}  {'auto pad':>9}")
        for i, (name, path) in enumerate(images):
            opened = Image.open(path)
            mode, size = opened.mode, f"{opened.width}x{opened.height}"
            rgb = opened.convert("RGB")
            padded = expand2square(rgb, colour)
            d_pad = float(np.abs(pixel_values(proc, padded) - ours_pad[i]).max())
            d_nopad = float(np.abs(pixel_values(proc, rgb) - ours_nopad[i]).max())
            d_auto = float("nan")
            if auto is not None:
                try:  # information only
                    d_auto = float(np.abs(pixel_values(auto, padded) - ours_pad[i]).max())
                except Exception as e:
                    print(f"(AutoImageProcessor on {name}: {e})")
                    auto = None
            bad = d_pad > TOLERANCE or d_nopad > TOLERANCE
            failed += bad
            worst = max(worst, d_pad, d_nopad)
            print(f"{name:28} {mode:6} {size:>10}  {d_pad:9.2e} {d_nopad:9.2e}  {d_auto:9.2e}"
                  f"{'  FAIL' if bad else ''}")
        print(f"clip_pixels_check: {len(images)} images x (pad, no pad): max abs diff "
              f"{worst:.3g} (tolerance {TOLERANCE}); {failed} image(s) over it: "
              f"{'FAIL' if failed else 'PASS'}")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
