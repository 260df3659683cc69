"""PyTorch's own pipeline parallelism (torch.distributed.pipelining) with DTensor TP inside each stage, the peer of
benchmake's GPT-3 6.7B TP2PP2 row (bench/multi_gpu.sh, "pp": cuda_train_bench --model gpt3-6.7b --vocab 50304
--batch 4 --seq 2048 --accum 16 --tp 2 --pp 2 --precision fp16).

Run beside tp_reference.py and ../shared/bench/multi_reference.py (bench/multi_gpu.sh copies them into
.devtree/peer/), e.g.
    torchrun --standalone --nproc_per_node=4 pp_reference.py --model gpt3-6.7b --tp 2 --pp 2 --batch 4 --accum 16
    torchrun --standalone --nproc_per_node=4 pp_reference.py --check     (CPU, gloo: the correctness check)

The model is benchmake's gpt3-6.7b preset (trainer/model/config.cc: GPT-3 paper geometry, 32 layers, d 4096,
32 heads, ffn 4d = 16384, learned positions over 2048, LayerNorm with bias (eps 1e-5), GELU (tanh), biases in every
linear, the LM head tied to the token embedding) at vocabulary 50304 (the row's --vocab); 6,658,404,352
parameters at the preset's 50257, as benchmake counts them. q, k, v, o and the two MLP linears are separate so that
tp_reference.py's plan applies unchanged.

The recipe is torchtitan's for pipeline x tensor parallel (its pipeline_module_split and parallelize_llama, read,
not copied):
  * a 2-D mesh (pp, tp), TP innermost; the whole model is built identically on every rank (seed 0), then split by
    hand per stage: stage s keeps its n_layer / stages consecutive blocks, stage 0 the embeddings, the last stage
    the final norm and the head (torchtitan's manual split; with 32 layers its default weighting of embedding and
    head as one layer each gives the same 16 / 16);
  * inside each stage tp_reference.py's TP plan with sequence parallelism (--sp, default): the token embedding
    vocabulary-parallel and reduce-scattered over the sequence (the position embedding replicated, each rank adding
    its positions' rows), norms under SequenceParallel, q/k/v and the MLP's first linear column-parallel, the
    attention output and the MLP's second linear row-parallel reduce-scattered back; the head column-parallel
    with its logits sharded over the vocabulary and the cross-entropy under loss_parallel. Activations cross the
    stage boundary as this rank's sequence shard (B x T/tp x d), as Megatron sends them under SP;
  * the tied head: the last stage holds a copy of the token embedding (its TP shards have the same rows); after
    each step the two copies' gradients are summed over a group of the two ranks holding them, so both copies
    take the same AdamW update and stay equal (Megatron's and benchmake's way of tying across stages);
  * PipelineStage per local stage with runtime shape inference, Schedule1F1B (--schedule interleaved:
    ScheduleInterleaved1F1B with two stages a rank, 8 layers each) over 16 micro-batches of 4 x 2048
    (micro-batch = --batch, micro-batches = --accum), scale_grads=False with the loss divided by the micro-batch
    count (torchtitan's settings); torch.compile per block after TP; AdamW fused (else foreach), clipping 1.0;
  * precision fp16 as benchmake's row: torch.autocast(float16) inside each stage's forward over fp32 parameters,
    fp32 gradients and AdamW state, and dynamic loss scaling with torch.amp.GradScaler's algorithm and defaults
    (scale 2^16, x0.5 on an inf/nan step that is skipped, x2 after 2000 good steps). GradScaler itself is not
    used: its unscale_ checks only this rank's gradients, and under pipelining each rank holds other parameters,
    so the skip decision must be global; the peer folds the inf check into the all-reduce that the global
    gradient norm needs anyway (one all-reduce a step for the norm, the skip and the logged loss). --precision
    bf16: autocast(bfloat16), no scaling (torchtitan itself leaves TP/PP without FSDP in fp32: its
    maybe_enable_amp).
Timing, memory and the JSON line: multi_reference.py's helpers (timed, summarize, emit), as tp_reference.py.
tokens/s/GPU = B * T * accum / world / step time (one replica).

MFU against what PyTorch publishes (bench/multi_gpu.sh prints it beside the peer's): torchtitan publishes no
bf16/fp16 pipeline-parallel MFU for a 7-8B model; its docs/performance.md (commit d4c86e3, 2025-01-30) has PP only
for Llama 3.1 405B on 512 H100s with Float8 + async TP (Table 5: 1F1B 100 tokens/s/GPU, interleaved 1F1B 128), where
it declines to state MFU (two tensor-core peaks). The comparable figures are the same recipe without the pipeline:
its benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md, Llama3 8B FSDP 8 x TP 8 with compile on 64 H100s, bf16:
4378 tokens/s/GPU (async TP 4809.4), i.e. 25.6% (28.2%) MFU by torchtitan's own formula (6 x non-embedding params
+ 12 L d T, seq 8192) against the 989 TFLOP/s SXM peak, and 33-39% for FSDP-only 8B (docs/performance.md). Inside a
stage this peer runs that TP recipe at TP 2; the pipeline adds 1F1B's bubble, (p - 1) / (m + p - 1) = 1/17 = 5.9%
of the step at p = 2 stages and m = 16 micro-batches, and the two tied-embedding copies' sum. A peer at 20-37%
MFU (6N or torchtitan's formula, which differ by the attention and embedding terms) is PyTorch at its published
efficiency on this shape; far below that would be a broken peer, not a fair ratio.

Correctness (--check; torch 2.11 on the device machine's CPU, gloo, 2026-11-29): a 4-layer d-64 GPT (4 heads, ffn
256, vocabulary 128, 32 tokens, non-zero biases, tied head), 4 micro-batches of 2 rows, lr 1e-2, clip 0.05, fp32
with the loss scale at 2^16 (exact in fp32, so the scaling path runs), eager, trained 5 steps as TP2 x PP2 and, in
rank 0, undistributed from the same weights and batches: losses within 3e-7 relative, gradient norms within 2e-6,
every parameter's first gradient within 1e-4 (the key biases' analytically zero gradients, ~5e-11 on both sides,
within the 1e-8 floor), with SP (default), --no-sp and --schedule interleaved:
    torchrun --standalone --nproc_per_node=4 pp_reference.py --check [--no-sp | --schedule interleaved]
One GPU (H200, --tp 1 --pp 1 --layers 4, B 4 x 2048, 4 micro-batches, compiled, fp16; before the gradient-layout
and optimizer-split fixes above): 74,569 tokens/s, 46.1% MFU 6N: the GPU path runs; the 4-GPU TP2PP2 row has not
run yet (no 4-GPU machine in that session).
"""
import argparse, contextlib, copy, inspect, math, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tp_reference as tpr  # noqa: E402  (imports multi_reference: NCCL's multicast off)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

