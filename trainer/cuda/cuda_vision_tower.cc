#include "trainer/cuda/cuda_vision_tower.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "trainer/cuda/check.h"
#include "trainer/cuda/cuda_vision_ops.h"
#include "trainer/cuda/cudnn_attention.h"
#include "trainer/cuda/kernels/activation.cuh"
#include "trainer/cuda/kernels/layernorm.cuh"
#include "trainer/cuda/kernels/residual.cuh"
#include "trainer/cuda/kernels/vision_embed.cuh"
#include "trainer/cuda/matmul.h"
#include "trainer/cuda/memory_plan.h"
#include "trainer/model/llava_layout.h"

namespace bm::train::cuda {

using vision_internal::DeviceParams;
using vision_internal::Linears;

namespace {

// Offsets of a computed layer's tensors in the tower's layout.
struct TowerLayerParams {
  int64_t ln1_w, ln1_b, qkv_w, qkv_b, out_w, out_b, ln2_w, ln2_b, fc1_w, fc1_b, fc2_w, fc2_b;
};

// A layer's saved activations (arena offsets).
struct LayerActs {
  size_t norm1, mean1, rstd1, qkv, att, lse, mid, norm2, mean2, rstd2, pre, post;
};

Result<int64_t> OffsetOf(const ParamLayout& layout, const std::string& name) {
  const ParamTensor* t = layout.Find(name);
  if (t == nullptr) {
    return Errorf(ErrorCode::kInternal, "vision tower: the layout has no tensor {}", name);
  }
  return t->offset;
}

}  // namespace

struct CudaVisionTower::Impl {
  VisionConfig cfg;
  CudaVisionOptions opt;
  bool frozen = false;  // forward only: acts[0] and res[0..1] serve every layer
  ParamLayout layout;
  DeviceParams params;
  std::unique_ptr<DeviceArena> arena;
  std::unique_ptr<Matmul> matmul;
  Linears lin;
  MemoryPlan plan;

  int64_t cls = 0, patch_w = 0, pos = 0, pre_w = 0, pre_b = 0;
  std::vector<TowerLayerParams> lp;

  size_t im2col = 0, patches = 0, emb = 0, pre_mean = 0, pre_rstd = 0, features = 0;
  std::vector<size_t> res;      // computed_layers() + 1 residual streams (frozen: 2)
  std::vector<LayerActs> acts;  // one per computed layer (frozen: 1)
  size_t dres = 0, dnorm = 0, dqkv = 0, datt = 0, dbig = 0;
  size_t att_scratch = 0, norm_scratch = 0, bias_scratch = 0, workspace = 0, cudnn_ws = 0;
  size_t cudnn_ws_bytes = 0;
  int cur_n = 0;

  int L() const { return static_cast<int>(cfg.computed_layers()); }
  int C() const { return static_cast<int>(cfg.hidden); }
  int M() const { return static_cast<int>(cfg.mlp); }
  int H() const { return static_cast<int>(cfg.heads); }
  int D() const { return static_cast<int>(cfg.head_dim()); }
  int Np() const { return static_cast<int>(cfg.num_patches()); }
  int Tk() const { return static_cast<int>(cfg.positions()); }
  int PatchDim() const { return static_cast<int>(cfg.patch_dim()); }
  int Rows() const { return cur_n * Tk(); }
  size_t Elem() const { return opt.dtype == DType::kF32 ? 4 : 2; }
  cudaStream_t S() const { return opt.stream; }
  template <typename T>
  T* A(size_t off) const {
    return arena->At<T>(off);
  }
  // Layer l's input stream (l = L(): the last layer's output) and saved activations.
  size_t Res(int l) const { return res[frozen ? l % 2 : l]; }
  const LayerActs& Acts(int l) const { return acts[frozen ? 0 : l]; }
  template <typename T>
  const T* W(int64_t off) const {
    return params.W<T>(off);
  }
  float* G(int64_t off) const { return params.G(off); }
  AttentionShape CudnnShape(int n) const {
    return {n, Tk(), H(), H(), D(), kCudnnKeyChunk, opt.dtype == DType::kF16, false};
  }

