#!/usr/bin/env python3
"""The PyTorch peer of benchmake-train's loss alignment: the same model, weights, batches and optimizer.

FlagPerf's precision check (loss within 2% from step 21) between benchmake-train and plain PyTorch
(transformers' model classes, torch.optim.AdamW): this script starts from the weights a
benchmake-train run wrote before its first step (`save_init = true`: BM_OUT/init/model.safetensors
+ config.json), reads that run's settings from BM_OUT/metrics.json, reads the same rows of the same
Megatron .bin/.idx in the same order, and prints Megatron-LM's iteration lines, so that an
exec/measure target with `log_format = "megatron"` turns its log into metrics.json + log.jsonl and
`benchmake compare BM PEER` checks the two curves (examples/pytorch_peer/).

  python3 torch_align.py --like BM_OUT --data TOKENS_DIR --log OUT/train.log        one GPU
  python3 torch_align.py --like BM_OUT --data TOKENS_DIR --log OUT/train.log --nproc 4 --mode ddp
  python3 torch_align.py ... --nproc 4 --mode fsdp      FSDP2 fully_shard (ZeRO-3's peer)
  python3 torch_align.py ... --lr 2.5e-4                any setting of BM_OUT overridden (NOT ALIGNED)

With --nproc N > 1 it starts `python3 -m torch.distributed.run --standalone --nproc_per_node N`
on itself. BENCHMAKE_PEER_LD_LIBRARY_PATH, when set, replaces LD_LIBRARY_PATH before torch loads
(bench/align_gpu.sh sets it empty: the benchmake binaries need the Debian libraries on the path,
and torch must not see them).

What benchmake-train does, and what this script does the same way (read off trainer/ at the
commit that added this file; every item is a place in that source):

  Model     LLaMA: RMSNorm (eps from config), RoPE as HF's rotate_half (theta from config),
            grouped-query attention, SwiGLU, untied lm_head, no biases. GPT-2: LayerNorm with
            biases, learned positions, GELU tanh ("gelu_new"), lm_head tied to wte, Conv1D weights
            stored [in, out] in the checkpoint (trainer/checkpoint/model_checkpoint.h). No dropout
            (config.json says 0). Loaded with LlamaForCausalLM / GPT2LMHeadModel.from_pretrained;
            every tensor of the file is checked equal to the loaded model's before training.
  Init      N(0, 0.02) for matrices, N(0, 0.02/sqrt(2L)) for the projections into the residual
            stream (o_proj, down_proj; GPT-2 attn.c_proj, mlp.c_proj), zeros for biases, ones for
            norms, drawn by the counter-based RNG (trainer/model/layout.h) -- irrelevant here: the
            peer loads the drawn values.
  Data      trainer/data/batch.h, implemented in align_data.py beside this file (its docstring):
            the train split as one token stream; row k of step s starts at
            UniformIntAt(seed, 1, (s << 24) | k, num_tokens - T); T + 1 tokens, inputs [:T],
            targets [1:]; micro-batch g of data-parallel rank r holds rows (g*DP + r)*LBS ...
            With N ranks here, rank r takes the rows of data-parallel rank r of an N-rank run with
            the same global batch (GBS = LBS*GAS*DP of BM_OUT; LBS here = GBS / (GAS*N)).
  Loss      the mean cross-entropy over every target of the step (all micro-batches and ranks:
            trainer/run/train_loop.cc scales by 1 / the step's target count); no mask on
            pretraining data. Here: F.cross_entropy(logits.float(), targets) (mean over the rank's
            micro-batch) / GAS, and DDP / FSDP2 average the gradients over ranks -- the same mean,
            as every micro-batch has LBS*T targets. The logged loss is the ranks' mean.
  Precision bf16: bf16 activations and matmul operands, fp32 accumulation, fp32 master weights,
            gradients and AdamW moments; gradients reduced in fp32 (docs/TRAINER.md). Here:
            torch.autocast(bf16) over fp32 parameters on every mode; DDP all-reduces fp32
            gradients; FSDP2 without a MixedPrecisionPolicy (fp32 parameters gathered, fp32
            gradients reduce-scattered). fp32: no autocast, TF32 off.
  AdamW     trainer/cpu/ops/adamw.h: m, v with beta1, beta2; bias corrections 1 - beta^t with t
            the 1-based update count; p -= lr * (m_hat / (sqrt(v_hat) + eps) + wd * p): decoupled
            decay, as torch.optim.AdamW. Decay on every 2-D tensor (embeddings, positions,
            attention and MLP matrices, lm_head) and not on norms or biases
            (trainer/model/layout.cc: weight_decay = the tensor is a matrix). Defaults
            (rules/train_common.cc): betas (0.9, 0.95), eps 1e-8, weight decay 0.1.
  Schedule  trainer/run/schedule.h, steps 1-based: lr * s / W for s <= W, then
            min_lr + (lr - min_lr) * (1 + cos(pi * (s - W) / (S - W))) / 2; set on every group
            before each update.
  Clipping  the global L2 norm of all gradients, scaled by clip / (norm + 1e-6) when
            norm > clip (trainer/cpu/ops/adamw.h ClipScale); torch's clip_grads_with_norm_
            multiplies by min(1, clip / (norm + 1e-6)): the same up to 1e-6 relative near the
            threshold. The norm (torch.nn.utils.get_total_norm, a DTensor's full_tensor() under
            FSDP2) is logged as Megatron's "grad norm".
  Log       rank 0 prints, per step, Megatron-LM's training_log line (iteration, consumed
            samples, elapsed time per iteration (ms), throughput per GPU, learning rate, global
            batch size, lm loss, loss scale, grad norm, skipped and nan iterations), after
            Megatron's argument block (seq_length, micro_batch_size, global_batch_size, the
            parallel sizes, world_size, num_layers, hidden_size, num_attention_heads, bf16, fp16)
            and its parameter-count line; every rank's memory line at the end (report_memory).
"""
import os
import sys


