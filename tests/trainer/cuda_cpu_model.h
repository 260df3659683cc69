// A CPU twin of CudaModel's whole training step, composed from the kernels' CPU twins and a
// naive matmul, over the same ParamLayout: the oracle for the model-level tests (until the
// trainer's own CPU backend is wired in as a second one). fp32 throughout, double where cheap.
#pragma once

#include <vector>

#include "trainer/cuda/kernels/activation.cuh"
#include "trainer/cuda/kernels/attention.cuh"
#include "trainer/cuda/kernels/classifier.cuh"
#include "trainer/cuda/kernels/embedding.cuh"
#include "trainer/cuda/kernels/layernorm.cuh"
#include "trainer/cuda/kernels/rmsnorm.cuh"
#include "trainer/cuda/kernels/rope.cuh"
#include "trainer/cuda/param_layout.h"

namespace bm::train::cuda::testing {

// Spliced rows (cuda_model.h's SplicedRows, on the host): rows [count, C] replace the lookup at
// flat positions; grad (nullable) receives their gradient.
struct CpuSpliced {
  const int* positions = nullptr;
  int count = 0;
  const float* rows = nullptr;
  float* grad = nullptr;
};

class CpuModel {
 public:
  CpuModel(const ModelSpec& spec, int batch, int seq)
      : s_(spec), layout_(spec), b_(batch), t_(seq) {}
  const ParamLayout& layout() const { return layout_; }

  // Returns the summed weighted loss; adds gradients into *grad (layout().total() floats).
  double ForwardBackward(const std::vector<float>& p, const std::vector<int>& tokens,
                         const std::vector<int>& targets, float grad_scale,
                         std::vector<float>* grad, const CpuSpliced& spliced = {}) const {
    const bool gpt = s_.family == Family::kGpt;
    const int n = b_ * t_, c = s_.hidden, hd = s_.head_dim(), f = s_.ffn, v = s_.vocab;
    const int qc = (s_.heads + 2 * s_.kv_heads) * hd, ac = s_.heads * hd;
    const int big = gpt ? f : 2 * f;
    auto P = [&](size_t off) { return p.data() + off; };
    auto G = [&](size_t off) { return grad->data() + off; };
    auto table = RopeTable(t_, hd, s_.rope_theta);
    struct Acts {
      std::vector<float> x, n1, m1, r1, qkv, att, lse, mid, n2, m2, r2, pre, post;
    };
    std::vector<Acts> a(s_.layers);
    std::vector<float> x(static_cast<size_t>(n) * c);
    EmbeddingForwardCpu(x.data(), tokens.data(), P(layout_.wte), gpt ? P(layout_.wpe) : nullptr, n,
                        t_, c, 0, v);
    EmbeddingSpliceForwardCpu(x.data(), spliced.positions, spliced.rows,
                              gpt ? P(layout_.wpe) : nullptr, spliced.count, 0, n, t_, c);
    for (int l = 0; l < s_.layers; ++l) {
      const LayerParams& lp = layout_.layers[l];
      Acts& A = a[l];
      A.x = x;
      A.n1.resize(n * c), A.m1.resize(n), A.r1.resize(n);
      if (gpt) {
        LayerNormForwardCpu(A.n1.data(), A.m1.data(), A.r1.data(), x.data(), P(lp.norm1_w),
                            P(lp.norm1_b), n, c);
      } else {
        RmsNormForwardCpu(A.n1.data(), A.r1.data(), x.data(), P(lp.norm1_w), n, c);
      }
      A.qkv = Linear(A.n1, P(lp.qkv_w), gpt ? P(lp.qkv_b) : nullptr, n, c, qc);
      if (!gpt) RopeCpu(A.qkv.data(), table.data(), b_, t_, s_.heads, s_.kv_heads, hd, false);
      A.att.resize(n * ac), A.lse.resize(b_ * s_.heads * t_);
      AttentionForwardCpu(A.att.data(), A.lse.data(), A.qkv.data(), b_, t_, s_.heads, s_.kv_heads,
                          hd);
      A.mid = Linear(A.att, P(lp.proj_w), gpt ? P(lp.proj_b) : nullptr, n, ac, c);
      for (size_t i = 0; i < A.mid.size(); ++i) A.mid[i] += x[i];
      A.n2.resize(n * c), A.m2.resize(n), A.r2.resize(n);
      if (gpt) {
        LayerNormForwardCpu(A.n2.data(), A.m2.data(), A.r2.data(), A.mid.data(), P(lp.norm2_w),
                            P(lp.norm2_b), n, c);
      } else {
        RmsNormForwardCpu(A.n2.data(), A.r2.data(), A.mid.data(), P(lp.norm2_w), n, c);
      }
      A.pre = Linear(A.n2, P(lp.fc_w), gpt ? P(lp.fc_b) : nullptr, n, c, big);
      A.post.resize(static_cast<size_t>(n) * f);
      if (gpt)
        GeluForwardCpu(A.post.data(), A.pre.data(), A.post.size());
      else
        SwigluForwardCpu(A.post.data(), A.pre.data(), n, f);
      x = Linear(A.post, P(lp.fc2_w), gpt ? P(lp.fc2_b) : nullptr, n, f, c);
      for (size_t i = 0; i < x.size(); ++i) x[i] += A.mid[i];
    }
    std::vector<float> nf(n * c), mf(n), rf(n);
    if (gpt) {
      LayerNormForwardCpu(nf.data(), mf.data(), rf.data(), x.data(), P(layout_.normf_w),
                          P(layout_.normf_b), n, c);
    } else {
      RmsNormForwardCpu(nf.data(), rf.data(), x.data(), P(layout_.normf_w), n, c);
    }
    std::vector<float> logits = Linear(nf, P(layout_.lm_head), nullptr, n, c, v);
    std::vector<float> losses(n);
    CrossEntropyCpu(logits.data(), losses.data(), targets.data(), nullptr, grad_scale, n, v, v,
                    true);
    double loss = 0.0;
    for (float x_ : losses) loss += x_;
    if (!grad) return loss;

    std::vector<float> dnf =
        LinearBackward(logits, nf, P(layout_.lm_head), G(layout_.lm_head), nullptr, n, c, v);
    std::vector<float> dres(n * c, 0.0f);
    if (gpt) {
      LayerNormBackwardCpu(dres.data(), G(layout_.normf_w), G(layout_.normf_b), dnf.data(),
                           x.data(), P(layout_.normf_w), mf.data(), rf.data(), n, c);
    } else {
      RmsNormBackwardCpu(dres.data(), G(layout_.normf_w), dnf.data(), x.data(), P(layout_.normf_w),
                         rf.data(), n, c);
    }
    for (int l = s_.layers - 1; l >= 0; --l) {
      const LayerParams& lp = layout_.layers[l];
      Acts& A = a[l];
      std::vector<float> dpost = LinearBackward(dres, A.post, P(lp.fc2_w), G(lp.fc2_w),
                                                gpt ? G(lp.fc2_b) : nullptr, n, f, c);
      std::vector<float> dpre(static_cast<size_t>(n) * big);
      if (gpt)
        GeluBackwardCpu(dpre.data(), dpost.data(), A.pre.data(), dpre.size());
      else
        SwigluBackwardCpu(dpre.data(), dpost.data(), A.pre.data(), n, f);
      std::vector<float> dn2 =
          LinearBackward(dpre, A.n2, P(lp.fc_w), G(lp.fc_w), gpt ? G(lp.fc_b) : nullptr, n, c, big);
      if (gpt) {
        LayerNormBackwardCpu(dres.data(), G(lp.norm2_w), G(lp.norm2_b), dn2.data(), A.mid.data(),
                             P(lp.norm2_w), A.m2.data(), A.r2.data(), n, c);
      } else {
        RmsNormBackwardCpu(dres.data(), G(lp.norm2_w), dn2.data(), A.mid.data(), P(lp.norm2_w),
                           A.r2.data(), n, c);
      }
      std::vector<float> datt = LinearBackward(dres, A.att, P(lp.proj_w), G(lp.proj_w),
                                               gpt ? G(lp.proj_b) : nullptr, n, ac, c);
      std::vector<float> dqkv(static_cast<size_t>(n) * qc);
      AttentionBackwardCpu(dqkv.data(), datt.data(), A.att.data(), A.qkv.data(), A.lse.data(), b_,
                           t_, s_.heads, s_.kv_heads, hd);
      if (!gpt) RopeCpu(dqkv.data(), table.data(), b_, t_, s_.heads, s_.kv_heads, hd, true);
      std::vector<float> dn1 = LinearBackward(dqkv, A.n1, P(lp.qkv_w), G(lp.qkv_w),
                                              gpt ? G(lp.qkv_b) : nullptr, n, c, qc);
      if (gpt) {
        LayerNormBackwardCpu(dres.data(), G(lp.norm1_w), G(lp.norm1_b), dn1.data(), A.x.data(),
                             P(lp.norm1_w), A.m1.data(), A.r1.data(), n, c);
      } else {
        RmsNormBackwardCpu(dres.data(), G(lp.norm1_w), dn1.data(), A.x.data(), P(lp.norm1_w),
                           A.r1.data(), n, c);
      }
    }
    std::vector<unsigned char> skip(n, 0);
    for (int i = 0; i < spliced.count; ++i) skip[spliced.positions[i]] = 1;
    if (spliced.grad)
      EmbeddingSpliceBackwardCpu(spliced.grad, dres.data(), spliced.positions, spliced.count, c);
    EmbeddingBackwardCpu(G(layout_.wte), gpt ? G(layout_.wpe) : nullptr, dres.data(), tokens.data(),
                         n, t_, c, skip.data());
    return loss;
  }