mr = tpr.mr
CONFIGS = {"gpt3-6.7b": dict(n_layer=32, d=4096, n_head=32, ffn=16384, vocab=50304, seq=2048, batch=4)}
# --check: 4 CPU processes (TP2 x PP2), 2 layers a stage, 2 heads and 64 vocabulary rows a TP rank.
CHECK = dict(n_layer=4, d=64, n_head=4, ffn=256, vocab=128, seq=32, batch=2)
GROWTH_INTERVAL = 2000  # torch.amp.GradScaler's defaults
INIT_SCALE = 2.0 ** 16


# ---------------------------------------------------------------- the model (GPT-3)
class Attention(nn.Module):
    n_side_inputs = 0

    def __init__(self, d, h):
        super().__init__()
        self.hd = d // h
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x):
        B, T, _ = x.shape
        # -1 heads: this rank's share under tensor parallelism
        q, k, v = (w(x).view(B, T, -1, self.hd).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(B, T, -1))


class MLP(nn.Module):
    def __init__(self, d, ffn):
        super().__init__()
        self.w1 = nn.Linear(d, ffn)
        self.w2 = nn.Linear(ffn, d)

    def forward(self, x):
        return self.w2(F.gelu(self.w1(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, d, h, ffn):
        super().__init__()
        self.attn_norm = nn.LayerNorm(d, eps=1e-5)
        self.attn = Attention(d, h)
        self.ffn_norm = nn.LayerNorm(d, eps=1e-5)
        self.ffn = MLP(d, ffn)

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))
        return x + self.ffn(self.ffn_norm(x))


