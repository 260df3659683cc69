#!/usr/bin/env bash
# On a GPU machine of 2 GPUs: LLaVA-1.5-13B's two training stages at full size through the engine
# (examples/llava1.5_13b: sample_llava_pretrain, stage 1, ZeRO-2; sample_llava_stage2, stage 2,
# ZeRO-3), `benchmake report` beside the seed's published rows, and stage 2 against PyTorch's peer
# (bench/llava_reference.py: LlavaForConditionalGeneration under FSDP2 + compile) on the same
# micro-batches (bench/llava_batches) in the same call, with the ratio over the same steps.
# After stage 1, MMMU's sample on its model on one GPU (sample_llava_mmmu; NO_MMMU=1: not) and
# bench/llava_decode_reference.py (transformers' generate) on the same prompts and checkpoint.
# Each stage's 53 GB checkpoint is deleted, with the cache, once reported, so the two stages can
# run one after the other in one call on a 64 GB disk:
#   bash .devtree/bench/llava_13b.sh stage1|stage2       (after bench/pack_devtree.sh, carry .devtree)
# On a machine of another size, the layout edited in the BENCHFILE's copy (the report says it):
#   GPUS=N (default 2: DP over N), LBS=B (default: the BENCHFILE's), MODEL=llava-1.5-7b (where one
#   GPU cannot hold 13B's training state), STEPS=S (default: the BENCHFILE's 12).
# Logs, reports and the peer's JSON go to $OUT; exit status 1 if a build or the peer failed.
set -uo pipefail
root=$(pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
dev=$root/.devtree
[[ ! -d $dev/bin && -f $dev/bin.tar.xz ]] && tar -C "$dev" -xJf "$dev/bin.tar.xz"
bin=$dev/bin
source "$dev/bench/device_env.sh" "$dev"
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
stage=${1:?usage: llava_13b.sh stage1|stage2}
bm() { ours "$bin/benchmake" "$@"; }
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv | tee "$OUT/gpus.txt"
df -h /tmp | tail -1

tree=/tmp/llava13b; rm -rf $tree; mkdir -p $tree/examples
ln -s "$root/data" $tree/data
cp -r "$root/examples/tools" "$root/examples/llava1.5_13b" $tree/examples/
ws=$tree/examples/llava1.5_13b
export BENCHMAKE_CACHE_DIR=$tree/cache
unset BENCHMAKE_GPUS BENCHMAKE_PLATFORM
case $stage in
  stage1) target=sample_llava_pretrain data=sample_llava_pretrain_data ;;
  stage2) target=sample_llava_stage2 data=sample_llava_finetune_data ;;
  *) echo "llava_13b: stage1 or stage2, not $stage"; exit 2 ;;
esac
N=${GPUS:-2}
edit="s/^layout = .*/layout = \"TP1PP1DP$N\"/"
[[ -n ${LBS:-} ]] && edit+="; s/^lbs = .*/lbs = $LBS/"
[[ -n ${MODEL:-} ]] && edit+="; s/^model = .*/model = \"$MODEL\"/"
[[ -n ${STEPS:-} ]] && edit+="; s/^steps = .*/steps = $STEPS/"
sed -i "/^\[target\.$target\]/,/^\[/{$edit}" $ws/BENCHFILE.toml
sed -n "/^\[target\.$target\]/,/^seed/p" $ws/BENCHFILE.toml | tee "$OUT/$stage-target.toml"
failed=0
start=$SECONDS
bm -C $ws build $target 2>&1 | tee "$OUT/$stage-build.log"
[[ ${PIPESTATUS[0]} -eq 0 ]] || failed=1
echo "$target: $((SECONDS - start)) s through the engine"
cp $ws/out/$target/log.jsonl "$OUT/$stage-log.jsonl" 2>/dev/null
cp $ws/out/$target/metrics.json "$OUT/$stage-metrics.json" 2>/dev/null
bm -C $ws report $target --format md | tee "$OUT/$stage-report.md"
if [[ $stage == stage1 && $failed -eq 0 && -z ${NO_MMMU:-} ]]; then
  # MMMU's sample on stage 1's model, one GPU (sample_llava_mmmu), before its checkpoint goes.
  start=$SECONDS
  bm -C $ws build sample_llava_mmmu 2>&1 | tee "$OUT/mmmu-build.log"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || failed=1
  echo "sample_llava_mmmu: $((SECONDS - start)) s through the engine"
  cp $ws/out/sample_llava_mmmu/metrics.json "$OUT/mmmu-metrics.json" 2>/dev/null
  cp $ws/out/sample_llava_mmmu/responses.json "$OUT/mmmu-responses.json" 2>/dev/null
  python3 - "$OUT/mmmu-metrics.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
