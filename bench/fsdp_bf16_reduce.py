"""FSDP2 with its gradients reduce-scattered in bf16: the same-arithmetic peer of ours with
`--grad-reduce bf16` (issue 38, goal 2).

multi_reference.py's `--mode fsdp` (../shared/bench, unchanged: FSDP2 fully_shard per block,
torch.compile per block, fused AdamW on fp32 sharded masters, torchtitan's clipping) with one
change: MixedPrecisionPolicy(reduce_dtype=torch.bfloat16) instead of fp32, FSDP2's documented
knob for a reduction in the parameters' dtype (torchtitan's `mixed_precision_reduce`). FSDP2
casts each reduced shard back to fp32 for the optimizer. Every JSON row it writes says
reduce_dtype "bf16" (the shared script's rows have no such key: fp32).

Run from the folder that holds multi_reference.py (.devtree/peer), as that script:
  torchrun --standalone --nproc_per_node=2 fsdp_bf16_reduce.py --mode fsdp --model llama2-7b --batch 1
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import multi_reference as mr  # noqa: E402  (sets NVLink multicast off before torch loads)
import torch  # noqa: E402
import torch.distributed.fsdp as fsdp  # noqa: E402

_policy = fsdp.MixedPrecisionPolicy
_emit = mr.emit


def _bf16_reduce_policy(*args, **kw):
    kw["reduce_dtype"] = torch.bfloat16
    return _policy(*args, **kw)


def _emit_bf16(res, path, rank):
    res = dict(res, reduce_dtype="bf16")
    if "precision" in res:
        res["precision"] = res["precision"].replace("reduce_dtype=fp32", "reduce_dtype=bf16")
    _emit(res, path, rank)


if __name__ == "__main__":
    mode = sys.argv[sys.argv.index("--mode") + 1] if "--mode" in sys.argv[:-1] else None
    if mode != "fsdp":
        sys.exit(f"fsdp_bf16_reduce.py: only --mode fsdp (the reduction's type is FSDP2's), not {mode}")
    fsdp.MixedPrecisionPolicy = _bf16_reduce_policy  # run_fsdp imports it at call time
    mr.emit = _emit_bf16
    mr.main()
