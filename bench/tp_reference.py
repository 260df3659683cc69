"""PyTorch's own tensor parallelism (DTensor) as the peer of benchmake's TP rows (bench/multi_gpu.sh, "tp").

Run beside ../shared/bench/multi_reference.py (bench/multi_gpu.sh copies this file into .devtree/peer/), e.g.
    torchrun --standalone --nproc_per_node=4 tp_reference.py --model aquila2-7b --tp 2 --batch 1 --accum 8
    torchrun --standalone --nproc_per_node=4 tp_reference.py --check     (CPU, gloo: the correctness check)

The recipe is torchtitan's for Llama (its parallelize_llama / apply_tp, read, not copied), PyTorch's best
published recipe for TP x FSDP2:
  * the model: torch_reference.py's LLaMA (RMSNorm, RoPE, SwiGLU, untied head, flash SDPA) with separate q, k, v,
    gate and up projections, attention and feed-forward as submodules so that their inputs can be laid out;
  * tensor parallel (Megatron's split, as benchmake's): q/k/v and gate/up ColwiseParallel, the attention output
    and the down projection RowwiseParallel, the token embedding RowwiseParallel (vocabulary rows), the LM head
    ColwiseParallel with its logits left sharded over the vocabulary and the cross-entropy under loss_parallel
    (no rank holds a row of logits);
  * sequence parallelism (--sp, the default; --no-sp for plain TP): the residual stream between blocks lives
    sharded over the sequence (Shard(1)); the embedding's output is reduce-scattered into it, both norms of a
    block and the final norm run under SequenceParallel on this rank's tokens, PrepareModuleInput all-gathers the
    sequence in front of attention and the feed-forward, the row-parallel outputs are reduce-scattered back
    (output_layouts=Shard(1)) and the LM head all-gathers its input (input_layouts=Shard(1)). The all-reduces of
    plain TP become reduce-scatter + all-gather pairs, and the norms' activations are split by the TP degree;
  * async TP (--async-tp, needs compile and SP): inductor's micro-pipelined TP pass
    (torch._inductor.config._micro_pipeline_tp) with symmetric memory enabled on the TP group, torchtitan's
    switch. NVLink multicast stays off (multi_reference.py sets TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
    NVSHMEM_DISABLE_NVLS=1, NCCL_NVLS_ENABLE=0). If it fails at set-up or in the first step, the error goes into
    the JSON row (async_tp_error) and the run goes on without it, as for fused AdamW;
  * layout: a 2-D mesh (dp, tp), TP innermost as Megatron's rank order. Data parallel over "dp": FSDP2
    fully_shard per block and at the root (torchtitan's 2-D recipe; FSDP2 shards parameters too, where
    benchmake's row runs ZeRO-1) with bf16 parameters and fp32 reductions; with one DP rank, autocast(bf16) over
    fp32 parameters. torch.compile per block (after TP, before FSDP, as torchtitan), AdamW (fused, else foreach),
    clipping 1.0 over the whole model's norm.
Timing, memory and the JSON line: the helpers of multi_reference.py (timed, summarize, emit).
tokens/s/GPU = B * T * accum * dp / world / step time.

MFU against what PyTorch publishes (bench/multi_gpu.sh prints it beside the peer's): torchtitan's
benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md (torchtitan commit 820504e, torch 38410cf9 of 2025-06-14),
"Llama3 8b on 64 H100s with FSDP=8, TP=8, torch.compile, per op SAC, local batch size 12", bf16: 4378 tokens/s/GPU
with vanilla TP, 4809.4 with async TP (1.10x). Their MFU formula (torchtitan's get_nparams_and_flops:
6 * (params - embedding) + 12 * layers * dim * seq, seq 8192 in llama3_8b.toml; 7.50e9 non-embedding parameters)
gives 57.9 GFLOP/token, hence 25.6% and 28.2% of the 989 TFLOP/s H100 SXM peak; the page's GPUs are 500 W HBM2e
H100s whose peak torchtitan's docs/performance.md calls "between SXM and NVL", so these are understated (the
same document reports 33% to 39% MFU for Llama 3.1 8B on 8 or 128 H100s with FSDP alone, no Float8). The shapes
are comparable: a LLaMA of 7-8B (d 4096, 32 layers, SwiGLU), bf16, TP x FSDP2 with SP, compiled per block; the
differences: TP 2 here (less communication than TP 8), sequence 2048 (less attention work than 8192), no
activation checkpointing (no recompute), and H200s. A peer well inside 25-40% MFU on 4 H200s is PyTorch at its
published efficiency; one far below it would be a broken peer, not a fair ratio. The row's mfu_matmul is that
formula (6 * (all params - token embedding) + attention); mfu_6N the plain 6N that benchmake's rows print.

Run 24 (4x H200): torch.nn.utils.get_total_norm failed on the grads' two meshes; the norm is summed by hand.
That sum counted only is_shard() placements: the --check below found the norm at 0.80x the true one under
FSDP2 x TP (right without FSDP2), so the 2-D parameters' dp placement (presumably FSDP2's _StridedShard) did not
count as a split; every placement that is neither Replicate nor Partial now does, and the check agrees to 3e-6.
Runs 24-25 clipped with that smaller norm (the speed unaffected).

Correctness (--check; torch 2.11 on the device machine's CPU, gloo, 2026-11-29): a 4-layer d-64 LLaMA (4 heads,
vocabulary 128, 32 tokens, 2 micro-batches of 2 rows a replica, lr 1e-2, clip 0.05, fp32, eager) trained 5 steps
as TP2 x DP2 (FSDP2) and, in rank 0, undistributed from the same weights and batches: losses within 1.5e-7
relative, gradient norms within 3e-6, every parameter's first gradient within 1e-4, with SP (default), with
--no-sp, and as --tp 4 (no FSDP):
    torchrun --standalone --nproc_per_node=4 tp_reference.py --check [--no-sp | --tp 4]
"""
import argparse, contextlib, copy, math, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import multi_reference as mr  # noqa: E402  (sets NCCL's multicast off, imports torch_reference)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CONFIGS = dict(mr.CONFIGS)
CONFIGS["aquila2-7b"] = dict(arch="llama", n_layer=32, d=4096, n_head=32, ffn=11008, vocab=100008, seq=2048,
                             batch=1)