d = m["eval"]["decoding"]
ms = 1e3 * d["seconds"] / max(d["new_tokens"], 1)
print(f"MMMU sample: {d['new_tokens']} tokens in {d['seconds']:.1f} s ({ms:.0f} ms a token), "
      f"stopped {d['stopped']}, accuracy {m['eval']['accuracy']:.2f}, "
      f"peak {m['memory']['peak_bytes'] / 2**30:.1f} GiB on {m['provenance']['device_name']}")
PY
  # PyTorch's peer on the same prompts, images and checkpoint (transformers' generate, KV cache).
  (cd "$dev/peer" && python3 llava_decode_reference.py --data $ws/out/sample_mmmu_data \
    --checkpoint $ws/out/$target --max-new-tokens 32 --ours "$OUT/mmmu-responses.json") \
    > "$OUT/mmmu-torch.log" 2>&1 || failed=1
  tail -n 2 "$OUT/mmmu-torch.log"
  python3 - "$OUT/mmmu-metrics.json" "$OUT/mmmu-torch.log" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
d = m["eval"]["decoding"]
lines = [l for l in open(sys.argv[2]) if l.startswith("{")]
if lines:
    p = json.loads(lines[-1])
    ours = 1e3 * d["seconds"] / max(d["new_tokens"], 1)
    print(f"MMMU decoding, ms a new token: ours {ours:.1f} (no KV cache), transformers "
          f"{p['ms_per_token']:.1f} (generate, KV cache; peak {p['peak_alloc_GiB']:.1f} GiB, "
          f"torch {p['torch']}, transformers {p['transformers']}): ratio "
          f"{p['ms_per_token'] / ours:.2f}x; {p['equal_to_ours']} of {p['questions']} answers "
          f"equal, common prefixes {p['common_prefix_tokens']}")
PY
fi
rm -rf $ws/out/$target/model.safetensors $tree/cache  # 53 GB: the disk is needed after

peer_json=$OUT/$stage-torch.jsonl
if [[ $stage == stage2 && $failed -eq 0 ]]; then
  # The run's sampler knobs, read back from the BENCHFILE entry the engine ran.
  knob() { sed -n "/^\[target\.$target\]/,/^\[/s/^$1 = \"*\([a-z0-9.-]*\).*/\1/p" $ws/BENCHFILE.toml | head -1; }
  lbs=$(knob lbs) mpe=$(knob mpe) steps=$(knob steps) seed=$(knob seed) model=$(knob model)
  ours "$bin/llava_batches" $ws/out/$data /tmp/llava-batches --steps "$steps" --lbs "$lbs" --mpe "$mpe" \
    --dp "$N" --seed "$seed"
  (cd "$dev/peer" && PYTHONUNBUFFERED=1 torchrun --standalone --nproc_per_node="$N" llava_reference.py \
    --batches /tmp/llava-batches --model "$model" --warmup 2 --json "$peer_json") > "$OUT/$stage-torch.log" 2>&1 || failed=1
  tail -n 3 "$OUT/$stage-torch.log"
fi

