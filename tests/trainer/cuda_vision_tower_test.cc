// CudaVisionTower and CudaProjector (trainer/cuda/cuda_vision_tower.h) against two oracles:
// the CPU tower and projector in double (trainer/cpu/vision_tower.h, projector.h), and a tower
// composed here of the kernels' CPU twins (each checked on hand values and against its kernel
// in cuda_ops_test.cc) with double-accumulated matmuls. Features, projector output and input
// gradient, and every parameter's gradient, per tensor, within the whole-model tolerances of
// cuda_model_test.cc (relative L2 error 1e-4 in fp32, 5e-2 in bf16 / fp16); the tensors never
// computed (post_layernorm, the layers past the feature layer) must get exactly zero gradient.
// Without a GPU: the two oracles against each other, and the argument checks that run before
// any allocation; the rest skip, saying so.
#include "trainer/cuda/cuda_vision_tower.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/trainer/cuda_test_util.h"
#include "trainer/cpu/projector.h"
#include "trainer/cpu/vision_tower.h"
#include "trainer/cuda/cudnn_attention.h"
#include "trainer/cuda/kernels/activation.cuh"
#include "trainer/cuda/kernels/attention.cuh"
#include "trainer/cuda/kernels/layernorm.cuh"
#include "trainer/cuda/kernels/residual.cuh"
#include "trainer/cuda/kernels/split_master.h"  // FloatBits
#include "trainer/cuda/kernels/vision_embed.cuh"
#include "trainer/model/llava_layout.h"
#include "trainer/model/vision_config.h"

namespace bm::train::cuda {
namespace {

using testing::DeviceBuffer;
using testing::RandomVector;
using testing::RelativeError;

using Vec = std::vector<float>;

// y [rows, out] = x [rows, in] · wᵀ (w [out, in]) + b (may be null), accumulated in double.
void Linear(float* y, const float* x, const float* w, const float* b, int rows, int in, int out) {
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o) {
      double s = b ? b[o] : 0.0;
      for (int i = 0; i < in; ++i) s += double(x[size_t(r) * in + i]) * w[size_t(o) * in + i];
      y[size_t(r) * out + o] = static_cast<float>(s);
    }
}
// dx = dy · w (written); dw += dyᵀ · x; db += Σ_rows dy (db may be null).
void LinearBackward(float* dx, float* dw, float* db, const float* dy, const float* x,
                    const float* w, int rows, int in, int out) {
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < in; ++i) {
      double s = 0.0;
      for (int o = 0; o < out; ++o) s += double(dy[size_t(r) * out + o]) * w[size_t(o) * in + i];
      if (dx) dx[size_t(r) * in + i] = static_cast<float>(s);
    }
  for (int o = 0; o < out; ++o) {
    for (int i = 0; i < in; ++i) {
      double s = 0.0;
      for (int r = 0; r < rows; ++r) s += double(dy[size_t(r) * out + o]) * x[size_t(r) * in + i];
      dw[size_t(o) * in + i] += static_cast<float>(s);
    }
    if (db) {
      double s = 0.0;
      for (int r = 0; r < rows; ++r) s += dy[size_t(r) * out + o];
      db[o] += static_cast<float>(s);
    }
  }
}
void Add(Vec& a, const Vec& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
}

// The tower on the CPU: what CudaVisionTower computes, op by op, in fp32 with double sums.
class TwinTower {
 public:
  TwinTower(const VisionConfig& c, const ParamLayout& layout, const Vec& params)
      : c_(c), layout_(layout), p_(params) {}

