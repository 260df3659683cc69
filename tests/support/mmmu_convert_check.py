#!/usr/bin/env python3
"""Checks examples/tools/mmmu_to_jsonl.py's conversion without pyarrow (absent on Debian 12):
rebuilds, from examples/llava1.5_13b/mmmu_sample, the rows MMMU's parquet files would hold
(options and list answers as Python-list strings, images as {"bytes", "path"} dicts,
image_k None past the last), converts them, and compares the output with the sample:
the same JSONL records and byte-identical images. Then feeds malformed rows and checks
each is refused with its file, row and id named and no output left behind.
Exits 0 on success, 1 with the difference otherwise.
"""
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples", "tools"))
import mmmu_to_jsonl as m  # noqa: E402

SAMPLE = os.path.join(ROOT, "examples", "llava1.5_13b", "mmmu_sample")


def parquet_rows():
    by_subject = {}
    with open(os.path.join(SAMPLE, "validation.jsonl")) as f:
        for line in f:
            q = json.loads(line)
            row = {"id": q["id"], "question": q["question"], "options": str(q["options"]),
                   "explanation": q["explanation"], "img_type": q["img_type"],
                   "answer": q["answer"] if isinstance(q["answer"], str) else str(q["answer"]),
                   "topic_difficulty": q["topic_difficulty"], "question_type": q["question_type"],
                   "subfield": q["subfield"]}
            for k in range(1, 8):
                row[f"image_{k}"] = None
            for k, rel in enumerate(q["images"], start=1):
                with open(os.path.join(SAMPLE, rel), "rb") as im:
                    row[f"image_{k}"] = {"bytes": im.read(), "path": os.path.basename(rel)}
            by_subject.setdefault(q["subject"], []).append(row)
    return [(s, f"{s}/validation-00000-of-00001.parquet", by_subject[s])
            for s in m.SUBJECTS if s in by_subject]


def fail(msg):
    print("mmmu_convert_check:", msg)
    sys.exit(1)


def main():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out")
        m.convert(parquet_rows(), out)
        want = {}
        with open(os.path.join(SAMPLE, "validation.jsonl")) as f:
            for line in f:
                q = json.loads(line)
                want[q["id"]] = q
        with open(os.path.join(out, "validation.jsonl")) as f:
            got = [json.loads(line) for line in f]
        # MMMU's order: subjects as CAT_SHORT2LONG lists them.
        order = [q["id"] for q in sorted(want.values(), key=lambda q: m.SUBJECTS.index(q["subject"]))]
        if [q["id"] for q in got] != order:
            fail(f"order {[q['id'] for q in got]} != {order}")
        for q in got:
            if q != want[q["id"]]:
                fail(f"{q['id']}: {q} != {want[q['id']]}")
            for rel in q["images"]:
                with open(os.path.join(out, rel), "rb") as a, open(os.path.join(SAMPLE, rel), "rb") as b:
                    if a.read() != b.read():
                        fail(f"{rel} differs")

        bad_cases = [
            ("options", "['x', ", "options are not a Python list"),
            ("question_type", "essay", "question_type 'essay'"),
            ("image_1", None, "image_2 present after image_1 missing"),
            ("id", "validation_Art_9", "does not name subject Math"),
        ]
        for key, value, expect in bad_cases:
            rows = parquet_rows()
            row = next(r for s, _, rs in rows if s == "Math" for r in rs if r["id"] == "validation_Math_2")
            row[key] = value
            out2 = os.path.join(d, "bad")
            try:
                m.convert(rows, out2)
                fail(f"{key}={value!r} was accepted")
            except m.ConvertError as e:
                if "Math/validation-00000-of-00001.parquet row 1" not in str(e) or expect not in str(e):
                    fail(f"{key}={value!r}: message {e}")
            if os.path.exists(out2) or os.path.exists(out2 + ".tmp"):
                fail(f"{key}={value!r}: output left behind")
    print("mmmu_convert_check: ok")


if __name__ == "__main__":
    main()
