#!/usr/bin/env python3
"""Writes the MMMU-shaped sample that benchmake's MMMU evaluation is checked on in CI:
validation.jsonl (one question a line, the layout examples/tools/mmmu_to_jsonl.py writes from
MMMU's published parquet files) and images/*.png drawn here with Pillow so that each
question's answer key is true of its images.

    make_sample.py [OUT_DIR]     (default: this script's folder)
    make_sample.py --check       regenerates into a temporary folder and compares with the
                                 committed files (the JSONL byte for byte, the images pixel
                                 for pixel); exits 1 naming the first difference

The questions are ours, not MMMU's; they follow MMMU's fields and forms: ids
validation_<Subject>_<n>, question_type "multiple-choice" (answer a letter) or "open"
(answer a string, or a list of accepted strings as in MMMU's answer_dict_val.json),
"<image k>" tokens in the text referring to image_k, options that are images.
"""
import json
import os
import sys

from PIL import Image, ImageDraw

RED, GREEN, BLUE, WHITE, BLACK = (220, 30, 30), (30, 160, 60), (40, 70, 210), (255, 255, 255), (0, 0, 0)


def canvas(w=96, h=72):
    im = Image.new("RGB", (w, h), WHITE)
    return im, ImageDraw.Draw(im)


def filled(color, w=80, h=80):
    im, d = canvas(w, h)
    d.rectangle([8, 8, w - 9, h - 9], fill=color)
    return im


def circles(n):
    im, d = canvas(40 + 30 * n, 60)
    for i in range(n):
        d.ellipse([10 + 30 * i, 18, 34 + 30 * i, 42], fill=BLACK)
    return im


def bars(heights):
    im, d = canvas(20 + 24 * len(heights), 110)
    for i, hgt in enumerate(heights):
        d.rectangle([14 + 24 * i, 100 - hgt, 30 + 24 * i, 100], fill=BLUE)
    return im


def triangle():
    im, d = canvas(90, 80)
    d.polygon([(45, 8), (82, 72), (8, 72)], outline=BLACK, fill=GREEN)
    return im


def square():
    im, d = canvas(90, 80)
    d.rectangle([15, 10, 75, 70], outline=BLACK, fill=RED)
    return im


# (id, question_type, question, options, answer, images, img_type, difficulty, subfield)
QUESTIONS = [
    ("validation_Art_1", "multiple-choice", "Which colour fills most of <image 1>?",
     ["Red", "Green", "Blue", "Yellow"], "A", [filled(RED)], "['Paintings']", "Easy", "Colour"),
    ("validation_Art_2", "multiple-choice", "<image 1> Which colour is the shape?",
     ["Blue", "Green"], "B", [triangle()], "['Diagrams']", "Easy", "Colour"),
    ("validation_Economics_1", "open",
     "The bars in <image 1> show sales per quarter. What is the ratio of the tallest bar to the "
     "shortest? Give it as a fraction or a decimal.",
     [], ["24/7", "3.429"], [bars([21, 45, 72, 60])], "['Plots and Charts']", "Medium", "Ratio"),
    ("validation_Math_1", "open", "How many circles are in <image 1>?", [], "3", [circles(3)],
     "['Geometric Shapes']", "Easy", "Counting"),
    ("validation_Math_2", "multiple-choice",
     "Which shape has three sides: <image 1> or <image 2>?", ["<image 1>", "<image 2>"], "A",
     [triangle(), square()], "['Geometric Shapes']", "Easy", "Geometry"),
    ("validation_Physics_1", "multiple-choice",
     "<image 1> shows a red square. Which of the options has the same colour?",
     ["<image 2>", "<image 3>", "Neither of them"], "B", [square(), filled(GREEN), filled(RED)],
     "['Diagrams']", "Medium", "Optics"),
    ("validation_Geography_1", "open",
     "Name the city marked on <image 1>, or its state.", [], ["Tampa", "Florida"],
     [filled(BLUE, 120, 80)], "['Maps']", "Hard", "Cities"),
    ("validation_Clinical_Medicine_1", "open",
     "A dose of 2.5 mg/kg is given to the 5 kg patient of <image 1>. How many mg in total?", [],
     "12.5", [bars([50])], "['Tables']", "Medium", "Dosage"),
    ("validation_Computer_Science_1", "multiple-choice",
     "How many bars does <image 1> show?", ["1", "2", "3", "4", "5"], "D",
     [bars([10, 20, 30, 40])], "['Plots and Charts']", "Easy", "Data"),
    ("validation_History_1", "multiple-choice",
     "Is <image 1> a photograph of a historical document?", ["Yes", "No"], "B", [circles(1)],
     "['Photographs']", "Easy", "Sources"),
]


def check():
    import tempfile
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as d:
        write(d)
        with open(os.path.join(d, "validation.jsonl"), "rb") as a, \
                open(os.path.join(here, "validation.jsonl"), "rb") as b:
            if a.read() != b.read():
                print("make_sample.py --check: validation.jsonl differs")
                return 1
        made = sorted(os.listdir(os.path.join(d, "images")))
        if made != sorted(os.listdir(os.path.join(here, "images"))):
            print("make_sample.py --check: the images/ file names differ")
            return 1
        for name in made:
            a = Image.open(os.path.join(d, "images", name))
            b = Image.open(os.path.join(here, "images", name))
            if a.size != b.size or a.convert("RGB").tobytes() != b.convert("RGB").tobytes():
                print(f"make_sample.py --check: images/{name} differs")
                return 1
    return 0


def main():
    if sys.argv[1:] == ["--check"]:
        sys.exit(check())
    write(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))


def write(out):
    os.makedirs(os.path.join(out, "images"), exist_ok=True)
    lines = []
    for qid, qtype, question, options, answer, images, img_type, diff, subfield in QUESTIONS:
        paths = []
        for k, im in enumerate(images, start=1):
            rel = f"images/{qid}_{k}.png"
            im.save(os.path.join(out, rel))
            paths.append(rel)
        subject = "_".join(qid.split("_")[1:-1])
        lines.append(json.dumps({
            "id": qid, "subject": subject, "question_type": qtype, "question": question,
            "options": options, "answer": answer, "images": paths, "img_type": img_type,
            "topic_difficulty": diff, "subfield": subfield, "explanation": ""}))
    with open(os.path.join(out, "validation.jsonl"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
