#include "trainer/cuda/cuda_model.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/activation.cuh"
#include "trainer/cuda/kernels/attention.cuh"
#include "trainer/cuda/kernels/classifier.cuh"
#include "trainer/cuda/kernels/embedding.cuh"
#include "trainer/cuda/kernels/layernorm.cuh"
#include "trainer/cuda/kernels/residual.cuh"
#include "trainer/cuda/kernels/rmsnorm.cuh"
#include "trainer/cuda/kernels/rope.cuh"
#include "trainer/cuda/matmul.h"
#include "trainer/cuda/memory_plan.h"

namespace bm::train::cuda {
namespace {

using bf16 = __nv_bfloat16;

enum class Mode { kTrain, kLoss, kArgmax };

// One layer's saved activations (offsets into the arena), per layer or shared (recompute).
struct LayerActs {
  size_t norm1, mean1, rstd1, qkv, att, lse, res_mid, norm2, mean2, rstd2, pre;
};

}  // namespace

struct CudaModel::Impl {
  Impl(const ModelSpec& m, const RunSpec& r) : spec(m), run(r), layout(m) {}
  ModelSpec spec;
  RunSpec run;
  ParamLayout layout;
  MemoryReport memory;
  std::unique_ptr<DeviceArena> arena;
  std::unique_ptr<Matmul> matmul;
  cudaStream_t stream = nullptr;
  cudaEvent_t staged = nullptr;
  size_t elem = 2;  // bytes per activation element

  // arena offsets
  size_t p32 = 0, plp = 0, grad = 0, adam_m = 0, adam_v = 0;
  std::vector<size_t> res;  // layers + 1 residual streams
  std::vector<LayerActs> acts;
  size_t normf = 0, meanf = 0, rstdf = 0, dnormf = 0, logits = 0, losses = 0, loss_sum = 0;
  size_t post = 0, dres = 0, dln = 0, dbig = 0, dpost = 0, dqkv = 0, datt = 0;
  size_t norm_scratch = 0, att_scratch = 0, bias_scratch = 0, norm_sq = 0, norm_partials = 0;
  size_t argmax = 0, rope = 0, tokens = 0, targets = 0, weights = 0, bucket_tokens = 0,
         bucket_offsets = 0, bucket_positions = 0;
  size_t workspace = 0;

  // host staging (pinned)
  int* h_ints = nullptr;      // tokens, targets, bucket tokens, offsets, positions
  float* h_floats = nullptr;  // weights, then results

  // Optional per-phase timing (RunSpec::profile): event pairs around each launch group.
  struct Mark {
    const char* name;
    cudaEvent_t begin, end;
  };
  std::vector<cudaEvent_t> event_pool;
  size_t events_used = 0;
  std::vector<Mark> marks;
  std::map<std::string, double> phase_ms;
  cudaEvent_t NextEvent() {
    if (events_used == event_pool.size()) {
      cudaEvent_t e = nullptr;
      cudaEventCreate(&e);
      event_pool.push_back(e);
    }
    return event_pool[events_used++];
  }
  template <typename F>
  Status Phase(const char* name, F&& f) {
    if (!run.profile) return f();
    Mark m{name, NextEvent(), NextEvent()};
    cudaEventRecord(m.begin, stream);
    Status st = f();
    cudaEventRecord(m.end, stream);
    marks.push_back(m);
    return st;
  }
  void CollectPhases() {  // after a synchronize
    for (const Mark& m : marks) {
      float ms = 0.0f;
      cudaEventElapsedTime(&ms, m.begin, m.end);
      phase_ms[m.name] += ms;
    }
    marks.clear();
    events_used = 0;
  }

  int cur_b = 0, cur_t = 0;  // this call's batch and sequence length (<= run's maxima)
  int N() const { return cur_b * cur_t; }
  int MaxN() const { return run.micro_batch * run.seq; }
  int C() const { return spec.hidden; }
  int QkvCols() const { return (spec.heads + 2 * spec.kv_heads) * spec.head_dim(); }
  int BigCols() const { return spec.family == Family::kGpt ? spec.ffn : 2 * spec.ffn; }
  bool Gpt() const { return spec.family == Family::kGpt; }
  template <typename T>
  T* A(size_t off) const {
    return arena->At<T>(off);
  }
  DType Dt() const { return run.bf16 ? DType::kBF16 : DType::kF32; }
  // Weights as the matmuls read them: bf16 copy or the fp32 master.
  template <typename T>
  const T* W(size_t off) const {
    return run.bf16 ? reinterpret_cast<const T*>(A<bf16>(plp) + off)
                    : reinterpret_cast<const T*>(A<float>(p32) + off);
  }
  float* G(size_t off) const { return A<float>(grad) + off; }

