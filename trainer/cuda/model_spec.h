// What the CUDA backend trains: the model geometry and the run's knobs. Deliberately plain,
// so the trainer's own config (trainer/model/config.h) maps onto it in one function.
#pragma once

#include <string>

#include "trainer/cuda/cudnn_attention.h"
#include "trainer/cuda/dtype.h"
#include "trainer/cuda/kernels/attention.cuh"

namespace bm::train::dist {
class Communicator;
}

namespace bm::train::cuda {

enum class Family { kGpt, kLlama };

// gpt:   LayerNorm (with bias), GELU (tanh), learned positions, biases, tied embeddings.
// llama: RMSNorm, RoPE, SwiGLU, grouped-query attention, no biases, untied LM head.
struct ModelSpec {
  Family family = Family::kGpt;
  int vocab = 0;
  int hidden = 0;
  int layers = 0;
  int heads = 0;
  int kv_heads = 0;       // llama; gpt uses heads
  int ffn = 0;            // gpt: 4 * hidden
  int max_positions = 0;  // gpt: rows of wpe; llama: rope table length
  bool tied = true;       // gpt true, llama false
  double rope_theta = 10000.0;
  float norm_eps = 1e-5f;  // RMSNorm's epsilon (llama); gpt's LayerNorm uses 1e-5

  int head_dim() const { return hidden / heads; }
};

struct RunSpec {
  int micro_batch = 1;  // LBS
  int seq = 0;          // MPE
  // Activations, weight copies and matmul operands: bf16, fp16 (over fp32 masters either way)
  // or fp32 (a checking mode).
  DType dtype = DType::kBF16;
  bool recompute = false;
  AttentionImpl attention = AttentionImpl::kAuto;
  int attention_chunk = kCudnnKeyChunk;  // cuDNN backward: keys per call at most (0: one call)
  bool fused_epilogues = true;           // cuBLASLt bias/GELU/bias-gradient epilogues
  bool matmul_tuning = true;     // time cuBLASLt's candidates, keep bit-identical ones (matmul.h)
  int logits_chunk_rows = 8192;  // the classifier's logits exist for this many rows at a time
  bool profile = false;          // time each phase with CUDA events (CudaModel::PhaseTimes)
  // Data parallel (trainer/cuda/cuda_data_parallel.h): the DP group's communicator (not owned;
  // null: a world of one) and the ZeRO stage 0-3.
  dist::Communicator* comm = nullptr;
  int zero = 0;
};

// "gpt2-124m", "llama-1b", "llama7b-8l", "llama2-7b" (the PyTorch peers' models) and the tiny
// test models
// "tiny-gpt", "tiny-llama". Returns false for an unknown name.
bool ModelPreset(const std::string& name, ModelSpec* spec);

}  // namespace bm::train::cuda
