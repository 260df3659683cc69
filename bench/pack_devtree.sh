#!/usr/bin/env bash
# Packs what one device call needs into .devtree/ (git-ignored; name it in the call's carry):
#   .devtree/bin.tar.xz  the GPU tests, the CPU oracle's tests, the benchmarks, benchmake and benchmake-train,
#                   clip_pixels (tests/gpu/clip_pixels_check.py), LLaVA's GPU tests and dump tools
#                   (bench/llava_gpu.sh; those whose targets the build has),
#                   stripped (packed: the CUDA code in them compresses 7:1, and a call carries
#                   64 MiB at most); the call unpacks it first: tar -C .devtree -xJf .devtree/bin.tar.xz
#   .devtree/lib    extra-libs.tar.xz: the Debian libraries they link that the GPU machine
#                   (Ubuntu 24.04) lacks or has in other versions (ldd minus glibc, libstdc++,
#                   libgcc and CUDA's own)
#   .devtree/bench  the scripts (gpu_check.sh, multi_gpu.sh, examples_gpu.sh, energy_gpu.sh, ab.sh,
#                   grad_bf16_gpu.sh, zero3_keep_gpu.sh, dp_ab_gpu.sh, the PyTorch peer)
#   .devtree/llava  LLaVA's own preprocessing files (llava/{constants,conversation,mm_utils}.py,
#                   llava/train/train.py) from the checkout LLAVA_CHECKOUT names (a git dir or a work
#                   tree), for tests/gpu/llava_preprocess_golden.py; not packed when unset
#   .devtree/peer   ../shared/bench/multi_reference.py + torch_reference.py, unchanged, and
#                   bench/tp_reference.py (PyTorch's DTensor tensor parallel, imports them),
#                   bench/pp_reference.py (torch.distributed.pipelining, imports tp_reference.py),
#                   bench/llava_reference.py (LlavaForConditionalGeneration under FSDP2),
#                   bench/attention_peer.py (PyTorch's SDPA backends alone)
# Usage: bash bench/pack_devtree.sh [BUILD_DIR]   (default: build; a CUDA build, sm_90a)
# AB_OLD=FILE packs FILE (a cuda_train_bench of an earlier commit) as bin/cuda_train_bench_old,
# the baseline of bench/ab.sh and bench/grad_bf16_gpu.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bins=(benchmake benchmake-train bench/cuda_train_bench bench/trainer_cpu_bench
      tests/trainer/cuda_ops_test tests/trainer/cuda_comm_timing_test
      tests/trainer/cuda_model_test tests/trainer/cuda_backend_test
      tests/trainer/nccl_communicator_test tests/trainer/cuda_ranks_test
      tests/trainer/trainer_ops_test tests/trainer/trainer_model_test
      tests/trainer/trainer_blas_core_test
      bench/clip_pixels bench/llava_batches bench/nccl_overlap_bench bench/cuda_attention_bench)
# LLaVA's (bench/llava_gpu.sh), where this build has them (the target list read whole: grep -q
# on a pipe would end cmake early, and pipefail then drops the binary at random).
targets=$(cmake --build "$build" --target help)
for t in tests/trainer/cuda_vision_tower_test tests/trainer/cuda_model_spliced_test \
  tests/trainer/cuda_llava_trainer_test tests/trainer/clip_vision_dump tests/trainer/llava_dump \
  tests/trainer/trainer_llava_mmmu_test; do
  grep -q "^$(basename "$t"):" <<<"$targets" && bins+=("$t")
done
# ONLY="name ..." packs those binaries alone (the device tool carries 64 MiB at most, the tree
# included).
if [[ -n ${ONLY:-} ]]; then
  keep=()
  for b in "${bins[@]}"; do [[ " $ONLY " == *" ${b##*/} "* ]] && keep+=("$b"); done
  bins=("${keep[@]}")
fi
cmake --build "$build" --target "${bins[@]##*/}"
rm -rf .devtree && mkdir -p .devtree/bin .devtree/lib .devtree/bench .devtree/peer
for b in "${bins[@]}"; do
  cp "$build/$b" .devtree/bin/
  strip --strip-debug ".devtree/bin/$(basename "$b")"
done
libs=$(for b in .devtree/bin/*; do ldd "$b"; done | awk '/=> \//{print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas[^/]*|libcudnn[^/]*|libnccl|libnvrtc[^/]*|libnvJitLink)\.so')
tar -C / -cJf .devtree/lib/extra-libs.tar.xz --transform 's,.*/,,' $(for l in $libs; do
  echo "${l#/}"; r=$(readlink -f "$l"); [[ $r != "$l" ]] && echo "${r#/}"; done | sort -u)
if [[ -n ${AB_OLD:-} ]]; then
  cp "$AB_OLD" .devtree/bin/cuda_train_bench_old
  strip --strip-debug .devtree/bin/cuda_train_bench_old
fi
tar -C .devtree -cJf .devtree/bin.tar.xz bin
cp bench/device_env.sh bench/gpu_check.sh bench/multi_gpu.sh bench/ab.sh bench/torch_reference.py \
  .devtree/bench/
cp bench/examples_gpu.sh bench/energy_gpu.sh bench/llava_13b.sh bench/llava_gpu.sh bench/nccl_window_gpu.sh \
  bench/grad_bf16_gpu.sh bench/zero3_keep_gpu.sh bench/dp_ab_gpu.sh bench/x4_session.sh bench/attention_gpu.sh \
  .devtree/bench/
for f in multi_reference.py torch_reference.py; do
  [[ -f ../shared/bench/$f ]] && cp "../shared/bench/$f" .devtree/peer/
done
cp bench/tp_reference.py .devtree/peer/  # our TP peer, run beside multi_reference.py
cp bench/pp_reference.py .devtree/peer/  # our PP peer (imports tp_reference.py)
cp bench/fsdp_reference.py .devtree/peer/  # the FSDP2 peer with its reduce_dtype and device use (imports multi_reference.py)
cp bench/llava_reference.py .devtree/peer/  # LLaVA stage 2's FSDP2 peer (bench/llava_13b.sh)
cp bench/llava_decode_reference.py .devtree/peer/  # the MMMU decoder's peer (transformers' generate)
cp bench/attention_peer.py .devtree/peer/  # PyTorch's SDPA backends alone (bench/attention_gpu.sh)
if [[ -n ${LLAVA_CHECKOUT:-} ]]; then
  files=(llava/constants.py llava/conversation.py llava/mm_utils.py llava/train/train.py)
  mkdir -p .devtree/llava
  if [[ -d $LLAVA_CHECKOUT/llava ]]; then
    tar -C "$LLAVA_CHECKOUT" -cf - "${files[@]}" | tar -C .devtree/llava -xf -
  else
    for f in "${files[@]}"; do  # one blob at a time: a snapshot may lack other blobs
      mkdir -p ".devtree/llava/$(dirname "$f")"
      git --git-dir="$LLAVA_CHECKOUT" show "HEAD:$f" > ".devtree/llava/$f"
    done
  fi
fi
rm -rf .devtree/bin
du -sh .devtree .devtree/*
