#!/usr/bin/env python3
"""Writes test images and Pillow's answers on them, for tests/base/image_pil_test.cc and
tests/rules/clip_image_pil_test.cc (the reference the C++ code is compared against).

    pil_images.py OUT_DIR     writes OUT_DIR/<name>.<ext> images of mixed sizes, aspect
                              ratios and modes, Pillow's results as raw files, and
                              OUT_DIR/manifest.json describing them
    pil_images.py --check     exits 0 when Pillow and NumPy import, 77 (with why) otherwise

Per image, Pillow (and NumPy for CLIPImageProcessor's float steps) computes:
  <name>.dec.rgb        Image.open(f).convert("RGB"), HWC uint8
  <name>.rN.rgb         that image .resize((w, h), filter) for the manifest's cases
  <name>.clip_pad.u8    LLaVA's expand2square with (122, 116, 104), then transformers'
                        CLIPImageProcessor steps on it: shortest edge 336 (the other
                        int(336 * long / short)) with PIL BICUBIC, center crop 336, HWC uint8
  <name>.clip_pad.f32   the pixel_values: float32(u8 * (1/255) in float64), then
                        (x - mean) / std in float32, CHW float32 little-endian
  <name>.clip_nopad.*   the same without expand2square
Interlaced and 2/4/16-bit PNGs Pillow cannot write are written by the small encoder below.
"""
import json
import os
import struct
import sys
import zlib

try:
    import numpy as np
    import PIL
    from PIL import Image
except ImportError as e:  # the caller turns 77 into a skip
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        print(f"pil_images.py: needs Pillow and NumPy (Debian: python3-pil python3-numpy): {e}")
        sys.exit(77)
    raise

MEAN = [0.48145466, 0.4578275, 0.40821073]
STD = [0.26862954, 0.26130258, 0.27577711]
SIZE = 336
FILTERS = {"bicubic": Image.BICUBIC, "bilinear": Image.BILINEAR, "box": Image.BOX}


def content(width, height, seed):
    """RGB uint8 pixels with smooth gradients, sharp edges (overshoot and clipping for the
    bicubic lobes) and noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    r = 255 * x / max(width - 1, 1)
    g = 255 * y / max(height - 1, 1)
    b = 127.5 + 127.5 * np.sin((x + 2 * y) / 7.0)
    img = np.stack([r, g, b], axis=-1)
    checker = ((x // 5 + y // 3) % 2 == 0)[..., None]
    img = np.where(checker & (x < width / 3)[..., None], 255 - img, img)
    noisy = y > height * 0.6
    img[noisy] = rng.integers(0, 256, size=(int(noisy.sum()), 3))
    img[:, (width // 2):(width // 2 + 2)] = 0
    img[(height // 2):(height // 2 + 1), :] = 255
    return np.clip(img, 0, 255).astype(np.uint8)


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(
        ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png(path, rows_bytes_fn, width, height, bit_depth, color_type, interlace=False):
    """A PNG from a function giving the packed bytes of a (sub)image's rows."""
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 1 if interlace else 0)
    raw = b""
    if interlace:
        for xs, ys, dx, dy in [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4),
                               (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]:
            for row in rows_bytes_fn(xs, ys, dx, dy):
                raw += b"\x00" + row
    else:
        for row in rows_bytes_fn(0, 0, 1, 1):
            raw += b"\x00" + row
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) +
                png_chunk(b"IDAT", zlib.compress(raw, 6)) + png_chunk(b"IEND", b""))


def sub_rows(arr, xs, ys, dx, dy, pack):
    sub = arr[ys::dy, xs::dx]
    if sub.shape[0] == 0 or sub.shape[1] == 0:
        return []
    return [pack(r) for r in sub]