  Status Plan();
  template <typename T>
  Status Linear(T* y, const T* x, size_t w, size_t b, int rows, int in, int out, const T* residual);
  template <typename T>
  Status LinearGelu(T* post_out, T* pre_out, const T* x, size_t w, size_t b, int rows, int in,
                    int out);
  template <typename T>
  Status LinearBackward(T* dx, const T* dy, const T* x, size_t w, size_t b, int rows, int in,
                        int out, bool dgelu_aux, const T* aux);
  template <typename T>
  Status LayerForward(int l, bool recompute);
  template <typename T>
  Status LayerBackward(int l);
  template <typename T>
  Status Classifier(int rows_offset, int rows, float grad_scale, Mode mode);
  template <typename T>
  Status ForwardBackward(float grad_scale, Mode mode);
  Status Run(float grad_scale, Mode mode) {
    return run.bf16 ? ForwardBackward<bf16>(grad_scale, mode)
                    : ForwardBackward<float>(grad_scale, mode);
  }
  Status Stage(const TokenBatch& batch, bool buckets);
  Status EmbeddingBackwardAll();
  int num_buckets = 0;
  const LayerActs& Acts(int l) const { return run.recompute ? acts[0] : acts[l]; }
  Status CopyOut(size_t off, std::vector<float>* out);
};

Status CudaModel::Impl::Plan() {
  MemoryPlan plan;
  size_t n = MaxN(), c = C(), P = layout.total();
  elem = run.bf16 ? 2 : 4;
  p32 = plan.Add("params fp32", P * 4);
  plp = plan.Add("params bf16 copy", run.bf16 ? P * 2 : 0);
  grad = plan.Add("grads fp32", P * 4);
  adam_m = plan.Add("adamw m", P * 4);
  adam_v = plan.Add("adamw v", P * 4);
  res.resize(spec.layers + 1);
  for (int l = 0; l <= spec.layers; ++l) res[l] = plan.Add("residual stream", n * c * elem);
  int slots = run.recompute ? 1 : spec.layers;
  acts.resize(slots);
  size_t bh = static_cast<size_t>(run.micro_batch) * spec.heads * run.seq;
  for (int l = 0; l < slots; ++l) {
    LayerActs& a = acts[l];
    a.norm1 = plan.Add("layer norm1", n * c * elem);
    a.mean1 = plan.Add("layer mean1", n * 4);
    a.rstd1 = plan.Add("layer rstd1", n * 4);
    a.qkv = plan.Add("layer qkv", n * QkvCols() * elem);
    a.att = plan.Add("layer attention out", n * spec.heads * spec.head_dim() * elem);
    a.lse = plan.Add("layer attention lse", bh * 4);
    a.res_mid = plan.Add("layer residual mid", n * c * elem);
    a.norm2 = plan.Add("layer norm2", n * c * elem);
    a.mean2 = plan.Add("layer mean2", n * 4);
    a.rstd2 = plan.Add("layer rstd2", n * 4);
    a.pre = plan.Add("layer mlp pre-activation", n * BigCols() * elem);
  }
  normf = plan.Add("final norm", n * c * elem);
  meanf = plan.Add("final mean", n * 4);
  rstdf = plan.Add("final rstd", n * 4);
  dnormf = plan.Add("final norm grad", n * c * elem);
  int chunk = std::min<int>(run.logits_chunk_rows, MaxN());
  logits = plan.Add("logits chunk", static_cast<size_t>(chunk) * spec.vocab * elem);
  losses = plan.Add("token losses", n * 4);
  loss_sum = plan.Add("loss sum", 4);
  post = plan.Add("mlp activation (shared)", n * spec.ffn * elem);
  dres = plan.Add("residual grad", n * c * elem);
  dln = plan.Add("norm grad", n * c * elem);
  dbig = plan.Add("mlp pre-activation grad", n * BigCols() * elem);
  dpost = plan.Add("mlp activation grad", n * spec.ffn * elem);
  dqkv = plan.Add("qkv grad", n * QkvCols() * elem);
  datt = plan.Add("attention out grad", n * spec.heads * spec.head_dim() * elem);
  size_t ns = std::max(LayerNormScratchFloats(n, c), RmsNormScratchFloats(n, c));
  norm_scratch = plan.Add("norm scratch", ns * 4);
  att_scratch = plan.Add("attention scratch",
                         AttentionScratchFloats(run.micro_batch, run.seq, spec.heads) * 4);
  size_t widest = std::max<size_t>({size_t(BigCols()), size_t(QkvCols()), c});
  bias_scratch = plan.Add("bias grad scratch",
                          (BiasGradScratchFloats(static_cast<int>(n), widest) + widest) * 4);
  norm_sq = plan.Add("grad sum of squares", 4);
  norm_partials = plan.Add("grad norm partials", kGradNormBlocks * 4);
  rope = plan.Add("rope table", static_cast<size_t>(run.seq) * spec.head_dim() * 4);
  tokens = plan.Add("tokens", n * 4);
  targets = plan.Add("targets", n * 4);
  argmax = plan.Add("argmax", n * 4);
  weights = plan.Add("loss weights", n * 4);
  bucket_tokens = plan.Add("embedding buckets", n * 4);
  bucket_offsets = plan.Add("embedding bucket offsets", (n + 1) * 4);
  bucket_positions = plan.Add("embedding bucket positions", n * 4);
  workspace = plan.Add("cuBLASLt workspace", Matmul::kDefaultWorkspaceBytes);
  memory.plan_bytes = plan.total();
  memory.plan_summary = plan.Summary();
  BM_ASSIGN_OR_RETURN(arena, DeviceArena::Create(plan));
  return Status::Ok();
}

// y[rows, out] = x[rows, in] W^T + b (+ residual)
template <typename T>
Status CudaModel::Impl::Linear(T* y, const T* x, size_t w, size_t b, int rows, int in, int out,
                               const T* residual) {
  MatmulArgs a;
  a.m = rows, a.n = out, a.k = in;
  a.trans_a = false, a.trans_b = true;
  a.ab_type = a.d_type = Dt();
  a.a = x, a.lda = in, a.b = W<T>(w), a.ldb = in, a.d = y, a.ldd = out;
  if (residual) a.c = residual, a.beta = 1.0f;
  bool has_bias = Gpt() && b != 0;
  if (has_bias && run.fused_epilogues) {
    a.epilogue = Epilogue::kBias;
    a.bias = W<T>(b);
    if (matmul->Supports(a)) return matmul->Run(a, stream);
    a.epilogue = Epilogue::kNone;
  }
  BM_TRY(matmul->Run(a, stream));
  if (!has_bias) return Status::Ok();
  return AddBias<T>(y, W<T>(b), rows, out, stream);
}

template <typename T>
Status CudaModel::Impl::LinearGelu(T* post_out, T* pre_out, const T* x, size_t w, size_t b,
                                   int rows, int in, int out) {
  MatmulArgs a;
  a.m = rows, a.n = out, a.k = in;
  a.trans_a = false, a.trans_b = true;
  a.ab_type = a.d_type = Dt();
  a.a = x, a.lda = in, a.b = W<T>(w), a.ldb = in, a.ldd = out;
  a.bias = W<T>(b);
  if (run.fused_epilogues) {
    a.epilogue = Epilogue::kGeluAuxBias;
    a.d = post_out, a.aux = pre_out, a.ld_aux = out;
    if (matmul->Supports(a)) return matmul->Run(a, stream);
  }
  BM_TRY(Linear<T>(pre_out, x, w, b, rows, in, out, nullptr));
  return GeluForward<T>(post_out, pre_out, static_cast<size_t>(rows) * out, stream);
}

// dx[rows, in] = dy[rows, out] W (written), dW += dy^T x, db += sum dy. With dgelu_aux,
// dx is multiplied by gelu'(aux) (the caller's "dx" is then the pre-activation's gradient).
template <typename T>
Status CudaModel::Impl::LinearBackward(T* dx, const T* dy, const T* x, size_t w, size_t b, int rows,
                                       int in, int out, bool dgelu_aux, const T* aux) {
  // weight (and bias) gradient
  MatmulArgs g;
  g.m = out, g.n = in, g.k = rows;
  g.trans_a = true, g.trans_b = false;
  g.ab_type = Dt(), g.d_type = DType::kF32;
  g.a = dy, g.lda = out, g.b = x, g.ldb = in, g.d = G(w), g.ldd = in, g.beta = 1.0f;
  bool has_bias = Gpt() && b != 0;
  bool bias_done = false;
  if (has_bias && run.fused_epilogues) {
    g.epilogue = Epilogue::kBGradB;
    g.bias_grad = A<float>(bias_scratch);
    if (matmul->Supports(g)) {
      BM_TRY(matmul->Run(g, stream));
      BM_TRY(AccumulateF32(G(b), A<float>(bias_scratch), out, stream));
      bias_done = true;
    } else {
      g.epilogue = Epilogue::kNone;
    }
  }
  if (!bias_done) {
    g.epilogue = Epilogue::kNone;
    BM_TRY(matmul->Run(g, stream));
    if (has_bias) BM_TRY(BiasGrad<T>(G(b), A<float>(bias_scratch), dy, rows, out, stream));
  }
  if (!dx) return Status::Ok();
  MatmulArgs d;
  d.m = rows, d.n = in, d.k = out;
  d.trans_a = false, d.trans_b = false;
  d.ab_type = d.d_type = Dt();
  d.a = dy, d.lda = out, d.b = W<T>(w), d.ldb = in, d.d = dx, d.ldd = in;
  if (dgelu_aux && run.fused_epilogues) {
    d.epilogue = Epilogue::kDGelu;
    d.aux = const_cast<T*>(aux), d.ld_aux = in;
    if (matmul->Supports(d)) return matmul->Run(d, stream);
    d.epilogue = Epilogue::kNone, d.aux = nullptr, d.ld_aux = 0;
  }
  BM_TRY(matmul->Run(d, stream));
  if (dgelu_aux) return GeluBackward<T>(dx, dx, aux, static_cast<size_t>(rows) * in, stream);
  return Status::Ok();
}

template <typename T>
Status CudaModel::Impl::LayerForward(int l, bool recompute) {
  const LayerActs& a = Acts(l);
  const LayerParams& p = layout.layers[l];
  int n = N(), c = C(), hd = spec.head_dim();
  T* x = A<T>(res[l]);
  if (Gpt()) {
    BM_TRY(Phase("norm fwd", [&] {
      return LayerNormForward<T>(A<T>(a.norm1), A<float>(a.mean1), A<float>(a.rstd1), x,
                                 W<T>(p.norm1_w), W<T>(p.norm1_b), n, c, stream);
    }));
  } else {
    BM_TRY(Phase("norm fwd", [&] {
      return RmsNormForward<T>(A<T>(a.norm1), A<float>(a.rstd1), x, W<T>(p.norm1_w), n, c, stream);
    }));
  }
  BM_TRY(Phase("matmul fwd", [&] {
    return Linear<T>(A<T>(a.qkv), A<T>(a.norm1), p.qkv_w, p.qkv_b, n, c, QkvCols(), nullptr);
  }));
  if (!Gpt()) {
    BM_TRY(Phase("rope", [&] {
      return Rope<T>(A<T>(a.qkv), A<float>(rope), cur_b, cur_t, spec.heads, spec.kv_heads, hd,
                     false, stream);
    }));
  }
  BM_TRY(Phase("attention fwd", [&] {
    return AttentionForward<T>(A<T>(a.att), A<float>(a.lse), A<T>(a.qkv), cur_b, cur_t, spec.heads,
                               spec.kv_heads, hd, run.attention, stream);
  }));
  BM_TRY(Phase("matmul fwd", [&] {
    return Linear<T>(A<T>(a.res_mid), A<T>(a.att), p.proj_w, p.proj_b, n, spec.heads * hd, c, x);
  }));
  if (Gpt()) {
    BM_TRY(Phase("norm fwd", [&] {
      return LayerNormForward<T>(A<T>(a.norm2), A<float>(a.mean2), A<float>(a.rstd2),
                                 A<T>(a.res_mid), W<T>(p.norm2_w), W<T>(p.norm2_b), n, c, stream);
    }));
    BM_TRY(Phase("matmul fwd", [&] {
      return LinearGelu<T>(A<T>(post), A<T>(a.pre), A<T>(a.norm2), p.fc_w, p.fc_b, n, c, spec.ffn);
    }));
  } else {
    BM_TRY(Phase("norm fwd", [&] {
      return RmsNormForward<T>(A<T>(a.norm2), A<float>(a.rstd2), A<T>(a.res_mid), W<T>(p.norm2_w),
                               n, c, stream);
    }));
    BM_TRY(Phase("matmul fwd", [&] {
      return Linear<T>(A<T>(a.pre), A<T>(a.norm2), p.fc_w, 0, n, c, 2 * spec.ffn, nullptr);
    }));
    BM_TRY(Phase("activation",
                 [&] { return SwigluForward<T>(A<T>(post), A<T>(a.pre), n, spec.ffn, stream); }));
  }
  if (recompute) return Status::Ok();  // the layer's output is already stored
  return Phase("matmul fwd", [&] {
    return Linear<T>(A<T>(res[l + 1]), A<T>(post), p.fc2_w, p.fc2_b, n, spec.ffn, c,
                     A<T>(a.res_mid));
  });
}

template <typename T>
Status CudaModel::Impl::LayerBackward(int l) {
  if (run.recompute) BM_TRY(LayerForward<T>(l, true));
  const LayerActs& a = Acts(l);
  const LayerParams& p = layout.layers[l];
  int n = N(), c = C(), hd = spec.head_dim(), f = spec.ffn;
  T* dr = A<T>(dres);
  // MLP: res[l+1] = res_mid + fc2(act(fc(norm2(res_mid))))
  if (Gpt()) {
    BM_TRY(Phase("activation", [&] {
      return GeluForward<T>(A<T>(post), A<T>(a.pre), static_cast<size_t>(n) * f, stream);
    }));
    BM_TRY(Phase("matmul bwd", [&] {
      return LinearBackward<T>(A<T>(dbig), dr, A<T>(post), p.fc2_w, p.fc2_b, n, f, c, true,
                               A<T>(a.pre));
    }));
  } else {
    BM_TRY(Phase("activation",
                 [&] { return SwigluForward<T>(A<T>(post), A<T>(a.pre), n, f, stream); }));
    BM_TRY(Phase("matmul bwd", [&] {
      return LinearBackward<T>(A<T>(dpost), dr, A<T>(post), p.fc2_w, 0, n, f, c, false, nullptr);
    }));
    BM_TRY(Phase("activation", [&] {
      return SwigluBackward<T>(A<T>(dbig), A<T>(dpost), A<T>(a.pre), n, f, stream);
    }));
  }
  BM_TRY(Phase("matmul bwd", [&] {
    return LinearBackward<T>(A<T>(dln), A<T>(dbig), A<T>(a.norm2), p.fc_w, p.fc_b, n, c, BigCols(),
                             false, nullptr);
  }));
  if (Gpt()) {
    BM_TRY(Phase("norm bwd", [&] {
      return LayerNormBackward<T>(dr, G(p.norm2_w), G(p.norm2_b), A<float>(norm_scratch), A<T>(dln),
                                  A<T>(a.res_mid), W<T>(p.norm2_w), A<float>(a.mean2),
                                  A<float>(a.rstd2), n, c, stream);
    }));
  } else {
    BM_TRY(Phase("norm bwd", [&] {
      return RmsNormBackward<T>(dr, G(p.norm2_w), A<float>(norm_scratch), A<T>(dln),
                                A<T>(a.res_mid), W<T>(p.norm2_w), A<float>(a.rstd2), n, c, stream);
    }));
  }
  // Attention: res_mid = res[l] + proj(attn(qkv(norm1(res[l]))))
  BM_TRY(Phase("matmul bwd", [&] {
    return LinearBackward<T>(A<T>(datt), dr, A<T>(a.att), p.proj_w, p.proj_b, n, spec.heads * hd, c,
                             false, nullptr);
  }));
  BM_TRY(Phase("attention bwd", [&] {
    return AttentionBackward<T>(A<T>(dqkv), A<float>(att_scratch), A<T>(datt), A<T>(a.att),
                                A<T>(a.qkv), A<float>(a.lse), cur_b, cur_t, spec.heads,
                                spec.kv_heads, hd, run.attention, stream);
  }));
  if (!Gpt()) {
    BM_TRY(Phase("rope", [&] {
      return Rope<T>(A<T>(dqkv), A<float>(rope), cur_b, cur_t, spec.heads, spec.kv_heads, hd, true,
                     stream);
    }));
  }
  BM_TRY(Phase("matmul bwd", [&] {
    return LinearBackward<T>(A<T>(dln), A<T>(dqkv), A<T>(a.norm1), p.qkv_w, p.qkv_b, n, c,
                             QkvCols(), false, nullptr);
  }));
  if (Gpt()) {
    return Phase("norm bwd", [&] {
      return LayerNormBackward<T>(dr, G(p.norm1_w), G(p.norm1_b), A<float>(norm_scratch), A<T>(dln),
                                  A<T>(res[l]), W<T>(p.norm1_w), A<float>(a.mean1),
                                  A<float>(a.rstd1), n, c, stream);
    });
  }
  return Phase("norm bwd", [&] {
    return RmsNormBackward<T>(dr, G(p.norm1_w), A<float>(norm_scratch), A<T>(dln), A<T>(res[l]),
                              W<T>(p.norm1_w), A<float>(a.rstd1), n, c, stream);
  });
}

// Rows [r0, r0 + rows) of the final norm's output through the LM head and the loss; in
// training also dlogits (in place), dnormf for those rows, and the LM head's gradient.
template <typename T>
Status CudaModel::Impl::Classifier(int r0, int rows, float grad_scale, Mode mode) {
  int c = C(), v = spec.vocab;
  T* x = A<T>(normf) + static_cast<size_t>(r0) * c;
  T* lg = A<T>(logits);
  BM_TRY(Phase("lm head matmul",
               [&] { return Linear<T>(lg, x, layout.lm_head, 0, rows, c, v, nullptr); }));
  if (mode == Mode::kArgmax) {
    return Phase("cross-entropy",
                 [&] { return ArgmaxRows<T>(A<int>(argmax) + r0, lg, rows, v, v, stream); });
  }
  BM_TRY(Phase("cross-entropy", [&] {
    return CrossEntropy<T>(lg, A<float>(losses) + r0, A<int>(targets) + r0, A<float>(weights) + r0,
                           grad_scale, rows, v, v, mode == Mode::kTrain, stream);
  }));
  if (mode != Mode::kTrain) return Status::Ok();
  return Phase("lm head matmul", [&] {
    return LinearBackward<T>(A<T>(dnormf) + static_cast<size_t>(r0) * c, lg, x, layout.lm_head, 0,
                             rows, c, v, false, nullptr);
  });
}

template <typename T>
Status CudaModel::Impl::ForwardBackward(float grad_scale, Mode mode) {
  int n = N(), c = C();
  BM_TRY(Phase("embedding", [&] {
    return EmbeddingForward<T>(A<T>(res[0]), A<int>(tokens), W<T>(layout.wte),
                               Gpt() ? W<T>(layout.wpe) : nullptr, n, cur_t, c, stream);
  }));
  for (int l = 0; l < spec.layers; ++l) BM_TRY(LayerForward<T>(l, false));
  T* xl = A<T>(res[spec.layers]);
  if (Gpt()) {
    BM_TRY(Phase("norm fwd", [&] {
      return LayerNormForward<T>(A<T>(normf), A<float>(meanf), A<float>(rstdf), xl,
                                 W<T>(layout.normf_w), W<T>(layout.normf_b), n, c, stream);
    }));
  } else {
    BM_TRY(Phase("norm fwd", [&] {
      return RmsNormForward<T>(A<T>(normf), A<float>(rstdf), xl, W<T>(layout.normf_w), n, c,
                               stream);
    }));
  }
  int chunk = std::min<int>(run.logits_chunk_rows, n);
  for (int r0 = 0; r0 < n; r0 += chunk) {
    BM_TRY(Classifier<T>(r0, std::min(chunk, n - r0), grad_scale, mode));
  }
  if (mode == Mode::kArgmax) return Status::Ok();
  BM_TRY(SumLosses(A<float>(loss_sum), A<float>(losses), n, stream));
  if (mode != Mode::kTrain) return Status::Ok();

  BM_CUDA_CHECK(cudaMemsetAsync(A<T>(dres), 0, static_cast<size_t>(n) * c * sizeof(T), stream),
                "zero residual grad");
  if (Gpt()) {
    BM_TRY(Phase("norm bwd", [&] {
      return LayerNormBackward<T>(A<T>(dres), G(layout.normf_w), G(layout.normf_b),
                                  A<float>(norm_scratch), A<T>(dnormf), xl, W<T>(layout.normf_w),
                                  A<float>(meanf), A<float>(rstdf), n, c, stream);
    }));
  } else {
    BM_TRY(Phase("norm bwd", [&] {
      return RmsNormBackward<T>(A<T>(dres), G(layout.normf_w), A<float>(norm_scratch), A<T>(dnormf),
                                xl, W<T>(layout.normf_w), A<float>(rstdf), n, c, stream);
    }));
  }
  for (int l = spec.layers - 1; l >= 0; --l) BM_TRY(LayerBackward<T>(l));
  return EmbeddingBackwardAll();
}

Status CudaModel::Impl::Stage(const TokenBatch& batch, bool buckets) {
  if (batch.batch <= 0 || batch.seq <= 0 || batch.batch > run.micro_batch || batch.seq > run.seq) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "batch {} x {} tokens; this CUDA model was planned for at most {} x {}",
                  batch.batch, batch.seq, run.micro_batch, run.seq);
  }
  cur_b = batch.batch, cur_t = batch.seq;
  size_t n = N();
  for (size_t i = 0; i < n; ++i) {
    int tok = batch.tokens[i], tgt = batch.targets ? batch.targets[i] : 0;
    if (tok < 0 || tok >= spec.vocab || tgt >= spec.vocab) {
      return Errorf(ErrorCode::kInvalidArgument, "token {} or target {} at {} outside vocab {}",
                    tok, tgt, i, spec.vocab);
    }
  }
  // The previous batch's copies must be done before the staging buffers are reused.
  BM_CUDA_CHECK(cudaEventSynchronize(staged), "staging event");
  size_t max_n = MaxN();
  int* hi = h_ints;
  std::memcpy(hi, batch.tokens, n * 4);
  if (batch.targets)
    std::memcpy(hi + max_n, batch.targets, n * 4);
  else
    std::fill(hi + max_n, hi + max_n + n, 0);
  float* hw = h_floats;
  for (size_t i = 0; i < n; ++i) hw[i] = batch.mask ? (batch.mask[i] ? 1.0f : 0.0f) : 1.0f;
  BM_CUDA_CHECK(cudaMemcpyAsync(A<int>(tokens), hi, n * 4, cudaMemcpyHostToDevice, stream),
                "tokens {}", n);
  BM_CUDA_CHECK(cudaMemcpyAsync(A<int>(targets), hi + max_n, n * 4, cudaMemcpyHostToDevice, stream),
                "targets {}", n);
  BM_CUDA_CHECK(cudaMemcpyAsync(A<float>(weights), hw, n * 4, cudaMemcpyHostToDevice, stream),
                "weights {}", n);
  num_buckets = 0;
  if (buckets) {
    EmbeddingBuckets b = BuildEmbeddingBuckets(batch.tokens, static_cast<int>(n), spec.vocab);
    int* bt = hi + 2 * max_n;
    int* bo = bt + max_n;
    int* bp = bo + max_n + 1;
    std::copy(b.tokens.begin(), b.tokens.end(), bt);
    std::copy(b.offsets.begin(), b.offsets.end(), bo);
    std::copy(b.positions.begin(), b.positions.end(), bp);
    num_buckets = static_cast<int>(b.tokens.size());
    BM_CUDA_CHECK(cudaMemcpyAsync(A<int>(bucket_tokens), bt, b.tokens.size() * 4,
                                  cudaMemcpyHostToDevice, stream),
                  "buckets");
    BM_CUDA_CHECK(cudaMemcpyAsync(A<int>(bucket_offsets), bo, b.offsets.size() * 4,
                                  cudaMemcpyHostToDevice, stream),
                  "bucket offsets");
    BM_CUDA_CHECK(
        cudaMemcpyAsync(A<int>(bucket_positions), bp, n * 4, cudaMemcpyHostToDevice, stream),
        "bucket positions");
  }
  BM_CUDA_CHECK(cudaEventRecord(staged, stream), "staging event");
  return Status::Ok();
}