  Vec Forward(const Vec& pixels, int n) {
    n_ = n;
    const int C = Cv(), rows = Rows(), np = Np();
    const int s = int(c_.image_size), pt = int(c_.patch), pd = int(c_.patch_dim());
    im2col_.assign(size_t(n) * np * pd, 0.0f);
    PatchIm2ColCpu(im2col_.data(), pixels.data(), n, s, pt);
    Vec patches(size_t(n) * np * C);
    Linear(patches.data(), im2col_.data(), P("embeddings.patch_embedding.weight"), nullptr, n * np,
           pd, C);
    emb_.assign(size_t(rows) * C, 0.0f);
    VisionEmbedForwardCpu(emb_.data(), patches.data(), P("embeddings.class_embedding"),
                          P("embeddings.position_embedding.weight"), n, np, C);
    res_.assign(1, Vec(size_t(rows) * C));
    pre_mean_.assign(rows, 0.0f), pre_rstd_.assign(rows, 0.0f);
    LayerNormForwardCpu(res_[0].data(), pre_mean_.data(), pre_rstd_.data(), emb_.data(),
                        P("pre_layrnorm.weight"), P("pre_layrnorm.bias"), rows, C);
    acts_.clear();
    for (int l = 0; l < L(); ++l) {
      Acts a;
      const std::string q = Layer(l);
      const Vec& x = res_[l];
      a.norm1.resize(x.size()), a.mean1.resize(rows), a.rstd1.resize(rows);
      LayerNormForwardCpu(a.norm1.data(), a.mean1.data(), a.rstd1.data(), x.data(),
                          P(q + "layer_norm1.weight"), P(q + "layer_norm1.bias"), rows, C);
      a.qkv.resize(size_t(rows) * 3 * C);
      // q|k|v weights and biases are contiguous (llava_layout.h): one [3C, C] linear.
      Linear(a.qkv.data(), a.norm1.data(), P(q + "self_attn.q_proj.weight"),
             P(q + "self_attn.q_proj.bias"), rows, C, 3 * C);
      a.att.resize(x.size()), a.lse.resize(size_t(n) * H() * T());
      AttentionForwardCpu(a.att.data(), a.lse.data(), a.qkv.data(), n, T(), H(), H(), D(),
                          /*causal=*/false);
      a.mid.resize(x.size());
      Linear(a.mid.data(), a.att.data(), P(q + "self_attn.out_proj.weight"),
             P(q + "self_attn.out_proj.bias"), rows, C, C);
      Add(a.mid, x);
      a.norm2.resize(x.size()), a.mean2.resize(rows), a.rstd2.resize(rows);
      LayerNormForwardCpu(a.norm2.data(), a.mean2.data(), a.rstd2.data(), a.mid.data(),
                          P(q + "layer_norm2.weight"), P(q + "layer_norm2.bias"), rows, C);
      a.pre.resize(size_t(rows) * M()), a.post.resize(a.pre.size());
      Linear(a.pre.data(), a.norm2.data(), P(q + "mlp.fc1.weight"), P(q + "mlp.fc1.bias"), rows, C,
             M());
      QuickGeluForwardCpu(a.post.data(), a.pre.data(), a.pre.size());
      Vec out(x.size());
      Linear(out.data(), a.post.data(), P(q + "mlp.fc2.weight"), P(q + "mlp.fc2.bias"), rows, M(),
             C);
      Add(out, a.mid);
      acts_.push_back(std::move(a));
      res_.push_back(std::move(out));
    }
    Vec features(size_t(n) * np * C);
    DropClassRowsCpu(features.data(), res_[L()].data(), n, np, C);
    return features;
  }

  // Adds the parameters' gradients (layout order) into *grads.
  void Backward(const Vec& dfeatures, Vec* grads) {
    g_ = grads;
    const int n = n_, C = Cv(), rows = Rows(), np = Np();
    Vec d(size_t(rows) * C);
    InsertClassRowsCpu(d.data(), dfeatures.data(), n, np, C);
    for (int l = L() - 1; l >= 0; --l) {
      const Acts& a = acts_[l];
      const std::string q = Layer(l);
      Vec dpost(a.post.size()), dpre(a.pre.size()), dnorm(d.size());
      LinearBackward(dpost.data(), G(q + "mlp.fc2.weight"), G(q + "mlp.fc2.bias"), d.data(),
                     a.post.data(), P(q + "mlp.fc2.weight"), rows, M(), C);
      QuickGeluBackwardCpu(dpre.data(), dpost.data(), a.pre.data(), a.pre.size());
      LinearBackward(dnorm.data(), G(q + "mlp.fc1.weight"), G(q + "mlp.fc1.bias"), dpre.data(),
                     a.norm2.data(), P(q + "mlp.fc1.weight"), rows, C, M());
      LayerNormBackwardCpu(d.data(), G(q + "layer_norm2.weight"), G(q + "layer_norm2.bias"),
                           dnorm.data(), a.mid.data(), P(q + "layer_norm2.weight"), a.mean2.data(),
                           a.rstd2.data(), rows, C);
      Vec datt(d.size()), dqkv(a.qkv.size());
      LinearBackward(datt.data(), G(q + "self_attn.out_proj.weight"),
                     G(q + "self_attn.out_proj.bias"), d.data(), a.att.data(),
                     P(q + "self_attn.out_proj.weight"), rows, C, C);
      AttentionBackwardCpu(dqkv.data(), datt.data(), a.att.data(), a.qkv.data(), a.lse.data(), n,
                           T(), H(), H(), D(), /*causal=*/false);
      LinearBackward(dnorm.data(), G(q + "self_attn.q_proj.weight"), G(q + "self_attn.q_proj.bias"),
                     dqkv.data(), a.norm1.data(), P(q + "self_attn.q_proj.weight"), rows, C, 3 * C);
      LayerNormBackwardCpu(d.data(), G(q + "layer_norm1.weight"), G(q + "layer_norm1.bias"),
                           dnorm.data(), res_[l].data(), P(q + "layer_norm1.weight"),
                           a.mean1.data(), a.rstd1.data(), rows, C);
    }
    Vec demb(d.size(), 0.0f);
    LayerNormBackwardCpu(demb.data(), G("pre_layrnorm.weight"), G("pre_layrnorm.bias"), d.data(),
                         emb_.data(), P("pre_layrnorm.weight"), pre_mean_.data(), pre_rstd_.data(),
                         rows, C);
    VisionEmbedBackwardCpu(G("embeddings.class_embedding"),
                           G("embeddings.position_embedding.weight"), demb.data(), n, np, C);
    Vec dpatches(size_t(n) * np * C);
    DropClassRowsCpu(dpatches.data(), demb.data(), n, np, C);
    LinearBackward(nullptr, G("embeddings.patch_embedding.weight"), nullptr, dpatches.data(),
                   im2col_.data(), P("embeddings.patch_embedding.weight"), n * np,
                   int(c_.patch_dim()), C);
  }

