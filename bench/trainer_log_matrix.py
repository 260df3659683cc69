#!/usr/bin/env python3
"""Real transformers Trainer logs under the options users set, each with the Trainer's own record.

The `trainer` log parser numbers the Trainer's dicts from what the log shows (logging_steps when
stated, tqdm's bars, epochs, the closing dict). This runs the real Trainer once per case below, a
tiny GPT-2 on random tokens, each case a process of its own whose stdout and stderr go to one
file as an exec/measure target keeps them, and writes the Trainer's own record of what it logged
(trainer.state.log_history, with the case's options) beside it: the oracle
tests/rules/logparse_trainer_live_test.cc reads the log against. Each case runs twice:
CASE.log with Python's stdout unbuffered (`python -u`, PYTHONUNBUFFERED: the dicts land between
tqdm's drawings as a terminal shows them) and CASE.buffered.log as a plain `python` under an exec
target writes it (stdout to a file is block-buffered: the dicts come in bulk, after the bars),
with CASE.history.json and CASE.buffered.history.json.

  python3 bench/trainer_log_matrix.py --out DIR [CASE ...]     (default: every case)

Needs torch and transformers (the GPU machine's); a GPU when there is one, else the CPU.
"""
import argparse
import json
import os
import subprocess
import sys
import time

# name -> TrainingArguments overrides and the run's shape. Defaults: 48 training rows of 64
# tokens, batch 8, no evaluation, tqdm on, report_to none, nothing saved.
CASES = {
    # logging_steps that does not divide max_steps: dicts at 5, 10, 15, 20 and the closing one.
    "steps5": dict(args=dict(max_steps=23, logging_steps=5)),
    # logging_first_step with accumulation and evaluations between the dicts.
    "first_step_gas4_eval": dict(args=dict(max_steps=20, logging_steps=4, logging_first_step=True,
                                           gradient_accumulation_steps=4, eval_strategy="steps",
                                           eval_steps=8), eval_rows=16),
    # A dict and an evaluation per epoch (5 steps an epoch), by epochs, not steps.
    "epoch_strategy": dict(args=dict(num_train_epochs=3, logging_strategy="epoch",
                                     eval_strategy="epoch"), rows=40, eval_rows=16),
    # No bars (disable_tqdm: PrinterCallback prints the dicts).
    "no_tqdm_steps3": dict(args=dict(max_steps=12, logging_steps=3, disable_tqdm=True)),
    # train_tokens_per_second in every dict.
    "tokens_seen": dict(args=dict(max_steps=10, logging_steps=2,
                                  include_num_input_tokens_seen=True)),
    # logging_steps as a ratio of max_steps (0.25 of 16: every 4 steps).
    "ratio_logging": dict(args=dict(max_steps=16, logging_steps=0.25)),
    # Epochs that do not end on a whole step under accumulation (36 rows, 4 a micro-batch, GAS 2).
    "epochs_gas2": dict(args=dict(num_train_epochs=2, logging_steps=2,
                                  per_device_train_batch_size=4, gradient_accumulation_steps=2),
                        rows=36),
    # The Trainer's INFO lines (its "***** Running training *****" block) at log_level info.
    "info_level": dict(args=dict(max_steps=15, logging_steps=5, log_level="info")),
    # A run resumed from its step-5 checkpoint to step 12: only the resumed run's log is kept.
    "resumed": dict(args=dict(max_steps=12, logging_steps=2, save_strategy="steps",
                              save_steps=5), resume_from=5),
    # The same at log_level info: the Trainer says where it resumed.
    "resumed_info": dict(args=dict(max_steps=12, logging_steps=2, save_strategy="steps",
                                   save_steps=5, log_level="info"), resume_from=5),
    # Two ranks under torchrun (gloo on the CPU unless there are two GPUs): rank 0 logs.
    "ddp2": dict(args=dict(max_steps=8, logging_steps=2), nproc=2),
    # Every step logged, the common benchmark setting.
    "every_step": dict(args=dict(max_steps=12, logging_steps=1)),
    # 200 fast steps: tqdm's dynamic miniters skips drawings.
    "long_steps10": dict(args=dict(max_steps=200, logging_steps=10), rows=400),
    # Steps slower than tqdm's mininterval (0.1 s): every update drawn.
    "slow_steps4": dict(args=dict(max_steps=12, logging_steps=4), sleep=0.15),
    # torchrun --tee 3 (a rank per process's output prefixed "[default0]:", as FlagPerf's
    # launchers keep it), one rank.
    "tee_prefix": dict(args=dict(max_steps=12, logging_steps=3), nproc=1, tee=True),
    # Evaluations at steps no loss dict is at (every 3 steps, dicts every 5).
    "eval_unaligned": dict(args=dict(max_steps=20, logging_steps=5, eval_strategy="steps",
                                     eval_steps=3), eval_rows=16),
    # Checkpoints saved at the logging steps (5.x draws a "Writing model shards" bar).
    "save_and_log": dict(args=dict(max_steps=12, logging_steps=4, save_strategy="steps",
                                   save_steps=4)),
    # torchrun --tee 3 over two ranks.
    "tee_ddp2": dict(args=dict(max_steps=8, logging_steps=2), nproc=2, tee=True),
    # trainer.evaluate() after training, and log_metrics' "***** train metrics *****" block.
    "evaluate_after": dict(args=dict(max_steps=10, logging_steps=5), eval_rows=16,
                           evaluate_after=True),
}


