#!/usr/bin/env python3
"""MMMU's own evaluation code run on benchmake's MMMU test inputs; writes the golden file
tests/trainer/mmmu_test.cc compares trainer/eval/ against (tests/data/mmmu/golden.json).

    mmmu_reference.py --mmmu MMMU_CHECKOUT --llava LLAVA_CHECKOUT [--out FILE]

MMMU_CHECKOUT: a checkout of github.com/MMMU-Benchmark/MMMU (mmmu/utils/eval_utils.py,
mmmu/utils/data_utils.py, mmmu/configs/llava1.5.yaml are imported / read as they are).
LLAVA_CHECKOUT: a checkout of github.com/haotian-liu/LLaVA (llava/conversation.py is loaded
alone; it needs Pillow only). Needs numpy and PyYAML (MMMU's modules import them).

What it runs, in MMMU's order (mmmu/run_llava.py, then mmmu/main_eval_only.py):
  - random.seed(42) (run_llava.py's set_seed with its default --seed 42), then
    parse_multi_choice_response for every multiple-choice response and parse_open_response
    for every open one, in the order of tests/data/mmmu/responses.json, so the random
    choices MMMU makes when nothing is found are the ones of that seeded stream;
  - eval_multi_choice / eval_open of each prediction against the sample's answer key, and
    evaluate + calculate_ins_level_acc grouped by subject and by DOMAIN_CAT2SUB_CAT the way
    main_eval_only.py does (unrounded);
  - construct_prompt with llava1.5.yaml on every sample question (options given as the
    Python-list string MMMU's parquet files hold), and LLaVA-1.5's full prompt as
    mmmu/utils/model_utils.py's call_llava_engine_df builds it: "<image>\\n" + prompt
    (deal_with_prompt with mm_use_im_start_end False, as llava-v1.5-13b's config has it) in
    conv_templates["vicuna_v1"] with the assistant's turn left open;
  - Python's random stream itself: getrandbits(32) and choice() draws after seed(42).
"""
import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SAMPLE = os.path.join(ROOT, "examples", "llava1.5_13b", "mmmu_sample", "validation.jsonl")
RESPONSES = os.path.join(ROOT, "tests", "data", "mmmu", "responses.json")


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def commit_of(path):
    try:
        return subprocess.check_output(["git", "-C", path, "rev-parse", "HEAD"], text=True).strip()
    except Exception:
        return "unknown"


def open_pred(preds):
    """parse_open_response's list (a set, in no order) as sorted numbers and strings."""
    return {"numbers": sorted(p for p in preds if isinstance(p, float)),
            "strings": sorted(p for p in preds if isinstance(p, str))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mmmu", required=True)
    ap.add_argument("--llava", required=True)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "mmmu", "golden.json"))
    args = ap.parse_args()

    sys.path.insert(0, os.path.join(args.mmmu, "mmmu"))
    eval_utils = load(os.path.join(args.mmmu, "mmmu", "utils", "eval_utils.py"), "eval_utils")
    data_utils = load(os.path.join(args.mmmu, "mmmu", "utils", "data_utils.py"), "data_utils")
    conversation = load(os.path.join(args.llava, "llava", "conversation.py"), "conversation")

    # run_llava.py's config handling: each list-valued key to its single value.
    config = data_utils.load_yaml(os.path.join(args.mmmu, "mmmu", "configs", "llava1.5.yaml"))
    for key, value in config.items():
        if key != "eval_params" and type(value) == list:
            assert len(value) == 1
            config[key] = value[0]

    questions = {}
    prompts = []
    with open(SAMPLE) as f:
        for line in f:
            q = json.loads(line)
            hf = {"id": q["id"], "question": q["question"], "options": str(q["options"]),
                  "answer": q["answer"] if isinstance(q["answer"], str) else str(q["answer"]),
                  "question_type": q["question_type"]}
            s = data_utils.construct_prompt(dict(hf), config)
            conv = conversation.conv_templates["vicuna_v1"].copy()
            conv.append_message(conv.roles[0], "<image>\n" + s["final_input_prompt"])
            conv.append_message(conv.roles[1], None)
            prompts.append({"id": q["id"], "mmmu_prompt": s["final_input_prompt"],
                            "llava_prompt": conv.get_prompt()})
            questions[q["id"]] = (q, s)

    with open(RESPONSES) as f:
        responses = json.load(f)["responses"]
    random.seed(42)
    results = []
    by_subject = {}
    for r in responses:
        q, s = questions[r["question"]]
        if q["question_type"] == "multiple-choice":
            pred = eval_utils.parse_multi_choice_response(r["response"], s["all_choices"],
                                                          s["index2ans"])
            correct = eval_utils.eval_multi_choice(q["answer"], pred)
            results.append({"question": q["id"], "pred": pred, "correct": correct})
        else:
            pred = eval_utils.parse_open_response(r["response"])
            correct = eval_utils.eval_open(q["answer"], pred)
            results.append({"question": q["id"], "pred": open_pred(pred), "correct": correct})
        subject = "_".join(q["id"].split("_")[1:-1])
        by_subject.setdefault(subject, []).append(
            {"id": q["id"], "question_type": q["question_type"], "answer": q["answer"],
             "parsed_pred": pred})

    # main_eval_only.py's grouping and accuracies (unrounded).
    subject_acc = {}
    for subject, samples in by_subject.items():
        _, metric = eval_utils.evaluate(samples)
        metric["num_example"] = len(samples)
        subject_acc[subject] = metric
    domains = {}
    for domain, subjects in data_utils.DOMAIN_CAT2SUB_CAT.items():
        inside = {c: subject_acc[c] for c in subjects if c in subject_acc}
        if inside:
            domains[domain] = {"accuracy": eval_utils.calculate_ins_level_acc(inside),
                               "questions": sum(v["num_example"] for v in inside.values())}
    accuracy = {
        "accuracy": eval_utils.calculate_ins_level_acc(subject_acc),
        "questions": sum(v["num_example"] for v in subject_acc.values()),
        "by_subject": {k: {"accuracy": v["acc"], "questions": v["num_example"]}
                       for k, v in subject_acc.items()},
        "by_category": domains,
    }

    random.seed(42)
    bits = [random.getrandbits(32) for _ in range(4)]
    choices = [[n, random.choice(list(range(n)))] for n in (2, 3, 4, 5, 7, 9, 2, 4, 6, 8)]

    golden = {
        "about": "MMMU's own functions on tests/data/mmmu/responses.json and on "
                 "examples/llava1.5_13b/mmmu_sample; written by tests/support/mmmu_reference.py",
        "mmmu_commit": commit_of(args.mmmu),
        "llava_commit": commit_of(args.llava),
        "python": sys.version.split()[0],
        "subjects": list(data_utils.CAT_SHORT2LONG.values()),
        "domains": data_utils.DOMAIN_CAT2SUB_CAT,
        "random_after_seed_42": {"getrandbits32": bits, "choice": choices},
        "prompts": prompts,
        "results": results,
        "accuracy": accuracy,
    }
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