 private:
  struct Acts {
    Vec norm1, mean1, rstd1, qkv, att, lse, mid, norm2, mean2, rstd2, pre, post;
  };
  int64_t Offset(const std::string& name) const {
    const ParamTensor* t = layout_.Find(kVisionTowerPrefix + name);
    EXPECT_NE(t, nullptr) << name;
    return t ? t->offset : 0;
  }
  const float* P(const std::string& name) const { return p_.data() + Offset(name); }
  float* G(const std::string& name) const { return g_->data() + Offset(name); }
  static std::string Layer(int l) { return "encoder.layers." + std::to_string(l) + "."; }
  int Cv() const { return int(c_.hidden); }
  int M() const { return int(c_.mlp); }
  int H() const { return int(c_.heads); }
  int D() const { return int(c_.head_dim()); }
  int L() const { return int(c_.computed_layers()); }
  int Np() const { return int(c_.num_patches()); }
  int T() const { return int(c_.positions()); }
  int Rows() const { return n_ * T(); }

  VisionConfig c_;
  const ParamLayout& layout_;
  const Vec& p_;
  Vec* g_ = nullptr;
  int n_ = 0;
  Vec im2col_, emb_, pre_mean_, pre_rstd_;
  std::vector<Vec> res_;
  std::vector<Acts> acts_;
};

// The projector "mlp2x_gelu" on the CPU.
struct TwinProjector {
  const LlavaConfig& c;
  const ParamLayout& layout;
  const Vec& p;
  Vec x, pre, post;

  const float* P(const std::string& name) const {
    return p.data() + layout.Find(kProjectorPrefix + name)->offset;
  }
  float* G(Vec* g, const std::string& name) const {
    return g->data() + layout.Find(kProjectorPrefix + name)->offset;
  }
  Vec Forward(const Vec& features, int rows) {
    const int cv = int(c.vision.hidden), h = int(c.text.hidden);
    x = features;
    pre.resize(size_t(rows) * h), post.resize(pre.size());
    Linear(pre.data(), x.data(), P("linear_1.weight"), P("linear_1.bias"), rows, cv, h);
    GeluErfForwardCpu(post.data(), pre.data(), pre.size());
    Vec out(pre.size());
    Linear(out.data(), post.data(), P("linear_2.weight"), P("linear_2.bias"), rows, h, h);
    return out;
  }
  Vec Backward(const Vec& dout, int rows, Vec* g) {
    const int cv = int(c.vision.hidden), h = int(c.text.hidden);
    Vec dpost(post.size()), dpre(pre.size()), dx(x.size());
    LinearBackward(dpost.data(), G(g, "linear_2.weight"), G(g, "linear_2.bias"), dout.data(),
                   post.data(), P("linear_2.weight"), rows, h, h);
    GeluErfBackwardCpu(dpre.data(), dpost.data(), pre.data(), pre.size());
    LinearBackward(dx.data(), G(g, "linear_1.weight"), G(g, "linear_1.bias"), dpre.data(), x.data(),
                   P("linear_1.weight"), rows, cv, h);
    return dx;
  }
};

// Parameters with the scales a trained tower has: norm weights near 1, small biases, matrices
// scaled by 1/sqrt(fan-in), embeddings of order 0.5.
Vec TestParameters(const ParamLayout& layout, uint64_t seed) {
  Vec p(layout.total());
  for (const ParamTensor& t : layout.tensors()) {
    const bool norm = t.name.find("norm") != std::string::npos;
    const bool bias = t.name.size() > 5 && t.name.compare(t.name.size() - 5, 5, ".bias") == 0;
    float scale = 0.5f;
    if (bias) scale = 0.1f;
    if (!bias && t.shape.size() >= 2) {
      int64_t fan_in = 1;
      for (size_t i = 1; i < t.shape.size(); ++i) fan_in *= t.shape[i];
      scale = 1.0f / std::sqrt(float(fan_in));
    }
    if (norm && !bias) scale = 0.2f;
    Vec v = RandomVector(t.numel, scale, seed++);
    if (norm && !bias) {
      for (float& x : v) x += 1.0f;
    }
    std::copy(v.begin(), v.end(), p.begin() + t.offset);
  }
  return p;
}

