// The CUDA backend behind trainer/backend.h (device = "cuda"): a CudaModel on one GPU, with
// the trainer's flat fp32 ParamLayout (trainer/model/layout.h) mapped to and from the GPU's
// own aligned layout (trainer/cuda/param_layout.h) by tensor name.
//
// Supports both families as trainer/model/config.h defines them, with the usual pairing
// (gpt: biases and tied embeddings; llama: neither) and norm_eps = 1e-5; anything else is
// kUnsupported at Init, with the field named. Precision kBf16 or kFp16 (16-bit compute, fp32
// master weights, gradients and AdamW state; fp16 needs the training loop's loss scaling) or
// kFp32 (a checking mode).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "base/result.h"
#include "trainer/backend.h"

namespace bm::train::cuda {

Result<std::unique_ptr<Backend>> CreateCudaBackend();

// {"gpus": [{"name", "memory_bytes", "compute_capability"}...], "driver": "580.159.04",
//  "cuda": "13.0", "cublaslt": "13.1.0", "cudnn": "9.19.0"}; never fails (no GPU: an empty
// list; an unknown driver: null). The library versions only when `libraries` (loading them).
nlohmann::json ProbeCudaPlatform(bool libraries);

}  // namespace bm::train::cuda
