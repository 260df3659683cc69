#!/usr/bin/env python3
"""Writes the small images of tests/base/image_decode_test.cc (committed; rerun with Debian's
python3-pil to remake them). Their lossless pixel values are written into the test by hand."""
import struct
import zlib

from PIL import Image


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png16(path, width, height, color_type, samples):
    """A 16-bit PNG (Pillow cannot write 16-bit RGB): samples row-major, big-endian."""
    per_row = len(samples) // height
    raw = b"".join(b"\x00" + struct.pack(f">{per_row}H", *samples[y * per_row:(y + 1) * per_row])
                   for y in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 16, color_type, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw))
                + chunk(b"IEND", b""))


# A 32x24 photo-like JPEG for truncation and corruption.
im = Image.new("RGB", (32, 24))
im.putdata([((x * 8) % 256, (y * 10) % 256, (x * y) % 256) for y in range(24) for x in range(32)])
im.save("rgb_32x24.jpg", quality=90)
im.save("rgb_32x24.png")
# Solid CMYK (0, 255, 255, 0): red through Pillow's conversion.
Image.new("CMYK", (16, 16), (0, 255, 255, 0)).save("cmyk_red_16x16.jpg", quality=95)
Image.new("L", (16, 16), 77).save("gray77_16x16.jpg", quality=95)
# Palette: red, green / blue, white.
p = Image.new("P", (2, 2))
p.putpalette([255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255])
p.putdata([0, 1, 2, 3])
p.save("palette_2x2.png")
# RGBA: alpha 0 and 255, dropped by convert("RGB") (not composited).
a = Image.new("RGBA", (2, 1))
a.putdata([(10, 20, 30, 0), (40, 50, 60, 255)])
a.save("rgba_2x1.png")
# LA: (gray 90, alpha 0).
Image.new("LA", (1, 1), (90, 0)).save("la_1x1.png")
# 16-bit gray 0x0012 0x0100 / 0xffff 0x00ff; 16-bit RGB (0x1234, 0xabcd, 0x00ff).
png16("gray16_2x2.png", 2, 2, 0, [0x0012, 0x0100, 0xFFFF, 0x00FF])
png16("rgb16_1x1.png", 1, 1, 2, [0x1234, 0xABCD, 0x00FF])
