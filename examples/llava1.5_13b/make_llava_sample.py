#!/usr/bin/python3
"""Writes the LLaVA-1.5 sample under examples/llava1.5_13b/data/sample/: small images
(coloured shapes, and short phrases of the repository's corpus rendered as text) with
captions in LCS-558K's format and conversations in llava_v1_5_mix665k's format, for the
llava_images / llava_data targets of examples/llava1.5_13b/BENCHFILE.toml and for
tests/gpu/llava_preprocess_golden.py. Deterministic for a given Pillow (libjpeg, zlib);
run once, the output is committed:

    /usr/bin/python3 examples/llava1.5_13b/make_llava_sample.py

Needs Debian's python3-pil and python3-numpy only.

Writes (under data/sample/):
  images/00000/0000000NN.jpg            24 images in LCS-558K's layout (images.zip's
                                        folders); JPEG, some grayscale, some 4:4:4, one
                                        progressive; mixed sizes and aspect ratios
  images/coco/train2017/*.jpg,          16 images in the 665K mix's layout (LLaVA's
  images/gqa/images/*.jpg,                 playground/data): JPEGs, and PNGs of each mode
  images/ocr_vqa/images/*.png,             Pillow writes (RGB, RGBA, L), and a palette GIF
                                           named .jpg, as real OCR-VQA downloads have them
  images/textvqa/train_images/*.jpg
  blip_laion_cc_sbu_558k.json           LCS-558K: [{"id", "image", "conversations":
                                        [{"from": "human", "value": "<image>\\nPROMPT" or
                                        "PROMPT\\n<image>"}, {"from": "gpt", "value": CAPTION}]}]
  llava_v1_5_mix665k.json               the 665K mix: {"id", "image"?, "conversations"}:
                                        multi-turn image conversations (one image used by
                                        two samples, "<image>" first or last in the first
                                        turn), and text-only ones from
                                        data/kjv_instruct_train.json (one starting with a
                                        gpt turn, which LLaVA drops)
"""
import io
import json
import os
import random
import re

import numpy as np
from PIL import Image, ImageDraw, ImageFont

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "data", "sample")

COLOURS = {
    "red": (200, 30, 30), "green": (40, 160, 60), "blue": (30, 60, 200),
    "yellow": (235, 210, 40), "purple": (120, 40, 150), "orange": (240, 130, 20),
    "white": (250, 250, 250), "black": (15, 15, 15), "grey": (128, 128, 128),
}
SHAPES = ["square", "circle", "triangle", "bar"]
SIZES = [(64, 48), (48, 64), (80, 40), (40, 80), (56, 56), (96, 32), (33, 47), (71, 29),
         (50, 50), (120, 60), (45, 90), (64, 64)]
# LLaVA's pretraining prompts (the LCS-558K captions' instructions).
PROMPTS = [
    "Describe the image concisely.",
    "Provide a brief description of the given image.",
    "Offer a succinct explanation of the picture presented.",
    "Summarize the visual content of the image.",
    "Give a short and clear explanation of the subsequent image.",
    "Share a concise interpretation of the image provided.",
    "Present a compact description of the photo's key features.",
    "Relay a brief, clear account of the picture shown.",
    "Render a clear and concise summary of the photo.",
    "Write a terse but informative summary of the picture.",
    "Create a compact narrative representing the image presented.",
]
SHORT = "Answer the question using a single word or phrase."


def phrases():
    """Short phrases (2-3 words) of data/kjv.txt's verses, in corpus order."""
    out = []
    with open(os.path.join(ROOT, "data/kjv.txt"), encoding="ascii") as f:
        for line in f:
            m = re.match(r"^[0-9]+ (.*)$", line.rstrip("\n"))
            if not m:
                continue
            words = re.findall(r"[A-Za-z]+", m.group(1))
            if len(words) >= 3:
                out.append(" ".join(words[:3]).lower())
    return out