Status CudaModel::Impl::EmbeddingBackwardAll() {
  int n = N(), c = C();
  return Phase("embedding", [&] {
    if (run.bf16) {
      return EmbeddingBackward<bf16>(G(layout.wte), Gpt() ? G(layout.wpe) : nullptr, A<bf16>(dres),
                                     A<int>(bucket_tokens), A<int>(bucket_offsets),
                                     A<int>(bucket_positions), num_buckets, n, cur_t, c, stream);
    }
    return EmbeddingBackward<float>(G(layout.wte), Gpt() ? G(layout.wpe) : nullptr, A<float>(dres),
                                    A<int>(bucket_tokens), A<int>(bucket_offsets),
                                    A<int>(bucket_positions), num_buckets, n, cur_t, c, stream);
  });
}

Status CudaModel::Impl::CopyOut(size_t off, std::vector<float>* out) {
  size_t P = layout.total();
  out->resize(P);
  BM_CUDA_CHECK(cudaMemcpyAsync(out->data(), A<float>(off), P * 4, cudaMemcpyDeviceToHost, stream),
                "copy out {}", P);
  BM_CUDA_CHECK(cudaStreamSynchronize(stream), "copy out");
  return Status::Ok();
}

// ---- CudaModel

CudaModel::CudaModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CudaModel::~CudaModel() {
  if (!impl_) return;
  if (impl_->stream) cudaStreamSynchronize(impl_->stream);
  impl_->matmul.reset();
  impl_->arena.reset();
  for (cudaEvent_t e : impl_->event_pool) cudaEventDestroy(e);
  if (impl_->h_ints) cudaFreeHost(impl_->h_ints);
  if (impl_->h_floats) cudaFreeHost(impl_->h_floats);
  if (impl_->staged) cudaEventDestroy(impl_->staged);
  if (impl_->stream) cudaStreamDestroy(impl_->stream);
}