def reexec_with_peer_library_path():
    """Replaces LD_LIBRARY_PATH by $BENCHMAKE_PEER_LD_LIBRARY_PATH (when set): the dynamic loader
    reads it once, so the process starts again with it, before any module loads a library."""
    want = os.environ.get("BENCHMAKE_PEER_LD_LIBRARY_PATH")
    if want is None or os.environ.get("LD_LIBRARY_PATH", "") == want:
        return
    os.environ["LD_LIBRARY_PATH"] = want
    os.execv(sys.executable, [sys.executable] + sys.argv)


if __name__ == "__main__":
    reexec_with_peer_library_path()

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--like", required=True,
                    help="a benchmake-train run's out dir: init/ (save_init) and metrics.json")
    ap.add_argument("--data", required=True, help="the tokenize output directory it trained on")
    ap.add_argument("--log", required=True, help="the Megatron-format log rank 0 writes")
    ap.add_argument("--nproc", type=int, default=1, help="ranks (torchrun on this machine)")
    ap.add_argument("--mode", choices=["single", "ddp", "fsdp"], default=None,
                    help="single (1 rank), ddp or fsdp (FSDP2 fully_shard); default: single / ddp")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--attn", default="sdpa", help="transformers' attn_implementation")
    for name, kind in (("lr", float), ("min-lr", float), ("warmup-steps", int), ("steps", int),
                       ("weight-decay", float), ("beta1", float), ("beta2", float), ("eps", float),
                       ("grad-clip", float), ("seed", int), ("gas", int), ("mpe", int)):
        ap.add_argument("--" + name, type=kind, default=None, help="overrides BM_OUT's value")
    ap.add_argument("--precision", choices=["bf16", "fp32"], default=None)
    args = ap.parse_args(argv)
    if args.mode is None:
        args.mode = "single" if args.nproc == 1 else "ddp"
    if (args.mode == "single") != (args.nproc == 1):
        ap.error(f"--mode {args.mode} with --nproc {args.nproc}: single is one rank, ddp and fsdp "
                 "several")
    return args


def settings(args):
    """BM_OUT/metrics.json's run settings, with the command line's overrides."""
    path = os.path.join(args.like, "metrics.json")
    with open(path) as f:
        metrics = json.load(f)
    c = metrics["config"]
    s = {"lr": c["lr"], "min_lr": c["min_lr"], "warmup_steps": c["warmup_steps"],
         "steps": c["steps"], "weight_decay": c["weight_decay"], "beta1": c.get("beta1", 0.9),
         "beta2": c.get("beta2", 0.95), "eps": c.get("eps", 1e-8), "grad_clip": c["grad_clip"],
         "seed": c["seed"], "gas": c["gas"], "mpe": c["mpe"], "gbs": c["gbs"],
         "precision": "bf16" if c["precision"] in ("bf16", "amp") else c["precision"]}
    if s["precision"] not in ("bf16", "fp32"):
        raise SystemExit(f"{path}: precision {c['precision']}: the peer runs bf16 or fp32")
    for key in ("lr", "min_lr", "warmup_steps", "steps", "weight_decay", "beta1", "beta2", "eps",
                "grad_clip", "seed", "gas", "mpe", "precision"):
        v = getattr(args, key)
        if v is not None:
            s[key] = v
    return s


def learning_rate(step, steps, warmup, lr, min_lr):
    """trainer/run/schedule.h, step 1-based."""
    if warmup > 0 and step <= warmup:
        return lr * step / warmup
    if steps <= warmup:
        return lr
    progress = (step - warmup) / (steps - warmup)
    return min_lr + (lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))


