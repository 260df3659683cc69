#include "trainer/cpu/model.h"

#include <fmt/format.h>

#include <algorithm>

#include "trainer/cpu/ops/attention.h"
#include "trainer/cpu/ops/embedding.h"
#include "trainer/cpu/ops/gelu.h"
#include "trainer/cpu/ops/layernorm.h"
#include "trainer/cpu/ops/matmul.h"
#include "trainer/cpu/ops/residual.h"
#include "trainer/cpu/ops/rmsnorm.h"
#include "trainer/cpu/ops/rope.h"
#include "trainer/cpu/ops/softmax_xent.h"
#include "trainer/cpu/ops/swiglu.h"

namespace bm::train::cpu {
namespace {
constexpr int64_t kClassifierChunk = 128;  // rows of logits held at once
}

// Pointers into a flat buffer (parameters or gradients) for one layer.
// Biases and LayerNorm biases are null for llama.
template <typename Float>
struct Model<Float>::LayerParams {
  Float* ln1_w = nullptr;
  Float* ln1_b = nullptr;
  Float* qkv_w = nullptr;   // [QKV, C]: llama q|k|v (contiguous), gpt c_attn
  Float* qkv_b = nullptr;   // [QKV]
  Float* proj_w = nullptr;  // [C, C]
  Float* proj_b = nullptr;
  Float* ln2_w = nullptr;
  Float* ln2_b = nullptr;
  Float* fc_w = nullptr;  // llama [2F, C] gate|up (contiguous); gpt [F, C]
  Float* fc_b = nullptr;
  Float* down_w = nullptr;  // [C, F]
  Float* down_b = nullptr;
};

template <typename Float>
typename Model<Float>::LayerParams Model<Float>::Layer(std::vector<Float>& buf, int64_t l) const {
  auto at = [&](const std::string& name) { return buf.data() + layout_.Find(name)->offset; };
  LayerParams p;
  if (config_.family == Family::kLlama) {
    const std::string s = fmt::format("model.layers.{}.", l);
    p.ln1_w = at(s + "input_layernorm.weight");
    p.qkv_w = at(s + "self_attn.q_proj.weight");
    p.proj_w = at(s + "self_attn.o_proj.weight");
    p.ln2_w = at(s + "post_attention_layernorm.weight");
    p.fc_w = at(s + "mlp.gate_proj.weight");
    p.down_w = at(s + "mlp.down_proj.weight");
    return p;
  }
  const std::string s = fmt::format("transformer.h.{}.", l);
  p.ln1_w = at(s + "ln_1.weight");
  p.ln1_b = at(s + "ln_1.bias");
  p.qkv_w = at(s + "attn.c_attn.weight");
  p.qkv_b = at(s + "attn.c_attn.bias");
  p.proj_w = at(s + "attn.c_proj.weight");
  p.proj_b = at(s + "attn.c_proj.bias");
  p.ln2_w = at(s + "ln_2.weight");
  p.ln2_b = at(s + "ln_2.bias");
  p.fc_w = at(s + "mlp.c_fc.weight");
  p.fc_b = at(s + "mlp.c_fc.bias");
  p.down_w = at(s + "mlp.c_proj.weight");
  p.down_b = at(s + "mlp.c_proj.bias");
  return p;
}

template <typename Float>
Model<Float>::Model(const ModelConfig& config, int64_t max_batch, int64_t max_seq)
    : config_(config), layout_(config), max_batch_(max_batch), max_seq_(max_seq) {
  const int64_t N = max_batch * max_seq, C = config.hidden, L = config.layers;
  const int64_t F = config.ffn_hidden, QKV = config.qkv_dim(), NH = config.heads;
  const bool llama = config.family == Family::kLlama;
  params_.assign(layout_.total(), Float(0));
  grads_.assign(layout_.total(), Float(0));
  auto alloc = [&](std::vector<std::vector<Float>>& v, int64_t count, int64_t size) {
    v.assign(count, std::vector<Float>(size));
  };
  alloc(residual_, L + 1, N * C);
  alloc(ln1_, L, N * C);
  alloc(ln1_mean_, L, N);
  alloc(ln1_rstd_, L, N);
  alloc(qkv_, L, N * QKV);
  alloc(att_, L, max_batch * NH * max_seq * max_seq);
  alloc(atty_, L, N * C);
  alloc(res2_, L, N * C);
  alloc(ln2_, L, N * C);
  alloc(ln2_mean_, L, N);
  alloc(ln2_rstd_, L, N);
  alloc(fc_, L, N * (llama ? 2 * F : F));
  alloc(act_, L, N * F);
  lnf_.resize(N * C);
  lnf_mean_.resize(N);
  lnf_rstd_.resize(N);
  logits_.resize(kClassifierChunk * config.vocab);
  tmp_.resize(N * C);
  dres_.resize(N * C);
  dln_.resize(N * C);
  dqkv_.resize(N * QKV);
  datty_.resize(N * C);
  dfc_.resize(N * (llama ? 2 * F : F));
  dact_.resize(N * F);
  dlnf_.resize(N * C);
  losses_.resize(N);
  dlosses_.resize(N);
}

template <typename Float>
int64_t Model<Float>::bytes() const {
  int64_t n = static_cast<int64_t>(params_.size() + grads_.size());
  for (const auto* group : {&residual_, &ln1_, &ln1_mean_, &ln1_rstd_, &qkv_, &att_, &atty_, &res2_,
                            &ln2_, &ln2_mean_, &ln2_rstd_, &fc_, &act_})
    for (const auto& v : *group) n += static_cast<int64_t>(v.size());
  for (const auto* v : {&lnf_, &lnf_mean_, &lnf_rstd_, &logits_, &tmp_, &dres_, &dln_, &dqkv_,
                        &datty_, &dfc_, &dact_, &dlnf_, &losses_, &dlosses_})
    n += static_cast<int64_t>(v->size());
  return n * static_cast<int64_t>(sizeof(Float));
}

template <typename Float>
void Model<Float>::Forward(const int32_t* inputs, int64_t B, int64_t T) {
  const ModelConfig& c = config_;
  const int64_t N = B * T, C = c.hidden, F = c.ffn_hidden, QKV = c.qkv_dim();
  const bool llama = c.family == Family::kLlama;
  const Float* wte = params_.data();  // first tensor in both layouts
  const Float* wpe = llama ? nullptr : params_.data() + layout_.tensors()[1].offset;
  Acquire(0, 1);
  EmbeddingForward(residual_[0].data(), inputs, wte, wpe, B, T, C);  // [N, C]
  if (!c.tied_embeddings) Release(0);  // tied: the classifier reads wte again
  for (int64_t l = 0; l < c.layers; ++l) {
    Acquire(static_cast<int>(l) + 1, static_cast<int>(l) + 2);
    LayerParams p = Layer(params_, l);
    const Float* x = residual_[l].data();
    // attention block: x -> norm -> qkv [N, QKV] -> (rope) -> attention [N, C] -> proj [N, C]
    if (llama) {
      RmsNormForward(ln1_[l].data(), ln1_rstd_[l].data(), x, p.ln1_w, N, C, c.norm_eps);
    } else {
      LayerNormForward(ln1_[l].data(), ln1_mean_[l].data(), ln1_rstd_[l].data(), x, p.ln1_w,
                       p.ln1_b, N, C, c.norm_eps);
    }
    MatmulForward(qkv_[l].data(), ln1_[l].data(), p.qkv_w, p.qkv_b, N, C, QKV);
    if (llama) RopeForward(qkv_[l].data(), B, T, c.heads, c.kv_heads, c.head_dim(), c.rope_theta);
    AttentionForward(atty_[l].data(), att_[l].data(), qkv_[l].data(), B, T, c.heads, c.kv_heads,
                     c.head_dim());
    MatmulForward(tmp_.data(), atty_[l].data(), p.proj_w, p.proj_b, N, C, C);
    ResidualForward(res2_[l].data(), x, tmp_.data(), N * C);
    // MLP block: res2 -> norm -> fc -> activation [N, F] -> down [N, C]
    if (llama) {
      RmsNormForward(ln2_[l].data(), ln2_rstd_[l].data(), res2_[l].data(), p.ln2_w, N, C,
                     c.norm_eps);
      MatmulForward(fc_[l].data(), ln2_[l].data(), p.fc_w, p.fc_b, N, C, 2 * F);
      SwiGluForward(act_[l].data(), fc_[l].data(), N, F);
    } else {
      LayerNormForward(ln2_[l].data(), ln2_mean_[l].data(), ln2_rstd_[l].data(), res2_[l].data(),
                       p.ln2_w, p.ln2_b, N, C, c.norm_eps);
      MatmulForward(fc_[l].data(), ln2_[l].data(), p.fc_w, p.fc_b, N, C, F);
      GeluForward(act_[l].data(), fc_[l].data(), N * F);
    }
    MatmulForward(tmp_.data(), act_[l].data(), p.down_w, p.down_b, N, F, C);
    ResidualForward(residual_[l + 1].data(), res2_[l].data(), tmp_.data(), N * C);
    Release(static_cast<int>(l) + 1);
  }
  // final norm: lnf [N, C]; the final unit stays acquired for the classifier
  // (and the backward), released by the caller.
  Acquire(FinalUnit(), -1);
  const ParamTensor* nw = layout_.Find(llama ? "model.norm.weight" : "transformer.ln_f.weight");
  const Float* x = residual_[c.layers].data();
  if (llama) {
    RmsNormForward(lnf_.data(), lnf_rstd_.data(), x, params_.data() + nw->offset, N, C, c.norm_eps);
  } else {
    const Float* nb = params_.data() + layout_.Find("transformer.ln_f.bias")->offset;
    LayerNormForward(lnf_.data(), lnf_mean_.data(), lnf_rstd_.data(), x,
                     params_.data() + nw->offset, nb, N, C, c.norm_eps);
  }
}

template <typename Float>
void Model<Float>::Classifier(const int32_t* targets, int64_t N, Float* losses,
                              const Float* dlosses, int32_t* argmax) {
  const int64_t C = config_.hidden, V = config_.vocab;
  const ParamTensor* head =
      config_.tied_embeddings ? &layout_.tensors()[0] : layout_.Find("lm_head.weight");
  const Float* w = params_.data() + head->offset;  // [V, C]
  Float* dw = grads_.data() + head->offset;
  for (int64_t start = 0; start < N; start += kClassifierChunk) {
    const int64_t rows = std::min(kClassifierChunk, N - start);
    // logits [rows, V] = lnf[rows, C] @ w[V, C]^T
    MatmulForward(logits_.data(), lnf_.data() + start * C, w, static_cast<const Float*>(nullptr),
                  rows, C, V);
    if (argmax) {
      ArgmaxRows(argmax + start, logits_.data(), rows, V);
      continue;
    }
    // probs overwrite logits; then dlogits overwrite probs
    CrossEntropyForward(losses + start, logits_.data(), logits_.data(), targets + start, rows, V);
    if (!dlosses) continue;
    CrossEntropyBackward(logits_.data(), logits_.data(), targets + start, dlosses + start, rows, V);
    MatmulBackward(dlnf_.data() + start * C, dw, static_cast<Float*>(nullptr), logits_.data(),
                   lnf_.data() + start * C, w, rows, C, V);
  }
}

template <typename Float>
void Model<Float>::Backward(const int32_t* inputs, int64_t B, int64_t T) {
  const ModelConfig& c = config_;
  const int64_t N = B * T, C = c.hidden, F = c.ffn_hidden, QKV = c.qkv_dim();
  const bool llama = c.family == Family::kLlama;
  auto zero = [](std::vector<Float>& v, int64_t n) {
    std::fill(v.begin(), v.begin() + n, Float(0));
  };
  // final norm: dlnf -> dres (gradient of the last residual stream)
  zero(dres_, N * C);
  const ParamTensor* nw = layout_.Find(llama ? "model.norm.weight" : "transformer.ln_f.weight");
  const Float* x = residual_[c.layers].data();
  if (llama) {
    RmsNormBackward(dres_.data(), grads_.data() + nw->offset, dlnf_.data(), x,
                    params_.data() + nw->offset, lnf_rstd_.data(), N, C);
  } else {
    const ParamTensor* nb = layout_.Find("transformer.ln_f.bias");
    LayerNormBackward(dres_.data(), grads_.data() + nw->offset, grads_.data() + nb->offset,
                      dlnf_.data(), x, params_.data() + nw->offset, lnf_mean_.data(),
                      lnf_rstd_.data(), N, C);
  }
  GradientsReady(FinalUnit());  // the classifier's lm_head gradient came first
  Release(FinalUnit());
  for (int64_t l = c.layers - 1; l >= 0; --l) {
    // Next: layer l-1 (unit l); none after layer 0 (the embedding backward reads no parameters).
    Acquire(static_cast<int>(l) + 1, l > 0 ? static_cast<int>(l) : -1);
    LayerParams p = Layer(params_, l);
    LayerParams g = Layer(grads_, l);
    // dres holds d(residual[l+1]) = d(res2) through the skip + d(mlp down output)
    zero(dact_, N * F);
    MatmulBackward(dact_.data(), g.down_w, g.down_b, dres_.data(), act_[l].data(), p.down_w, N, F,
                   C);
    zero(dln_, N * C);
    if (llama) {
      zero(dfc_, N * 2 * F);
      SwiGluBackward(dfc_.data(), dact_.data(), fc_[l].data(), N, F);
      MatmulBackward(dln_.data(), g.fc_w, g.fc_b, dfc_.data(), ln2_[l].data(), p.fc_w, N, C, 2 * F);
      RmsNormBackward(dres_.data(), g.ln2_w, dln_.data(), res2_[l].data(), p.ln2_w,
                      ln2_rstd_[l].data(), N, C);
    } else {
      zero(dfc_, N * F);
      GeluBackward(dfc_.data(), fc_[l].data(), dact_.data(), N * F);
      MatmulBackward(dln_.data(), g.fc_w, g.fc_b, dfc_.data(), ln2_[l].data(), p.fc_w, N, C, F);
      LayerNormBackward(dres_.data(), g.ln2_w, g.ln2_b, dln_.data(), res2_[l].data(), p.ln2_w,
                        ln2_mean_[l].data(), ln2_rstd_[l].data(), N, C);
    }
    // dres now holds d(res2) = d(residual[l]) through the skip + d(attention proj output)
    zero(datty_, N * C);
    MatmulBackward(datty_.data(), g.proj_w, g.proj_b, dres_.data(), atty_[l].data(), p.proj_w, N, C,
                   C);
    zero(dqkv_, N * QKV);
    AttentionBackward(dqkv_.data(), datty_.data(), qkv_[l].data(), att_[l].data(), B, T, c.heads,
                      c.kv_heads, c.head_dim());
    if (llama) RopeBackward(dqkv_.data(), B, T, c.heads, c.kv_heads, c.head_dim(), c.rope_theta);
    zero(dln_, N * C);
    MatmulBackward(dln_.data(), g.qkv_w, g.qkv_b, dqkv_.data(), ln1_[l].data(), p.qkv_w, N, C, QKV);
    if (llama) {
      RmsNormBackward(dres_.data(), g.ln1_w, dln_.data(), residual_[l].data(), p.ln1_w,
                      ln1_rstd_[l].data(), N, C);
    } else {
      LayerNormBackward(dres_.data(), g.ln1_w, g.ln1_b, dln_.data(), residual_[l].data(), p.ln1_w,
                        ln1_mean_[l].data(), ln1_rstd_[l].data(), N, C);
    }
    GradientsReady(static_cast<int>(l) + 1);
    Release(static_cast<int>(l) + 1);
  }
  // The embedding backward reads no parameters.
  Float* dwte = grads_.data();
  Float* dwpe = llama ? nullptr : grads_.data() + layout_.tensors()[1].offset;
  EmbeddingBackward(dwte, dwpe, dres_.data(), inputs, B, T, C);
  GradientsReady(0);
  if (c.tied_embeddings) Release(0);
}

template <typename Float>
void Model<Float>::ReleaseAfterForward() {
  Release(FinalUnit());
  if (config_.tied_embeddings) Release(0);
}

template <typename Float>
void Model<Float>::ForwardBackward(const int32_t* inputs, const int32_t* targets,
                                   const uint8_t* mask, int64_t B, int64_t T, Float loss_scale,
                                   double* loss_sum, int64_t* count) {
  const int64_t N = B * T;
  Forward(inputs, B, T);
  for (int64_t n = 0; n < N; ++n) dlosses_[n] = (!mask || mask[n]) ? loss_scale : Float(0);
  std::fill(dlnf_.begin(), dlnf_.begin() + N * config_.hidden, Float(0));
  Classifier(targets, N, losses_.data(), dlosses_.data(), nullptr);
  double sum = 0;
  int64_t n_in = 0;
  for (int64_t n = 0; n < N; ++n) {
    if (mask && !mask[n]) continue;
    sum += static_cast<double>(losses_[n]);
    ++n_in;
  }
  *loss_sum = sum;
  *count = n_in;
  Backward(inputs, B, T);
}

template <typename Float>
void Model<Float>::TokenLosses(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T,
                               Float* losses) {
  Forward(inputs, B, T);
  Classifier(targets, B * T, losses, nullptr, nullptr);
  ReleaseAfterForward();
}

template <typename Float>
void Model<Float>::NextTokenArgmax(const int32_t* inputs, int64_t B, int64_t T, int32_t* argmax) {
  Forward(inputs, B, T);
  Classifier(nullptr, B * T, nullptr, nullptr, argmax);
  ReleaseAfterForward();
}

template <typename Float>
void Model<Float>::LastTokenArgmax(const int32_t* inputs, const int64_t* lengths, int64_t B,
                                   int64_t T, int32_t* argmax) {
  Forward(inputs, B, T);
  // gather the last real position of each row to the front of lnf (rows b <= b*T+len-1, in order)
  const int64_t C = config_.hidden;
  for (int64_t b = 0; b < B; ++b) {
    const Float* src = lnf_.data() + (b * T + lengths[b] - 1) * C;
    std::copy(src, src + C, lnf_.data() + b * C);
  }
  Classifier(nullptr, B, nullptr, nullptr, argmax);
  ReleaseAfterForward();
}

template class Model<float>;
template class Model<double>;

}  // namespace bm::train::cpu