Result<std::unique_ptr<CudaModel>> CudaModel::Create(const ModelSpec& model, const RunSpec& run) {
  if (model.heads <= 0 || model.hidden % model.heads != 0 || model.kv_heads <= 0 ||
      model.heads % model.kv_heads != 0 || run.micro_batch <= 0 || run.seq <= 0 ||
      model.head_dim() % 8 != 0) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "CUDA backend: hidden {} heads {} kv_heads {} (head size must be a multiple "
                  "of 8), micro_batch {} seq {}",
                  model.hidden, model.heads, model.kv_heads, run.micro_batch, run.seq);
  }
  if (model.family == Family::kGpt && run.seq > model.max_positions) {
    return Errorf(ErrorCode::kInvalidArgument, "seq {} exceeds the {} learned positions", run.seq,
                  model.max_positions);
  }
  int count = 0;
  BM_CUDA_CHECK(cudaGetDeviceCount(&count), "counting GPUs");
  if (count == 0) return Errorf(ErrorCode::kUnavailable, "no CUDA device");
  auto m = std::unique_ptr<CudaModel>(new CudaModel(std::make_unique<Impl>(model, run)));
  Impl& s = *m->impl_;
  BM_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "stream");
  BM_CUDA_CHECK(cudaEventCreateWithFlags(&s.staged, cudaEventDisableTiming), "event");
  BM_TRY(s.Plan());
  size_t n = s.MaxN();
  BM_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&s.h_ints), (5 * n + 1) * 4),
                "pinned staging {} ints", 5 * n + 1);
  BM_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&s.h_floats), (n + 16) * 4),
                "pinned staging {} floats", n + 16);
  BM_ASSIGN_OR_RETURN(
      s.matmul, Matmul::Create(s.arena->At<void>(s.workspace), Matmul::kDefaultWorkspaceBytes));
  BM_CUDA_CHECK(cudaMemsetAsync(s.A<char>(s.p32), 0, s.memory.plan_bytes, s.stream),
                "zeroing the arena ({} bytes)", s.memory.plan_bytes);
  std::vector<float> table = RopeTable(run.seq, model.head_dim(), model.rope_theta);
  BM_CUDA_CHECK(cudaMemcpyAsync(s.A<float>(s.rope), table.data(), table.size() * 4,
                                cudaMemcpyHostToDevice, s.stream),
                "rope table");
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "setup");
  BM_ASSIGN_OR_RETURN(s.memory.device_used_bytes, DeviceArena::DeviceUsedBytes());
  return m;
}