python3 - "$OUT" "$stage" "${MODEL:-llava-1.5-13b}" <<'PY'
import json, os, sys
out, stage, model = sys.argv[1], sys.argv[2], sys.argv[3]
m = json.load(open(f"{out}/{stage}-metrics.json")) if os.path.exists(f"{out}/{stage}-metrics.json") else None
steps = {}
if os.path.exists(f"{out}/{stage}-log.jsonl"):
    for line in open(f"{out}/{stage}-log.jsonl"):
        r = json.loads(line)
        if "step" in r: steps[r["step"]] = r
GiB = 2**30
print(f"\n{stage}: {model} on the sample's images (336 px, 576 tokens each)")
print(f"{'row':46} {'token/p/s':>10} {'MFU':>7} {'mem GiB':>13} {'loss':>7}")
# FlagPerf's published rows (training/{iluvatar,nvidia}/llava1.5_13b-deepspeed-torch/README.md @1b5a030):
pub = {"stage1": [("BI-V150 x8 pretrain (DeepSpeed ZeRO-2, LBS 4)", 620.38, "8.40%", "62.23/64", 2.0578),
                  ("A800 x8 pretrain (DeepSpeed ZeRO-2, LBS 32)", 2273.54, "18.95%", "76/81", 2.2186)],
       "stage2": [("BI-V150 x8 finetune (DeepSpeed ZeRO-3, LBS 4)", 249.93, "10.15%", "61.14/64", 0.7641),
                  ("A800 x8 finetune (DeepSpeed ZeRO-3, LBS 16)", 1622.90, "40.57%", "80/81", 0.7759)]}[stage]
if m:
    mem = f"{m['memory']['peak_bytes'] / GiB:.1f}/{m['memory'].get('device_total_bytes', 0) / GiB:.0f}"
    mfu = m.get("mfu", {})
    gpus = m.get("platform", {}).get("gpus") or [{}]
    name = (gpus[0].get("name") or m["config"]["device"]).replace("NVIDIA ", "")
    print(f"{'benchmake-train ' + name + ' x' + str(m['config']['dp']) + ' ' + model:46} "
          f"{m['throughput']['tokens_per_device_per_s']:10.1f} {mfu.get('palm', float('nan')):7.2%} {mem:>13} "
          f"{m['loss']['final']:7.4f}")
for name, tps, mfu, mem, loss in pub:
    print(f"{name:46} {tps:10.2f} {mfu:>7} {mem:>13} {loss:7.4f}")
peer = f"{out}/{stage}-torch.jsonl"
if stage == "stage2" and os.path.exists(peer) and steps:
    p = [json.loads(l) for l in open(peer) if l.startswith("{")][-1]
    common = [s for s in p["steps"] if s in steps]
    ours_s = sum(steps[s]["ms"] for s in common) / 1e3
    peer_s = sum(ms for s, ms in zip(p["steps"], p["step_ms"]) if s in steps) / 1e3
    print(f"\nstage 2, steps {common[0]}-{common[-1]} (the same micro-batches): ours {ours_s:.2f} s, "
          f"PyTorch FSDP2 + compile {peer_s:.2f} s: ratio {peer_s / ours_s:.3f}x")
    print(f"  PyTorch: {p['tokens_per_s_per_gpu']:.1f} token/p/s, MFU (PaLM) {p['mfu_palm']:.1%}, peak "
          f"{p['peak_alloc_GiB_max']:.1f} GiB allocated ({p['peak_reserved_GiB_max']:.1f} reserved), "
          f"torch {p['torch']}, transformers {p['transformers']}, optimizer {p['optimizer']}, "
          f"loss {p['loss'][0]:.3f} -> {p['loss'][-1]:.3f} (ln V = {p['ln_vocab']:.3f})")
    print(f"  ours: loss {steps[common[0]]['loss']:.3f} -> {steps[common[-1]]['loss']:.3f}")
    print("  step ms, ours:    " + " ".join(f"{steps[s]['ms']:.0f}" for s in common))
    print("  step ms, PyTorch: " + " ".join(f"{ms:.0f}" for s, ms in zip(p["steps"], p["step_ms"]) if s in steps))
PY
exit $failed
