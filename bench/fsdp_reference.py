"""The FSDP2 peer of our ZeRO-3 (issue 38, goal 2): ../shared/bench/multi_reference.py's `--mode fsdp`,
unchanged (FSDP2 fully_shard per block, torch.compile per block, fused AdamW on fp32 sharded masters,
torchtitan's clipping), with two additions:

  --reduce-dtype fp32|bf16  MixedPrecisionPolicy's reduce_dtype (default fp32, the shared script's and
      torchtitan's default `mixed_precision_reduce`). bf16 is the same arithmetic as ours with
      `--grad-reduce bf16`: gradients reduce-scattered in bf16, each reduced shard cast back to fp32
      for the optimizer by FSDP2. Every JSON row says which ("reduce_dtype").
  device_used_GiB  the device's use (total - free, nvidia-smi's figure: the CUDA context, NCCL's
      buffers and the caching allocator's reserve included), rank 0's, after the timed steps: the
      same measure as ours' device_used_GiB, beside the peak allocation the shared script reports
      (what PyTorch's tensors held, the bound goal 2 names, to be set against our arena).

Run from the folder that holds multi_reference.py (.devtree/peer), as that script:
  torchrun --standalone --nproc_per_node=2 fsdp_reference.py --model llama2-7b --batch 1 --reduce-dtype bf16
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import multi_reference as mr  # noqa: E402  (sets NVLink multicast off before torch loads)
import torch  # noqa: E402
import torch.distributed.fsdp as fsdp  # noqa: E402


def main():
    args = sys.argv[1:]
    reduce_dtype = "fp32"
    if "--reduce-dtype" in args:
        i = args.index("--reduce-dtype")
        if i + 1 >= len(args) or args[i + 1] not in ("fp32", "bf16"):
            sys.exit("fsdp_reference.py: --reduce-dtype fp32|bf16")
        reduce_dtype = args[i + 1]
        del args[i:i + 2]
    if "--mode" in args:
        sys.exit("fsdp_reference.py: runs multi_reference.py's --mode fsdp only; no --mode")
    policy, emit = fsdp.MixedPrecisionPolicy, mr.emit

    def bf16_reduce_policy(*a, **kw):
        kw["reduce_dtype"] = torch.bfloat16
        return policy(*a, **kw)

    def emit_with_use(res, path, rank):
        free, total = torch.cuda.mem_get_info()
        res = dict(res, reduce_dtype=reduce_dtype, device_used_GiB=(total - free) / 2**30)
        if "precision" in res:
            res["precision"] = res["precision"].replace("reduce_dtype=fp32", f"reduce_dtype={reduce_dtype}")
        emit(res, path, rank)

    if reduce_dtype == "bf16":
        fsdp.MixedPrecisionPolicy = bf16_reduce_policy  # run_fsdp imports it at call time
    mr.emit = emit_with_use
    sys.argv = [sys.argv[0], "--mode", "fsdp"] + args
    mr.main()


if __name__ == "__main__":
    main()
