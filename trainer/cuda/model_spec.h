// What the CUDA backend trains: the model geometry and the run's knobs. Deliberately plain,
// so the trainer's own config (trainer/model/config.h) maps onto it in one function.
#pragma once

#include <cstdint>
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
  // Tensor parallelism (Megatron's split, trainer/model/shard.h): this GPU is rank tp_rank of
  // tp and holds its share of the heads, kv heads, ffn columns and vocabulary rows; the fields
  // above stay the whole model's. tp 1: the whole model.
  int tp = 1, tp_rank = 0;
  // Pipeline parallelism (trainer/model/shard.h's StageOf): this GPU is stage pp_rank of pp and
  // holds layers [layer_begin, layer_end) (global indices; layer_end -1: to the last), the
  // embeddings on the first stage and the final norm and head on the last. With tied
  // embeddings and several stages the last stage holds a copy of the token embedding for its
  // head (the pipeline keeps both copies' gradients equal).
  int pp = 1, pp_rank = 0;
  int layer_begin = 0, layer_end = -1;
  bool embeddings = true, head = true;

  int head_dim() const { return hidden / heads; }
  int stage_layers() const { return (layer_end < 0 ? layers : layer_end) - layer_begin; }
  bool tied_here() const { return tied && embeddings && head; }  // the head reads wte itself
  int local_heads() const { return heads / tp; }
  int local_kv_heads() const { return kv_heads / tp; }
  int local_ffn() const { return ffn / tp; }
  // Vocabulary rows of the embedding and the LM head here: V rounded up to a multiple of tp,
  // split; the first is vocab_begin(), the first vocab_real() are real ids, the rest padding.
  int local_vocab() const { return (vocab + tp - 1) / tp; }
  int vocab_begin() const { return tp_rank * local_vocab(); }
  int vocab_real() const {
    const int real = vocab - vocab_begin();
    return real < 0 ? 0 : real < local_vocab() ? real : local_vocab();
  }
};

struct RunSpec {
  int micro_batch = 1;  // LBS
  int seq = 0;          // MPE
  // Activations, weight copies and matmul operands: bf16, fp16 (over fp32 masters either way)
  // or fp32 (a checking mode).
  DType dtype = DType::kBF16;
  bool recompute = false;
  // The norms' outputs are not kept for the backward (one shared buffer); the backward recomputes
  // them from the residual stream before the matmuls that read them (issue 16's candidate:
  // 2 x N x C activations per layer fewer, one norm forward per norm more).
  bool recompute_norms = false;
  // The fp32 masters kept as their bf16 rounding and their low halves (kernels/split_master.h)
  // where that applies, bf16 (otherwise ignored): the high halves are the working copy at zero
  // 0-2 (2 bytes per parameter of the masters fewer), and what zero 3 gathers without a cast.
  // The same bits as without; false keeps them whole (for measuring).
  bool split_masters = true;
  // Micro-batches per optimizer step when the caller knows them (GAS; 0: not known). With one
  // (and one pipeline stage, no full recompute) layers' activations lie over the reduced
  // gradients first written after their backward (the full gradients at ZeRO 0-1, the own
  // slices at 2-3), as many as fit (cuda_model_plan.cc), and ZeRO 2-3 plan no reduce-scatter
  // scratch; every training micro-batch must then be a step's first and last, which CudaModel
  // checks.
  int micro_batches_per_step = 0;
  AttentionImpl attention = AttentionImpl::kAuto;
  // cuDNN backward: keys per call at most (0: one call; kCudnnKeyChunkAuto: the plan chooses,
  // MemoryReport::attention_key_block says what).
  int attention_chunk = kCudnnKeyChunkAuto;
  // false: the cuDNN backward with dQ accumulated in fp32 by cuDNN's non-deterministic engines
  // (CudnnAttentionAccumulatedBackward: all the keys in one call, no dP workspace), so reruns
  // may differ in their last bits. For measuring what determinism costs
  // (cuda_train_bench --nondeterministic-attention); the trainer's runs keep true.
  bool deterministic_attention = true;
  bool fused_epilogues = true;   // cuBLASLt bias and GELU epilogues
  bool matmul_tuning = true;     // time cuBLASLt's candidates, keep bit-identical ones (matmul.h)
  int logits_chunk_rows = 8192;  // the classifier's logits exist for this many rows at a time
  bool profile = false;          // time each phase with CUDA events (CudaModel::PhaseTimes)
  // Data parallel (trainer/cuda/cuda_data_parallel.h): the DP group's communicator (not owned;
  // null: a world of one) and the ZeRO stage 0-3.
  dist::Communicator* comm = nullptr;
  int zero = 0;
  // A frozen model (LLaVA's frozen language model, trainer/model/llava_freeze.h): it holds its
  // working weights only (bf16 or fp32; no fp32 masters, gradients or AdamW moments), whole on
  // every rank whatever `zero` says (no ZeRO shards, no reductions); its backward computes the
  // input gradients only (down to the embedding output and SplicedRows::grad), no weight
  // gradient. GradNorm, OptimizerStep and the gradient and optimizer-state calls are refused.
  // Not with fp16, TP or PP.
  bool frozen = false;
  // Tensor parallel: the TP group's communicator (device buffers, not owned), of ModelSpec::tp
  // ranks; null when tp is 1. The collectives run on the compute stream.
  dist::Communicator* tp = nullptr;
  // Pipeline parallel: the PP group's communicator (device buffers, not owned), of
  // ModelSpec::pp ranks, null when pp is 1; and the micro-batches this stage keeps in flight
  // (activation slots: trainer/dist/pipeline_schedule.h's MaxInFlight).
  dist::Communicator* pp = nullptr;
  int pipeline_slots = 1;
  // With tensor parallelism: Megatron's sequence parallelism (docs/TRAINER.md) — the residual
  // stream's rows split over the TP group outside the tensor-parallel regions.
  bool sequence_parallel = false;
  // Gradients summed over the DP group in bf16 (CudaDataParallel::ReduceInBf16).
  bool grad_reduce_bf16 = false;
  // The arena allocated as the DP group's window (DeviceArena::Create; NCCL's symmetric memory)
  // when that group has several ranks: the same bits, other kernels for its collectives.
  bool nccl_window = false;
  // Zero 3: parameters of the forward's last units kept gathered until their backward
  // (CudaDataParallel::KeepGatheredLast); 0: none.
  int64_t zero3_keep_params = 0;
};

// "gpt2-124m", "llama-1b", "llama7b-8l", "llama2-7b" (the PyTorch peers' models) and the tiny
// test models
// "tiny-gpt", "tiny-llama". Returns false for an unknown name.
bool ModelPreset(const std::string& name, ModelSpec* spec);

}  // namespace bm::train::cuda