class Embed(nn.Module):
    """Token + learned position embeddings. Under TP the token table is vocabulary-parallel (its output this
    rank's sequence shard under SP) and the position table a replicated DTensor: each rank adds the rows of its
    own positions (Replicate -> Shard(0) is a local slice; its backward all-gathers the rows' gradients)."""

    def __init__(self, V, T, d):
        super().__init__()
        self.wte = nn.Embedding(V, d)
        self.wpe = nn.Embedding(T, d)
        self.sp = False

    def forward(self, idx):
        from torch.distributed.tensor import DTensor, Replicate, Shard
        x = self.wte(idx)
        pos = self.wpe.weight[: idx.shape[1]]
        if isinstance(pos, DTensor):
            pos = pos.redistribute(placements=[Shard(0) if self.sp else Replicate()]).to_local()
        return x + pos


class GPT(nn.Module):
    """The whole model, or one pipeline stage of it (the parts a stage lacks are None)."""

    def __init__(self, c, bias_std=0.0):
        super().__init__()
        d, V = c["d"], c["vocab"]
        self.embed = Embed(V, c["seq"], d)
        self.blocks = nn.ModuleList([Block(d, c["n_head"], c["ffn"]) for _ in range(c["n_layer"])])
        self.norm = nn.LayerNorm(d, eps=1e-5)
        self.head = nn.Linear(d, V, bias=False)
        self.head.weight = self.embed.wte.weight  # tied
        self.amp = None  # autocast dtype inside forward (so that shape inference sees the same dtypes)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:  # zero as GPT's; the check makes them count
                nn.init.normal_(m.bias, std=bias_std) if bias_std else nn.init.zeros_(m.bias)

    def forward(self, x):
        ctx = torch.autocast(x.device.type, dtype=self.amp) if self.amp else contextlib.nullcontext()
        with ctx:
            if self.embed is not None:
                x = self.embed(x)
            for b in self.blocks:
                x = b(x)
            if self.head is not None:
                x = self.head(self.norm(x))  # under TP a DTensor sharded over the vocabulary
        return x


def split_stage(model, s, n_stages, copy_first):
    """torchtitan's manual split: stage s keeps its consecutive blocks, stage 0 the embeddings, the last stage the
    final norm and the (tied) head. In place unless copy_first (more than one stage a rank)."""
    m = copy.deepcopy(model) if copy_first else model
    per = len(m.blocks) // n_stages
    m.blocks = nn.ModuleList(list(m.blocks)[s * per:(s + 1) * per])
    if s != 0:
        m.embed = None  # the head keeps its own reference to the tied weight: the last stage's copy
    if s != n_stages - 1:
        m.norm, m.head = None, None
    return m


def parallelize_stage(m, tp_mesh, sp, compile_blocks):
    """tp_reference.py's plan on one stage: embeddings, blocks (compiled per block), final norm and head."""
    from torch.distributed.tensor import distribute_module
    from torch.distributed.tensor.parallel import parallelize_module
    if tp_mesh.size() == 1:  # pipeline only: plain tensors, no DTensor wrapping a mesh of one
        if compile_blocks:
            for i in range(len(m.blocks)):
                m.blocks[i] = torch.compile(m.blocks[i])
        return
    plan = {}
    if m.embed is not None:
        plan["embed.wte"] = tpr.embedding_style(sp)
        m.embed.sp = sp
        distribute_module(m.embed.wpe, tp_mesh)  # replicated DTensor: its gradient comes out whole on each rank
    if m.head is not None:
        plan["head"] = tpr.head_style(sp)
        if sp:
            plan["norm"] = tpr.norm_style()
    parallelize_module(m, tp_mesh, plan)
    if m.embed is not None and m.head is not None:  # one stage: both styles made new parameters; tie again
        m.head.weight = m.embed.wte.weight  # (both sharded over the vocabulary rows alike)
    tpr.parallelize_blocks(m.blocks, tp_mesh, sp, compile_blocks)


