#include "trainer/cpu/vision_tower.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "trainer/cpu/ops/attention.h"
#include "trainer/cpu/ops/gelu.h"
#include "trainer/cpu/ops/layernorm.h"
#include "trainer/cpu/ops/matmul.h"
#include "trainer/cpu/ops/patch.h"
#include "trainer/cpu/ops/residual.h"
#include "trainer/model/llava_layout.h"

namespace bm::train::cpu {

template <typename Float>
VisionTower<Float>::VisionTower(const VisionConfig& config, int64_t max_images)
    : config_(config), layout_(VisionLayout(config)), max_images_(max_images) {
  const VisionConfig& c = config_;
  const int64_t T = c.positions(), N = max_images * T, C = c.hidden, M = c.mlp;
  const int64_t NP = max_images * c.num_patches(), L = c.computed_layers();
  params_.assign(layout_.total(), Float(0));
  grads_.assign(layout_.total(), Float(0));
  acts_.patches.resize(NP * c.patch_dim());
  acts_.emb.resize(N * C);
  acts_.pre_mean.resize(N);
  acts_.pre_rstd.resize(N);
  auto per_layer = [&](std::vector<std::vector<Float>>& v, int64_t size, int64_t count) {
    v.assign(count, std::vector<Float>(size));
  };
  per_layer(acts_.residual, N * C, L + 1);
  per_layer(acts_.ln1, N * C, L);
  per_layer(acts_.ln1_mean, N, L);
  per_layer(acts_.ln1_rstd, N, L);
  per_layer(acts_.qkv, N * 3 * C, L);
  per_layer(acts_.att, max_images * c.heads * T * T, L);
  per_layer(acts_.atty, N * C, L);
  per_layer(acts_.res2, N * C, L);
  per_layer(acts_.ln2, N * C, L);
  per_layer(acts_.ln2_mean, N, L);
  per_layer(acts_.ln2_rstd, N, L);
  per_layer(acts_.fc, N * M, L);
  per_layer(acts_.act, N * M, L);
  features_.resize(NP * C);
  dres_.resize(N * C);
  dln_.resize(N * C);
  dqkv_.resize(N * 3 * C);
  datty_.resize(N * C);
  dfc_.resize(N * M);
  dact_.resize(N * M);
  demb_.resize(N * C);
  dpatch_emb_.resize(NP * C);
  dpatches_.resize(NP * c.patch_dim());
}

template <typename Float>
Float* VisionTower<Float>::At(std::vector<Float>& buffer, const char* name) const {
  return buffer.data() + layout_.Find(std::string(kVisionTowerPrefix) + name)->offset;
}

template <typename Float>
typename VisionTower<Float>::LayerParams VisionTower<Float>::Layer(std::vector<Float>& buf,
                                                                   int64_t l) const {
  const std::string p = fmt::format("{}encoder.layers.{}.", kVisionTowerPrefix, l);
  auto at = [&](const char* name) { return buf.data() + layout_.Find(p + name)->offset; };
  // q|k|v weights are contiguous ([3C, C]), so are their biases ([3C]): one fused matmul
  return {at("layer_norm1.weight"),
          at("layer_norm1.bias"),
          at("self_attn.q_proj.weight"),
          at("self_attn.q_proj.bias"),
          at("self_attn.out_proj.weight"),
          at("self_attn.out_proj.bias"),
          at("layer_norm2.weight"),
          at("layer_norm2.bias"),
          at("mlp.fc1.weight"),
          at("mlp.fc1.bias"),
          at("mlp.fc2.weight"),
          at("mlp.fc2.bias")};
}

template <typename Float>
void VisionTower<Float>::Forward(const Float* pixels, int64_t n) {
  const VisionConfig& c = config_;
  const int64_t T = c.positions(), N = n * T, C = c.hidden, M = c.mlp, NH = c.heads;
  const int64_t np = c.num_patches(), PD = c.patch_dim(), L = c.computed_layers();
  Acts& a = acts_;
  // patch embedding: [n*np, PD] @ Wpatch[C, PD]^T, written to each image's rows 1..np
  PatchForward(a.patches.data(), pixels, n, c.channels, c.image_size, c.patch);
  MatmulForward(dpatch_emb_.data(), a.patches.data(),
                At(params_, "embeddings.patch_embedding.weight"),
                static_cast<const Float*>(nullptr), n * np, PD, C);
  const Float* cls = At(params_, "embeddings.class_embedding");
  const Float* pos = At(params_, "embeddings.position_embedding.weight");
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < N; ++bt) {
    const int64_t b = bt / T, t = bt % T;
    const Float* src = t == 0 ? cls : dpatch_emb_.data() + (b * np + t - 1) * C;
    Float* dst = a.emb.data() + bt * C;
    for (int64_t i = 0; i < C; ++i) dst[i] = src[i] + pos[t * C + i];
  }
  LayerNormForward(a.residual[0].data(), a.pre_mean.data(), a.pre_rstd.data(), a.emb.data(),
                   At(params_, "pre_layrnorm.weight"), At(params_, "pre_layrnorm.bias"), N, C,
                   c.norm_eps);
  for (int64_t l = 0; l < L; ++l) {
    const LayerParams p = Layer(params_, l);
    const Float* x = a.residual[l].data();
    LayerNormForward(a.ln1[l].data(), a.ln1_mean[l].data(), a.ln1_rstd[l].data(), x, p.ln1_w,
                     p.ln1_b, N, C, c.norm_eps);
    MatmulForward(a.qkv[l].data(), a.ln1[l].data(), p.qkv_w, p.qkv_b, N, C, 3 * C);
    AttentionForward(a.atty[l].data(), a.att[l].data(), a.qkv[l].data(), n, T, NH, NH, c.head_dim(),
                     /*causal=*/false);
    MatmulForward(dln_.data(), a.atty[l].data(), p.out_w, p.out_b, N, C, C);
    ResidualForward(a.res2[l].data(), x, dln_.data(), N * C);
    LayerNormForward(a.ln2[l].data(), a.ln2_mean[l].data(), a.ln2_rstd[l].data(), a.res2[l].data(),
                     p.ln2_w, p.ln2_b, N, C, c.norm_eps);
    MatmulForward(a.fc[l].data(), a.ln2[l].data(), p.fc1_w, p.fc1_b, N, C, M);
    QuickGeluForward(a.act[l].data(), a.fc[l].data(), N * M);
    MatmulForward(dln_.data(), a.act[l].data(), p.fc2_w, p.fc2_b, N, M, C);
    ResidualForward(a.residual[l + 1].data(), a.res2[l].data(), dln_.data(), N * C);
  }
  // the patch tokens of hidden_states[L]
  for (int64_t b = 0; b < n; ++b)
    std::copy_n(a.residual[L].data() + (b * T + 1) * C, np * C, features_.data() + b * np * C);
}