// What the device sees of host values stored in dtype t, back in fp32.
Vec RoundedAs(const Vec& v, DType t) {
  if (t == DType::kBF16) return testing::Rounded<__nv_bfloat16>(v);
  if (t == DType::kF16) return testing::Rounded<__half>(v);
  return v;
}

constexpr DType kAllTypes[] = {DType::kF32, DType::kBF16, DType::kF16};
double Tol(DType t) { return t == DType::kF32 ? 1e-4 : 5e-2; }

// The device buffer of `n` elements of T at `ptr` as floats.
template <typename T>
Vec DownloadTyped(const void* ptr, size_t n) {
  std::vector<T> raw(n);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(raw.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  Vec out(n);
  for (size_t i = 0; i < n; ++i) out[i] = testing::ToFloat(raw[i]);
  return out;
}
Vec Download(const void* ptr, size_t n, DType t) {
  return WithElementType(t, [&](auto x) { return DownloadTyped<decltype(x)>(ptr, n); });
}

// A device copy of host values in dtype t; freed by the caller (cudaFree).
template <typename T>
void* UploadTyped(const Vec& host) {
  std::vector<T> raw(host.size());
  for (size_t i = 0; i < host.size(); ++i) raw[i] = testing::FromFloat<T>(host[i]);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(host.size(), 1) * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, raw.data(), raw.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return p;
}
void* UploadAs(const Vec& host, DType t) {
  return WithElementType(t, [&](auto x) { return UploadTyped<decltype(x)>(host); });
}

double Norm(const float* v, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += double(v[i]) * v[i];
  return std::sqrt(s);
}

// Per tensor: relative L2 error of the computed ones (printed), exact zeros for the frozen.
// The key bias's gradient is zero in exact arithmetic (adding q·b_k to every score of a query
// leaves its softmax unchanged), so both sides hold rounding noise: its error is measured
// against the whole q|k|v bias gradient's norm instead of its own.
double WorstTensorError(const ParamLayout& layout, const Vec& got, const Vec& want,
                        const std::string& label) {
  double worst = 0.0;
  for (const ParamTensor& t : layout.tensors()) {
    Vec g(got.begin() + t.offset, got.begin() + t.offset + t.numel);
    Vec w(want.begin() + t.offset, want.begin() + t.offset + t.numel);
    if (t.frozen) {
      EXPECT_EQ(std::count(g.begin(), g.end(), 0.0f), t.numel)
          << label << ": " << t.name << " is never computed: its gradient must stay zero";
      continue;
    }
    double e = RelativeError(g, w);
    const std::string kBias = "self_attn.k_proj.bias";
    if (t.name.size() > kBias.size() &&
        t.name.compare(t.name.size() - kBias.size(), kBias.size(), kBias) == 0) {
      // q|k|v biases are contiguous: q's starts numel before k's.
      const double qkv = Norm(want.data() + t.offset - t.numel, 3 * t.numel);
      std::vector<float> diff(g.size());
      for (size_t i = 0; i < g.size(); ++i) diff[i] = g[i] - w[i];
      e = std::isfinite(Norm(g.data(), t.numel)) ? Norm(diff.data(), t.numel) / qkv : INFINITY;
    }
    std::printf("  %s grad %-60s rel err %.2e\n", label.c_str(), t.name.c_str(), e);
    worst = std::max(worst, e);
  }
  return worst;
}

struct TowerCase {
  std::string name;
  VisionConfig config;
  int images;      // per Forward
  int max_images;  // planned
  AttentionImpl attention = AttentionImpl::kAuto;
};

// clip-tiny (head_dim 8: the reference attention kernel) and a wider one with head_dim 64 and
// 17 positions (our flash kernels in 16-bit, their last tile ragged).
std::vector<TowerCase> Cases() {
  auto tiny = VisionPreset("clip-tiny");
  EXPECT_TRUE(tiny.ok()) << tiny.status().message();
  VisionConfig wide = *tiny;
  wide.image_size = 56, wide.hidden = 128, wide.heads = 2, wide.mlp = 256;
  VisionConfig grid24 = wide;  // CLIP-L/14-336's 24 x 24 patches, 577 positions
  grid24.image_size = 336;
  return {{"clip-tiny", *tiny, 2, 3},
          {"clip-tiny one image", *tiny, 1, 1},
          {"head_dim 64", wide, 2, 2},
          {"head_dim 64, 577 positions", grid24, 1, 1}};
}

// What a tower computes for one case: the features and the parameters' gradients (layout order).
struct TowerResult {
  Vec features, grads;
};
struct TowerInputs {
  Vec params, pixels, dfeatures;
};
TowerInputs InputsFor(const VisionConfig& c, const ParamLayout& layout, int n) {
  return {TestParameters(layout, 11),
          RandomVector(size_t(n) * 3 * c.image_size * c.image_size, 1.0f, 5),
          RandomVector(size_t(n) * c.num_patches() * c.hidden, 1.0f, 6)};
}
template <typename To, typename From>
std::vector<To> Cast(const std::vector<From>& v) {
  return std::vector<To>(v.begin(), v.end());
}

// The oracles: B's CPU tower in double (trainer/cpu/vision_tower.h), or the twins' composition.
enum class Oracle { kCpuTower, kTwins };
const char* OracleName(Oracle o) {
  return o == Oracle::kCpuTower ? "VisionTower<double>" : "twins";
}

TowerResult Reference(Oracle o, const VisionConfig& c, const ParamLayout& layout,
                      const TowerInputs& in, int n) {
  if (o == Oracle::kTwins) {
    TwinTower twin(c, layout, in.params);
    TowerResult r{twin.Forward(in.pixels, n), Vec(layout.total(), 0.0f)};
    twin.Backward(in.dfeatures, &r.grads);
    return r;
  }
  cpu::VisionTower<double> tower(c, n);
  EXPECT_EQ(tower.layout().total(), layout.total());
  tower.params() = Cast<double>(in.params);
  std::fill(tower.grads().begin(), tower.grads().end(), 0.0);
  const std::vector<double> pixels = Cast<double>(in.pixels), df = Cast<double>(in.dfeatures);
  tower.Forward(pixels.data(), n);
  TowerResult r;
  r.features.assign(tower.features(), tower.features() + in.dfeatures.size());
  tower.Backward(df.data(), n);
  r.grads = Cast<float>(tower.grads());
  return r;
}

void CheckTower(const TowerCase& k, DType t, Oracle oracle) {
  const std::string what = k.name + " " + DTypeName(t) + " vs " + OracleName(oracle);
  const VisionConfig& c = k.config;
  ParamLayout layout = VisionLayout(c);
  const int n = k.images;
  TowerInputs in = InputsFor(c, layout, n);
  // What the device sees: pixels and dfeatures rounded to t (im2col's output and the upload).
  in.pixels = RoundedAs(in.pixels, t);
  in.dfeatures = RoundedAs(in.dfeatures, t);
  const Vec& params = in.params;
  const Vec& pixels = in.pixels;
  const Vec& dfeatures = in.dfeatures;
  TowerResult ref = Reference(oracle, c, layout, in, n);
  const Vec& want = ref.features;
  const Vec& want_grads = ref.grads;

  auto tower = CudaVisionTower::Create(
      c, {.dtype = t, .max_images = k.max_images, .attention = k.attention});
  ASSERT_TRUE(tower.ok()) << what << ": " << tower.status().message();
  CudaVisionTower& g = **tower;
  ASSERT_EQ(g.layout().total(), layout.total());
  ASSERT_TRUE(g.SetParameters(params).ok()) << what;
  Vec back;
  ASSERT_TRUE(g.GetParameters(&back).ok()) << what;
  EXPECT_EQ(back, params) << what << ": the masters are the values set";
  DeviceBuffer<float> gpix(pixels);
  void* gdf = UploadAs(dfeatures, t);
  // Twice over the same gradients: the second pass adds the same again (accumulation), and a
  // stale gradient from before ZeroGradients must not leak in.
  ASSERT_TRUE(g.Forward(gpix.get(), n).ok()) << what;
  ASSERT_TRUE(g.Backward(gdf).ok()) << what;
  ASSERT_TRUE(g.ZeroGradients().ok()) << what;
  for (int pass = 0; pass < 2; ++pass) {
    Status st = g.Forward(gpix.get(), n);
    ASSERT_TRUE(st.ok()) << what << ": " << st.message();
    Vec got = Download(g.features(), want.size(), t);
    EXPECT_LT(RelativeError(got, want), Tol(t)) << what << " features, pass " << pass;
    st = g.Backward(gdf);
    ASSERT_TRUE(st.ok()) << what << ": " << st.message();
  }
  Vec grads;
  ASSERT_TRUE(g.GetGradients(&grads).ok()) << what;
  for (float& x : grads) x *= 0.5f;
  EXPECT_LT(WorstTensorError(layout, grads, want_grads, what), Tol(t)) << what;
  cudaFree(gdf);
}

class CudaVisionTowerTest : public ::testing::Test {
 protected:
  void SetUp() override { BM_SKIP_WITHOUT_GPU(); }
};

TEST_F(CudaVisionTowerTest, ForwardAndGradientsMatchCpuTower) {
  for (const TowerCase& k : Cases()) {
    for (DType t : kAllTypes) {
      for (Oracle o : {Oracle::kCpuTower, Oracle::kTwins})
        ASSERT_NO_FATAL_FAILURE(CheckTower(k, t, o));
    }
  }
}

TEST_F(CudaVisionTowerTest, ReferenceAttentionAndCudnnMatchToo) {
  TowerCase k = Cases()[2];
  k.attention = AttentionImpl::kReference;
  for (DType t : {DType::kBF16, DType::kF16}) {
    ASSERT_NO_FATAL_FAILURE(CheckTower(k, t, Oracle::kCpuTower));
  }
  if (!CudnnAttentionBuilt()) GTEST_SKIP() << "built without cuDNN (BENCHMAKE_HAVE_CUDNN off)";
  for (const TowerCase& c : {Cases()[2], Cases()[3]}) {
    k = c;
    k.attention = AttentionImpl::kCudnn;
    for (DType t : {DType::kBF16, DType::kF16}) {
      const VisionConfig& v = k.config;
      AttentionShape shape{k.images,          int(v.positions()), int(v.heads),     int(v.heads),
                           int(v.head_dim()), kCudnnKeyChunk,     t == DType::kF16,
                           /*causal=*/false};
      if (!CudnnAttentionUsable(shape)) {
        ADD_FAILURE() << "cuDNN refuses the non-causal shape of " << k.name << " " << DTypeName(t)
                      << " (this cuDNN: " << CudnnLibraryVersion() << ")";
        continue;
      }
      ASSERT_NO_FATAL_FAILURE(CheckTower(k, t, Oracle::kCpuTower));
    }
  }
}

// The two oracles agree (no GPU needed): the twins' composition in fp32 against the CPU tower
// in double, features and every gradient, so a failure above names the CUDA side.
TEST(CudaVisionTowerOracles, TwinsAgreeWithCpuVisionTower) {
  for (const TowerCase& k : Cases()) {
    ParamLayout layout = VisionLayout(k.config);
    TowerInputs in = InputsFor(k.config, layout, k.images);
    TowerResult twins = Reference(Oracle::kTwins, k.config, layout, in, k.images);
    TowerResult cpu = Reference(Oracle::kCpuTower, k.config, layout, in, k.images);
    EXPECT_LT(RelativeError(twins.features, cpu.features), 1e-5) << k.name;
    EXPECT_LT(WorstTensorError(layout, twins.grads, cpu.grads, k.name + " twins"), 1e-5) << k.name;
  }
}

TEST_F(CudaVisionTowerTest, ImagesPerCallAreChecked) {
  auto c = VisionPreset("clip-tiny");
  ASSERT_TRUE(c.ok());
  auto tower = CudaVisionTower::Create(*c, {.dtype = DType::kF32, .max_images = 2});
  ASSERT_TRUE(tower.ok()) << tower.status().message();
  Status st = (*tower)->Backward(nullptr);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("Backward before Forward"), std::string::npos) << st.message();
  DeviceBuffer<float> pix(size_t(3) * 3 * 28 * 28);
  st = (*tower)->Forward(pix.get(), 3);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("3 images in one call (1 to max_images = 2)"), std::string::npos)
      << st.message();
  EXPECT_EQ((*tower)->Forward(pix.get(), 0).code(), ErrorCode::kInvalidArgument);
  Vec wrong(5);
  st = (*tower)->SetParameters(wrong);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("5 floats given"), std::string::npos) << st.message();
}