# ---------------------------------------------------------------- building the trainer
def build(full, mesh, args, dev, data, amp, scaling):
    """Splits `full` (identical on every rank) into this rank's stages, parallelizes them and returns
    (step, state). data(i) -> (x, y): step i's whole batch (accum micro-batches) on this rank."""
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleInterleaved1F1B
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor.parallel import loss_parallel

    pp, tp, world = mesh["pp"].size(), mesh["tp"].size(), mesh.size()
    pp_rank, tp_rank = mesh["pp"].get_local_rank(), mesh["tp"].get_local_rank()
    v = 2 if args.schedule == "interleaved" else 1
    n_stages = pp * v
    n_layer = len(full.blocks)
    if n_layer % n_stages:
        raise SystemExit(f"{n_stages} stages do not divide {len(full.blocks)} layers")
    st = {"kind": args.opt, "error": None, "async_tp": False, "async_tp_error": None, "norm": None,
          "scale": INIT_SCALE if scaling else 1.0, "good": 0, "skipped": 0}
    if args.async_tp:
        if args.no_compile or not args.sp:
            st["async_tp_error"] = "async TP needs torch.compile and sequence parallelism"
        else:
            st["async_tp_error"] = tpr.enable_async_tp(mesh["tp"])
            st["async_tp"] = st["async_tp_error"] is None
    parts = []
    for s in (pp_rank + k * pp for k in range(v)):  # looped placement: rank r holds stages r, r + pp, ...
        m = split_stage(full, s, n_stages, copy_first=v > 1)
        m.amp = amp
        parallelize_stage(m, mesh["tp"], args.sp, not args.no_compile)
        parts.append((s, m))
    stages = [PipelineStage(m, s, n_stages, dev, group=mesh["pp"].get_group()) for s, m in parts]
    has_first = any(s.is_first for s in stages)
    has_last = any(s.is_last for s in stages)

    # The tied embedding's two copies: first stage (pp rank 0) and last stage (pp rank pp - 1), the same TP index
    # and the same rows (both sharded over the vocabulary). Their gradients are summed over this TP index's
    # pipeline group, the stages between adding zeros.
    pp_group = mesh["pp"].get_group()
    tied = [m.embed.wte.weight for _, m in parts if m.embed is not None and pp > 1]
    tied += [m.head.weight for _, m in parts if m.head is not None and m.embed is None]
    head_copy = {id(m.head.weight) for _, m in parts if m.head is not None and m.embed is None}
    tied_shape = None
    if pp > 1:
        shapes = [None] * pp
        mine = tuple(local_shape(tied[0])) if tied else None
        dist.all_gather_object(shapes, mine, group=pp_group)
        have = {x for x in shapes if x is not None}
        if len(have) != 1:
            raise RuntimeError(f"the tied embedding's copies differ in shape over the pipeline: {shapes}")
        tied_shape = have.pop()
    # names as the whole model has them (the stage's blocks renumbered from its first layer), for the check
    per = n_layer // n_stages
    named = []
    for s, m in parts:
        for n, p in m.named_parameters():
            if id(p) in head_copy:
                continue
            if n.startswith("blocks."):
                i, rest = n[len("blocks."):].split(".", 1)
                n = f"blocks.{int(i) + s * per}.{rest}"
            named.append((n, p))

    params, seen = [], set()
    for _, m in parts:
        for p in m.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                params.append(p)

    def make_opt(kind):
        return tpr.AdamWs(params, kind, args.lr)

    try:
        st["opt"] = make_opt(args.opt)
    except Exception as e:  # noqa: BLE001  fused AdamW refused at construction -> foreach
        if args.opt != "fused":
            raise
        st["error"], st["kind"], st["opt"] = tpr.err_text(e), "foreach", make_opt("foreach")
    n_micro = args.accum

    def loss_fn(logits, target):  # per micro-batch; the scale read at call time
        ce = F.cross_entropy(logits.float().flatten(0, 1), target.flatten(0, 1))
        return ce * (st["scale"] / st["div"])

    Sched = ScheduleInterleaved1F1B if v > 1 else Schedule1F1B
    what = stages if v > 1 else stages[0]
    try:  # torchtitan's setting: the loss divided by the micro-batch count, the schedule leaving grads alone
        schedule = Sched(what, n_microbatches=n_micro, loss_fn=loss_fn, scale_grads=False)
        st["div"] = n_micro
    except TypeError:  # a schedule without scale_grads divides the gradients by the micro-batches itself
        schedule = Sched(what, n_microbatches=n_micro, loss_fn=loss_fn)
        st["div"] = 1
    extra = {"return_outputs": False} if "return_outputs" in inspect.signature(schedule.step).parameters else {}

    def local(t):
        return t.to_local() if isinstance(t, DTensor) else t

    def replicas(g):
        """Ranks of this stage's TP group holding the same gradient values."""
        if isinstance(g, DTensor):
            return math.prod(g.device_mesh.size(i) for i, pl in enumerate(g.placements) if pl.is_replicate())
        return tp

    def train_step(i):
        x, y = data(i)
        losses = [] if has_last else None
        with loss_parallel():
            args_ = (x,) if has_first else ()
            schedule.step(*args_, target=y if has_last else None, losses=losses, **extra)
        tpr.align_grads(params)  # each gradient in its parameter's layout (the head's came out unlike its weight)
        if tied_shape is not None:  # sum the tied copies' gradients
            buf = local(tied[0].grad) if tied else torch.zeros(tied_shape, device=dev)
            dist.all_reduce(buf, group=pp_group)
            for w in tied[1:]:  # both copies on this rank (interleaved with one pipeline rank: not used)
                local(w.grad).copy_(buf)
        if st.get("record") is not None:  # the check's first step: every parameter's gradient norm
            st["record"].update({n: x / st["scale"] for n, x in tpr.param_norms(named).items()})
            st["record"] = None
        # One all-reduce: the squared gradient norm (each value counted once: / replicas, the head's tied copy
        # left out) and the loss (the last stage's TP rank 0).
        grads = [p.grad for p in params if p.grad is not None]
        sq = torch.zeros(2, device=dev, dtype=torch.float32)
        for p in params:
            if p.grad is not None and id(p) not in head_copy:
                sq[0] += local(p.grad).float().square().sum() / replicas(p.grad)
        if has_last and tp_rank == 0:
            sq[1] = sum(local(l).float() for l in losses) / st["scale"] * (st["div"] / n_micro)
        dist.all_reduce(sq)
        total_sq, loss = sq.tolist()
        st["norm"] = math.sqrt(total_sq) / st["scale"]
        if not math.isfinite(st["norm"]):  # GradScaler: skip the step, halve the scale
            st["skipped"] += 1
            st["scale"] *= 0.5
            st["good"] = 0
            st["opt"].zero_grad(set_to_none=True)
            return torch.tensor(loss)
        # unscale and clip in one multiply
        coef = min(1.0, args.clip / (st["norm"] + 1e-6)) / st["scale"]
        if coef != 1.0:
            torch._foreach_mul_([local(g) for g in grads], coef)
        try:
            st["opt"].step()
        except Exception as e:  # noqa: BLE001  fused AdamW on these DTensors unsupported -> foreach, once
            if i > 0 or st["kind"] != "fused" or mr.is_oom(e):
                raise
            st["error"] = tpr.err_text(e)
            st["kind"], st["opt"] = "foreach", make_opt("foreach")
            st["opt"].step()
        st["opt"].zero_grad(set_to_none=True)
        if scaling:
            st["good"] += 1
            if st["good"] == GROWTH_INTERVAL:
                st["scale"], st["good"] = st["scale"] * 2.0, 0
        return torch.tensor(loss)

    st["stages"] = [s for s, _ in parts]
    return tpr.async_tp_fallback(train_step, st), st


