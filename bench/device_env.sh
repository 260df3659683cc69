# Sourced by the scripts that run on the GPU machine (gpu_check.sh, multi_gpu.sh,
# examples_gpu.sh, gpu_pipeline.sh, ab.sh): where our binaries find their libraries there.
#   source "$(dirname "$0")/device_env.sh" DEVTREE      (DEVTREE: the carried .devtree folder)
# Sets ours_path (LD_LIBRARY_PATH for our binaries only: the python process keeps its own,
# torch brings its CUDA libraries; GPU-MACHINE.md) and ours CMD... (runs CMD with it), and
# keeps NVLink multicast off for NCCL (GPU-MACHINE.md).
#   - the Debian libraries our binaries link that the machine lacks (fmt, OpenBLAS, Gloo,
#     libarchive, ...): DEVTREE/lib/extra-libs.tar.xz, packed by bench/pack_devtree.sh
#   - CUDA: the toolkit's lib64; cuDNN and NCCL: the toolkit's when it has them, else the
#     image's pip wheels (nvidia-cudnn-cu13, nvidia-nccl-cu13)
bm_devtree=${1:?device_env.sh: the .devtree folder}
bm_libs=/tmp/bmlibs
mkdir -p "$bm_libs"
[[ -f $bm_devtree/lib/extra-libs.tar.xz ]] && tar -C "$bm_libs" -xJf "$bm_devtree/lib/extra-libs.tar.xz"
cudnn_dir=$(python3 -c "import nvidia.cudnn as c; print(list(c.__path__)[0] + '/lib')" 2>/dev/null)
[[ -e /usr/local/cuda/lib64/libcudnn.so.9 ]] && cudnn_dir=/usr/local/cuda/lib64
nccl_dir=$(python3 -c "import nvidia.nccl as n; print(list(n.__path__)[0] + '/lib')" 2>/dev/null)
[[ -e /usr/local/cuda/lib64/libnccl.so.2 ]] && nccl_dir=/usr/local/cuda/lib64
export NCCL_NVLS_ENABLE=0
ours_path=$bm_libs:/usr/local/cuda/lib64:${cudnn_dir:-/nonexistent}:${nccl_dir:-/nonexistent}
ours() { LD_LIBRARY_PATH=$ours_path "$@"; }
# ours with the cuBLAS of torch's wheel (nvidia-cublas) ahead of the toolkit's: does the peer's
# library run our products faster? (bench/ab.sh AB_CUBLAS=torch)
# (the CUDA 13 wheels keep it in nvidia/cu13/lib, the CUDA 12 ones in nvidia/cublas/lib).
cublas_torch_dir=$(python3 -c "import nvidia; print(*nvidia.__path__, sep=chr(10))" 2>/dev/null |
  xargs -r -I{} find {} -name 'libcublasLt.so.*' -printf '%h\n' 2>/dev/null | head -1)
ours_torch_cublas() {
  if [[ -z $cublas_torch_dir ]]; then echo "device_env.sh: no cuBLAS wheel beside torch" >&2; return 1; fi
  LD_LIBRARY_PATH=$cublas_torch_dir:$ours_path "$@"
}