template <typename Float>
void VisionTower<Float>::Backward(const Float* dfeatures, int64_t n, Float* dpixels) {
  const VisionConfig& c = config_;
  const int64_t T = c.positions(), N = n * T, C = c.hidden, M = c.mlp, NH = c.heads;
  const int64_t np = c.num_patches(), PD = c.patch_dim(), L = c.computed_layers();
  Acts& a = acts_;
  auto zero = [](std::vector<Float>& v, int64_t count) {
    std::fill(v.begin(), v.begin() + count, Float(0));
  };
  // dres_ = the gradient of hidden_states[L]: dfeatures at the patch tokens, 0 at the class tokens
  zero(dres_, N * C);
  for (int64_t b = 0; b < n; ++b)
    std::copy_n(dfeatures + b * np * C, np * C, dres_.data() + (b * T + 1) * C);
  for (int64_t l = L - 1; l >= 0; --l) {
    const LayerParams p = Layer(params_, l);
    const LayerParams g = Layer(grads_, l);
    // MLP block; dres_ holds d x_{l+1}, and through the residual d res2
    zero(dact_, N * M);
    MatmulBackward(dact_.data(), g.fc2_w, g.fc2_b, dres_.data(), a.act[l].data(), p.fc2_w, N, M, C);
    zero(dfc_, N * M);
    QuickGeluBackward(dfc_.data(), a.fc[l].data(), dact_.data(), N * M);
    zero(dln_, N * C);
    MatmulBackward(dln_.data(), g.fc1_w, g.fc1_b, dfc_.data(), a.ln2[l].data(), p.fc1_w, N, C, M);
    LayerNormBackward(dres_.data(), g.ln2_w, g.ln2_b, dln_.data(), a.res2[l].data(), p.ln2_w,
                      a.ln2_mean[l].data(), a.ln2_rstd[l].data(), N, C);
    // attention block; dres_ holds d res2, and through the residual d x_l
    zero(datty_, N * C);
    MatmulBackward(datty_.data(), g.out_w, g.out_b, dres_.data(), a.atty[l].data(), p.out_w, N, C,
                   C);
    zero(dqkv_, N * 3 * C);
    AttentionBackward(dqkv_.data(), datty_.data(), a.qkv[l].data(), a.att[l].data(), n, T, NH, NH,
                      c.head_dim(), /*causal=*/false);
    zero(dln_, N * C);
    MatmulBackward(dln_.data(), g.qkv_w, g.qkv_b, dqkv_.data(), a.ln1[l].data(), p.qkv_w, N, C,
                   3 * C);
    LayerNormBackward(dres_.data(), g.ln1_w, g.ln1_b, dln_.data(), a.residual[l].data(), p.ln1_w,
                      a.ln1_mean[l].data(), a.ln1_rstd[l].data(), N, C);
  }
  zero(demb_, N * C);
  LayerNormBackward(demb_.data(), At(grads_, "pre_layrnorm.weight"),
                    At(grads_, "pre_layrnorm.bias"), dres_.data(), a.emb.data(),
                    At(params_, "pre_layrnorm.weight"), a.pre_mean.data(), a.pre_rstd.data(), N, C);
  // embeddings: the class token's and the positions' gradients summed over images in order
  Float* dcls = At(grads_, "embeddings.class_embedding");
  Float* dpos = At(grads_, "embeddings.position_embedding.weight");
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < T * C; ++i) {
    Float sum = 0;
    for (int64_t b = 0; b < n; ++b) sum += demb_[b * T * C + i];
    dpos[i] += sum;
    if (i < C) dcls[i] += sum;
  }
  for (int64_t b = 0; b < n; ++b)
    std::copy_n(demb_.data() + (b * T + 1) * C, np * C, dpatch_emb_.data() + b * np * C);
  if (dpixels) zero(dpatches_, n * np * PD);
  MatmulBackward(dpixels ? dpatches_.data() : nullptr,
                 At(grads_, "embeddings.patch_embedding.weight"), static_cast<Float*>(nullptr),
                 dpatch_emb_.data(), a.patches.data(),
                 At(params_, "embeddings.patch_embedding.weight"), n * np, PD, C);
  if (dpixels) PatchBackward(dpixels, dpatches_.data(), n, c.channels, c.image_size, c.patch);
}

template <typename Float>
int64_t VisionTower<Float>::bytes() const {
  int64_t count = static_cast<int64_t>(params_.size() + grads_.size() + features_.size());
  auto add = [&](const std::vector<Float>& v) { count += static_cast<int64_t>(v.size()); };
  auto add_all = [&](const std::vector<std::vector<Float>>& vs) {
    for (const auto& v : vs) add(v);
  };
  for (const auto* v : {&acts_.patches, &acts_.emb, &acts_.pre_mean, &acts_.pre_rstd, &dres_, &dln_,
                        &dqkv_, &datty_, &dfc_, &dact_, &demb_, &dpatch_emb_, &dpatches_})
    add(*v);
  for (const auto* vs : {&acts_.residual, &acts_.ln1, &acts_.ln1_mean, &acts_.ln1_rstd, &acts_.qkv,
                         &acts_.att, &acts_.atty, &acts_.res2, &acts_.ln2, &acts_.ln2_mean,
                         &acts_.ln2_rstd, &acts_.fc, &acts_.act})
    add_all(*vs);
  return count * static_cast<int64_t>(sizeof(Float));
}

template class VisionTower<float>;
template class VisionTower<double>;

}  // namespace bm::train::cpu