def write_images(out):
    """(name, file, how) for every test image."""
    made = []

    def add(name, ext, save):
        path = os.path.join(out, f"{name}.{ext}")
        save(path)
        made.append((name, path))

    sizes = [(500, 375), (375, 500), (336, 336), (640, 480), (1024, 200), (200, 1024),
             (333, 334), (17, 11), (7, 3), (1, 5), (1, 1), (1200, 900), (96, 160)]
    for i, (w, h) in enumerate(sizes):
        rgb = Image.fromarray(content(w, h, i))
        kind = i % 6
        if kind == 0:
            add(f"jpeg420_{w}x{h}", "jpg", lambda p: rgb.save(p, quality=90))
        elif kind == 1:
            add(f"jpeg444_{w}x{h}", "jpg", lambda p: rgb.save(p, quality=95, subsampling=0))
        elif kind == 2:
            add(f"png_rgb_{w}x{h}", "png", lambda p: rgb.save(p))
        elif kind == 3:
            add(f"jpeg422prog_{w}x{h}", "jpg",
                lambda p: rgb.save(p, quality=85, subsampling=1, progressive=True))
        elif kind == 4:
            add(f"png_rgba_{w}x{h}", "png",
                lambda p: Image.merge("RGBA", (*rgb.split(), rgb.split()[0])).save(p))
        else:
            add(f"png_palette_{w}x{h}", "png",
                lambda p: rgb.convert("P", palette=Image.ADAPTIVE, colors=200).save(p))
    base = content(90, 60, 100)
    rgb = Image.fromarray(base)
    add("jpeg_gray_90x60", "jpg", lambda p: rgb.convert("L").save(p, quality=90))
    add("jpeg_cmyk_90x60", "jpg", lambda p: rgb.convert("CMYK").save(p, quality=90))
    add("png_gray_90x60", "png", lambda p: rgb.convert("L").save(p))
    add("png_la_90x60", "png", lambda p: rgb.convert("LA").save(p))
    add("png_1bit_90x60", "png", lambda p: rgb.convert("1").save(p))
    add("png_palette_trns_90x60", "png",
        lambda p: rgb.convert("P", palette=Image.ADAPTIVE, colors=16).save(p, transparency=3))
    add("png_rgb_trns_90x60", "png", lambda p: rgb.save(p, transparency=(0, 0, 0)))
    # 16-bit grayscale: values mostly above 255 (Pillow clips them to white) and some below.
    g16 = (base[..., 0].astype(np.uint32) * 257 // 3).astype(np.uint16)
    g16[:20] = base[:20, :, 1] // 2
    add("png_gray16_90x60", "png", lambda p: write_png(
        p, lambda *a: sub_rows(g16, *a, lambda r: r.astype(">u2").tobytes()), 90, 60, 16, 0))
    rgb16 = base.astype(np.uint16) * 257 + np.arange(90, dtype=np.uint16)[None, :, None]
    add("png_rgb16_90x60", "png", lambda p: write_png(
        p, lambda *a: sub_rows(rgb16, *a, lambda r: r.astype(">u2").tobytes()), 90, 60, 16, 2))
    rgba16 = np.concatenate([rgb16, rgb16[..., :1]], axis=-1)
    add("png_rgba16_90x60", "png", lambda p: write_png(
        p, lambda *a: sub_rows(rgba16, *a, lambda r: r.astype(">u2").tobytes()), 90, 60, 16, 6))
    for bits in (2, 4):
        g = (base[..., 1] >> (8 - bits)).astype(np.uint8)

        def pack(r, bits=bits):
            vals = list(r) + [0] * ((-len(r)) % (8 // bits))
            out = bytearray()
            for j in range(0, len(vals), 8 // bits):
                byte = 0
                for v in vals[j:j + 8 // bits]:
                    byte = (byte << bits) | int(v)
                out.append(byte)
            return bytes(out)
        add(f"png_gray{bits}bit_90x60", "png", lambda p, g=g, pack=pack: write_png(
            p, lambda *a: sub_rows(g, *a, pack), 90, 60, bits, 0))
    inter = content(45, 31, 200)
    add("png_interlaced_45x31", "png", lambda p: write_png(
        p, lambda *a: sub_rows(inter, *a, lambda r: r.tobytes()), 45, 31, 8, 2, interlace=True))
    return made


def expand2square(img, colour):  # LLaVA's, llava/mm_utils.py
    w, h = img.size
    if w == h:
        return img
    if w > h:
        result = Image.new(img.mode, (w, w), colour)
        result.paste(img, (0, (w - h) // 2))
        return result
    result = Image.new(img.mode, (h, h), colour)
    result.paste(img, ((h - w) // 2, 0))
    return result


def clip_steps(img):
    """CLIPImageProcessor's resize, center_crop, rescale and normalize, as transformers'
    image_transforms compute them."""
    w, h = img.size
    short, long = (w, h) if w <= h else (h, w)
    new_long = int(SIZE * long / short)
    out_h, out_w = (new_long, SIZE) if w <= h else (SIZE, new_long)
    arr = np.array(img.resize((out_w, out_h), resample=Image.BICUBIC, reducing_gap=None))
    top, left = (out_h - SIZE) // 2, (out_w - SIZE) // 2
    u8 = np.ascontiguousarray(arr[top:top + SIZE, left:left + SIZE])
    x = (u8.astype(np.float64) * (1 / 255)).astype(np.float32)
    x = (x - np.array(MEAN, dtype=np.float32)) / np.array(STD, dtype=np.float32)
    return u8, np.ascontiguousarray(x.transpose(2, 0, 1)).astype("<f4")


def resize_cases(w, h):
    cases = [(336, 336, "bicubic"), (max(1, w // 3), max(1, h // 2), "bicubic"),
             (min(w * 2 + 1, 701), max(1, h // 3), "bicubic"),
             (max(1, w // 2), min(h * 3, 703), "bicubic"),
             (w, h + 7, "bicubic"), (w + 5, h, "bicubic"),
             (max(1, w * 2 // 3), max(1, h * 3 // 4), "bilinear"), (max(1, w // 4), h + 2, "box")]
    return cases


def main():
    if sys.argv[1:] == ["--check"]:
        return 0
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    manifest = []
    colour = tuple(int(x * 255) for x in MEAN)
    for name, path in write_images(out):
        im = Image.open(path)
        mode = im.mode
        dec = im.convert("RGB")
        entry = {"name": name, "file": os.path.basename(path), "mode": mode,
                 "width": dec.width, "height": dec.height, "resize": []}
        dec_arr = np.array(dec)
        dec_arr.tofile(os.path.join(out, f"{name}.dec.rgb"))
        for i, (w, h, f) in enumerate(resize_cases(dec.width, dec.height)):
            r = np.array(dec.resize((w, h), resample=FILTERS[f], reducing_gap=None))
            r.tofile(os.path.join(out, f"{name}.r{i}.rgb"))
            entry["resize"].append({"width": w, "height": h, "filter": f,
                                    "file": f"{name}.r{i}.rgb"})
        for tag, img in (("clip_pad", expand2square(dec, colour)), ("clip_nopad", dec)):
            u8, f32 = clip_steps(img)
            u8.tofile(os.path.join(out, f"{name}.{tag}.u8"))
            f32.tofile(os.path.join(out, f"{name}.{tag}.f32"))
        manifest.append(entry)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"pillow": PIL.__version__, "numpy": np.__version__,
                   "images": manifest}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
