#!/usr/bin/env python3
"""Converts MMMU's published validation split (Hugging Face dataset MMMU/MMMU: one folder
per subject, each holding validation-*.parquet) to the layout benchmake-train reads
(trainer/eval/mmmu_question.h): OUT/validation.jsonl, a question a line, and the images'
bytes as they are in OUT/images/<id>_<k>.<ext>.

    mmmu_to_jsonl.py MMMU_DIR OUT [--split validation] [--answers answer_dict_val.json]

MMMU_DIR: a local copy of the dataset (e.g. `huggingface-cli download MMMU/MMMU
--repo-type dataset --local-dir MMMU_DIR`, or FlagPerf's copy). Reading parquet needs
pyarrow (`pip install pyarrow`); the trainer itself has no Arrow reader (Debian 12 ships
no Arrow for C++, and a one-time conversion is cheaper than a parquet decoder in C++).

Per parquet row (columns id, question, options, explanation, image_1..image_7, img_type,
answer, topic_difficulty, question_type, subfield):
  options   the Python-list string parsed with ast.literal_eval (MMMU's construct_prompt
            eval()s the same string)
  answer    a multiple-choice letter as it is; an open answer that is a Python-list
            string ("['24/7', '3.429']") becomes a list of accepted answers, the form
            MMMU's own mmmu/answer_dict_val.json gives them (--answers checks every id
            against that file)
  images    image_1, image_2, ... while present ({"bytes": ...} each), written unchanged;
            a gap (image_k missing, a later one present) is refused
Subjects are written in MMMU's order (CAT_SHORT2LONG), rows in file order: the order
MMMU's LLaVA run parses responses in (see trainer/eval/mmmu_judge.h). The output appears
whole or not at all (written under OUT.tmp, then renamed).
"""
import argparse
import ast
import glob
import json
import os
import shutil
import sys

# mmmu/utils/data_utils.py CAT_SHORT2LONG's values, in order.
SUBJECTS = [
    "Accounting", "Agriculture", "Architecture_and_Engineering", "Art", "Art_Theory",
    "Basic_Medical_Science", "Biology", "Chemistry", "Clinical_Medicine", "Computer_Science",
    "Design", "Diagnostics_and_Laboratory_Medicine", "Economics", "Electronics",
    "Energy_and_Power", "Finance", "Geography", "History", "Literature", "Manage", "Marketing",
    "Materials", "Math", "Mechanical_Engineering", "Music", "Pharmacy", "Physics", "Psychology",
    "Public_Health", "Sociology",
]
KEPT = ("img_type", "topic_difficulty", "subfield", "explanation")


class ConvertError(Exception):
    pass


def image_ext(data, path):
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data[:2] == b"BM":
        return "bmp"
    ext = os.path.splitext(path or "")[1].lstrip(".").lower()
    return ext or "bin"


def convert_row(row, subject, where, images_dir):
    """One parquet row (a dict) to one JSONL record; writes its images."""
    qid = row.get("id")
    if not isinstance(qid, str) or "_".join(qid.split("_")[1:-1]) != subject:
        raise ConvertError(f"{where}: id {qid!r} does not name subject {subject}")
    qtype = row.get("question_type")
    if qtype not in ("multiple-choice", "open"):
        raise ConvertError(f"{where}: {qid}: question_type {qtype!r}")
    try:
        options = ast.literal_eval(row.get("options") or "[]")
    except (ValueError, SyntaxError) as e:
        raise ConvertError(f"{where}: {qid}: options are not a Python list: {e}")
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise ConvertError(f"{where}: {qid}: options are not a list of strings")
    answer = row.get("answer")
    if not isinstance(answer, str):
        raise ConvertError(f"{where}: {qid}: answer {answer!r} is not a string")
    if qtype == "open" and answer.startswith("[") and answer.endswith("]"):
        try:
            parsed = ast.literal_eval(answer)
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, list) and parsed and all(isinstance(a, str) for a in parsed):
            answer = parsed
    images = []
    gap = None
    for k in range(1, 8):
        im = row.get(f"image_{k}")
        if im is None:
            gap = gap or k
            continue
        if gap is not None:
            raise ConvertError(f"{where}: {qid}: image_{k} present after image_{gap} missing")
        data = im.get("bytes") if isinstance(im, dict) else None
        if not data:
            raise ConvertError(f"{where}: {qid}: image_{k} has no bytes")
        rel = f"images/{qid}_{k}.{image_ext(data, im.get('path'))}"
        with open(os.path.join(images_dir, os.path.basename(rel)), "wb") as f:
            f.write(data)
        images.append(rel)
    if not images:
        raise ConvertError(f"{where}: {qid}: no image_1")
    rec = {"id": qid, "subject": subject, "question_type": qtype, "question": row["question"],
           "options": options, "answer": answer, "images": images}
    for key in KEPT:
        rec[key] = row.get(key) if row.get(key) is not None else ""
    return rec


def convert(rows_by_subject, out):
    """rows_by_subject: [(subject, where, [row dict, ...])] in MMMU's order."""
    tmp = out.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "images"))
    try:
        records = []
        seen = set()
        for subject, where, rows in rows_by_subject:
            for i, row in enumerate(rows):
                rec = convert_row(row, subject, f"{where} row {i}", os.path.join(tmp, "images"))
                if rec["id"] in seen:
                    raise ConvertError(f"{where} row {i}: id {rec['id']} appears twice")
                seen.add(rec["id"])
                records.append(rec)
        with open(os.path.join(tmp, "validation.jsonl"), "w") as f:
            for rec in records:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return records


def check_answers(records, path):
    """Every id's answer against MMMU's answer_dict_val.json ({id: {ground_truth}})."""
    with open(path) as f:
        truth = json.load(f)
    for rec in records:
        want = truth.get(rec["id"], {}).get("ground_truth")
        if want != rec["answer"]:
            raise ConvertError(f"{rec['id']}: answer {rec['answer']!r}, {path} has {want!r}")
    if len(truth) != len(records):
        raise ConvertError(f"{len(records)} questions converted, {path} lists {len(truth)}")


def read_parquet(mmmu_dir, split):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ConvertError("reading MMMU's parquet files needs pyarrow: pip install pyarrow")
    out = []
    for subject in SUBJECTS:
        files = sorted(glob.glob(os.path.join(mmmu_dir, subject, f"{split}-*.parquet")))
        if not files:
            raise ConvertError(f"{mmmu_dir}/{subject}: no {split}-*.parquet")
        for path in files:
            out.append((subject, path, pq.read_table(path).to_pylist()))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mmmu_dir")
    ap.add_argument("out")
    ap.add_argument("--split", default="validation")
    ap.add_argument("--answers", help="MMMU's mmmu/answer_dict_val.json, to check against")
    args = ap.parse_args()
    try:
        records = convert(read_parquet(args.mmmu_dir, args.split), args.out)
        if args.answers:
            check_answers(records, args.answers)
    except ConvertError as e:
        print(f"mmmu_to_jsonl: {e}", file=sys.stderr)
        return 1
    print(f"{len(records)} questions in {args.out}/validation.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
