"""PyTorch's own tensor parallelism (DTensor) as the peer of benchmake's TP rows (bench/multi_gpu.sh, "tp").

Run beside ../shared/bench/multi_reference.py (bench/multi_gpu.sh copies this file into .devtree/peer/), e.g.
    torchrun --standalone --nproc_per_node=4 tp_reference.py --model aquila2-7b --tp 2 --batch 1 --accum 8

The model is torch_reference.py's LLaMA (RMSNorm, RoPE, SwiGLU, untied head, flash SDPA) with separate q, k, v,
gate and up projections so that torch.distributed.tensor.parallel can split them the way Megatron does (and
benchmake does): q/k/v and gate/up ColwiseParallel, the attention output and the down projection
RowwiseParallel, the token embedding RowwiseParallel (vocabulary rows), the LM head ColwiseParallel with its
logits left sharded and the cross-entropy under loss_parallel (no rank holds a row of logits); norms replicated.
Layout: a 2-D mesh (dp, tp), TP innermost as Megatron's rank order. Data parallel over "dp": FSDP2 fully_shard
(torchtitan's 2-D recipe; FSDP2 shards parameters too, where benchmake's row runs ZeRO-1) with bf16 parameters
and fp32 reductions; with one DP rank, autocast(bf16) over fp32 parameters. torch.compile per block, AdamW
(fused, else foreach), clipping 1.0 over the whole model's norm. Timing, memory and the JSON line: the helpers of
multi_reference.py (timed, summarize, emit). tokens/s/GPU = B * T * accum * dp / world / step time.

Run 24 (4x H200): torch.nn.utils.get_total_norm failed on the grads' two meshes; the norm is now summed by hand.
"""
import argparse, math, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import multi_reference as mr  # noqa: E402  (sets NCCL's multicast off, imports torch_reference)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CONFIGS = dict(mr.CONFIGS)
CONFIGS["aquila2-7b"] = dict(arch="llama", n_layer=32, d=4096, n_head=32, ffn=11008, vocab=100008, seq=2048,
                             batch=1)