def local_shape(t):
    from torch.distributed.tensor import DTensor
    return t.to_local().shape if isinstance(t, DTensor) else t.shape


def count_params(model):
    seen, n = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            n += p.numel()
    return n


def mfu_flops(n_all, c, T):
    """6N as benchmake's mfu_6n_all (tied head counted once, positions included); torchtitan's formula: 6 x the
    parameters doing matmuls (all but the two embedding tables, plus the head's V x d) + 12 L d T."""
    V, d, L = c["vocab"], c["d"], c["n_layer"]
    attn = 12 * L * d * T
    return {"6N": 6 * n_all, "palm_all": 6 * n_all + attn, "matmul": 6 * (n_all - c["seq"] * d) + attn}


# ---------------------------------------------------------------- the GPU run
def main_gpu(args):
    mr.backends()
    rank, world, local = mr.setup()
    from torch.distributed.device_mesh import init_device_mesh
    tp, pp = args.tp, args.pp
    if tp * pp != world:
        raise SystemExit(f"--tp {tp} x --pp {pp} must be the {world} ranks (one replica)")
    c = dict(CONFIGS[args.model])
    if args.vocab:
        c["vocab"] = args.vocab
    if args.layers:  # a shorter model, for a smoke test on fewer GPUs
        c["n_layer"] = args.layers
    B = args.batch or c["batch"]
    T = args.seq or c["seq"]
    c["seq"] = T
    V = c["vocab"]
    dev = torch.device("cuda", local)
    torch.manual_seed(0)
    with torch.device(dev):
        full = GPT(c)
    n_all = count_params(full)
    mesh = init_device_mesh("cuda", (pp, tp), mesh_dim_names=("pp", "tp"))
    g = torch.Generator(device=dev).manual_seed(1)  # the same tokens on every rank (one replica)

    def data(i):
        buf = torch.randint(0, V, (args.accum * B, T + 1), device=dev, generator=g)
        return buf[:, :-1].contiguous(), buf[:, 1:].contiguous()

    amp = torch.float16 if args.precision == "fp16" else torch.bfloat16
    step, st = build(full, mesh, args, dev, data, amp, scaling=args.precision == "fp16")
    del full
    torch.cuda.empty_cache()
    fpt = mfu_flops(n_all, c, T)
    res = dict(kind="train", mode=f"tp{tp}pp{pp}", model=args.model, world=world, tp=tp, pp=pp, dp=1, batch=B, seq=T,
               accum=args.accum, micro_batches=args.accum, vocab=V, n_all=n_all, flops_per_token=fpt,
               schedule=("Interleaved1F1B" if args.schedule == "interleaved" else "1F1B"), stages=st["stages"],
               sequence_parallel=args.sp, async_tp_requested=args.async_tp,
               compile=("per block" if not args.no_compile else False),
               precision=("autocast fp16, fp32 params/grads/AdamW, dynamic loss scale (GradScaler's algorithm)"
                          if args.precision == "fp16" else "autocast bf16, fp32 params/grads/AdamW"),
               dtype=args.precision, torch=torch.__version__, device=torch.cuda.get_device_name(dev),
               ln_vocab=math.log(V),
               published_mfu="no PP figure for 7-8B; torchtitan TP recipe Llama3 8B FSDP8 TP8 bf16 on 64 H100: "
                             "25.6% (async TP 28.2%) by its formula, FSDP-only 33-39%; 1F1B bubble here 1/17")
    r = tpr.timed_or_error(step, args, world, rank, res, st)
    if r is None:
        return 3
    res.update(optimizer="AdamW " + st["kind"], optimizer_fused_error=st["error"], grad_norm=st["norm"],
               loss_scale=st["scale"], skipped_steps=st["skipped"])
    mr.summarize(res, mr.gather(r, world), B * T * args.accum / world, fpt)
    mr.emit(res, args.json, rank)
    mr.log(rank, f"SUMMARY torch TP{tp} PP{pp} {res['schedule']} {'SP ' if args.sp else ''}"
                 f"{'async-TP ' if st['async_tp'] else ''}{args.model} {args.precision} B={B} T={T} "
                 f"micro-batches {args.accum}: {res['tokens_per_s_per_gpu']:.0f} tok/s/GPU, "
                 f"MFU 6N {100 * res['mfu_6N']:.1f}% torchtitan's formula {100 * res['mfu_matmul']:.1f}%, "
                 f"peak {res['peak_alloc_GiB_max']:.1f} GiB, skipped {st['skipped']}")
    return 0