// MemoryPlan's rounding of an entry (256 bytes).
size_t Aligned256(size_t bytes) { return (bytes + 255) / 256 * 256; }

// A frozen tower (forward only) computes the trained tower's features bit for bit (those are
// checked against the CPU tower above), at one image and at max_images, and holds less by what
// a backward would need, counted here entry by entry from the tower's table (cuda_vision_tower.h):
// the fp32 gradients (4 bytes a parameter) and in bf16 the fp32 masters (4 more: its working copy
// alone), the residual streams and saved activations of all layers but one, and the backward's
// buffers and scratch. Its Backward is refused; its parameters come back as its working copy
// holds them (fp32 bit for bit; bf16 rounded to nearest even, cuda_bf16.h's host conversion).
TEST_F(CudaVisionTowerTest, FrozenTowerIsForwardOnlyWithTheSameFeatures) {
  for (const TowerCase& k : {Cases()[0], Cases()[3]}) {
    const VisionConfig& c = k.config;
    const ParamLayout layout = VisionLayout(c);
    const int max_images = 2;
    for (DType t : {DType::kF32, DType::kBF16}) {
      const std::string what = k.name + " " + DTypeName(t);
      auto full = CudaVisionTower::Create(c, {.dtype = t, .max_images = max_images});
      auto frozen = CudaVisionTower::Create(c, {.dtype = t, .max_images = max_images}, true);
      ASSERT_TRUE(full.ok() && frozen.ok()) << what;
      const Vec params = TestParameters(layout, 11);
      ASSERT_TRUE((*full)->SetParameters(params).ok());
      ASSERT_TRUE((*frozen)->SetParameters(params).ok());
      for (int n : {1, max_images}) {
        DeviceBuffer<float> pix(RandomVector(size_t(n) * 3 * c.image_size * c.image_size, 1.0f, 5));
        ASSERT_TRUE((*full)->Forward(pix.get(), n).ok()) << what;
        ASSERT_TRUE((*frozen)->Forward(pix.get(), n).ok()) << what;
        const size_t count = size_t(n) * c.num_patches() * c.hidden;
        EXPECT_EQ(Download((*full)->features(), count, t),
                  Download((*frozen)->features(), count, t))
            << what << ", " << n << " images";
      }
      Status st = (*frozen)->Backward((*frozen)->features());
      EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << what;
      EXPECT_NE(st.message().find("frozen tower"), std::string::npos) << st.message();
      EXPECT_EQ((*frozen)->grad(), nullptr);
      Vec grads;
      ASSERT_TRUE((*frozen)->GetGradients(&grads).ok());
      EXPECT_EQ(grads, Vec(layout.total(), 0.0f)) << what;

      const size_t e = t == DType::kF32 ? 4 : 2, rows = size_t(max_images) * c.positions();
      const size_t C = c.hidden, M = c.mlp, L = c.computed_layers();
      const size_t stream = Aligned256(rows * C * e), floats = Aligned256(rows * 4);
      // A layer's saved activations: norm1, att, mid, norm2; qkv; fc1, quick_gelu; the two
      // LayerNorms' means and rstds; the attention's lse.
      const size_t layer = 4 * stream + Aligned256(rows * 3 * C * e) +
                           2 * Aligned256(rows * M * e) + 4 * floats +
                           Aligned256(size_t(max_images) * c.heads * c.positions() * 4);
      const size_t backward =
          3 * stream + Aligned256(rows * 3 * C * e) +  // dres, dnorm, datt; dqkv
          Aligned256(rows * M * e) +                   // dbig
          Aligned256(AttentionScratchFloats(max_images, c.positions(), c.heads) * 4) +
          Aligned256(LayerNormScratchFloats(rows, C) * 4) +
          Aligned256(BiasGradScratchFloats(rows, std::max(3 * C, M)) * 4);
      const size_t dropped = t == DType::kF32 ? 4 : 8;  // gradients; and masters in bf16
      EXPECT_EQ((*full)->device_bytes() - (*frozen)->device_bytes(),
                dropped * layout.total() + (L - 1) * (stream + layer) + backward)
          << what << "\nfull:\n"
          << (*full)->memory_summary() << "frozen:\n"
          << (*frozen)->memory_summary();
      EXPECT_EQ((*frozen)->memory_summary().find("gradients fp32"), std::string::npos);
      EXPECT_EQ((*frozen)->memory_summary().find("masters fp32") == std::string::npos,
                t == DType::kBF16)
          << (*frozen)->memory_summary();
      Vec back;
      ASSERT_TRUE((*frozen)->GetParameters(&back).ok()) << what;
      ASSERT_EQ(back.size(), params.size());
      for (size_t i = 0; i < params.size(); ++i) {
        const float want =
            t == DType::kF32 ? params[i] : __bfloat162float(__float2bfloat16_rn(params[i]));
        ASSERT_EQ(FloatBits(back[i]), FloatBits(want)) << what << " parameter " << i;
      }
    }
  }
}

