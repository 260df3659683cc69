#include "trainer/cuda/param_layout.h"

#include <fmt/format.h>

#include <algorithm>

namespace bm::train::cuda {

size_t ParamLayout::Add(std::string name, int rows, int cols, bool decay) {
  ParamTensor t{std::move(name), rows, cols, total_, decay};
  const size_t size = (t.numel() + 63) / 64 * 64;
  if (!segments_.empty() && segments_.back().decay == decay)
    segments_.back().numel += size;
  else
    segments_.push_back({total_, size, decay});
  total_ += size;
  tensors_.push_back(t);
  return t.offset;
}

// Pads the unit that began after the previous one to a multiple of unit_align_.
void ParamLayout::EndUnit() {
  const size_t begin = units_.empty() ? 0 : units_.back().end();
  const size_t end = (total_ + unit_align_ - 1) / unit_align_ * unit_align_;
  segments_.back().numel += end - total_;
  total_ = end;
  units_.push_back({begin, end - begin, false});
}

ParamLayout::ParamLayout(const ModelSpec& s, size_t unit_align)
    : unit_align_(unit_align), embeddings_(s.embeddings), head_(s.head) {
  // This GPU's share under tensor parallelism (the whole model with tp 1).
  int c = s.hidden, d = s.head_dim(), h = s.local_heads() * d, f = s.local_ffn();
  bool gpt = s.family == Family::kGpt;
  int qkv_rows = (s.local_heads() + 2 * (gpt ? s.local_heads() : s.local_kv_heads())) * d;
  const std::string wte_name = gpt ? "transformer.wte.weight" : "model.embed_tokens.weight";
  if (s.embeddings) {
    wte = Add(wte_name, s.local_vocab(), c, true);
    if (gpt) wpe = Add("transformer.wpe.weight", s.max_positions, c, true);
    EndUnit();
  }
  // This stage's layers, named by their index in the whole model.
  layers.resize(s.stage_layers());
  for (int l = 0; l < s.stage_layers(); ++l) {
    LayerParams& p = layers[l];
    const int g = s.layer_begin + l;
    std::string pre =
        gpt ? fmt::format("transformer.h.{}.", g) : fmt::format("model.layers.{}.", g);
    if (gpt) {
      p.qkv_w = Add(pre + "attn.c_attn.weight", qkv_rows, c, true);
      p.proj_w = Add(pre + "attn.c_proj.weight", c, h, true);
      p.fc_w = Add(pre + "mlp.c_fc.weight", f, c, true);
      p.fc2_w = Add(pre + "mlp.c_proj.weight", c, f, true);
      p.norm1_w = Add(pre + "ln_1.weight", c, 1, false);
      p.norm1_b = Add(pre + "ln_1.bias", c, 1, false);
      p.qkv_b = Add(pre + "attn.c_attn.bias", qkv_rows, 1, false);
      p.proj_b = Add(pre + "attn.c_proj.bias", c, 1, false);
      p.norm2_w = Add(pre + "ln_2.weight", c, 1, false);
      p.norm2_b = Add(pre + "ln_2.bias", c, 1, false);
      p.fc_b = Add(pre + "mlp.c_fc.bias", f, 1, false);
      p.fc2_b = Add(pre + "mlp.c_proj.bias", c, 1, false);
    } else {
      p.qkv_w = Add(pre + "self_attn.qkv_proj.weight", qkv_rows, c, true);
      p.proj_w = Add(pre + "self_attn.o_proj.weight", c, h, true);
      p.fc_w = Add(pre + "mlp.gate_up_proj.weight", 2 * f, c, true);
      p.fc2_w = Add(pre + "mlp.down_proj.weight", c, f, true);
      p.norm1_w = Add(pre + "input_layernorm.weight", c, 1, false);
      p.norm2_w = Add(pre + "post_attention_layernorm.weight", c, 1, false);
    }
    EndUnit();
  }
  if (!s.head) return;
  // The head: the untied lm_head, the tied embedding itself (one stage) or its copy (the last
  // of several, named as the embedding).
  lm_head =
      s.tied_here() ? wte : Add(s.tied ? wte_name : "lm_head.weight", s.local_vocab(), c, true);
  normf_w = Add(gpt ? "transformer.ln_f.weight" : "model.norm.weight", c, 1, false);
  if (gpt) normf_b = Add("transformer.ln_f.bias", c, 1, false);
  EndUnit();
}

std::vector<Range> ParamLayout::AddedGradients() const {
  std::vector<size_t> written;
  if (head_) written.push_back(lm_head);
  for (const LayerParams& p : layers)
    for (size_t w : {p.qkv_w, p.proj_w, p.fc_w, p.fc2_w}) written.push_back(w);
  std::vector<std::pair<size_t, size_t>> spans;
  for (const ParamTensor& t : tensors_)
    if (std::find(written.begin(), written.end(), t.offset) != written.end())
      spans.push_back({t.offset, t.offset + t.numel()});
  std::sort(spans.begin(), spans.end());
  std::vector<Range> added;
  size_t at = 0;
  for (auto [begin, end] : spans) {
    if (begin > at) added.push_back({at, begin - at});
    at = std::max(at, end);
  }
  if (at < total_) added.push_back({at, total_ - at});
  return added;
}

size_t ParamLayout::count() const {
  size_t n = 0;
  for (const ParamTensor& t : tensors_) n += t.numel();
  return n;
}

const ParamTensor* ParamLayout::Find(const std::string& name) const {
  for (const ParamTensor& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace bm::train::cuda
