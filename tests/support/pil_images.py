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

GIFs: Pillow writes the palette, grayscale, interlaced (its default from 16 rows up),
transparent and multi-frame ones; write_gif below writes what Pillow's writer cannot: a first
frame offset inside a larger logical screen or reaching past it, a local colour table, no
colour table at all, indices past the table's end, 12-bit LZW codes with no clear code once
the table is full (a "deferred clear"), and files cut or broken on purpose. Pillow reads them
all, so the answers are still Pillow's. The broken ones go to manifest["errors"] with the
exception Pillow raises on them (the C++ decoder must refuse each one too), written as
<name>.gif named .jpg like the OCR-VQA downloads that LLaVA-1.5 trains on. Four GIFs are
also cut at eight lengths each (manifest["gif_cuts"]): where Pillow still reads one (the
cut falls after the frame's last whole data sub-block it needs) its pixels are
<name>.dec.rgb, where it raises, "pillow" holds the exception.
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


def lzw_codes(indices, min_size, deferred_clear=False):
    """GIF LZW: a dictionary grown to 4096 codes, then a clear code (or, with deferred_clear,
    no clear: 12-bit codes go on with the full table, as the format allows)."""
    clear, end = 1 << min_size, (1 << min_size) + 1
    size, nxt = min_size + 1, end + 1
    table = {(i,): i for i in range(clear)}
    codes = [(clear, size)]
    w = ()
    for k in indices:
        if w + (k,) in table:
            w += (k,)
            continue
        codes.append((table[w], size))
        if nxt < 4096:
            table[w + (k,)] = nxt
            nxt += 1
            if nxt > (1 << size) and size < 12:
                size += 1
        elif not deferred_clear:
            codes.append((clear, size))
            table = {(i,): i for i in range(clear)}
            size, nxt = min_size + 1, end + 1
        w = (k,)
    if w:
        codes.append((table[w], size))
    codes.append((end, size))
    acc = n = 0
    data = bytearray()
    for code, bits in codes:
        acc |= code << n
        n += bits
        while n >= 8:
            data.append(acc & 255)
            acc >>= 8
            n -= 8
    if n:
        data.append(acc & 255)
    return bytes(data)


def gif_table(colours):
    """A colour table of len(colours) rounded up to a power of two (at least 2): (bytes, field)."""
    n = 2
    while n < len(colours):
        n *= 2
    return (bytes(v for c in colours for v in c) + b"\0\0\0" * (n - len(colours)),
            n.bit_length() - 2)


def write_gif(path, screen, frame, box, global_table=None, local_table=None, transparency=None,
              interlace=False, background=0, deferred_clear=False, ending=b"\0;"):
    """A one-frame GIF89a: frame is a 2-D array of indices placed at box = (left, top)."""
    w, h = screen
    head = b"GIF89a"
    flags, table = 0, b""
    if global_table is not None:
        table, field = gif_table(global_table)
        flags = 0x80 | 0x70 | field
    head += struct.pack("<HHBBB", w, h, flags, background, 0) + table
    if transparency is not None:
        head += b"!\xf9\x04\x01\x0a\x00" + bytes([transparency]) + b"\0"
    fh, fw = frame.shape
    flags, table = 0, b""
    if local_table is not None:
        table, field = gif_table(local_table)
        flags = 0x80 | field
    order = list(range(fh))
    if interlace:
        flags |= 0x40
        order = [y for start, step in ((0, 8), (4, 8), (2, 4), (1, 2))
                 for y in range(start, fh, step)]
    data = lzw_codes([int(v) for y in order for v in frame[y]], 8, deferred_clear)
    blocks = b"".join(bytes([len(data[i:i + 255])]) + data[i:i + 255]
                      for i in range(0, len(data), 255))
    with open(path, "wb") as f:
        f.write(head + b"," + struct.pack("<HHHHB", box[0], box[1], fw, fh, flags) + table +
                b"\x08" + blocks + ending)


def gif_cases(out):
    """(name, path) of GIFs Pillow reads; (name, path, what the C++ error says) of broken ones."""
    made, broken = [], []
    rgb = Image.fromarray(content(120, 90, 300))
    rng = np.random.default_rng(301)
    colours = [tuple(int(v) for v in rng.integers(0, 256, 3)) for _ in range(256)]
    indices = np.array(rgb.convert("P", palette=Image.ADAPTIVE, colors=256))

    def add(name, save):
        path = os.path.join(out, f"{name}.gif")
        save(path)
        made.append((name, path))

    pal = rgb.convert("P", palette=Image.ADAPTIVE, colors=200)
    add("gif_palette_120x90", lambda p: pal.save(p, interlace=False))
    add("gif_interlaced_120x90", lambda p: pal.save(p))  # Pillow interlaces by default
    add("gif_gray_120x90", lambda p: rgb.convert("L").save(p))
    add("gif_transparent_120x90", lambda p: pal.save(p, transparency=7))
    frames = [pal, Image.fromarray(content(120, 90, 302)).convert("P", palette=Image.ADAPTIVE),
              Image.fromarray(content(120, 90, 303)).convert("L")]
    add("gif_frames_120x90", lambda p: frames[0].save(p, save_all=True,
                                                       append_images=frames[1:], duration=40))
    small = indices[10:50, 20:90]
    add("gif_offset_100x80", lambda p: write_gif(p, (100, 80), small, (17, 23), colours))
    add("gif_offset_trns_100x80", lambda p: write_gif(p, (100, 80), small, (5, 31), colours,
                                                      transparency=200, background=9))
    add("gif_past_screen_60x30", lambda p: write_gif(p, (60, 30), small, (11, 4), colours,
                                                     interlace=True))
    add("gif_local_table_70x40", lambda p: write_gif(p, (70, 40), small, (0, 0), colours,
                                                     local_table=colours[::-1]))
    add("gif_no_table_70x40", lambda p: write_gif(p, (70, 40), small, (0, 0)))
    # A table that is the gray ramp itself: Pillow opens it as mode "L".
    add("gif_ramp_table_70x40", lambda p: write_gif(p, (70, 40), small, (0, 0),
                                                    [(i, i, i) for i in range(256)]))
    add("gif_short_table_70x40", lambda p: write_gif(p, (70, 40), small, (0, 0), colours[:5]))
    noise = rng.integers(0, 256, size=(160, 150)).astype(np.uint8)
    add("gif_deferred_clear_150x160", lambda p: write_gif(p, (150, 160), noise, (0, 0), colours,
                                                          deferred_clear=True))
    # Cut after the last data sub-block: no terminator, no trailer. Pillow reads it.
    add("gif_no_trailer_70x40", lambda p: write_gif(p, (70, 40), small, (0, 0), colours,
                                                    ending=b""))

    with open(os.path.join(out, "gif_palette_120x90.gif"), "rb") as f:
        whole = f.read()

    def bad(name, data, ours):
        path = os.path.join(out, f"{name}.jpg")
        with open(path, "wb") as f:
            f.write(data)
        broken.append((name, path, ours))

    bad("gif_cut_in_data", whole[:len(whole) // 2], "truncated GIF: the data ends before")
    bad("gif_cut_in_header", whole[:30], "truncated GIF: the file ends inside")
    head = b"GIF89a" + struct.pack("<HHBBB", 4, 4, 0x80, 0, 0) + b"\0\0\0\xff\xff\xff"
    bad("gif_no_image", head + b";", "a GIF with no image")
    bad("gif_empty_frame", head + b"," + struct.pack("<HHHHB", 0, 0, 0, 4, 0) + b"\x02\x00;",
        "the first image is empty")
    # The data's first code is an end code: no pixel at all.
    bad("gif_early_end", head + b"," + struct.pack("<HHHHB", 0, 0, 4, 4, 0) + b"\x02\x01\x0c\x00;",
        "corrupt GIF data")
    return made, broken


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
    gifs, broken = gif_cases(out)
    errors = []
    for name, path, ours in broken:
        try:
            Image.open(path).convert("RGB")
            pillow = None
        except Exception as e:  # what Pillow says; None would mean Pillow read it
            pillow = f"{type(e).__name__}: {e}"
        errors.append({"name": name, "file": os.path.basename(path), "pillow": pillow,
                       "ours": ours})
    cuts = []
    for name, path in gifs:
        if name not in ("gif_interlaced_120x90", "gif_offset_trns_100x80", "gif_frames_120x90",
                        "gif_deferred_clear_150x160"):
            continue
        with open(path, "rb") as f:
            whole = f.read()
        for k, size in enumerate([len(whole) - 1, len(whole) - 2, len(whole) - 3,
                                  len(whole) * 9 // 10, len(whole) // 3, 40, 800, 900]):
            cut_name = f"{name}_cut{k}"
            with open(os.path.join(out, cut_name + ".gif"), "wb") as f:
                f.write(whole[:size])
            try:
                dec = np.array(Image.open(os.path.join(out, cut_name + ".gif")).convert("RGB"))
                dec.tofile(os.path.join(out, cut_name + ".dec.rgb"))
                pillow = None
            except Exception as e:
                pillow = f"{type(e).__name__}: {e}"
            cuts.append({"name": cut_name, "file": cut_name + ".gif", "bytes": size,
                         "of": len(whole), "pillow": pillow})
    for name, path in write_images(out) + gifs:
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
                   "images": manifest, "errors": errors, "gif_cuts": cuts}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