const ParamLayout& CudaModel::layout() const { return impl_->layout; }
const MemoryReport& CudaModel::memory() const { return impl_->memory; }

Status CudaModel::SetParameters(const std::vector<float>& flat) {
  Impl& s = *impl_;
  size_t P = s.layout.total();
  if (flat.size() != P) {
    return Errorf(ErrorCode::kInvalidArgument, "{} parameters given, layout has {}", flat.size(),
                  P);
  }
  BM_CUDA_CHECK(
      cudaMemcpyAsync(s.A<float>(s.p32), flat.data(), P * 4, cudaMemcpyHostToDevice, s.stream),
      "parameters {}", P);
  if (s.run.bf16) BM_TRY(CastF32<bf16>(s.A<bf16>(s.plp), s.A<float>(s.p32), P, s.stream));
  return Synchronize();
}

Status CudaModel::GetParameters(std::vector<float>* flat) {
  return impl_->CopyOut(impl_->p32, flat);
}
Status CudaModel::GetGradients(std::vector<float>* flat) {
  return impl_->CopyOut(impl_->grad, flat);
}
Status CudaModel::GetOptimizerState(std::vector<float>* m, std::vector<float>* v) {
  BM_TRY(impl_->CopyOut(impl_->adam_m, m));
  return impl_->CopyOut(impl_->adam_v, v);
}
Status CudaModel::SetOptimizerState(const std::vector<float>& m, const std::vector<float>& v) {
  Impl& s = *impl_;
  size_t P = s.layout.total();
  if (m.size() != P || v.size() != P) {
    return Errorf(ErrorCode::kInvalidArgument, "optimizer state of {}/{} floats, layout has {}",
                  m.size(), v.size(), P);
  }
  BM_CUDA_CHECK(
      cudaMemcpyAsync(s.A<float>(s.adam_m), m.data(), P * 4, cudaMemcpyHostToDevice, s.stream),
      "adam m");
  BM_CUDA_CHECK(
      cudaMemcpyAsync(s.A<float>(s.adam_v), v.data(), P * 4, cudaMemcpyHostToDevice, s.stream),
      "adam v");
  return Synchronize();
}