# ---------------------------------------------------------------- the correctness check (CPU, gloo, fp32)
def main_check(args):
    """TP2 x PP2 on 4 CPU processes (SP as --sp says), fp32 with the loss scaling on (2^16: exact in fp32), eager,
    against the same tied GPT trained in one process from the same weights and batches."""
    from torch.distributed.device_mesh import init_device_mesh
    rank, world = tpr.check_init()
    tp, pp = args.tp, args.pp
    c = dict(CHECK)
    B, T, V, n_micro, steps = c["batch"], c["seq"], c["vocab"], args.accum, args.check_steps
    full = GPT(c, bias_std=0.02)  # identical on every rank: the same seed
    ref = copy.deepcopy(full) if rank == 0 else None
    batches = tpr.check_batches(steps, 1, n_micro * B, T, V)
    mesh = init_device_mesh("cpu", (pp, tp), mesh_dim_names=("pp", "tp"))

    def data(i):
        buf = batches[i][0]
        return buf[:, :-1].contiguous(), buf[:, 1:].contiguous()

    step, st = build(full, mesh, args, torch.device("cpu"), data, None, scaling=True)
    st["record"] = {}
    first = st["record"]
    rows = [(step(i).item(), st["norm"]) for i in range(steps)]
    norms = {}
    for d in mr.gather(first, world):  # each stage's parameters, from every rank
        norms.update(d)
    ok = True
    if rank == 0:
        def loss_of(m, x, y):
            return F.cross_entropy(m(x).flatten(0, 1), y.flatten(0, 1))
        ok = tpr.compare(rank, rows, tpr.reference_run(ref, batches, args, loss_of),
                         f"pp_reference --check: TP{tp} x PP{pp} {args.schedule}, SP {'on' if args.sp else 'off'}, "
                         f"fp32 + loss scale 2^16, {c['n_layer']} layers d {c['d']}, {n_micro} micro-batches of "
                         f"{B}, tied head, AdamW {st['kind']}, clip {args.clip}", norms)
    dist.barrier()
    dist.destroy_process_group()
    return 0 if ok else 1


