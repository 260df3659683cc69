#include "trainer/model/layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trainer/rng.h"

namespace bm::train {

ModelPart ModelPart::Whole(const ModelConfig& c) {
  ModelPart p;
  p.layer_end = c.layers;
  p.vocab = c.vocab;
  p.heads = c.heads;
  p.kv_heads = c.kv_heads;
  p.ffn_hidden = c.ffn_hidden;
  return p;
}

ParamLayout::ParamLayout(const ModelConfig& c) : ParamLayout(c, ModelPart::Whole(c)) {}

ParamLayout::ParamLayout(const ModelConfig& c, const ModelPart& part) {
  const int64_t V = part.vocab, C = c.hidden, F = part.ffn_hidden, HS = c.head_dim();
  const int64_t Q = part.heads * HS, KV = part.kv_heads * HS;
  const bool llama = c.family == Family::kLlama;
  const std::string wte = llama ? "model.embed_tokens.weight" : "transformer.wte.weight";
  if (part.embeddings) {
    StartUnit("embeddings");
    Add(wte, {V, C}, InitKind::kNormal);
    if (!llama) Add("transformer.wpe.weight", {c.max_seq, C}, InitKind::kNormal);
  }
  for (int64_t l = part.layer_begin; l < part.layer_end; ++l) {
    StartUnit(fmt::format("layer {}", l));
    if (llama) {
      std::string p = fmt::format("model.layers.{}.", l);
      Add(p + "input_layernorm.weight", {C}, InitKind::kOnes);
      Add(p + "self_attn.q_proj.weight", {Q, C}, InitKind::kNormal);
      Add(p + "self_attn.k_proj.weight", {KV, C}, InitKind::kNormal);
      Add(p + "self_attn.v_proj.weight", {KV, C}, InitKind::kNormal);
      Add(p + "self_attn.o_proj.weight", {C, Q}, InitKind::kNormalResidual);
      Add(p + "post_attention_layernorm.weight", {C}, InitKind::kOnes);
      Add(p + "mlp.gate_proj.weight", {F, C}, InitKind::kNormal);
      Add(p + "mlp.up_proj.weight", {F, C}, InitKind::kNormal);
      Add(p + "mlp.down_proj.weight", {C, F}, InitKind::kNormalResidual);
      continue;
    }
    std::string p = fmt::format("transformer.h.{}.", l);
    Add(p + "ln_1.weight", {C}, InitKind::kOnes);
    Add(p + "ln_1.bias", {C}, InitKind::kZeros);
    Add(p + "attn.c_attn.weight", {Q + 2 * KV, C}, InitKind::kNormal, true);
    Add(p + "attn.c_attn.bias", {Q + 2 * KV}, InitKind::kZeros);
    Add(p + "attn.c_proj.weight", {C, Q}, InitKind::kNormalResidual, true);
    Add(p + "attn.c_proj.bias", {C}, InitKind::kZeros);
    Add(p + "ln_2.weight", {C}, InitKind::kOnes);
    Add(p + "ln_2.bias", {C}, InitKind::kZeros);
    Add(p + "mlp.c_fc.weight", {F, C}, InitKind::kNormal, true);
    Add(p + "mlp.c_fc.bias", {F}, InitKind::kZeros);
    Add(p + "mlp.c_proj.weight", {C, F}, InitKind::kNormalResidual, true);
    Add(p + "mlp.c_proj.bias", {C}, InitKind::kZeros);
  }
  if (!part.head) return;
  StartUnit("final");
  if (llama) {
    Add("model.norm.weight", {C}, InitKind::kOnes);
  } else {
    Add("transformer.ln_f.weight", {C}, InitKind::kOnes);
    Add("transformer.ln_f.bias", {C}, InitKind::kZeros);
  }
  if (!c.tied_embeddings) Add("lm_head.weight", {V, C}, InitKind::kNormal);
  if (part.tied_copy) Add(wte, {V, C}, InitKind::kNormal);
}

void ParamLayout::StartUnit(std::string name) { units_.push_back({std::move(name), total_, 0}); }

ParamTensor& ParamLayout::Add(std::string name, std::vector<int64_t> shape, InitKind init,
                              bool transposed) {
  ParamTensor t;
  t.name = std::move(name);
  t.numel = 1;
  for (int64_t d : shape) t.numel *= d;
  t.shape = std::move(shape);
  t.offset = total_;
  t.transposed_in_checkpoint = transposed;
  t.weight_decay = t.shape.size() == 2;
  t.init = init;
  total_ += t.numel;
  units_.back().numel += t.numel;
  tensors_.push_back(std::move(t));
  return tensors_.back();
}

void ParamLayout::Append(const ParamLayout& other, const std::string& name_prefix,
                         const std::string& unit_prefix) {
  for (const ParamUnit& u : other.units_)
    units_.push_back({unit_prefix + u.name, total_ + u.offset, u.numel});
  for (const ParamTensor& t : other.tensors_) {
    tensors_.push_back(t);
    tensors_.back().name = name_prefix + t.name;
    tensors_.back().offset += total_;
  }
  total_ += other.total_;
}

void ParamLayout::MarkFrozen(size_t first) {
  for (size_t i = first; i < tensors_.size(); ++i) {
    tensors_[i].frozen = true;
    tensors_[i].weight_decay = false;
  }
}

const ParamTensor* ParamLayout::Find(const std::string& name) const {
  int i = Index(name);
  return i < 0 ? nullptr : &tensors_[i];
}

int ParamLayout::Index(const std::string& name) const {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<float> InitParameters(const ModelConfig& config, const ParamLayout& layout,
                                  uint64_t seed) {
  std::vector<float> params(layout.total());
  InitParameterRange(config, layout, seed, 0, params);
  return params;
}

void InitParameterRange(const ModelConfig& config, const ParamLayout& layout, uint64_t seed,
                        int64_t begin, std::span<float> out) {
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(config.layers));
  ForEachTensorRange(
      layout, begin, static_cast<int64_t>(out.size()),
      [&](size_t t, int64_t first, int64_t n, int64_t at) {
        const ParamTensor& p = layout.tensors()[t];
        float* dst = out.data() + at;
        const double scale = p.init == InitKind::kNormalResidual ? residual_std : 0.02;
        switch (p.init) {
          case InitKind::kZeros:
            std::fill(dst, dst + n, 0.0f);
            break;
          case InitKind::kOnes:
            std::fill(dst, dst + n, 1.0f);
            break;
          case InitKind::kNormal:
          case InitKind::kNormalResidual:
#pragma omp parallel for schedule(static)
            for (int64_t j = 0; j < n; ++j)
              dst[j] = static_cast<float>(
                  scale * NormalAt(seed, kStreamInit + t, static_cast<uint64_t>(first + j)));
            break;
        }
      });
}

ParamSource SourceOf(std::span<const float> whole) {
  return [whole](int64_t begin, std::span<float> out) {
    std::copy_n(whole.begin() + begin, out.size(), out.begin());
  };
}

ParamSource InitialParameters(const ModelConfig& config, const ParamLayout& layout, uint64_t seed) {
  return [&config, &layout, seed](int64_t begin, std::span<float> out) {
    InitParameterRange(config, layout, seed, begin, out);
  };
}

}  // namespace bm::train