def run_case(name, out, stem, prepare=False):
    import torch
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    case = CASES[name]
    seq, vocab = 64, 512

    class Rows(torch.utils.data.Dataset):
        def __init__(self, n, seed):
            g = torch.Generator().manual_seed(seed)
            self.x = torch.randint(0, vocab, (n, seq), generator=g)

        def __len__(self):
            return len(self.x)

        def __getitem__(self, i):
            return {"input_ids": self.x[i], "labels": self.x[i]}

    transformers.set_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=vocab,
                                       n_positions=seq))
    gpus = torch.cuda.device_count()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    cpu = gpus == 0 or (world > 1 and gpus < world)
    work = os.path.join(out, stem + ".work")
    args = dict(output_dir=work, per_device_train_batch_size=8, learning_rate=5e-4,
                report_to="none", save_strategy="no", seed=0, dataloader_num_workers=0,
                use_cpu=cpu, bf16=not cpu)
    if world > 1 and cpu:
        args["ddp_backend"] = "gloo"
    args.update(case["args"])
    if prepare:  # the first run of a resumed case: to its checkpoint
        args["max_steps"] = case["resume_from"]
    targs = TrainingArguments(**args)
    eval_rows = case.get("eval_rows")
    callbacks = []
    if case.get("sleep"):
        class Slow(transformers.TrainerCallback):
            def on_step_begin(self, *args, **kwargs):
                time.sleep(case["sleep"])
        callbacks.append(Slow())
    trainer = Trainer(model=model, args=targs, train_dataset=Rows(case.get("rows", 48), 1),
                      eval_dataset=Rows(eval_rows, 2) if eval_rows else None, callbacks=callbacks)
    resume = None
    if "resume_from" in case and not prepare:
        resume = os.path.join(work, f"checkpoint-{case['resume_from']}")
    result = trainer.train(resume_from_checkpoint=resume)
    if case.get("evaluate_after"):
        trainer.evaluate()
        trainer.log_metrics("train", result.metrics)
    if trainer.is_world_process_zero() and not prepare:
        record = {"case": name, "transformers": transformers.__version__,
                  "torch": torch.__version__, "world_size": world,
                  "args": {k: v for k, v in case["args"].items()},
                  "resumed_from": case.get("resume_from"),
                  "log_history": trainer.state.log_history}
        with open(os.path.join(out, stem + ".history.json"), "w") as f:
            json.dump(record, f, indent=1)
    return 0


def first_run_of_resumed(name, out, stem):
    """The run whose checkpoint the resumed case starts from (its log is not kept)."""
    case = CASES[name]
    env = dict(os.environ, TRAINER_MATRIX_PREPARE="1")
    subprocess.run([sys.executable, __file__, "--out", out, "--case", name, "--stem", stem],
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return os.path.isdir(os.path.join(out, stem + ".work", f"checkpoint-{case['resume_from']}"))


def run_variant(name, stem, unbuffered, out):
    """One case's process (torchrun's for several ranks), its stdout and stderr into STEM.log."""
    case = CASES[name]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    if "resume_from" in case and not first_run_of_resumed(name, out, stem):
        print(f"{stem}: the first run left no checkpoint-{case['resume_from']}")
        return 1
    cmd = [sys.executable, __file__, "--out", out, "--case", name, "--stem", stem]
    if case.get("nproc", 1) > 1 or case.get("tee"):
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc_per_node={case['nproc']}"] + (["--tee", "3"] if case.get("tee") else []) \
            + cmd[1:]
    with open(os.path.join(out, stem + ".log"), "wb") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env).returncode
    print(f"{stem}: exit {rc}", flush=True)
    return rc != 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--case", help="(internal) run this case in this process")
    ap.add_argument("--stem", help="(internal) its files' name")
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    if a.case:
        return run_case(a.case, a.out, a.stem,
                        prepare=bool(os.environ.get("TRAINER_MATRIX_PREPARE")))
    failed = 0
    for name in a.cases or list(CASES):
        for stem, unbuffered in ((name, True), (name + ".buffered", False)):
            failed += run_variant(name, stem, unbuffered, a.out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