 private:
  // y[rows, out] = x[rows, in] W^T + b
  static std::vector<float> Linear(const std::vector<float>& x, const float* w, const float* b,
                                   int rows, int in, int out) {
    std::vector<float> y(static_cast<size_t>(rows) * out);
    for (int r = 0; r < rows; ++r) {
      for (int o = 0; o < out; ++o) {
        double s = b ? b[o] : 0.0;
        for (int i = 0; i < in; ++i) s += double(x[size_t(r) * in + i]) * w[size_t(o) * in + i];
        y[size_t(r) * out + o] = float(s);
      }
    }
    return y;
  }
  // returns dx = dy W; dW += dy^T x; db += sum dy
  static std::vector<float> LinearBackward(const std::vector<float>& dy,
                                           const std::vector<float>& x, const float* w, float* dw,
                                           float* db, int rows, int in, int out) {
    std::vector<double> dx(static_cast<size_t>(rows) * in, 0.0);
    for (int r = 0; r < rows; ++r) {
      for (int o = 0; o < out; ++o) {
        double g = dy[size_t(r) * out + o];
        if (g == 0.0) continue;
        if (db) db[o] += float(g);
        for (int i = 0; i < in; ++i) {
          dx[size_t(r) * in + i] += g * w[size_t(o) * in + i];
          dw[size_t(o) * in + i] += float(g * x[size_t(r) * in + i]);
        }
      }
    }
    return std::vector<float>(dx.begin(), dx.end());
  }

  ModelSpec s_;
  ParamLayout layout_;
  int b_, t_;
};

}  // namespace bm::train::cuda::testing