def megatron_args_block(rows):
    """Megatron's argument print (megatron/training/arguments.py _print_args)."""
    lines = ["------------------------ arguments ------------------------"]
    for k in sorted(rows):
        lines.append("  {} {} {}".format(k, "." * (48 - len(k)), rows[k]))
    lines.append("-------------------- end of arguments ---------------------")
    return lines


def iteration_line(it, total, consumed, ms, tflops, lr, gbs, loss, grad_norm):
    """Megatron-LM's training_log line (megatron/training/training.py)."""
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    return (f" [{stamp}] iteration {it:8d}/{total:8d} | consumed samples: {consumed:12d} |"
            f" elapsed time per iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU):"
            f" {tflops:.1f} | learning rate: {lr:.6E} | global batch size: {gbs:5d} |"
            f" lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: {grad_norm:.3f} |"
            f" number of skipped iterations:   0 | number of nan iterations:   0 |")


def relaunch_under_torchrun(script, argv, nproc):
    """Starts `script` as `nproc` ranks through torchrun. The arguments travel in
    BENCHMAKE_PEER_ARGV, not on torchrun's command line: its argparse rejects any option that
    abbreviates several of its own (`--log` for `--log-dir`, `--nproc` for `--nproc-per-node`)
    even after the script's name."""
    for k, v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                 ("NVSHMEM_DISABLE_NVLS", "1")):
        os.environ.setdefault(k, v)  # NVLink multicast stays off (GPU-MACHINE.md)
    os.environ["BENCHMAKE_PEER_ARGV"] = json.dumps(argv)
    os.execv(sys.executable, [sys.executable, "-m", "torch.distributed.run", "--standalone",
                              f"--nproc_per_node={nproc}", os.path.abspath(script)])


def rank_argv(argv):
    """This process's arguments: a rank that torchrun started gets them from
    relaunch_under_torchrun."""
    if "LOCAL_RANK" in os.environ and "BENCHMAKE_PEER_ARGV" in os.environ:
        return json.loads(os.environ["BENCHMAKE_PEER_ARGV"])
    return argv


def main(argv):
    argv = rank_argv(argv)
    args = parse_args(argv)
    if args.nproc > 1 and "LOCAL_RANK" not in os.environ:
        relaunch_under_torchrun(__file__, argv, args.nproc)
    return train(args)


