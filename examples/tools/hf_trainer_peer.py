#!/usr/bin/env python3
"""A live external trainer: transformers' Trainer on benchmake-train's model, weights and batches.

Issue 34, part 3: a real PyTorch training whose log is the Trainer's own (its loss dicts with
logging_steps = 1, its tqdm bar, its closing train_runtime dict), run as a `measure` target and
parsed with `log_format = "trainer"` into the same report as benchmake-train's run of the same
model (examples/pytorch_peer/hf_trainer/BENCHFILE.toml).

  python3 hf_trainer_peer.py --like BM_OUT --data TOKENS_DIR --out DIR             one GPU
  python3 hf_trainer_peer.py --like BM_OUT --data TOKENS_DIR --out DIR --nproc 4   torchrun, DDP

It starts from BM_OUT/init (a benchmake-train target with save_init = true) with BM_OUT's
settings (metrics.json), as examples/tools/torch_align.py does -- whose docstring lists what
benchmake-train does -- and differs from it only where the Trainer decides:

  * Batches: an IterableDataset yields the rows of step 1, then step 2, ... in row order
    (align_data.py); with several ranks accelerate's dispatch_batches (the default for an
    IterableDataset) has rank 0 read LBS x ranks rows per micro-batch and give rank r the r-th
    LBS of them: rows (g * DP + r) * LBS ..., benchmake-train's. Each sample is the whole window
    of T + 1 tokens as input_ids and as labels with the first set to -100: the model shifts the
    labels, so the loss counts benchmake's T targets, and the Trainer's num_items_in_batch (its
    count of labels other than -100) is T per row; the extra last input changes no earlier
    logit (causal attention).
  * Optimizer and schedule: passed in (Trainer(optimizers=...)): torch AdamW with decay on the
    2-D tensors only, and a LambdaLR giving step s (the scheduler's s - 1) benchmake's rate.
  * Precision: bf16=True (autocast over fp32 weights); clipping: max_grad_norm.
  * Log: whatever this transformers version prints (logging_steps = 1, report_to none).
BENCHMAKE_PEER_LD_LIBRARY_PATH as for torch_align.py.
"""
import os
import sys

if __name__ == "__main__":  # torch_align.reexec_with_peer_library_path, before any other import
    _want = os.environ.get("BENCHMAKE_PEER_LD_LIBRARY_PATH")
    if _want is not None and os.environ.get("LD_LIBRARY_PATH", "") != _want:
        os.environ["LD_LIBRARY_PATH"] = _want
        os.execv(sys.executable, [sys.executable] + sys.argv)

import argparse  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import align_data  # noqa: E402
import torch_align  # noqa: E402  (imports no torch at module level)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--like", required=True, help="a benchmake-train out dir with init/")
    ap.add_argument("--data", required=True, help="the tokenize output directory")
    ap.add_argument("--out", required=True, help="the Trainer's output_dir")
    ap.add_argument("--nproc", type=int, default=1)
    ap.add_argument("--attn", default="sdpa")
    for name, kind in (("lr", float), ("min-lr", float), ("warmup-steps", int), ("steps", int),
                       ("weight-decay", float), ("beta1", float), ("beta2", float), ("eps", float),
                       ("grad-clip", float), ("seed", int), ("gas", int), ("mpe", int)):
        ap.add_argument("--" + name, type=kind, default=None, help="overrides BM_OUT's value")
    ap.add_argument("--precision", choices=["bf16", "fp32"], default=None)
    return ap.parse_args(argv)


def main(argv):
    argv = torch_align.rank_argv(argv)
    args = parse_args(argv)
    if args.nproc > 1 and "LOCAL_RANK" not in os.environ:
        torch_align.relaunch_under_torchrun(__file__, argv, args.nproc)

    import torch
    import transformers
    from transformers import Trainer, TrainingArguments, default_data_collator

    s = torch_align.settings(args)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    gas, T, gbs, steps = s["gas"], s["mpe"], s["gbs"], s["steps"]
    if gbs % (gas * world):
        raise SystemExit(f"global batch {gbs} is not a multiple of GAS {gas} x {world} ranks")
    lbs = gbs // (gas * world)
    init = os.path.join(args.like, "init")
    model = transformers.AutoModelForCausalLM.from_pretrained(
        init, attn_implementation=args.attn).float()
    stream = align_data.open_train_split(args.data)

    class Rows(torch.utils.data.IterableDataset):
        """Step 1's rows 0..GBS-1, then step 2's, ...: benchmake-train's batches in order."""

        def __iter__(self):
            for step in range(1, steps + 1):
                for row in range(gbs):
                    w = torch.tensor(align_data.window(stream, s["seed"], step, row, T))
                    labels = w.clone()
                    labels[0] = -100  # never a target (the model shifts); so T count, not T + 1
                    yield {"input_ids": w, "labels": labels}

    params = list(model.parameters())
    opt = torch.optim.AdamW(
        [{"params": [p for p in params if p.ndim == 2], "weight_decay": s["weight_decay"]},
         {"params": [p for p in params if p.ndim != 2], "weight_decay": 0.0}],
        lr=s["lr"], betas=(s["beta1"], s["beta2"]), eps=s["eps"], foreach=True)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda i: torch_align.learning_rate(i + 1, steps, s["warmup_steps"], s["lr"],
                                                 s["min_lr"]) / s["lr"])
    targs = TrainingArguments(
        output_dir=args.out, max_steps=steps, per_device_train_batch_size=lbs,
        gradient_accumulation_steps=gas, logging_steps=1, bf16=s["precision"] == "bf16",
        max_grad_norm=s["grad_clip"] if s["grad_clip"] > 0 else 0.0, save_strategy="no",
        report_to="none", seed=s["seed"], dataloader_num_workers=0, remove_unused_columns=False,
        ddp_find_unused_parameters=False)
    trainer = Trainer(model=model, args=targs, train_dataset=Rows(),
                      data_collator=default_data_collator, optimizers=(opt, sched))
    trainer.train()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