def draw_shapes(rng, size):
    """An image of one or two shapes; returns (image, facts)."""
    names = list(COLOURS)
    background = rng.choice(names)
    img = Image.new("RGB", size, COLOURS[background])
    draw = ImageDraw.Draw(img)
    w, h = size
    shapes = []
    for k in range(rng.choice([1, 2])):
        colour = rng.choice([c for c in names if c != background])
        shape = rng.choice(SHAPES)
        x0 = (k * w) // 2 + rng.randrange(0, max(1, w // 8))
        x1 = x0 + w // 2 - 2
        y0, y1 = rng.randrange(0, max(1, h // 4)), h - 1 - rng.randrange(0, max(1, h // 4))
        if shape == "square":
            draw.rectangle([x0, y0, x1, y1], fill=COLOURS[colour])
        elif shape == "circle":
            draw.ellipse([x0, y0, x1, y1], fill=COLOURS[colour])
        elif shape == "triangle":
            draw.polygon([(x0, y1), ((x0 + x1) // 2, y0), (x1, y1)], fill=COLOURS[colour])
        else:
            draw.rectangle([x0, (y0 + y1) // 2 - 2, x1, (y0 + y1) // 2 + 2], fill=COLOURS[colour])
        shapes.append((colour, shape))
    return img, {"background": background, "shapes": shapes}


def draw_text(rng, phrase):
    """The phrase in the default bitmap font on a light card; returns (image, facts)."""
    font = ImageFont.load_default()
    left, top, right, bottom = font.getbbox(phrase)
    w, h = right - left + 8, bottom - top + 8 + rng.randrange(0, 12)
    ink = rng.choice(["black", "blue", "red"])
    img = Image.new("RGB", (w, h), COLOURS["white"])
    ImageDraw.Draw(img).text((4 - left, 4 - top), phrase, font=font, fill=COLOURS[ink])
    return img, {"text": phrase, "ink": ink}


def caption(facts):
    if "text" in facts:
        return f'the words "{facts["text"]}" written in {facts["ink"]} on a white card'
    parts = [f"{'an' if c[0] in 'aeiou' else 'a'} {c} {s}" for c, s in facts["shapes"]]
    where = " beside ".join(parts)
    return f"{where} on a {facts['background']} background"


def save(img, rel, **kwargs):
    path = os.path.join(OUT, "images", rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    buf = io.BytesIO()
    img.save(buf, **kwargs)
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def main():
    rng = random.Random(1234)
    texts = phrases()
    rng.shuffle(texts)

    # LCS-558K: 24 captioned images, 00000/0000000NN.jpg.
    pretrain = []
    for i in range(24):
        if i % 3 == 2:
            img, facts = draw_text(rng, texts.pop())
        else:
            img, facts = draw_shapes(rng, SIZES[i % len(SIZES)])
        rel = f"00000/{i:09d}.jpg"
        if i % 8 == 5:
            save(img.convert("L"), rel, format="JPEG", quality=85)
            facts = dict(facts, grey=True)
        elif i % 8 == 6:
            save(img, rel, format="JPEG", quality=90, subsampling=0)
        elif i == 7:
            save(img, rel, format="JPEG", quality=80, progressive=True)
        else:
            save(img, rel, format="JPEG", quality=85)
        prompt = PROMPTS[i % len(PROMPTS)]
        human = f"{prompt}\n<image>" if i % 4 == 3 else f"<image>\n{prompt}"
        pretrain.append({"id": f"{i:09d}", "image": rel,
                         "conversations": [{"from": "human", "value": human},
                                           {"from": "gpt", "value": caption(facts)}]})

    # The 665K mix: image conversations in its folders, and text-only ones.
    layouts = [("coco/train2017/{:012d}.jpg", "JPEG"), ("gqa/images/{}.jpg", "JPEG"),
               ("ocr_vqa/images/{}.png", "PNG"), ("textvqa/train_images/{:016x}.jpg", "JPEG")]
    png_modes = ["RGB", "RGBA", "L", "P"]
    images = []
    for i in range(16):
        pattern, fmt = layouts[i % len(layouts)]
        number = 100000 + 37 * i
        rel = pattern.format(number)
        if pattern.startswith("ocr_vqa") or pattern.startswith("textvqa"):
            img, facts = draw_text(rng, texts.pop())
        else:
            img, facts = draw_shapes(rng, SIZES[(i * 5) % len(SIZES)])
        if fmt == "PNG" and png_modes[(i // len(layouts)) % len(png_modes)] == "P":
            # OCR-VQA's downloads include GIFs saved under .jpg names (haotian-liu/LLaVA
            # issue #1618); Pillow opens them by their signature, and so does llava_images.
            rel = rel[: -len(".png")] + ".jpg"
            save(img.quantize(colors=16), rel, format="GIF")  # interlaced: Pillow's default
        elif fmt == "PNG":
            mode = png_modes[(i // len(layouts)) % len(png_modes)]
            out = img.convert(mode) if mode != "P" else img.quantize(colors=16)
            if mode == "RGBA":
                alpha = np.full((img.height, img.width), 255, dtype=np.uint8)
                alpha[:, : img.width // 3] = 96  # dropped by convert("RGB"), not composited
                out.putalpha(Image.fromarray(alpha, "L"))
            save(out, rel, format="PNG")
        else:
            save(img, rel, format="JPEG", quality=85)
        images.append((rel, facts))

    mix = []
    for i, (rel, facts) in enumerate(images):
        if "text" in facts:
            turns = [("What is written on the card?", facts["text"]),
                     ("What colour is the writing? " + SHORT, facts["ink"].capitalize())]
        else:
            colour, shape = facts["shapes"][0]
            turns = [("What colour is the background? " + SHORT,
                      facts["background"].capitalize()),
                     (f"How many shapes are there? {SHORT}", str(len(facts["shapes"]))),
                     ("Describe the picture.", caption(facts)[0].upper() + caption(facts)[1:] + ".")]
            if i % 2:
                turns = turns[:2]
            turns.insert(1, (f"What colour is the {shape}?", f"The {shape} is {colour}."))
        conv = []
        for j, (q, a) in enumerate(turns):
            if j == 0:
                q = f"{q}\n<image>" if i % 5 == 4 else f"<image>\n{q}"
            conv += [{"from": "human", "value": q}, {"from": "gpt", "value": a}]
        mix.append({"id": f"{100000 + 37 * i:012d}", "image": rel, "conversations": conv})
        if i == 3:  # the mix uses some images in several samples
            mix.append({"id": f"{100000 + 37 * i:012d}-2", "image": rel,
                        "conversations": [{"from": "human", "value": "<image>\n" + turns[-1][0]},
                                          {"from": "gpt", "value": turns[-1][1]}]})

    with open(os.path.join(ROOT, "data/kjv_instruct_train.json"), encoding="utf-8") as f:
        alpaca = json.load(f)
    for k in range(8):
        conv = []
        if k == 5:  # a first turn from gpt: LLaVA's preprocess_v1 drops it
            conv.append({"from": "gpt", "value": "I can quote the King James Bible."})
        for item in alpaca[900 + 3 * k: 900 + 3 * k + 1 + k % 3]:
            q = item["instruction"] + ("\n" + item["input"] if item["input"] else "")
            conv += [{"from": "human", "value": q}, {"from": "gpt", "value": item["output"]}]
        mix.insert(2 * k + 1, {"id": f"kjv_{k}", "conversations": conv})

    for name, records in (("blip_laion_cc_sbu_558k.json", pretrain),
                          ("llava_v1_5_mix665k.json", mix)):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(json.dumps(records, indent=1, ensure_ascii=False).encode("utf-8") + b"\n")


if __name__ == "__main__":
    main()
