#!/usr/bin/env python3
"""trainer/eval/'s MMMU judging against MMMU's own code on the real model outputs MMMU
publishes (mmmu/example_outputs/<model>/<Subject>/output.json: LLaVA-1.5-13B's and
Qwen-VL's 900 validation responses each, with their options and answers).

    mmmu_examples_check.py --mmmu MMMU_CHECKOUT --dump BUILD/tests/trainer/mmmu_judge_dump
                           [--model llava1.5_13b]

Both sides judge the responses in MMMU's order (subjects as CAT_SHORT2LONG lists them,
file order within) with Python's generator seeded 42 (ours: trainer/eval/python_random.h),
MMMU's with parse_multi_choice_response / parse_open_response then eval_multi_choice /
eval_open. Prints the number of equal predictions and correctness verdicts and every
difference; exits 0 when all agree, 1 otherwise, 77 when the checkout is not given.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mmmu")
    ap.add_argument("--dump", required=True)
    ap.add_argument("--model", default="llava1.5_13b")
    args = ap.parse_args()
    if not args.mmmu or not os.path.isdir(os.path.join(args.mmmu, "mmmu", "utils")):
        print("mmmu_examples_check: no MMMU checkout given (--mmmu): skipped")
        return 77
    sys.path.insert(0, os.path.join(args.mmmu, "mmmu"))
    from utils import data_utils, eval_utils  # MMMU's own modules

    rows = []
    for subject in data_utils.CAT_SHORT2LONG.values():
        path = os.path.join(args.mmmu, "mmmu", "example_outputs", args.model, subject, "output.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            rows.extend(json.load(f))

    random.seed(42)
    want = []
    for r in rows:
        if r["question_type"] == "multiple-choice":
            pred = eval_utils.parse_multi_choice_response(r["response"], r["all_choices"],
                                                          r["index2ans"])
            correct = eval_utils.eval_multi_choice(r["answer"], pred)
        else:
            preds = eval_utils.parse_open_response(r["response"])
            correct = eval_utils.eval_open(r["answer"], preds)
            pred = {"numbers": sorted(p for p in preds if isinstance(p, float)),
                    "strings": sorted(p for p in preds if isinstance(p, str))}
        want.append({"id": r["id"], "pred": pred, "correct": correct})

    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for r in rows:
            options = [r["index2ans"][c] for c in r["all_choices"]] if "all_choices" in r else []
            f.write(json.dumps({"id": r["id"], "question_type": r["question_type"],
                                "options": options, "answer": r["answer"],
                                "response": r["response"]}) + "\n")
        path = f.name
    try:
        out = subprocess.check_output([args.dump, path], text=True)
    finally:
        os.unlink(path)
    got = [json.loads(line) for line in out.splitlines()]
    same_pred = sum(g["pred"] == w["pred"] for g, w in zip(got, want))
    same_correct = sum(g["correct"] == w["correct"] for g, w in zip(got, want))
    for g, w in zip(got, want):
        if g != w:
            print("differs:", w["id"], "ours", g, "MMMU", w)
    print(f"{args.model}: {len(want)} responses, predictions equal {same_pred}, "
          f"verdicts equal {same_correct}, MMMU accuracy {sum(w['correct'] for w in want) / max(1, len(want)):.4f}")
    return 0 if len(got) == len(want) and same_pred == same_correct == len(want) else 1


if __name__ == "__main__":
    sys.exit(main())