def parse(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="gpt3-6.7b", choices=sorted(CONFIGS))
    ap.add_argument("--vocab", type=int, default=None, help="vocabulary (default the config's 50304)")
    ap.add_argument("--layers", type=int, default=None, help="fewer layers than the model's (smoke tests)")
    ap.add_argument("--tp", type=int, default=2)
    ap.add_argument("--pp", type=int, default=2)
    ap.add_argument("--batch", type=int, default=None, help="micro-batch rows")
    ap.add_argument("--seq", type=int, default=None)
    ap.add_argument("--accum", type=int, default=16, help="micro-batches a step")
    ap.add_argument("--schedule", choices=["1f1b", "interleaved"], default="1f1b")
    ap.add_argument("--precision", choices=["fp16", "bf16"], default="fp16")
    ap.add_argument("--sp", action=argparse.BooleanOptionalAction, default=True,
                    help="sequence parallelism inside each stage (default on)")
    tpr.add_run_args(ap)
    args = ap.parse_args(argv)
    if args.tp == 1:
        args.sp = False  # nothing to split the sequence over
    if args.check:
        args.no_compile, args.lr = True, 1e-2
        args.clip = 0.05 if args.clip == 1.0 else args.clip
        args.accum = 4 if args.accum == 16 else args.accum
    return args


if __name__ == "__main__":
    a = parse()
    sys.exit(main_check(a) if a.check else main_gpu(a))