def train(args):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    sys.path.insert(0, HERE)
    import align_data

    s = settings(args)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if world != args.nproc:
        raise SystemExit(f"WORLD_SIZE {world} but --nproc {args.nproc}")
    if args.device == "cuda":
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
    else:
        dev = torch.device("cpu")
    if world > 1:
        if args.device == "cuda":
            dist.init_process_group("nccl", device_id=dev)
        else:
            dist.init_process_group("gloo")
    gas, T, gbs, steps = s["gas"], s["mpe"], s["gbs"], s["steps"]
    if gbs % (gas * world):
        raise SystemExit(f"global batch {gbs} (BM_OUT) is not a multiple of GAS {gas} x {world} "
                         "ranks")
    lbs = gbs // (gas * world)
    bf16 = s["precision"] == "bf16"
    if not bf16:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False

    # The model, from the weights benchmake-train started from.
    init = os.path.join(args.like, "init")
    with open(os.path.join(init, "config.json")) as f:
        hf_config = json.load(f)
    arch = hf_config["architectures"][0]
    import transformers
    classes = {"LlamaForCausalLM": transformers.LlamaForCausalLM,
               "GPT2LMHeadModel": transformers.GPT2LMHeadModel}
    if arch not in classes:
        raise SystemExit(f"{init}/config.json: architecture {arch}; the peer knows "
                         f"{', '.join(classes)}")
    model = classes[arch].from_pretrained(init, attn_implementation=args.attn).float()
    from safetensors.torch import load_file
    saved = load_file(os.path.join(init, "model.safetensors"))
    state = model.state_dict()
    for name, t in saved.items():
        if name not in state or state[name].shape != t.shape or not torch.equal(state[name], t):
            raise SystemExit(f"{init}: tensor {name} did not load as saved")
    n_params = sum(p.numel() for p in model.parameters())
    model.to(dev).train()
    layers = model.model.layers if arch == "LlamaForCausalLM" else model.transformer.h
    cfg = model.config
    vocab = cfg.vocab_size

    # Data parallel wrappers.
    net = model
    if args.mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        net = DDP(model, device_ids=[local] if args.device == "cuda" else None)
    elif args.mode == "fsdp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh(args.device, (world,))
        for layer in layers:
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
    params = list(model.parameters())
    decay = [p for p in params if p.ndim == 2]
    no_decay = [p for p in params if p.ndim != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": s["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=s["lr"], betas=(s["beta1"], s["beta2"]), eps=s["eps"], foreach=True)
    from torch.distributed.tensor import DTensor

    stream = align_data.open_train_split(args.data)
    six_n = 6.0 * n_params
    log = open(args.log, "w") if rank == 0 else None

    def say(line):
        if rank == 0:
            print(line, flush=True)
            log.write(line + "\n")
            log.flush()

    n_layers = getattr(cfg, "num_hidden_layers", None) or cfg.n_layer
    hidden = getattr(cfg, "hidden_size", None) or cfg.n_embd
    heads = getattr(cfg, "num_attention_heads", None) or cfg.n_head
    for line in megatron_args_block({
            "seq_length": T, "micro_batch_size": lbs, "global_batch_size": gbs,
            "tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 1,
            "data_parallel_size": world, "world_size": world, "num_layers": n_layers,
            "hidden_size": hidden, "num_attention_heads": heads, "bf16": bf16, "fp16": False,
            "lr": s["lr"], "min_lr": s["min_lr"], "lr_warmup_iters": s["warmup_steps"],
            "train_iters": steps, "weight_decay": s["weight_decay"], "adam_beta1": s["beta1"],
            "adam_beta2": s["beta2"], "adam_eps": s["eps"], "clip_grad": s["grad_clip"],
            "seed": s["seed"]}):
        say(line)
    say(f" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): {n_params}")
    say(f"peer: {arch} from {init} ({n_params} parameters, every tensor as saved), mode "
        f"{args.mode}, {world} rank(s), LBS {lbs} x GAS {gas} x DP {world} = GBS {gbs}, MPE {T}, "
        f"{s['precision']}, torch {torch.__version__}, transformers {transformers.__version__}")

    def rows_tensor(step, micro):
        rows = align_data.rank_rows(micro, rank, world, lbs)
        windows = [align_data.window(stream, s["seed"], step, r, T) for r in rows]
        w = torch.tensor(windows, dtype=torch.long)
        return w[:, :-1].to(dev, non_blocking=True), w[:, 1:].to(dev, non_blocking=True)

    for step in range(1, steps + 1):
        t0 = time.perf_counter()
        lr = learning_rate(step, steps, s["warmup_steps"], s["lr"], s["min_lr"])
        for group in opt.param_groups:
            group["lr"] = lr
        loss_sum = torch.zeros((), device=dev)
        for g in range(gas):
            x, y = rows_tensor(step, g)
            sync = g == gas - 1
            ctx = net.no_sync() if args.mode == "ddp" and not sync else _null()
            with ctx:
                with torch.autocast(args.device, dtype=torch.bfloat16, enabled=bf16):
                    logits = net(input_ids=x, use_cache=False).logits
                loss = F.cross_entropy(logits.float().reshape(-1, vocab), y.reshape(-1)) / gas
                loss.backward()
            loss_sum += loss.detach()
        grads = [p.grad for p in params if p.grad is not None]
        norm = torch.nn.utils.get_total_norm(grads, 2.0, False, True)
        if isinstance(norm, DTensor):
            norm = norm.full_tensor()
        if s["grad_clip"] > 0:
            torch.nn.utils.clip_grads_with_norm_(params, s["grad_clip"], norm, True)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if world > 1:
            dist.all_reduce(loss_sum)  # SUM: Gloo has no AVG
            loss_sum /= world
        loss_value, norm_value = loss_sum.item(), float(norm.item())  # waits for the step
        ms = (time.perf_counter() - t0) * 1000.0
        if not math.isfinite(loss_value):
            say(f"peer: loss {loss_value} at step {step}: diverged")
            return 1
        tflops = six_n * gbs * T / world / (ms / 1000.0) / 1e12
        say(iteration_line(step, steps, step * gbs, ms, tflops, lr, gbs, loss_value, norm_value))

    if args.device == "cuda":
        mb = 1024.0 * 1024.0
        mine = torch.tensor([torch.cuda.memory_allocated() / mb, torch.cuda.max_memory_allocated() / mb,
                             torch.cuda.memory_reserved() / mb, torch.cuda.max_memory_reserved() / mb],
                            device=dev)
        every = [torch.zeros_like(mine) for _ in range(world)]
        if world > 1:
            dist.all_gather(every, mine)
        else:
            every = [mine]
        for r, m in enumerate(every):
            a, ma, res, mres = m.tolist()
            say(f"[Rank {r}] (after {steps} iterations) memory (MB) | allocated: {a:.1f} | "
                f"max allocated: {ma:.1f} | reserved: {res:.1f} | max reserved: {mres:.1f}")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    if log:
        log.close()
    return 0


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