Status CudaModel::ZeroGradients() {
  Impl& s = *impl_;
  BM_CUDA_CHECK(cudaMemsetAsync(s.A<float>(s.grad), 0, s.layout.total() * 4, s.stream),
                "zero grads");
  return Status::Ok();
}

Result<double> CudaModel::ForwardBackward(const TokenBatch& batch, float grad_scale) {
  Impl& s = *impl_;
  if (!batch.targets) return Errorf(ErrorCode::kInvalidArgument, "ForwardBackward needs targets");
  BM_TRY(s.Stage(batch, true));
  BM_TRY(s.Run(grad_scale, Mode::kTrain));
  float* out = s.h_floats + s.MaxN();
  BM_CUDA_CHECK(cudaMemcpyAsync(out, s.A<float>(s.loss_sum), 4, cudaMemcpyDeviceToHost, s.stream),
                "loss");
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "forward-backward B={} T={}", batch.batch,
                batch.seq);
  if (s.run.profile) s.CollectPhases();
  return static_cast<double>(*out);
}

Result<double> CudaModel::GradNorm() {
  Impl& s = *impl_;
  BM_TRY(GradSumSquares(s.A<float>(s.norm_sq), s.A<float>(s.norm_partials), s.A<float>(s.grad),
                        s.layout.total(), s.stream));
  float* out = s.h_floats + s.MaxN() + 1;
  BM_CUDA_CHECK(cudaMemcpyAsync(out, s.A<float>(s.norm_sq), 4, cudaMemcpyDeviceToHost, s.stream),
                "norm");
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "grad norm");
  return std::sqrt(static_cast<double>(*out));
}