# --check: small enough for 4 CPU processes, every split still real (2 heads and 64 vocabulary rows a TP rank,
# 16 tokens a sequence shard).
CHECK = dict(arch="llama", n_layer=4, d=64, n_head=4, ffn=128, vocab=128, seq=32, batch=2)


# ---------------------------------------------------------------- the model
class Attention(nn.Module):
    """Causal self-attention with RoPE; q, k, v, o as separate linears (column / row parallel under TP)."""

    n_side_inputs = 2  # cos, sin: plain tensors, not laid out by PrepareModuleInput

    def __init__(self, d, h):
        super().__init__()
        self.hd = d // h
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        # -1 heads: this rank's share under tensor parallelism
        q = self.wq(x).view(B, T, -1, self.hd)
        k = self.wk(x).view(B, T, -1, self.hd)
        v = self.wv(x).view(B, T, -1, self.hd)
        q, k = mr.ref.apply_rope(q, cos, sin), mr.ref.apply_rope(k, cos, sin)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(B, T, -1))


class FeedForward(nn.Module):
    """SwiGLU: w2(silu(w1 x) * w3 x)."""

    def __init__(self, d, ffn):
        super().__init__()
        self.w1 = nn.Linear(d, ffn, bias=False)  # gate
        self.w3 = nn.Linear(d, ffn, bias=False)  # up
        self.w2 = nn.Linear(ffn, d, bias=False)  # down

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, d, h, ffn):
        super().__init__()
        self.attn_norm = nn.RMSNorm(d, eps=1e-5)
        self.attn = Attention(d, h)
        self.ffn_norm = nn.RMSNorm(d, eps=1e-5)
        self.ffn = FeedForward(d, ffn)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.ffn(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, V = c["d"], c["vocab"]
        self.tok = nn.Embedding(V, d)
        self.blocks = nn.ModuleList([Block(d, c["n_head"], c["ffn"]) for _ in range(c["n_layer"])])
        self.norm = nn.RMSNorm(d, eps=1e-5)
        self.lm_head = nn.Linear(d, V, bias=False)
        cos, sin = mr.ref.rope_tables(c["seq"], d // c["n_head"])
        self.register_buffer("cos", cos[None, :, None, :], persistent=False)
        self.register_buffer("sin", sin[None, :, None, :], persistent=False)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx)  # under SP: this rank's T / tp tokens
        cos, sin = self.cos[:, :T], self.sin[:, :T]  # attention sees the whole sequence (all-gathered)
        for b in self.blocks:
            x = b(x, cos, sin)
        return self.lm_head(self.norm(x))  # a DTensor sharded over the vocabulary under TP


# ---------------------------------------------------------------- tensor (and sequence) parallel plans
# Shared with pp_reference.py: its GPT blocks use the same module names (attn_norm, attn.wq/wk/wv/wo, ffn_norm,
# ffn.w1/w2[/w3]).
def embedding_style(sp):
    """Vocabulary-parallel embedding; its partial sums reduce-scattered over the sequence under SP."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import RowwiseParallel
    return RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1) if sp else Replicate())


def head_style(sp):
    """Vocabulary-parallel LM head; logits stay a DTensor sharded over the vocabulary for loss_parallel."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import ColwiseParallel
    return ColwiseParallel(input_layouts=Shard(1) if sp else Replicate(), output_layouts=Shard(-1),
                           use_local_output=False)


def norm_style():
    from torch.distributed.tensor.parallel import SequenceParallel
    return SequenceParallel()


def block_plan(block, sp):
    """torchtitan's per-block plan: column-parallel in, row-parallel out; under SP the norms on the sequence
    shard and the attention / feed-forward inputs all-gathered, their outputs reduce-scattered (Shard(1))."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, PrepareModuleInput, RowwiseParallel
    out = Shard(1) if sp else Replicate()
    plan = {"attn.wq": ColwiseParallel(), "attn.wk": ColwiseParallel(), "attn.wv": ColwiseParallel(),
            "attn.wo": RowwiseParallel(output_layouts=out),
            "ffn.w1": ColwiseParallel(), "ffn.w2": RowwiseParallel(output_layouts=out)}
    if hasattr(block.ffn, "w3"):
        plan["ffn.w3"] = ColwiseParallel()
    if sp:
        side = (None,) * block.attn.n_side_inputs
        plan.update({
            "attn_norm": norm_style(), "ffn_norm": norm_style(),
            "attn": PrepareModuleInput(input_layouts=(Shard(1),) + side, desired_input_layouts=(Replicate(),) + side),
            "ffn": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
        })
    return plan


def parallelize_blocks(blocks, tp_mesh, sp, compile_blocks):
    """TP (+SP) on every block, then torch.compile per block (torchtitan's order: TP, compile, FSDP)."""
    from torch.distributed.tensor.parallel import parallelize_module
    for b in blocks:
        parallelize_module(b, tp_mesh, block_plan(b, sp))
    if compile_blocks:
        for i in range(len(blocks)):
            blocks[i] = torch.compile(blocks[i])


def enable_async_tp(tp_mesh):
    """torchtitan's async-TP switch: inductor's micro-pipeline pass and symmetric memory on the TP group.
    Returns None, or the error that kept it off."""
    try:
        import torch._inductor.config as inductor_config
        from torch.distributed import _symmetric_memory as symm
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # deprecated in newer PyTorch, still needed in some
            symm.enable_symm_mem_for_group(tp_mesh.get_group().group_name)
        inductor_config._micro_pipeline_tp = True
        return None
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


def disable_async_tp():
    import torch._inductor.config as inductor_config
    inductor_config._micro_pipeline_tp = False
    torch._dynamo.reset()  # recompile the blocks without the pass


def async_tp_fallback(train_step, st):
    """train_step(i) as the timed step; where async TP is on and the first step (which compiles) fails but for an
    OOM, the error goes into st["async_tp_error"] and the step runs again without async TP."""
    def step(i):
        if not (i == 0 and st["async_tp"]):
            return train_step(i)
        try:
            return train_step(i)
        except Exception as e:  # noqa: BLE001
            if mr.is_oom(e):
                raise
            st["async_tp_error"], st["async_tp"] = err_text(e), False
            st["opt"].zero_grad(set_to_none=True)
            disable_async_tp()
            return train_step(i)
    return step


def err_text(e):
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"


# ---------------------------------------------------------------- the gradient norm over two meshes
class AdamWs:
    """AdamW (fused or foreach) over the DTensor parameters and another over the plain ones: the multi-tensor
    kernels refuse a list that mixes the two (without SP a stage's norms stay plain tensors)."""

    def __init__(self, params, kind, lr):
        from torch.distributed.tensor import DTensor
        groups = [[p for p in params if isinstance(p, DTensor)], [p for p in params if not isinstance(p, DTensor)]]
        self.opts = [torch.optim.AdamW(g, lr=lr, betas=(0.9, 0.95), weight_decay=0.1,
                                       **({"fused": True} if kind == "fused" else {"foreach": True}))
                     for g in groups if g]

    def step(self):
        for o in self.opts:
            o.step()

    def zero_grad(self, set_to_none=True):
        for o in self.opts:
            o.zero_grad(set_to_none=set_to_none)


def align_grads(params):
    """Gives every DTensor gradient its parameter's layout. DTensor's autograd may leave a gradient in another
    one than the parameter's (seen in the checks: under SP the total norm was off by 1e-4 until aligned, and in
    pp_reference.py the tied embedding's two copies reached their all-reduce with gradients of two sizes); the
    norm, the tied copies' sum and the optimizer all want the parameter's. A no-op (no communication) where they already agree, as under FSDP2."""
    from torch.distributed.tensor import DTensor
    for p in params:
        g = p.grad
        if isinstance(g, DTensor) and isinstance(p, DTensor) and (
                tuple(g.placements) != tuple(p.placements) or g.device_mesh != p.device_mesh):
            p.grad = g.redistribute(p.device_mesh, p.placements)


def clip_global(grads, world, max_norm, dev):
    """The whole model's gradient norm and clipping at max_norm; returns the norm (before clipping).
    The grads live on different meshes (TP x FSDP blocks on (dp, tp), the norms on (dp) alone or (dp, tp) under
    SP), which get_total_norm cannot stack; each rank adds its local squares divided by the number of ranks that
    hold the same values (world / the shards of its placements), and one all-reduce over the world sums them.
    Every placement that is neither Replicate nor Partial splits the tensor (counting only is_shard() ones gave
    0.80x the true norm under FSDP2 x TP in the check: FSDP2's dp placement, presumably _StridedShard, was
    missed); grads are aligned to their parameters first (no Partial left)."""
    from torch.distributed.tensor import DTensor
    local_sq = torch.zeros((), device=dev, dtype=torch.float32)
    for gr in grads:
        if isinstance(gr, DTensor):
            shards = math.prod(gr.device_mesh.size(i) for i, pl in enumerate(gr.placements)
                               if not (pl.is_replicate() or pl.is_partial()))
            local_sq += gr.to_local().float().square().sum() * (shards / world)
        else:
            local_sq += gr.float().square().sum() / world
    if world > 1:
        dist.all_reduce(local_sq)
    norm = local_sq.sqrt().item()
    coef = min(1.0, max_norm / (norm + 1e-6))
    if coef < 1.0:
        for gr in grads:
            gr.mul_(coef)
    return norm


def param_norms(named):
    """{name: the whole gradient's norm} over (name, param) pairs; DTensor grads gathered (a collective over
    their mesh: every rank of it must call this with the same list). The check's per-parameter comparison."""
    from torch.distributed.tensor import DTensor
    out = {}
    for n, p in named:
        if p.grad is not None:
            g = p.grad.full_tensor() if isinstance(p.grad, DTensor) else p.grad
            out[n] = g.float().norm().item()
    return out


# ---------------------------------------------------------------- building the trainer
def build(model, mesh, args, dev, data, accum, mixed):
    """Parallelizes `model` (built whole and identically on every rank) on `mesh` (dp, tp) and returns
    (step, state). data(i, a) -> (x, y) for this rank's replica, micro-batch a of step i. mixed: bf16 (FSDP2
    param dtype or autocast); off for the fp32 check."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor.parallel import loss_parallel, parallelize_module

    dp, tp, world = mesh["dp"].size(), mesh["tp"].size(), mesh.size()
    tp_mesh = mesh["tp"]
    st = {"kind": args.opt, "error": None, "async_tp": False, "async_tp_error": None, "norm": None}
    parallelize_module(model, tp_mesh, {"tok": embedding_style(args.sp), "lm_head": head_style(args.sp)})
    if args.sp:
        parallelize_module(model, tp_mesh, {"norm": norm_style()})
    if args.async_tp:
        if args.no_compile or not args.sp:
            st["async_tp_error"] = "async TP needs torch.compile and sequence parallelism"
        else:
            st["async_tp_error"] = enable_async_tp(tp_mesh)
            st["async_tp"] = st["async_tp_error"] is None
    parallelize_blocks(model.blocks, tp_mesh, args.sp, not args.no_compile)
    autocast = contextlib.nullcontext
    if dp > 1:
        mp = (MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32,
                                   cast_forward_inputs=False) if mixed else MixedPrecisionPolicy())
        for b in model.blocks:
            fully_shard(b, mesh=mesh["dp"], mp_policy=mp)
        fully_shard(model, mesh=mesh["dp"], mp_policy=mp)
        if dev.type == "cpu":  # gloo has no ReduceOp.AVG: FSDP2 sums and divides by itself instead
            for m in model.modules():
                if hasattr(m, "set_force_sum_reduction_for_comms"):
                    m.set_force_sum_reduction_for_comms(True)
    elif mixed:
        autocast = lambda: torch.autocast(dev.type, dtype=torch.bfloat16)  # noqa: E731
    params = list(model.parameters())

    def make_opt(kind):
        return AdamWs(params, kind, args.lr)

    try:
        st["opt"] = make_opt(args.opt)
    except Exception as e:  # noqa: BLE001  fused AdamW refused at construction -> foreach
        if args.opt != "fused":
            raise
        st["error"], st["kind"], st["opt"] = err_text(e), "foreach", make_opt("foreach")

    def train_step(i):
        loss_sum = 0.0
        for a in range(accum):
            if dp > 1 and args.accum_sync == "last":
                model.set_requires_gradient_sync(a == accum - 1)
            x, y = data(i, a)
            with autocast():
                logits = model(x)
            with loss_parallel():
                loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten(0, 1)) / accum
                loss.backward()
            loss_sum = loss_sum + loss.detach()
        align_grads(params)
        if st.get("record") is not None:  # the check's first step: every parameter's gradient norm
            st["record"].update(param_norms(model.named_parameters()))
            st["record"] = None
        st["norm"] = clip_global([p.grad for p in params if p.grad is not None], world, args.clip, dev)
        try:
            st["opt"].step()
        except Exception as e:  # noqa: BLE001  fused AdamW on these DTensors unsupported -> foreach, once
            if i > 0 or st["kind"] != "fused" or mr.is_oom(e):
                raise
            st["error"] = err_text(e)
            st["kind"], st["opt"] = "foreach", make_opt("foreach")
            st["opt"].step()
        st["opt"].zero_grad(set_to_none=True)
        return loss_sum.full_tensor() if isinstance(loss_sum, DTensor) else loss_sum

    return async_tp_fallback(train_step, st), st


def mfu_flops(n_all, c, T):
    """FLOPs per token: plain 6N (benchmake's mfu_6n_all), PaLM's with attention, and torchtitan's formula
    (6 x every parameter but the token embedding, the LM head included, + 12 L d T)."""
    V, d, L = c["vocab"], c["d"], c["n_layer"]
    attn = 12 * L * d * T
    return {"6N": 6 * n_all, "palm_all": 6 * n_all + attn, "palm_nonemb": 6 * (n_all - 2 * V * d) + attn,
            "matmul": 6 * (n_all - V * d) + attn}


def timed_or_error(step, args, world, rank, res, st):
    """The timed steps (mr.timed) of every rank, or None after emitting `res` with the first rank's error (an OOM:
    any other exception propagates); `res` gets whether async TP ran (and why not)."""
    try:
        r, err = mr.timed(step, args.warmup, args.steps, world), None
    except Exception as e:  # noqa: BLE001
        if not mr.is_oom(e):
            raise
        r, err = None, "OOM: " + str(e).splitlines()[0][:200]
    errs = mr.gather(err, world)
    res["async_tp"], res["async_tp_error"] = st["async_tp"], st["async_tp_error"]
    if any(errs):
        res["error"] = [e for e in errs if e][0]
        mr.emit(res, args.json, rank)
        return None
    return r


# ---------------------------------------------------------------- the GPU run
def main_gpu(args):
    mr.backends()
    rank, world, local = mr.setup()
    from torch.distributed.device_mesh import init_device_mesh

    tp = args.tp
    if world % tp:
        raise SystemExit(f"--tp {tp} does not divide {world} ranks")
    dp = world // tp
    c = dict(CONFIGS[args.model])
    B = args.batch or c["batch"]
    T = args.seq or c["seq"]
    c["seq"] = T
    V = c["vocab"]
    if args.sp and T % tp:
        raise SystemExit(f"sequence parallelism: --tp {tp} must divide the sequence {T}")
    dev = torch.device("cuda", local)
    torch.manual_seed(0)
    with torch.device(dev):
        model = Llama(c)
    n_all = sum(p.numel() for p in model.parameters())
    mesh = init_device_mesh("cuda", (dp, tp), mesh_dim_names=("dp", "tp"))
    # The same tokens on the TP ranks of a replica: seeded by the DP index.
    g = torch.Generator(device=dev).manual_seed(1 + rank // tp)

    def data(i, a):
        buf = torch.randint(0, V, (B, T + 1), device=dev, generator=g)
        return buf[:, :-1].contiguous(), buf[:, 1:].contiguous()

    step, st = build(model, mesh, args, dev, data, args.accum, mixed=True)
    fpt = mfu_flops(n_all, c, T)
    res = dict(kind="train", mode=f"tp{tp}dp{dp}", model=args.model, world=world, tp=tp, pp=1, dp=dp, batch=B, seq=T,
               accum=args.accum, accum_sync=args.accum_sync, vocab=V, n_all=n_all, flops_per_token=fpt,
               sequence_parallel=args.sp, async_tp_requested=args.async_tp,
               compile=("per block" if not args.no_compile else False),
               precision=("FSDP2 bf16 params / fp32 reduce over dp" if dp > 1 else "autocast bf16, fp32 params"),
               torch=torch.__version__, device=torch.cuda.get_device_name(dev), ln_vocab=math.log(V),
               published_mfu="torchtitan Llama3 8B FSDP8 TP8 bf16 on 64 H100: 4378 tok/s/GPU (async TP 4809.4) "
                             "= 25.6% (28.2%) MFU by its formula; FSDP-only 8B on 8/128 H100: 33-39%")
    r = timed_or_error(step, args, world, rank, res, st)
    if r is None:
        return 3
    res["optimizer"] = "AdamW " + st["kind"]
    res["optimizer_fused_error"] = st["error"]
    res["grad_norm"] = st["norm"]
    mr.summarize(res, mr.gather(r, world), B * T * args.accum * dp / world, fpt)
    mr.emit(res, args.json, rank)
    mr.log(rank, f"SUMMARY torch TP{tp} DP{dp} {'SP ' if args.sp else ''}{'async-TP ' if st['async_tp'] else ''}"
                 f"{args.model} B={B} T={T} accum {args.accum}: {res['tokens_per_s_per_gpu']:.0f} tok/s/GPU, "
                 f"MFU 6N {100 * res['mfu_6N']:.1f}% torchtitan's formula {100 * res['mfu_matmul']:.1f}%, "
                 f"peak {res['peak_alloc_GiB_max']:.1f} GiB")
    return 0


# ---------------------------------------------------------------- the correctness check (CPU, gloo, fp32)
def check_batches(steps, accum, rows, T, V, seed=1234):
    """The same global batches on every rank: steps x accum micro-batches of `rows` sequences."""
    g = torch.Generator().manual_seed(seed)
    return [[torch.randint(0, V, (rows, T + 1), generator=g) for _ in range(accum)] for _ in range(steps)]


def reference_run(model, batches, args, loss_of):
    """The same model trained undistributed (one process): per step the mean loss over the global batch, the
    gradient norm before clipping. loss_of(model, x, y) -> mean cross-entropy."""
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, foreach=True)
    out = []
    for micro in batches:
        total = 0.0
        for buf in micro:
            loss = loss_of(model, buf[:, :-1], buf[:, 1:]) / len(micro)
            loss.backward()
            total += loss.item()
        if not out:
            reference_run.first_norms = param_norms(model.named_parameters())
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip, foreach=True).item()
        opt.step()
        opt.zero_grad(set_to_none=True)
        out.append((total, norm))
    return out


def compare_params(dist_norms, ref_norms):
    """The first step's per-parameter gradient norms: prints those that differ by more than 1e-4 relative (1e-8
    absolute at least), or are missing on one side; True when none does."""
    bad = []
    # A floor of 1e-8 absolute: the key projection's bias gets an analytically zero gradient (a constant added to
    # every key shifts each query's scores alike, which softmax ignores); both sides show fp32 noise of ~5e-11.
    for n in sorted(set(dist_norms) | set(ref_norms)):
        a, b = dist_norms.get(n), ref_norms.get(n)
        if a is None or b is None or abs(a - b) > max(1e-4 * abs(b), 1e-8):
            bad.append(n)
            print(f"  gradient norm of {n}: distributed {a}, reference {b}")
    print(f"first step's gradients: {len(ref_norms)} parameters of the reference, "
          f"{len(dist_norms)} distributed, {len(bad)} differ")
    return not bad


def compare(rank, dist_rows, ref_rows, what, dist_norms=None):
    """Prints both columns; True when every loss agrees within 1e-4 relative (norms within 1e-3), and every
    parameter's first gradient where dist_norms is given."""
    if rank != 0:
        return True
    ok = compare_params(dist_norms, reference_run.first_norms) if dist_norms is not None else True
    print(f"{what}\n{'step':>4} {'distributed loss':>17} {'reference loss':>15} {'rel diff':>9} "
          f"{'dist grad norm':>15} {'ref grad norm':>14}")
    for i, ((l1, n1), (l0, n0)) in enumerate(zip(dist_rows, ref_rows)):
        rel = abs(l1 - l0) / abs(l0)
        ok &= rel < 1e-4 and abs(n1 - n0) / n0 < 1e-3
        print(f"{i:>4} {l1:17.8f} {l0:15.8f} {rel:9.2e} {n1:15.8f} {n0:14.8f}")
    print("CHECK " + ("PASSED" if ok else "FAILED") + f": {len(ref_rows)} steps, losses within 1e-4 relative",
          flush=True)
    return ok


def check_init():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    return dist.get_rank(), dist.get_world_size()


def main_check(args):
    """TP2 x DP2 (FSDP2) on 4 CPU processes, SP as --sp says, fp32, eager, against the same model trained in one
    process from the same initial weights and batches."""
    from torch.distributed.device_mesh import init_device_mesh
    rank, world = check_init()
    tp = args.tp
    dp = world // tp
    c = dict(CHECK)
    B, T, V, accum, steps = c["batch"], c["seq"], c["vocab"], 2, args.check_steps
    model = Llama(c)  # identical on every rank: the same seed
    ref = copy.deepcopy(model) if rank == 0 else None
    batches = check_batches(steps, accum, dp * B, T, V)
    mesh = init_device_mesh("cpu", (dp, tp), mesh_dim_names=("dp", "tp"))
    dp_rank = mesh["dp"].get_local_rank()

    def data(i, a):  # this replica's rows of the global micro-batch
        buf = batches[i][a][dp_rank * B:(dp_rank + 1) * B]
        return buf[:, :-1].contiguous(), buf[:, 1:].contiguous()

    step, st = build(model, mesh, args, torch.device("cpu"), data, accum, mixed=False)
    first = st["record"] = {}
    rows = []
    for i in range(steps):
        loss = step(i).detach().clone()
        dist.all_reduce(loss, group=mesh["dp"].get_group())  # the global batch's mean: the replicas' mean
        rows.append((loss.item() / dp, st["norm"]))
    ok = True
    if rank == 0:
        def loss_of(m, x, y):
            return F.cross_entropy(m(x).flatten(0, 1), y.flatten(0, 1))
        ok = compare(rank, rows, reference_run(ref, batches, args, loss_of),
                     f"tp_reference --check: TP{tp} x DP{dp} (FSDP2), SP {'on' if args.sp else 'off'}, fp32, "
                     f"{c['n_layer']} layers d {c['d']}, accum {accum}, AdamW {st['kind']}, clip {args.clip}",
                     first)
    dist.barrier()
    dist.destroy_process_group()
    return 0 if ok else 1


def add_run_args(ap):
    """The options both peers take (pp_reference.py too): async TP, compile, optimizer, timing, the check."""
    ap.add_argument("--async-tp", action="store_true", help="inductor's micro-pipelined TP (needs compile, SP)")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--opt", choices=["fused", "foreach"], default="fused")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--json", default=None)
    ap.add_argument("--check", action="store_true",
                    help="CPU / gloo / fp32 correctness check against an undistributed run (torchrun, 4 ranks)")
    ap.add_argument("--check-steps", type=int, default=5)


def parse(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="aquila2-7b", choices=sorted(CONFIGS))
    ap.add_argument("--tp", type=int, default=2)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--seq", type=int, default=None)
    ap.add_argument("--accum", type=int, default=1)
    ap.add_argument("--sp", action=argparse.BooleanOptionalAction, default=True,
                    help="sequence parallelism (torchtitan's layout; default on)")
    # FSDP2 reduce-scatters the gradients after every micro-batch by default ("every", what run 25
    # timed); "last" turns the sync off for all but the step's last micro-batch
    # (set_requires_gradient_sync), as benchmake's ZeRO-1 reduces once per step.
    ap.add_argument("--accum-sync", choices=["every", "last"], default="every")
    add_run_args(ap)
    args = ap.parse_args(argv)
    if args.check:  # large enough a rate and small enough a clip that both leave a mark on the losses
        args.no_compile, args.lr, args.clip = True, 1e-2, 0.05 if args.clip == 1.0 else args.clip
    return args


if __name__ == "__main__":
    a = parse()
    sys.exit(main_check(a) if a.check else main_gpu(a))
