// The trainer's model and shard (trainer/model/config.h, trainer/model/shard.h) on the GPU:
// the ModelSpec a rank builds from them, and where each of the GPU layout's tensors lies in the
// trainer's flat buffer of the same shard. The GPU fuses q|k|v and gate|up into single tensors;
// the trainer keeps them as consecutive tensors, so a fused tensor maps to the first one's offset
// (and index). The one place the two layouts meet (trainer/cuda/cuda_backend.cc uses it).
#pragma once

#include <cstddef>
#include <vector>

#include "base/result.h"
#include "trainer/cuda/model_spec.h"
#include "trainer/cuda/param_layout.h"
#include "trainer/model/config.h"
#include "trainer/model/layout.h"
#include "trainer/model/shard.h"

namespace bm::train::cuda {

// The whole model's geometry and the shard's place in the layout (tensor-parallel rank,
// pipeline stage). Precondition: Validate(config) is OK.
ModelSpec SpecOfShard(const train::ModelConfig& config, const ModelShard& shard);

// One GPU tensor's place in both layouts.
struct TensorSpan {
  size_t gpu = 0, host = 0, numel = 0;  // offsets in floats, in the GPU's and the trainer's buffer
  int host_tensor = 0;                  // the trainer layout's tensor index
};
// One span per GPU tensor, in the GPU layout's order. kInternal when a GPU tensor has no
// trainer tensor, overruns it, or the spans do not cover the trainer's buffer exactly.
Result<std::vector<TensorSpan>> MapOntoTrainer(const ParamLayout& gpu,
                                               const train::ParamLayout& host);

}  // namespace bm::train::cuda
