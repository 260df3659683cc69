#include "trainer/cpu/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <type_traits>

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
template <typename Float>
constexpr dist::DType kDType =
    std::is_same_v<Float, float> ? dist::DType::kFloat32 : dist::DType::kFloat64;
}  // namespace

// Pointers into a flat buffer (parameters or gradients) for one layer.
// Biases and LayerNorm biases are null for llama.
template <typename Float>
struct Model<Float>::LayerParams {
  Float* ln1_w = nullptr;
  Float* ln1_b = nullptr;
  Float* qkv_w = nullptr;   // [QKV, C]: llama q|k|v (contiguous), gpt c_attn
  Float* qkv_b = nullptr;   // [QKV]
  Float* proj_w = nullptr;  // [C, Q]
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
  auto at = [&](const std::string& name) { return buf.data() + layout().Find(name)->offset; };
  const int64_t global = shard_.part().layer_begin + l;
  LayerParams p;
  if (config().family == Family::kLlama) {
    const std::string s = fmt::format("model.layers.{}.", global);
    p.ln1_w = at(s + "input_layernorm.weight");
    p.qkv_w = at(s + "self_attn.q_proj.weight");
    p.proj_w = at(s + "self_attn.o_proj.weight");
    p.ln2_w = at(s + "post_attention_layernorm.weight");
    p.fc_w = at(s + "mlp.gate_proj.weight");
    p.down_w = at(s + "mlp.down_proj.weight");
    return p;
  }
  const std::string s = fmt::format("transformer.h.{}.", global);
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
    : Model(ModelShard::Whole(config), max_batch, max_seq) {}

template <typename Float>
Model<Float>::Model(const ModelShard& shard, int64_t max_batch, int64_t max_seq,
                    bool sequence_parallel)
    : shard_(shard),
      layers_(shard.part().layer_end - shard.part().layer_begin),
      tied_here_(shard.config().tied_embeddings && shard.part().embeddings && shard.part().head),
      sequence_parallel_(sequence_parallel && shard.rank().tp > 1),
      max_batch_(max_batch),
      max_seq_(max_seq) {
  const ModelPart& part = shard.part();
  const int64_t N = max_batch * max_seq, C = config().hidden, HS = config().head_dim();
  const int64_t F = part.ffn_hidden, Q = part.heads * HS,
                QKV = (part.heads + 2 * part.kv_heads) * HS;
  const bool llama = config().family == Family::kLlama;
  params_.assign(layout().total(), Float(0));
  grads_.assign(layout().total(), Float(0));
  EnsureSlots(1);
  if (part.head) logits_.resize(kClassifierChunk * part.vocab);
  xent_.resize(3 * kClassifierChunk);
  tmp_.resize(N * C);
  dres_.resize(N * C);
  dln_.resize(N * C);
  dqkv_.resize(N * QKV);
  datty_.resize(N * Q);
  dfc_.resize(N * (llama ? 2 * F : F));
  dact_.resize(N * F);
  if (part.head) dlnf_.resize(N * C);
  losses_.resize(N);
  dlosses_.resize(N);
  if (sequence_parallel_) {
    rows_.resize(StreamCapacity() * C);
    norm_grad_.resize(2 * C);
  }
}

template <typename Float>
void Model<Float>::FreezeWeights() {
  weights_frozen_ = true;
  std::vector<Float>().swap(grads_);  // released, not just cleared
}

template <typename Float>
int64_t Model<Float>::StreamCapacity() const {
  const int64_t N = max_batch_ * max_seq_, tp = shard_.rank().tp;
  return sequence_parallel_ ? (N + tp - 1) / tp : N;
}

template <typename Float>
void Model<Float>::EnsureSlots(int slots) {
  const ModelPart& part = shard_.part();
  const int64_t N = max_batch_ * max_seq_, C = config().hidden, L = layers_;
  const int64_t HS = config().head_dim(), NH = part.heads, F = part.ffn_hidden;
  const int64_t Q = NH * HS, QKV = (NH + 2 * part.kv_heads) * HS;
  const int64_t S = StreamCapacity();  // rows of the residual stream and the norms' statistics
  const bool llama = config().family == Family::kLlama;
  auto alloc = [&](std::vector<std::vector<Float>>& v, int64_t count, int64_t size) {
    v.assign(count, std::vector<Float>(size));
  };
  while (static_cast<int>(acts_.size()) < slots) {
    Acts a;
    alloc(a.residual, L + 1, S * C);
    alloc(a.ln1, L, N * C);
    alloc(a.ln1_mean, L, S);
    alloc(a.ln1_rstd, L, S);
    alloc(a.qkv, L, N * QKV);
    alloc(a.att, L, max_batch_ * NH * max_seq_ * max_seq_);
    alloc(a.atty, L, N * Q);
    alloc(a.res2, L, S * C);
    alloc(a.ln2, L, N * C);
    alloc(a.ln2_mean, L, S);
    alloc(a.ln2_rstd, L, S);
    alloc(a.fc, L, N * (llama ? 2 * F : F));
    alloc(a.act, L, N * F);
    if (part.head) {
      a.lnf.resize(N * C);
      a.lnf_mean.resize(S);
      a.lnf_rstd.resize(S);
    }
    acts_.push_back(std::move(a));
  }
}

template <typename Float>
int64_t Model<Float>::bytes() const {
  int64_t n = static_cast<int64_t>(params_.size() + grads_.size());
  for (const Acts& a : acts_) {
    for (const auto* group : {&a.residual, &a.ln1, &a.ln1_mean, &a.ln1_rstd, &a.qkv, &a.att,
                              &a.atty, &a.res2, &a.ln2, &a.ln2_mean, &a.ln2_rstd, &a.fc, &a.act})
      for (const auto& v : *group) n += static_cast<int64_t>(v.size());
    n += static_cast<int64_t>(a.lnf.size() + a.lnf_mean.size() + a.lnf_rstd.size());
  }
  for (const auto* v : {&logits_, &tmp_, &xent_, &dres_, &dln_, &dqkv_, &datty_, &dfc_, &dact_,
                        &dlnf_, &losses_, &dlosses_, &rows_, &norm_grad_})
    n += static_cast<int64_t>(v->size());
  return n * static_cast<int64_t>(sizeof(Float));
}

template <typename Float>
void Model<Float>::AllReduce(Float* data, int64_t n, dist::ReduceOp op) {
  if (!tensor_parallel() || !status_.ok()) return;
  status_ = tp_->AllReduce(data, n, kDType<Float>, op);
}

template <typename Float>
void Model<Float>::ReduceScatterRows(const Float* full, Float* local, int64_t N) {
  if (!status_.ok()) return;
  status_ = tp_->ReduceScatter(full, local, StreamRows(N) * config().hidden, kDType<Float>,
                               dist::ReduceOp::kSum);
}

template <typename Float>
void Model<Float>::AllGatherRows(const Float* local, Float* full, int64_t N) {
  if (!status_.ok()) return;
  status_ = tp_->AllGather(local, full, StreamRows(N) * config().hidden, kDType<Float>);
}

template <typename Float>
template <typename Backward>
void Model<Float>::NormBackward(Float* dw, Float* db, Backward backward) {
  if (!sequence_parallel_ || !dw) {  // frozen weights: no weight gradient to sum
    backward(dw, db);
    return;
  }
  const int64_t C = config().hidden;
  std::fill(norm_grad_.begin(), norm_grad_.end(), Float(0));
  backward(norm_grad_.data(), db ? norm_grad_.data() + C : nullptr);
  AllReduce(norm_grad_.data(), db ? 2 * C : C, dist::ReduceOp::kSum);
  for (int64_t i = 0; i < C; ++i) dw[i] += norm_grad_[i];
  if (db)
    for (int64_t i = 0; i < C; ++i) db[i] += norm_grad_[C + i];
}

template <typename Float>
bool Model<Float>::CheckStreamSplit(int64_t B, int64_t T) {
  const int tp = shard_.rank().tp;
  if (!sequence_parallel_ || (B * T) % tp == 0) return true;
  if (status_.ok())
    status_ = Errorf(ErrorCode::kInvalidArgument,
                     "sequence parallelism splits a micro-batch's {}x{} = {} tokens over TP{}, "
                     "which does not divide them (choose lbs·mpe divisible by {})",
                     B, T, B * T, tp, tp);
  return false;
}

template <typename Float>
void Model<Float>::ForwardStage(int slot, const int32_t* inputs, int64_t B, int64_t T,
                                const SplicedRows<Float>* spliced) {
  const ModelConfig& c = config();
  const ModelPart& part = shard_.part();
  const int64_t N = B * T, C = c.hidden, F = part.ffn_hidden, HS = c.head_dim();
  const int64_t NH = part.heads, KVH = part.kv_heads, Q = NH * HS, QKV = (NH + 2 * KVH) * HS;
  const bool llama = c.family == Family::kLlama, tp = tensor_parallel();
  const bool sp = sequence_parallel_;
  const int64_t S = StreamRows(N);  // rows of the residual stream here
  const int num_units = static_cast<int>(layout().units().size());
  if (!CheckStreamSplit(B, T)) return;
  Acts& a = acts_[slot];
  // A norm over the stream's S rows into `out` [N, C]: directly, or this
  // rank's rows gathered from every rank's (sequence parallelism).
  auto norm = [&](Float* out, Float* mean, Float* rstd, const Float* x, const Float* w,
                  const Float* b) {
    Float* y = sp ? rows_.data() : out;
    if (llama) {
      RmsNormForward(y, rstd, x, w, S, C, c.norm_eps);
    } else {
      LayerNormForward(y, mean, rstd, x, w, b, S, C, c.norm_eps);
    }
    if (sp) AllGatherRows(rows_.data(), out, N);
  };
  // A row-parallel output: tmp_ [N, C] holds this rank's partial products;
  // returns the summed S rows of the stream with the bias added.
  auto row_parallel_sum = [&](const Float* bias) -> const Float* {
    if (!tp) return tmp_.data();  // the matmul added the bias
    Float* y = tmp_.data();
    if (sp) {
      ReduceScatterRows(tmp_.data(), rows_.data(), N);
      y = rows_.data();
    } else {
      AllReduce(tmp_.data(), N * C, dist::ReduceOp::kSum);
    }
    if (bias) AddBias(y, bias, S, C);
    return y;
  };
  if (part.embeddings) {
    const Float* wte = params_.data() + shard_.token_embedding()->offset;
    const Float* wpe =
        llama ? nullptr : params_.data() + layout().Find("transformer.wpe.weight")->offset;
    Acquire(0, num_units > 1 ? 1 : -1);
    if (!tp) {
      EmbeddingForward(a.residual[0].data(), inputs, wte, wpe, B, T, C);  // [N, C]
    } else {
      // Each rank looks up its vocabulary rows; the sum over ranks is the lookup.
      Float* lookup = sp ? tmp_.data() : a.residual[0].data();
      EmbeddingForward(lookup, inputs, wte, static_cast<const Float*>(nullptr), B, T, C,
                       shard_.vocab_begin(), part.vocab);
      if (sp) {
        ReduceScatterRows(lookup, a.residual[0].data(), N);
      } else {
        AllReduce(lookup, N * C, dist::ReduceOp::kSum);
      }
      const int64_t first_row = sp ? shard_.rank().tp_rank * S : 0;
      if (wpe) AddPositions(a.residual[0].data(), wpe, first_row, S, T, C);
    }
    if (spliced) {
      // rows of this rank's stream [first, first + S) replaced by the spliced ones (+ positions)
      const int64_t first = sp ? shard_.rank().tp_rank * S : 0;
      for (int64_t i = 0; i < spliced->count; ++i) {
        const int64_t n = spliced->positions[i] - first;
        if (n < 0 || n >= S) continue;
        Float* dst = a.residual[0].data() + n * C;
        const Float* row = spliced->rows + i * C;
        const Float* pos = wpe ? wpe + ((first + n) % T) * C : nullptr;
        for (int64_t k = 0; k < C; ++k) dst[k] = pos ? row[k] + pos[k] : row[k];
      }
    }
    if (!tied_here_) Release(0);  // tied: the classifier reads wte again
  }
  for (int64_t l = 0; l < layers_; ++l) {
    const int unit = LayerUnit(l);
    Acquire(unit, unit + 1 < num_units ? unit + 1 : -1);
    LayerParams p = Layer(params_, l);
    const Float* x = a.residual[l].data();
    // attention block: x -> norm -> qkv [N, QKV] -> (rope) -> attention [N, Q] -> proj [N, C]
    norm(a.ln1[l].data(), a.ln1_mean[l].data(), a.ln1_rstd[l].data(), x, p.ln1_w, p.ln1_b);
    MatmulForward(a.qkv[l].data(), a.ln1[l].data(), p.qkv_w, p.qkv_b, N, C, QKV);
    if (llama) RopeForward(a.qkv[l].data(), B, T, NH, KVH, HS, c.rope_theta);
    AttentionForward(a.atty[l].data(), a.att[l].data(), a.qkv[l].data(), B, T, NH, KVH, HS);
    // row-parallel: partial products summed over the ranks, then the bias
    MatmulForward(tmp_.data(), a.atty[l].data(), p.proj_w, tp ? nullptr : p.proj_b, N, Q, C);
    ResidualForward(a.res2[l].data(), x, row_parallel_sum(p.proj_b), S * C);
    // MLP block: res2 -> norm -> fc -> activation [N, F] -> down [N, C]
    norm(a.ln2[l].data(), a.ln2_mean[l].data(), a.ln2_rstd[l].data(), a.res2[l].data(), p.ln2_w,
         p.ln2_b);
    if (llama) {
      MatmulForward(a.fc[l].data(), a.ln2[l].data(), p.fc_w, p.fc_b, N, C, 2 * F);
      SwiGluForward(a.act[l].data(), a.fc[l].data(), N, F);
    } else {
      MatmulForward(a.fc[l].data(), a.ln2[l].data(), p.fc_w, p.fc_b, N, C, F);
      GeluForward(a.act[l].data(), a.fc[l].data(), N * F);
    }
    MatmulForward(tmp_.data(), a.act[l].data(), p.down_w, tp ? nullptr : p.down_b, N, F, C);
    ResidualForward(a.residual[l + 1].data(), a.res2[l].data(), row_parallel_sum(p.down_b), S * C);
    Release(unit);
  }
  if (!part.head) return;
  // final norm: lnf [N, C]; the final unit stays acquired for the classifier
  // (and the backward), released by the caller.
  Acquire(FinalUnit(), -1);
  const ParamTensor* nw = layout().Find(llama ? "model.norm.weight" : "transformer.ln_f.weight");
  const ParamTensor* nb = llama ? nullptr : layout().Find("transformer.ln_f.bias");
  norm(a.lnf.data(), a.lnf_mean.data(), a.lnf_rstd.data(), a.residual[layers_].data(),
       params_.data() + nw->offset, nb ? params_.data() + nb->offset : nullptr);
}

template <typename Float>
void Model<Float>::Classifier(int slot, const int32_t* targets, int64_t N, Float* losses,
                              const Float* dlosses, int32_t* argmax) {
  const int64_t C = config().hidden, V = shard_.part().vocab, real = shard_.vocab_real();
  const int64_t v0 = shard_.vocab_begin();
  const bool tp = tensor_parallel();
  const ParamTensor* head = shard_.classifier();
  const Float* lnf = acts_[slot].lnf.data();
  const Float* w = params_.data() + head->offset;  // [V, C]
  Float* dw = weights_frozen_ ? nullptr : grads_.data() + head->offset;
  for (int64_t start = 0; start < N; start += kClassifierChunk) {
    const int64_t rows = std::min(kClassifierChunk, N - start);
    // logits [rows, V] = lnf[rows, C] @ w[V, C]^T
    MatmulForward(logits_.data(), lnf + start * C, w, static_cast<const Float*>(nullptr), rows, C,
                  V);
    if (real < V) {  // vocabulary padding (tensor parallelism): never a prediction
      for (int64_t r = 0; r < rows; ++r)
        std::fill(logits_.data() + r * V + real, logits_.data() + (r + 1) * V,
                  -std::numeric_limits<Float>::infinity());
    }
    if (argmax) {
      ArgmaxRows(argmax + start, logits_.data(), rows, V);
      continue;
    }
    if (!tp) {
      // probs overwrite logits; then dlogits overwrite probs
      CrossEntropyForward(losses + start, logits_.data(), logits_.data(), targets + start, rows, V);
    } else {
      Float* maxes = xent_.data();
      Float* sums = maxes + kClassifierChunk;  // then the target logits: one all-reduce
      Float* target_logits = sums + rows;
      RowMax(maxes, logits_.data(), rows, V);
      AllReduce(maxes, rows, dist::ReduceOp::kMax);
      ShiftedExp(logits_.data(), sums, target_logits, logits_.data(), maxes, targets + start, rows,
                 V, v0);
      AllReduce(sums, 2 * rows, dist::ReduceOp::kSum);
      NormalizeXent(losses + start, logits_.data(), sums, target_logits, maxes, rows, V);
    }
    if (!dlosses) continue;
    CrossEntropyBackward(logits_.data(), logits_.data(), targets + start, dlosses + start, rows, V,
                         v0);
    MatmulBackward(dlnf_.data() + start * C, dw, static_cast<Float*>(nullptr), logits_.data(),
                   lnf + start * C, w, rows, C, V);
  }
  // the head is column-parallel over the vocabulary: its input gradient is summed over the
  // ranks (under sequence parallelism reduce-scattered by the caller)
  if (dlosses && !sequence_parallel_) AllReduce(dlnf_.data(), N * C, dist::ReduceOp::kSum);
}

template <typename Float>
void Model<Float>::BackwardStage(int slot, const int32_t* inputs, const int32_t* targets,
                                 const uint8_t* mask, int64_t B, int64_t T, Float loss_scale,
                                 double* loss_sum, int64_t* count,
                                 const SplicedRows<Float>* spliced) {
  const ModelConfig& c = config();
  const ModelPart& part = shard_.part();
  const int64_t N = B * T, C = c.hidden, F = part.ffn_hidden, HS = c.head_dim();
  const int64_t NH = part.heads, KVH = part.kv_heads, Q = NH * HS, QKV = (NH + 2 * KVH) * HS;
  const bool llama = c.family == Family::kLlama, sp = sequence_parallel_;
  const int64_t S = StreamRows(N);  // rows of the residual stream (and of dres_) here
  Acts& a = acts_[slot];
  auto zero = [](std::vector<Float>& v, int64_t n) {
    std::fill(v.begin(), v.begin() + n, Float(0));
  };
  *loss_sum = 0;
  *count = 0;
  if (!CheckStreamSplit(B, T)) return;
  // The gradient of a row-parallel output [N, C]: dres_, or its rows of every
  // rank gathered (sequence parallelism).
  auto output_gradient = [&]() -> const Float* {
    if (!sp) return dres_.data();
    AllGatherRows(dres_.data(), tmp_.data(), N);
    return tmp_.data();
  };
  // A column-parallel input gradient din [N, C], summed over the TP group:
  // whole, or this rank's rows (sequence parallelism).
  auto input_gradient = [&](Float* din) -> const Float* {
    if (!sp) {
      AllReduce(din, N * C, dist::ReduceOp::kSum);
      return din;
    }
    ReduceScatterRows(din, rows_.data(), N);
    return rows_.data();
  };
  // A norm's backward over the stream's S rows: dout -> dres_ (accumulated).
  auto norm_backward = [&](Float* dw, Float* db, const Float* dout, const Float* x, const Float* w,
                           const Float* mean, const Float* rstd) {
    NormBackward(dw, db, [&](Float* dw_part, Float* db_part) {
      if (llama) {
        RmsNormBackward(dres_.data(), dw_part, dout, x, w, rstd, S, C);
      } else {
        LayerNormBackward(dres_.data(), dw_part, db_part, dout, x, w, mean, rstd, S, C);
      }
    });
  };
  if (part.head) {
    for (int64_t n = 0; n < N; ++n) dlosses_[n] = (!mask || mask[n]) ? loss_scale : Float(0);
    zero(dlnf_, N * C);
    Classifier(slot, targets, N, losses_.data(), dlosses_.data(), nullptr);
    double sum = 0;
    int64_t n_in = 0;
    for (int64_t n = 0; n < N; ++n) {
      if (mask && !mask[n]) continue;
      sum += static_cast<double>(losses_[n]);
      ++n_in;
    }
    *loss_sum = sum;
    *count = n_in;
    // final norm: dlnf -> dres (gradient of the last residual stream)
    const Float* dlnf = dlnf_.data();
    if (sp) {
      ReduceScatterRows(dlnf_.data(), rows_.data(), N);
      dlnf = rows_.data();
    }
    zero(dres_, S * C);
    const ParamTensor* nw = layout().Find(llama ? "model.norm.weight" : "transformer.ln_f.weight");
    const ParamTensor* nb = llama ? nullptr : layout().Find("transformer.ln_f.bias");
    Float* dnw = weights_frozen_ ? nullptr : grads_.data() + nw->offset;
    Float* dnb = weights_frozen_ || !nb ? nullptr : grads_.data() + nb->offset;
    norm_backward(dnw, dnb, dlnf, a.residual[layers_].data(), params_.data() + nw->offset,
                  a.lnf_mean.data(), a.lnf_rstd.data());
    if (!weights_frozen_)
      GradientsReady(FinalUnit());  // the classifier's lm_head gradient came first
    Release(FinalUnit());
  }
  // Otherwise dres holds the next stage's input gradient (output_grad()).
  for (int64_t l = layers_ - 1; l >= 0; --l) {
    // Next: the layer below; none after the stage's first (the embedding backward reads no
    // parameters).
    const int unit = LayerUnit(l);
    Acquire(unit, l > 0 ? unit - 1 : -1);
    LayerParams p = Layer(params_, l);
    const LayerParams g = weights_frozen_ ? LayerParams{} : Layer(grads_, l);  // frozen: all null
    // dres holds d(residual[l+1]) = d(res2) through the skip + d(mlp down output)
    zero(dact_, N * F);
    MatmulBackward(dact_.data(), g.down_w, g.down_b, output_gradient(), a.act[l].data(), p.down_w,
                   N, F, C);
    zero(dln_, N * C);
    if (llama) {
      zero(dfc_, N * 2 * F);
      SwiGluBackward(dfc_.data(), dact_.data(), a.fc[l].data(), N, F);
      MatmulBackward(dln_.data(), g.fc_w, g.fc_b, dfc_.data(), a.ln2[l].data(), p.fc_w, N, C,
                     2 * F);
    } else {
      zero(dfc_, N * F);
      GeluBackward(dfc_.data(), a.fc[l].data(), dact_.data(), N * F);
      MatmulBackward(dln_.data(), g.fc_w, g.fc_b, dfc_.data(), a.ln2[l].data(), p.fc_w, N, C, F);
    }
    norm_backward(g.ln2_w, g.ln2_b, input_gradient(dln_.data()), a.res2[l].data(), p.ln2_w,
                  a.ln2_mean[l].data(), a.ln2_rstd[l].data());
    // dres now holds d(res2) = d(residual[l]) through the skip + d(attention proj output)
    zero(datty_, N * Q);
    MatmulBackward(datty_.data(), g.proj_w, g.proj_b, output_gradient(), a.atty[l].data(), p.proj_w,
                   N, Q, C);
    zero(dqkv_, N * QKV);
    AttentionBackward(dqkv_.data(), datty_.data(), a.qkv[l].data(), a.att[l].data(), B, T, NH, KVH,
                      HS);
    if (llama) RopeBackward(dqkv_.data(), B, T, NH, KVH, HS, c.rope_theta);
    zero(dln_, N * C);
    MatmulBackward(dln_.data(), g.qkv_w, g.qkv_b, dqkv_.data(), a.ln1[l].data(), p.qkv_w, N, C,
                   QKV);
    norm_backward(g.ln1_w, g.ln1_b, input_gradient(dln_.data()), a.residual[l].data(), p.ln1_w,
                  a.ln1_mean[l].data(), a.ln1_rstd[l].data());
    if (!weights_frozen_) GradientsReady(unit);
    Release(unit);
  }
  if (!part.embeddings) return;  // dres = the gradient of this stage's input (input_grad())
  // The embedding backward reads no parameters.
  const bool frozen = weights_frozen_;
  Float* dwte = frozen ? nullptr : grads_.data() + shard_.token_embedding()->offset;
  Float* dwpe =
      llama || frozen ? nullptr : grads_.data() + layout().Find("transformer.wpe.weight")->offset;
  const Float* dout = output_gradient();  // [N, C]: dres_, or gathered into tmp_
  if (spliced && spliced->count > 0) {
    // The spliced rows' gradient goes to the caller (and, gpt, to the positions), not to wte.
    Float* d = const_cast<Float*>(dout);  // dres_ or tmp_, both this model's scratch
    for (int64_t i = 0; i < spliced->count; ++i) {
      Float* row = d + spliced->positions[i] * C;
      if (spliced->grad) std::copy(row, row + C, spliced->grad + i * C);
      if (dwpe) {
        Float* pos = dwpe + (spliced->positions[i] % T) * C;
        for (int64_t k = 0; k < C; ++k) pos[k] += row[k];
      }
      std::fill(row, row + C, Float(0));
    }
  }
  if (!frozen) {
    EmbeddingBackward(dwte, dwpe, dout, inputs, B, T, C, shard_.vocab_begin(), part.vocab);
    GradientsReady(0);
  }
  if (tied_here_) Release(0);
}

template <typename Float>
void Model<Float>::ReleaseAfterForward() {
  Release(FinalUnit());
  if (tied_here_) Release(0);
}

template <typename Float>
void Model<Float>::ForwardBackward(const int32_t* inputs, const int32_t* targets,
                                   const uint8_t* mask, int64_t B, int64_t T, Float loss_scale,
                                   double* loss_sum, int64_t* count,
                                   const SplicedRows<Float>* spliced) {
  ForwardStage(0, inputs, B, T, spliced);
  BackwardStage(0, inputs, targets, mask, B, T, loss_scale, loss_sum, count, spliced);
}

template <typename Float>
void Model<Float>::TokenLosses(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T,
                               Float* losses, const SplicedRows<Float>* spliced) {
  ForwardStage(0, inputs, B, T, spliced);
  Classifier(0, targets, B * T, losses, nullptr, nullptr);
  ReleaseAfterForward();
}

template <typename Float>
void Model<Float>::NextTokenArgmax(const int32_t* inputs, int64_t B, int64_t T, int32_t* argmax) {
  ForwardStage(0, inputs, B, T);
  Classifier(0, nullptr, B * T, nullptr, nullptr, argmax);
  ReleaseAfterForward();
}

template <typename Float>
void Model<Float>::LastTokenArgmax(const int32_t* inputs, const int64_t* lengths, int64_t B,
                                   int64_t T, int32_t* argmax, const SplicedRows<Float>* spliced) {
  ForwardStage(0, inputs, B, T, spliced);
  // gather the last real position of each row to the front of lnf (rows b <= b*T+len-1, in order)
  const int64_t C = config().hidden;
  std::vector<Float>& lnf = acts_[0].lnf;
  for (int64_t b = 0; b < B; ++b) {
    const Float* src = lnf.data() + (b * T + lengths[b] - 1) * C;
    std::copy(src, src + C, lnf.data() + b * C);
  }
  Classifier(0, nullptr, B, nullptr, nullptr, argmax);
  ReleaseAfterForward();
}

template class Model<float>;
template class Model<double>;

}  // namespace bm::train::cpu