// Refused before anything is allocated: no GPU needed.
TEST(CudaVisionTowerConfig, RefusesWhatItCannotCompute) {
  auto c = VisionPreset("clip-tiny");
  ASSERT_TRUE(c.ok());
  VisionConfig eps = *c;
  eps.norm_eps = 1e-6;
  auto r = CudaVisionTower::Create(eps, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find("norm_eps"), std::string::npos) << r.status().message();

  VisionConfig bad = *c;
  bad.patch = 5;  // does not divide 28
  r = CudaVisionTower::Create(bad, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << r.status().message();

  r = CudaVisionTower::Create(*c, {.max_images = 0});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("max_images 0"), std::string::npos) << r.status().message();

  r = CudaVisionTower::Create(*c, {.dtype = DType::kF32, .attention = AttentionImpl::kCudnn});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find("fp32"), std::string::npos) << r.status().message();
}

TEST(CudaProjectorConfig, RefusesWhatItCannotCompute) {
  auto c = LlavaPreset("llava-tiny");
  ASSERT_TRUE(c.ok());
  LlavaConfig other = *c;
  other.projector = "linear";
  auto r = CudaProjector::Create(other, 4, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find("\"linear\""), std::string::npos) << r.status().message();
  r = CudaProjector::Create(*c, 0, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
}

struct ProjectorResult {
  Vec out, dfeatures, grads;
};
ProjectorResult ProjectorReference(Oracle o, const LlavaConfig& c, const ParamLayout& layout,
                                   const Vec& params, const Vec& x, const Vec& dy, int rows) {
  ProjectorResult r;
  if (o == Oracle::kTwins) {
    TwinProjector twin{c, layout, params, {}, {}, {}};
    r.out = twin.Forward(x, rows);
    r.grads.assign(layout.total(), 0.0f);
    r.dfeatures = twin.Backward(dy, rows, &r.grads);
    return r;
  }
  cpu::Projector<double> proj(c, rows);
  EXPECT_EQ(proj.layout().total(), layout.total());
  proj.params() = Cast<double>(params);
  std::fill(proj.grads().begin(), proj.grads().end(), 0.0);
  const std::vector<double> xd = Cast<double>(x), dyd = Cast<double>(dy);
  std::vector<double> dx(x.size(), 0.0);
  proj.Forward(xd.data(), rows);
  r.out.assign(proj.output(), proj.output() + dy.size());
  proj.Backward(dyd.data(), rows, dx.data());
  r.dfeatures = Cast<float>(dx);
  r.grads = Cast<float>(proj.grads());
  return r;
}

struct ProjectorInputs {
  LlavaConfig config;
  ParamLayout layout;
  int rows;
  Vec params, features, dout;
};
ProjectorInputs ProjectorCase() {
  auto c = LlavaPreset("llava-tiny");
  EXPECT_TRUE(c.ok()) << c.status().message();
  ProjectorInputs in{*c, ProjectorLayout(*c), 2 * int(c->vision.num_patches()) + 3, {}, {}, {}};
  in.params = TestParameters(in.layout, 21);
  in.features = RandomVector(size_t(in.rows) * c->vision.hidden, 1.0f, 22);
  in.dout = RandomVector(size_t(in.rows) * c->text.hidden, 1.0f, 23);
  return in;
}

TEST(CudaVisionTowerOracles, TwinsAgreeWithCpuProjector) {
  ProjectorInputs in = ProjectorCase();
  ProjectorResult twins = ProjectorReference(Oracle::kTwins, in.config, in.layout, in.params,
                                             in.features, in.dout, in.rows);
  ProjectorResult cpu = ProjectorReference(Oracle::kCpuTower, in.config, in.layout, in.params,
                                           in.features, in.dout, in.rows);
  EXPECT_LT(RelativeError(twins.out, cpu.out), 1e-5);
  EXPECT_LT(RelativeError(twins.dfeatures, cpu.dfeatures), 1e-5);
  EXPECT_LT(WorstTensorError(in.layout, twins.grads, cpu.grads, "projector twins"), 1e-5);
}

TEST_F(CudaVisionTowerTest, ProjectorMatchesCpuProjector) {
  ProjectorInputs in = ProjectorCase();
  const int rows = in.rows;
  for (DType t : kAllTypes) {
    for (Oracle o : {Oracle::kCpuTower, Oracle::kTwins}) {
      const std::string what = std::string("projector ") + DTypeName(t) + " vs " +
                               (o == Oracle::kCpuTower ? "Projector<double>" : "twins");
      // What the device sees: the features and the output gradient rounded to t.
      ProjectorResult want =
          ProjectorReference(o, in.config, in.layout, in.params, RoundedAs(in.features, t),
                             RoundedAs(in.dout, t), rows);
      auto p = CudaProjector::Create(in.config, rows + 5, {.dtype = t});
      ASSERT_TRUE(p.ok()) << what << ": " << p.status().message();
      ASSERT_TRUE((*p)->SetParameters(in.params).ok());
      void* gx = UploadAs(in.features, t);
      void* gdy = UploadAs(in.dout, t);
      Status st = (*p)->Forward(gx, rows);
      ASSERT_TRUE(st.ok()) << what << ": " << st.message();
      EXPECT_LT(RelativeError(Download((*p)->output(), want.out.size(), t), want.out), Tol(t))
          << what;
      st = (*p)->Backward(gdy);
      ASSERT_TRUE(st.ok()) << what << ": " << st.message();
      EXPECT_LT(
          RelativeError(Download((*p)->dfeatures(), want.dfeatures.size(), t), want.dfeatures),
          Tol(t))
          << what << " dfeatures";
      Vec grads;
      ASSERT_TRUE((*p)->GetGradients(&grads).ok());
      EXPECT_LT(WorstTensorError(in.layout, grads, want.grads, what), Tol(t)) << what;
      EXPECT_EQ((*p)->Forward(gx, rows + 6).code(), ErrorCode::kInvalidArgument) << what;
      cudaFree(gx), cudaFree(gdy);
    }
  }
}

}  // namespace
}  // namespace bm::train::cuda