class Block(nn.Module):
    def __init__(self, d, h, ffn):
        super().__init__()
        self.hd = d // h
        self.attn_norm = nn.RMSNorm(d, eps=1e-5)
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        self.ffn_norm = nn.RMSNorm(d, eps=1e-5)
        self.w1 = nn.Linear(d, ffn, bias=False)  # gate
        self.w3 = nn.Linear(d, ffn, bias=False)  # up
        self.w2 = nn.Linear(ffn, d, bias=False)  # down

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        h = self.attn_norm(x)
        # -1 heads: this rank's share under tensor parallelism
        q = self.wq(h).view(B, T, -1, self.hd)
        k = self.wk(h).view(B, T, -1, self.hd)
        v = self.wv(h).view(B, T, -1, self.hd)
        q, k = mr.ref.apply_rope(q, cos, sin), mr.ref.apply_rope(k, cos, sin)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.wo(y.transpose(1, 2).reshape(B, T, -1))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


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
        x = self.tok(idx)
        cos, sin = self.cos[:, :T], self.sin[:, :T]
        for b in self.blocks:
            x = b(x, cos, sin)
        return self.lm_head(self.norm(x))  # a DTensor sharded over the vocabulary under TP


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="aquila2-7b", choices=sorted(CONFIGS))
    ap.add_argument("--tp", type=int, default=2)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--seq", type=int, default=None)
    ap.add_argument("--accum", type=int, default=1)
    ap.add_argument("--no-compile", action="store_true")
    # FSDP2 reduce-scatters the gradients after every micro-batch by default ("every", what run 25
    # timed); "last" turns the sync off for all but the step's last micro-batch
    # (set_requires_gradient_sync), as benchmake's ZeRO-1 reduces once per step.
    ap.add_argument("--accum-sync", choices=["every", "last"], default="every")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    mr.backends()
    rank, world, local = mr.setup()
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.tensor import DTensor, Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel, loss_parallel,
                                                   parallelize_module)

    tp = args.tp
    if world % tp:
        raise SystemExit(f"--tp {tp} does not divide {world} ranks")
    dp = world // tp
    c = dict(CONFIGS[args.model])
    B = args.batch or c["batch"]
    T = args.seq or c["seq"]
    c["seq"] = T
    V = c["vocab"]
    dev = torch.device("cuda", local)
    torch.manual_seed(0)
    with torch.device(dev):
        model = Llama(c)
    n_all, n_emb, attn = mr.counts(model, c, T)
    mesh = init_device_mesh("cuda", (dp, tp), mesh_dim_names=("dp", "tp"))
    tp_mesh = mesh["tp"]
    parallelize_module(model, tp_mesh, {
        "tok": RowwiseParallel(input_layouts=Replicate(), output_layouts=Replicate()),
        "lm_head": ColwiseParallel(input_layouts=Replicate(), output_layouts=Shard(-1), use_local_output=False),
    })
    block_plan = {"wq": ColwiseParallel(), "wk": ColwiseParallel(), "wv": ColwiseParallel(),
                  "wo": RowwiseParallel(), "w1": ColwiseParallel(), "w3": ColwiseParallel(),
                  "w2": RowwiseParallel()}
    for b in model.blocks:
        parallelize_module(b, tp_mesh, block_plan)
    if not args.no_compile:
        for i in range(len(model.blocks)):
            model.blocks[i] = torch.compile(model.blocks[i])
    if dp > 1:
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32, cast_forward_inputs=False)
        for b in model.blocks:
            fully_shard(b, mesh=mesh["dp"], mp_policy=mp)
        fully_shard(model, mesh=mesh["dp"], mp_policy=mp)
        autocast = None
    else:
        autocast = torch.autocast("cuda", dtype=torch.bfloat16)
    params = list(model.parameters())
    st = {"kind": "fused", "error": None}

    def make_opt(kind):
        return torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1,
                                 **({"fused": True} if kind == "fused" else {"foreach": True}))

    st["opt"] = make_opt("fused")
    # The same tokens on the TP ranks of a replica: seeded by the DP index.
    g = torch.Generator(device=dev).manual_seed(1 + rank // tp)

    def step(i):
        loss_sum = 0.0
        for a in range(args.accum):
            if dp > 1 and args.accum_sync == "last":
                model.set_requires_gradient_sync(a == args.accum - 1)
            buf = torch.randint(0, V, (B, T + 1), device=dev, generator=g)
            x, y = buf[:, :-1].contiguous(), buf[:, 1:].contiguous()
            if autocast is not None:
                with autocast:
                    logits = model(x)
            else:
                logits = model(x)
            with loss_parallel():
                loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten(0, 1)) / args.accum
                loss.backward()
            loss_sum = loss_sum + loss.detach()
        # The whole model's gradient norm: the grads live on different meshes (TP x FSDP blocks on (dp, tp),
        # the replicated norms on (dp) alone), which get_total_norm cannot stack; each rank adds its local
        # squares divided by the ranks holding the same shard, and one all-reduce sums them. Clipping at 1.0.
        grads = [p.grad for p in params if p.grad is not None]
        local_sq = torch.zeros((), device=dev, dtype=torch.float32)
        for gr in grads:
            if isinstance(gr, DTensor):
                shards = math.prod(gr.device_mesh.size(i) for i, pl in enumerate(gr.placements) if pl.is_shard())
                local_sq += gr.to_local().float().square().sum() * (shards / world)
            else:
                local_sq += gr.float().square().sum() / world
        torch.distributed.all_reduce(local_sq)
        coef = min(1.0, 1.0 / (local_sq.sqrt().item() + 1e-6))
        if coef < 1.0:
            for gr in grads:
                gr.mul_(coef)
        try:
            st["opt"].step()
        except Exception as e:  # noqa: BLE001  fused AdamW on these DTensors unsupported -> foreach, once
            if i > 0 or st["kind"] != "fused" or mr.is_oom(e):
                raise
            st["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            st["kind"], st["opt"] = "foreach", make_opt("foreach")
            st["opt"].step()
        st["opt"].zero_grad(set_to_none=True)
        return loss_sum.full_tensor() if isinstance(loss_sum, DTensor) else loss_sum

    fpt = {"6N": 6 * n_all, "palm_all": 6 * n_all + attn, "palm_nonemb": 6 * (n_all - n_emb) + attn}
    res = dict(kind="train", mode=f"tp{tp}dp{dp}", model=args.model, world=world, tp=tp, dp=dp, batch=B, seq=T,
               accum=args.accum, accum_sync=args.accum_sync, vocab=V, n_all=n_all, flops_per_token=fpt,
               compile=("per block" if not args.no_compile else False),
               precision=("FSDP2 bf16 params / fp32 reduce over dp" if dp > 1 else "autocast bf16, fp32 params"),
               torch=torch.__version__, device=torch.cuda.get_device_name(dev), ln_vocab=math.log(V))
    try:
        r, err = mr.timed(step, args.warmup, args.steps, world), None
    except Exception as e:  # noqa: BLE001
        if not mr.is_oom(e):
            raise
        r, err = None, "OOM: " + str(e).splitlines()[0][:200]
    errs = mr.gather(err, world)
    if any(errs):
        res["error"] = [e for e in errs if e][0]
        mr.emit(res, args.json, rank)
        return 3
    res["optimizer"] = "AdamW " + st["kind"]
    res["optimizer_fused_error"] = st["error"]
    mr.summarize(res, mr.gather(r, world), B * T * args.accum * dp / world, fpt)
    mr.emit(res, args.json, rank)
    mr.log(rank, f"SUMMARY torch TP{tp} DP{dp} {args.model} B={B} T={T} accum {args.accum}: "
                 f"{res['tokens_per_s_per_gpu']:.0f} tok/s/GPU, MFU 6N {100 * res['mfu_6N']:.1f}%, "
                 f"peak {res['peak_alloc_GiB_max']:.1f} GiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
