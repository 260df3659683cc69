#include "trainer/cpu/projector.h"

#include <algorithm>
#include <string>

#include "trainer/cpu/ops/gelu.h"
#include "trainer/cpu/ops/matmul.h"
#include "trainer/model/llava_layout.h"

namespace bm::train::cpu {

template <typename Float>
Projector<Float>::Projector(const LlavaConfig& config, int64_t max_rows)
    : layout_(ProjectorLayout(config)), in_(config.vision.hidden), out_(config.text.hidden) {
  auto offset = [&](const char* name) {
    return layout_.Find(std::string(kProjectorPrefix) + name)->offset;
  };
  w1_ = offset("linear_1.weight");
  b1_ = offset("linear_1.bias");
  w2_ = offset("linear_2.weight");
  b2_ = offset("linear_2.bias");
  params_.assign(layout_.total(), Float(0));
  grads_.assign(layout_.total(), Float(0));
  features_.resize(max_rows * in_);
  for (auto* v : {&out1_, &act_, &out2_, &dact_, &dout1_}) v->resize(max_rows * out_);
}

template <typename Float>
void Projector<Float>::Forward(const Float* features, int64_t rows) {
  // the input is kept for the weight gradient of linear_1
  std::copy_n(features, rows * in_, features_.data());
  const Float* p = params_.data();
  MatmulForward(out1_.data(), features_.data(), p + w1_, p + b1_, rows, in_, out_);
  GeluErfForward(act_.data(), out1_.data(), rows * out_);
  MatmulForward(out2_.data(), act_.data(), p + w2_, p + b2_, rows, out_, out_);
}

template <typename Float>
void Projector<Float>::Backward(const Float* dout, int64_t rows, Float* dfeatures) {
  const Float* p = params_.data();
  Float* g = grads_.data();
  std::fill_n(dact_.data(), rows * out_, Float(0));
  MatmulBackward(dact_.data(), g + w2_, g + b2_, dout, act_.data(), p + w2_, rows, out_, out_);
  std::fill_n(dout1_.data(), rows * out_, Float(0));
  GeluErfBackward(dout1_.data(), out1_.data(), dact_.data(), rows * out_);
  MatmulBackward(dfeatures, g + w1_, g + b1_, dout1_.data(), features_.data(), p + w1_, rows, in_,
                 out_);
}

template class Projector<float>;
template class Projector<double>;

}  // namespace bm::train::cpu
