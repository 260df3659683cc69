"""Causal attention alone, forward and backward, through each of PyTorch's SDPA backends.

The peer of our cuDNN attention phases (`cuda_train_bench --profile`'s "attention fwd" and
"attention bwd"): the same shape (batch, heads, sequence, head_dim; q, k and v as strided views of
one packed [B, T, 3, H, D] projection, as a model's qkv product lays them), bf16, is_causal=True,
timed with CUDA events over --iters calls after --warmup. For each backend that runs the shape
(flash: FlashAttention-2 inside PyTorch; cudnn: cuDNN's fused engines through the wheel's cuDNN;
efficient: the memory-efficient kernels) it prints one JSON line: forward and backward ms a call,
and TFLOP/s by the causal count (forward 2 products of B·H·T²·D, halved by the mask, 2 flops a
multiply-add; backward 5 such products).

  python3 attention_peer.py --batch 2 --seq 4096 --heads 32 --head-dim 128 [--deterministic]
"""
import argparse
import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def time_ms(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--deterministic", action="store_true",
                    help="torch.use_deterministic_algorithms(True) (flash's backward then adds dQ without atomics)")
    args = ap.parse_args()
    torch.use_deterministic_algorithms(args.deterministic, warn_only=True)
    B, T, H, D = args.batch, args.seq, args.heads, args.head_dim
    torch.manual_seed(0)
    qkv = torch.randn(B, T, 3, H, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dout = torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16)
    mm = 2 * B * H * T * T * D / 2  # one causal product's flops
    for name in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"):
        backend = getattr(SDPBackend, name)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
        row = {"backend": name, "batch": B, "seq": T, "heads": H, "head_dim": D,
               "deterministic": args.deterministic, "torch": torch.__version__,
               "cudnn": torch.backends.cudnn.version()}
        try:
            with sdpa_kernel(backend):
                fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
                out = fwd()

                def both():
                    qkv.grad = None
                    fwd().backward(dout)
                fwd_ms = time_ms(fwd, args.warmup, args.iters)
                both_ms = time_ms(both, args.warmup, args.iters)
            bwd_ms = both_ms - fwd_ms
            row.update(fwd_ms=fwd_ms, bwd_ms=bwd_ms, fwd_tflops=2 * mm / fwd_ms / 1e9,
                       bwd_tflops=5 * mm / bwd_ms / 1e9, out_abs_mean=float(out.float().abs().mean()))
        except Exception as e:  # a backend that does not take the shape says why
            row["error"] = f"{type(e).__name__}: {e}"[:200]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