  Status Init();
  void Plan();
  template <typename T>
  Status Attention(T* out, float* lse, const T* qkv);
  template <typename T>
  Status AttentionBackward(T* dqkv, const T* dout, const T* out, const T* qkv, const float* lse);
  template <typename T>
  Status Forward(const float* pixels);
  template <typename T>
  Status LayerForward(int l);
  template <typename T>
  Status Backward(const T* dfeatures);
  template <typename T>
  Status LayerBackward(int l);
};

Status CudaVisionTower::Impl::Init() {
  BM_TRY(Validate(cfg));
  if (std::abs(cfg.norm_eps - 1e-5) > 1e-12) {
    return Errorf(ErrorCode::kUnsupported,
                  "CUDA vision tower: vision.norm_eps {} (the LayerNorm kernels use 1e-5; set "
                  "vision.norm_eps = 1e-5)",
                  cfg.norm_eps);
  }
  if (cfg.channels != 3) {
    return Errorf(ErrorCode::kUnsupported,
                  "CUDA vision tower: vision.channels {} (the patch embedding takes RGB: 3)",
                  cfg.channels);
  }
  if (opt.max_images < 1) {
    return Errorf(ErrorCode::kInvalidArgument, "CUDA vision tower: max_images {} (at least 1)",
                  opt.max_images);
  }
  if (opt.attention == AttentionImpl::kCudnn && opt.dtype == DType::kF32) {
    return Status(ErrorCode::kUnsupported,
                  "CUDA vision tower: cuDNN attention takes bf16 or fp16, not fp32 (set the "
                  "attention to auto or reference)");
  }
  // Offsets.
  const std::string e = std::string(kVisionTowerPrefix) + "embeddings.";
  BM_ASSIGN_OR_RETURN(cls, OffsetOf(layout, e + "class_embedding"));
  BM_ASSIGN_OR_RETURN(patch_w, OffsetOf(layout, e + "patch_embedding.weight"));
  BM_ASSIGN_OR_RETURN(pos, OffsetOf(layout, e + "position_embedding.weight"));
  const std::string pre = std::string(kVisionTowerPrefix) + "pre_layrnorm.";
  BM_ASSIGN_OR_RETURN(pre_w, OffsetOf(layout, pre + "weight"));
  BM_ASSIGN_OR_RETURN(pre_b, OffsetOf(layout, pre + "bias"));
  for (int l = 0; l < L(); ++l) {
    const std::string p =
        std::string(kVisionTowerPrefix) + "encoder.layers." + std::to_string(l) + ".";
    TowerLayerParams x;
    BM_ASSIGN_OR_RETURN(x.ln1_w, OffsetOf(layout, p + "layer_norm1.weight"));
    BM_ASSIGN_OR_RETURN(x.ln1_b, OffsetOf(layout, p + "layer_norm1.bias"));
    // q|k|v weights [3C, C] and biases [3C] are contiguous (llava_layout.h).
    BM_ASSIGN_OR_RETURN(x.qkv_w, OffsetOf(layout, p + "self_attn.q_proj.weight"));
    BM_ASSIGN_OR_RETURN(x.qkv_b, OffsetOf(layout, p + "self_attn.q_proj.bias"));
    BM_ASSIGN_OR_RETURN(int64_t k_w, OffsetOf(layout, p + "self_attn.k_proj.weight"));
    BM_ASSIGN_OR_RETURN(int64_t v_b, OffsetOf(layout, p + "self_attn.v_proj.bias"));
    const int64_t cc = int64_t{C()} * C();
    if (k_w != x.qkv_w + cc || v_b != x.qkv_b + 2 * C()) {
      return Errorf(ErrorCode::kInternal,
                    "vision tower: layer {}'s q, k, v projections are not contiguous in the layout",
                    l);
    }
    BM_ASSIGN_OR_RETURN(x.out_w, OffsetOf(layout, p + "self_attn.out_proj.weight"));
    BM_ASSIGN_OR_RETURN(x.out_b, OffsetOf(layout, p + "self_attn.out_proj.bias"));
    BM_ASSIGN_OR_RETURN(x.ln2_w, OffsetOf(layout, p + "layer_norm2.weight"));
    BM_ASSIGN_OR_RETURN(x.ln2_b, OffsetOf(layout, p + "layer_norm2.bias"));
    BM_ASSIGN_OR_RETURN(x.fc1_w, OffsetOf(layout, p + "mlp.fc1.weight"));
    BM_ASSIGN_OR_RETURN(x.fc1_b, OffsetOf(layout, p + "mlp.fc1.bias"));
    BM_ASSIGN_OR_RETURN(x.fc2_w, OffsetOf(layout, p + "mlp.fc2.weight"));
    BM_ASSIGN_OR_RETURN(x.fc2_b, OffsetOf(layout, p + "mlp.fc2.bias"));
    lp.push_back(x);
  }
  BM_TRY(params.Allocate(static_cast<size_t>(layout.total()), opt.dtype));
  if (frozen) params.Freeze();
  if (opt.attention == AttentionImpl::kCudnn) {
    auto ws = CudnnAttentionWorkspaceBytes(CudnnShape(opt.max_images));
    if (!ws.ok()) {
      return Errorf(ErrorCode::kUnsupported, "CUDA vision tower: cuDNN attention: {}",
                    ws.status().message());
    }
    cudnn_ws_bytes = *ws;
  }
  Plan();
  BM_ASSIGN_OR_RETURN(arena, DeviceArena::Create(plan));
  BM_ASSIGN_OR_RETURN(matmul, Matmul::Create(A<char>(workspace), Matmul::kDefaultWorkspaceBytes));
  lin.matmul = matmul.get();
  lin.stream = S();
  lin.dtype = opt.dtype;
  lin.bias_scratch = A<float>(bias_scratch);
  return Status::Ok();
}

void CudaVisionTower::Impl::Plan() {
  const size_t n = opt.max_images, rows = n * Tk(), e = Elem();
  const size_t c = C(), m = M();
  im2col = plan.Add("im2col", n * Np() * PatchDim() * e);
  patches = plan.Add("patch embeddings", n * Np() * c * e);
  emb = plan.Add("embeddings", rows * c * e);
  pre_mean = plan.Add("pre_layrnorm mean", rows * 4);
  pre_rstd = plan.Add("pre_layrnorm rstd", rows * 4);
  for (int l = 0; l <= (frozen ? 1 : L()); ++l) res.push_back(plan.Add("residual", rows * c * e));
  for (int l = 0; l < (frozen ? 1 : L()); ++l) {
    LayerActs a;
    a.norm1 = plan.Add("norm1", rows * c * e);
    a.mean1 = plan.Add("mean1", rows * 4);
    a.rstd1 = plan.Add("rstd1", rows * 4);
    a.qkv = plan.Add("qkv", rows * 3 * c * e);
    a.att = plan.Add("attention", rows * c * e);
    a.lse = plan.Add("lse", n * H() * Tk() * 4);
    a.mid = plan.Add("residual mid", rows * c * e);
    a.norm2 = plan.Add("norm2", rows * c * e);
    a.mean2 = plan.Add("mean2", rows * 4);
    a.rstd2 = plan.Add("rstd2", rows * 4);
    a.pre = plan.Add("fc1", rows * m * e);
    a.post = plan.Add("quick_gelu", rows * m * e);
    acts.push_back(a);
  }
  features = plan.Add("features", n * Np() * c * e);
  workspace = plan.Add("matmul workspace", Matmul::kDefaultWorkspaceBytes);
  if (cudnn_ws_bytes > 0) cudnn_ws = plan.Add("cuDNN attention workspace", cudnn_ws_bytes);
  if (frozen) return;  // nothing runs backward
  dres = plan.Add("residual grad", rows * c * e);
  dnorm = plan.Add("norm grad", rows * c * e);
  dqkv = plan.Add("qkv grad", rows * 3 * c * e);
  datt = plan.Add("attention grad", rows * c * e);
  dbig = plan.Add("mlp grad", rows * m * e);
  att_scratch = plan.Add("attention scratch", AttentionScratchFloats(n, Tk(), H()) * 4);
  norm_scratch = plan.Add("norm scratch", LayerNormScratchFloats(rows, c) * 4);
  const size_t widest = std::max<size_t>({3 * c, m, c});
  bias_scratch = plan.Add("bias scratch", BiasGradScratchFloats(rows, widest) * 4);
}

template <typename T>
Status CudaVisionTower::Impl::Attention(T* out, float* lse, const T* qkv) {
  if (opt.attention == AttentionImpl::kCudnn) {
    return CudnnAttentionForward(out, lse, qkv, CudnnShape(cur_n), A<char>(cudnn_ws),
                                 cudnn_ws_bytes, S());
  }
  return AttentionForward<T>(out, lse, qkv, cur_n, Tk(), H(), H(), D(), opt.attention, S(),
                             /*causal=*/false);
}

template <typename T>
Status CudaVisionTower::Impl::AttentionBackward(T* dq, const T* dout, const T* out, const T* qkv,
                                                const float* lse) {
  if (opt.attention == AttentionImpl::kCudnn) {
    return CudnnAttentionBackward(dq, dout, out, qkv, lse, CudnnShape(cur_n), A<char>(cudnn_ws),
                                  cudnn_ws_bytes, S());
  }
  return cuda::AttentionBackward<T>(dq, A<float>(att_scratch), dout, out, qkv, lse, cur_n, Tk(),
                                    H(), H(), D(), opt.attention, S(), /*causal=*/false);
}

template <typename T>
Status CudaVisionTower::Impl::Forward(const float* pixels) {
  const int n = cur_n, c = C(), rows = Rows();
  const int s = static_cast<int>(cfg.image_size), p = static_cast<int>(cfg.patch);
  BM_TRY(PatchIm2Col<T>(A<T>(im2col), pixels, n, s, p, S()));
  BM_TRY(
      lin.Forward<T>(A<T>(patches), A<T>(im2col), W<T>(patch_w), nullptr, n * Np(), PatchDim(), c));
  BM_TRY(VisionEmbedForward<T>(A<T>(emb), A<T>(patches), W<T>(cls), W<T>(pos), n, Np(), c, S()));
  BM_TRY(LayerNormForward<T>(A<T>(Res(0)), A<float>(pre_mean), A<float>(pre_rstd), A<T>(emb),
                             W<T>(pre_w), W<T>(pre_b), rows, c, S()));
  for (int l = 0; l < L(); ++l) BM_TRY(LayerForward<T>(l));
  return DropClassRows<T>(A<T>(features), A<T>(Res(L())), n, Np(), c, S());
}

template <typename T>
Status CudaVisionTower::Impl::LayerForward(int l) {
  const LayerActs& a = Acts(l);
  const TowerLayerParams& w = lp[l];
  const int rows = Rows(), c = C(), m = M();
  const T* x = A<T>(Res(l));
  BM_TRY(LayerNormForward<T>(A<T>(a.norm1), A<float>(a.mean1), A<float>(a.rstd1), x, W<T>(w.ln1_w),
                             W<T>(w.ln1_b), rows, c, S()));
  BM_TRY(lin.Forward<T>(A<T>(a.qkv), A<T>(a.norm1), W<T>(w.qkv_w), W<T>(w.qkv_b), rows, c, 3 * c));
  BM_TRY(Attention<T>(A<T>(a.att), A<float>(a.lse), A<T>(a.qkv)));
  BM_TRY(lin.Forward<T>(A<T>(a.mid), A<T>(a.att), W<T>(w.out_w), W<T>(w.out_b), rows, c, c, x));
  BM_TRY(LayerNormForward<T>(A<T>(a.norm2), A<float>(a.mean2), A<float>(a.rstd2), A<T>(a.mid),
                             W<T>(w.ln2_w), W<T>(w.ln2_b), rows, c, S()));
  BM_TRY(lin.Forward<T>(A<T>(a.pre), A<T>(a.norm2), W<T>(w.fc1_w), W<T>(w.fc1_b), rows, c, m));
  BM_TRY(QuickGeluForward<T>(A<T>(a.post), A<T>(a.pre), static_cast<size_t>(rows) * m, S()));
  return lin.Forward<T>(A<T>(Res(l + 1)), A<T>(a.post), W<T>(w.fc2_w), W<T>(w.fc2_b), rows, m, c,
                        A<T>(a.mid));
}

// dres holds the gradient of the layer's output; on return, of its input.
template <typename T>
Status CudaVisionTower::Impl::LayerBackward(int l) {
  const LayerActs& a = acts[l];
  const TowerLayerParams& w = lp[l];
  const int rows = Rows(), c = C(), m = M();
  T* d = A<T>(dres);
  // MLP: out = mid + fc2(quick_gelu(fc1(norm2(mid)))).
  BM_TRY(lin.WeightGrad<T>(G(w.fc2_w), G(w.fc2_b), d, A<T>(a.post), rows, m, c));
  BM_TRY(lin.InputGrad<T>(A<T>(dbig), d, W<T>(w.fc2_w), rows, m, c));
  BM_TRY(QuickGeluBackward<T>(A<T>(dbig), A<T>(dbig), A<T>(a.pre), static_cast<size_t>(rows) * m,
                              S()));
  BM_TRY(lin.WeightGrad<T>(G(w.fc1_w), G(w.fc1_b), A<T>(dbig), A<T>(a.norm2), rows, c, m));
  BM_TRY(lin.InputGrad<T>(A<T>(dnorm), A<T>(dbig), W<T>(w.fc1_w), rows, c, m));
  BM_TRY(LayerNormBackward<T>(d, G(w.ln2_w), G(w.ln2_b), A<float>(norm_scratch), A<T>(dnorm),
                              A<T>(a.mid), W<T>(w.ln2_w), A<float>(a.mean2), A<float>(a.rstd2),
                              rows, c, S()));
  // Attention: mid = x + out_proj(attention(qkv(norm1(x)))).
  BM_TRY(lin.WeightGrad<T>(G(w.out_w), G(w.out_b), d, A<T>(a.att), rows, c, c));
  BM_TRY(lin.InputGrad<T>(A<T>(datt), d, W<T>(w.out_w), rows, c, c));
  BM_TRY(AttentionBackward<T>(A<T>(dqkv), A<T>(datt), A<T>(a.att), A<T>(a.qkv), A<float>(a.lse)));
  BM_TRY(lin.WeightGrad<T>(G(w.qkv_w), G(w.qkv_b), A<T>(dqkv), A<T>(a.norm1), rows, c, 3 * c));
  BM_TRY(lin.InputGrad<T>(A<T>(dnorm), A<T>(dqkv), W<T>(w.qkv_w), rows, c, 3 * c));
  return LayerNormBackward<T>(d, G(w.ln1_w), G(w.ln1_b), A<float>(norm_scratch), A<T>(dnorm),
                              A<T>(res[l]), W<T>(w.ln1_w), A<float>(a.mean1), A<float>(a.rstd1),
                              rows, c, S());
}

template <typename T>
Status CudaVisionTower::Impl::Backward(const T* dfeatures) {
  const int n = cur_n, c = C(), rows = Rows();
  BM_TRY(InsertClassRows<T>(A<T>(dres), dfeatures, n, Np(), c, S()));
  for (int l = L() - 1; l >= 0; --l) BM_TRY(LayerBackward<T>(l));
  // pre_layrnorm: its input's gradient (written: LayerNormBackward adds) in dnorm.
  BM_CUDA_CHECK(cudaMemsetAsync(A<T>(dnorm), 0, static_cast<size_t>(rows) * c * Elem(), S()),
                "clear the embeddings' gradient");
  BM_TRY(LayerNormBackward<T>(A<T>(dnorm), G(pre_w), G(pre_b), A<float>(norm_scratch), A<T>(dres),
                              A<T>(emb), W<T>(pre_w), A<float>(pre_mean), A<float>(pre_rstd), rows,
                              c, S()));
  BM_TRY(VisionEmbedBackward<T>(G(cls), G(pos), A<T>(dnorm), n, Np(), c, S()));
  BM_TRY(DropClassRows<T>(A<T>(datt), A<T>(dnorm), n, Np(), c, S()));
  return lin.WeightGrad<T>(G(patch_w), nullptr, A<T>(datt), A<T>(im2col), n * Np(), PatchDim(), c);
}

// ---- CudaVisionTower

CudaVisionTower::CudaVisionTower(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaVisionTower::~CudaVisionTower() = default;

Result<std::unique_ptr<CudaVisionTower>> CudaVisionTower::Create(const VisionConfig& config,
                                                                 const CudaVisionOptions& options,
                                                                 bool frozen) {
  BM_TRY(Validate(config));
  auto impl = std::make_unique<Impl>();
  impl->cfg = config;
  impl->opt = options;
  impl->frozen = frozen;
  impl->layout = VisionLayout(config);
  BM_TRY(impl->Init());
  return std::unique_ptr<CudaVisionTower>(new CudaVisionTower(std::move(impl)));
}

const VisionConfig& CudaVisionTower::config() const { return impl_->cfg; }
const train::ParamLayout& CudaVisionTower::layout() const { return impl_->layout; }
Status CudaVisionTower::SetParameters(std::span<const float> flat) {
  return impl_->params.Set(flat, impl_->S());
}
Status CudaVisionTower::GetParameters(std::vector<float>* flat) {
  return impl_->params.GetMasters(flat, impl_->S());
}
Status CudaVisionTower::GetGradients(std::vector<float>* flat) {
  return impl_->params.GetGradients(flat, impl_->S());
}
Status CudaVisionTower::ZeroGradients() { return impl_->params.ZeroGradients(impl_->S()); }
Status CudaVisionTower::RefreshWorkingCopy() {
  return impl_->params.RefreshWorkingCopy(impl_->S());
}
float* CudaVisionTower::master() { return impl_->params.master(); }
float* CudaVisionTower::grad() { return impl_->params.grad(); }
size_t CudaVisionTower::device_bytes() const {
  return impl_->params.device_bytes() + impl_->arena->bytes();
}
std::string CudaVisionTower::memory_summary() const {
  return impl_->params.Summary() + impl_->plan.Summary();
}

Status CudaVisionTower::Forward(const float* pixels, int n) {
  if (n < 1 || n > impl_->opt.max_images) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "CUDA vision tower: {} images in one call (1 to max_images = {})", n,
                  impl_->opt.max_images);
  }
  if (impl_->opt.attention == AttentionImpl::kCudnn) {
    BM_ASSIGN_OR_RETURN(size_t ws, CudnnAttentionWorkspaceBytes(impl_->CudnnShape(n)));
    if (ws > impl_->cudnn_ws_bytes) {
      return Errorf(ErrorCode::kInternal,
                    "CUDA vision tower: cuDNN attention needs {} B of workspace for {} images, "
                    "{} B were planned for {}",
                    ws, n, impl_->cudnn_ws_bytes, impl_->opt.max_images);
    }
  }
  impl_->cur_n = n;
  return WithElementType(impl_->opt.dtype,
                         [&](auto t) { return impl_->Forward<decltype(t)>(pixels); });
}

const void* CudaVisionTower::features() const { return impl_->A<char>(impl_->features); }

Status CudaVisionTower::Backward(const void* dfeatures) {
  if (impl_->frozen) {
    return Status(ErrorCode::kInvalidArgument,
                  "CUDA vision tower: Backward of a frozen tower (created forward only)");
  }
  if (impl_->cur_n == 0) {
    return Status(ErrorCode::kInvalidArgument, "CUDA vision tower: Backward before Forward");
  }
  return WithElementType(impl_->opt.dtype, [&](auto t) {
    using T = decltype(t);
    return impl_->Backward<T>(static_cast<const T*>(dfeatures));
  });
}

}  // namespace bm::train::cuda