Status CudaModel::OptimizerStep(const AdamWHyper& hyper) {
  Impl& s = *impl_;
  size_t P = s.layout.total();
  BM_TRY(s.Phase("optimizer", [&] {
    return GradSumSquares(s.A<float>(s.norm_sq), s.A<float>(s.norm_partials), s.A<float>(s.grad), P,
                          s.stream);
  }));
  bf16* lowp = s.run.bf16 ? s.A<bf16>(s.plp) : nullptr;
  size_t split = s.layout.decay_end();
  AdamWHyper no_decay = hyper;
  no_decay.weight_decay = 0.0f;
  BM_TRY(s.Phase("optimizer", [&] {
    return AdamWUpdate(s.A<float>(s.p32), lowp, s.A<float>(s.adam_m), s.A<float>(s.adam_v),
                       s.A<float>(s.grad), s.A<float>(s.norm_sq), hyper, split, s.stream);
  }));
  return s.Phase("optimizer", [&] {
    return AdamWUpdate(s.A<float>(s.p32) + split, lowp ? lowp + split : nullptr,
                       s.A<float>(s.adam_m) + split, s.A<float>(s.adam_v) + split,
                       s.A<float>(s.grad) + split, s.A<float>(s.norm_sq), no_decay, P - split,
                       s.stream);
  });
}

Status CudaModel::TokenLosses(const TokenBatch& batch, float* losses) {
  Impl& s = *impl_;
  if (!batch.targets) return Errorf(ErrorCode::kInvalidArgument, "TokenLosses needs targets");
  TokenBatch all = batch;
  all.mask = nullptr;  // every position's loss
  BM_TRY(s.Stage(all, false));
  BM_TRY(s.Run(0.0f, Mode::kLoss));
  BM_CUDA_CHECK(
      cudaMemcpyAsync(losses, s.A<float>(s.losses), s.N() * 4, cudaMemcpyDeviceToHost, s.stream),
      "token losses");
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "token losses B={} T={}", batch.batch, batch.seq);
  return Status::Ok();
}

Status CudaModel::NextTokenArgmax(const int32_t* tokens, int batch, int seq, int32_t* out) {
  Impl& s = *impl_;
  TokenBatch b;
  b.tokens = tokens, b.batch = batch, b.seq = seq;
  BM_TRY(s.Stage(b, false));
  BM_TRY(s.Run(0.0f, Mode::kArgmax));
  BM_CUDA_CHECK(
      cudaMemcpyAsync(out, s.A<int>(s.argmax), s.N() * 4, cudaMemcpyDeviceToHost, s.stream),
      "argmax");
  BM_CUDA_CHECK(cudaStreamSynchronize(s.stream), "argmax B={} T={}", batch, seq);
  return Status::Ok();
}

std::map<std::string, double> CudaModel::PhaseTimes() const { return impl_->phase_ms; }
void CudaModel::ResetPhaseTimes() { impl_->phase_ms.clear(); }

Status CudaModel::Synchronize() {
  BM_CUDA_CHECK(cudaStreamSynchronize(impl_->stream), "synchronize");
  if (impl_->run.profile) impl_->CollectPhases();
  return Status::Ok();
}

}  // namespace bm::train::cuda
