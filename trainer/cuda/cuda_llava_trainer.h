// CudaLlavaTrainer: LLaVA-1.5 training on one GPU per rank — the CUDA twin of
// trainer/cpu/llava_trainer.h (the same calls, the same meaning). A micro-batch's images go
// through CudaVisionTower and CudaProjector (trainer/cuda/cuda_vision_tower.h); the projected
// rows are spliced into the language model, a CudaModel (its parameters, gradients and AdamW
// state under CudaDataParallel: any ZeRO stage over the DP group), at the image positions
// (cuda_model.h's SplicedRows, read in place when no image token was cut off, else through a
// compacted copy); the rows' gradient comes back from the LM's backward and goes through the
// projector and the tower.
//
// The tower and the projector are replicated on every rank: their gradients are all-reduced
// (sum) over the same DP communicator after the step's last micro-batch, their fp32 masters and
// AdamW moments whole on every rank (the same update everywhere). The gradient norm covers the
// trained parts (cpu::LlavaTrainable); clipping by it is one factor (with 1 / the loss scale)
// handed to every update, as the CPU twin does.
//
// A frozen language model (trainable.language_model false: LLaVA-1.5's pretraining stage) is a
// frozen CudaModel (RunSpec::frozen): its working weights only (bf16 or fp32), whole on every
// rank whatever the ZeRO stage — no fp32 masters, gradients or AdamW moments, no ZeRO shards or
// reductions — and its backward computes the input gradients only, down to the spliced rows'
// (no weight-gradient product), and nothing for a micro-batch without images. ZeroGrad, GradNorm
// and OptimizerStep leave it out; its weights come back as set (fp32: bit for bit; bf16: the
// stored 16-bit values). A frozen tower or projector has no AdamW moments and takes no update;
// a frozen tower (and a frozen projector under it) releases its gradient buffer (it is not
// backpropagated) but keeps its fp32 masters (the tower: 0.3B of LLaVA-1.5-13B).
//
// Precision: BackendOptions::precision fp32 (the checking mode) or bf16 (16-bit activations
// and working weights over fp32 masters, gradients and moments, in all three parts); fp16 is
// refused (it would need loss scaling, which the LLaVA loop does not run). No TP or PP.
//
// Collective over the DP group (every rank, same order): ForwardBackward, GradNorm,
// OptimizerStep, and with zero >= 1 Set/GetParameters. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "trainer/backend.h"
#include "trainer/cpu/llava_model.h"
#include "trainer/cpu/llava_trainer.h"
#include "trainer/model/llava_layout.h"
#include "trainer/model/vision_config.h"

namespace bm::train::cuda {

struct MemoryReport;  // trainer/cuda/cuda_model.h

class CudaLlavaTrainer {
 public:
  // options: max_batch, max_seq, precision (fp32 / bf16), attention (the LM's, as the CUDA
  // backend reads it), device_index, dp (a device communicator for several ranks; nullptr: a
  // world of one), zero. max_images: the most images of one micro-batch. trainable: the parts
  // AdamW updates, as the CPU's (a frozen part keeps its weights — a frozen LM in bf16 its
  // 16-bit working values — and counts in no gradient norm; a frozen tower is not
  // backpropagated; a frozen LM computes only the input gradients that carry the rows' back).
  // kUnavailable without a GPU; kUnsupported for fp16, TP or PP groups; kInvalidArgument for
  // bad sizes.
  static Result<std::unique_ptr<CudaLlavaTrainer>> Create(
      const LlavaConfig& config, const BackendOptions& options, int64_t max_images,
      const cpu::LlavaTrainable& trainable = {});
  ~CudaLlavaTrainer();
  CudaLlavaTrainer(const CudaLlavaTrainer&) = delete;
  CudaLlavaTrainer& operator=(const CudaLlavaTrainer&) = delete;

  int64_t total() const;  // the whole model's floats (LlavaLayout order)
  const LlavaLayout& layout() const;
  // The language model's memory plan (CudaModel::memory(); a frozen LM's has no masters,
  // gradients or moments).
  const MemoryReport& lm_memory() const;
  // peak_bytes: the device memory this rank's trainer holds (the LM's arena, the tower's and the
  // projector's parameters and activations, the moments and batch buffers; all allocated at
  // Create, nothing later); device_total_bytes: the GPU's.
  MemoryStats Memory() const;
  const std::string& device_name() const;  // the GPU's (cudaDeviceProp::name)

  // The whole model (LlavaLayout order) on every rank.
  Status SetParameters(std::span<const float> whole);
  // Gathered (collective with zero >= 1); an empty span takes part and keeps nothing.
  Status GetParameters(std::span<float> whole);
  // The gradients as they stand (LlavaLayout order): zero 0, or one rank at zero 1 (as
  // CudaModel::GetGradients); zeros for a frozen LM; for checking against the CPU.
  Status GetGradients(std::span<float> whole);

  Status ZeroGrad();
  // One micro-batch; `last`: the step's last (the reductions finish then). Waits for the GPU.
  // kInvalidArgument (nothing computed) for a batch over the planned sizes, too many images,
  // or an image position outside [0, B*T) (or used twice: the LM refuses it).
  Result<LossSum> ForwardBackward(const cpu::LlavaMicroBatch& batch, float loss_scale, bool last);
  // sqrt(Σ g²) over the whole model's gradients as they stand.
  Result<float> GradNorm();
  // Clipping by the global norm and one AdamW update of all three parts.
  Status OptimizerStep(const AdamWStep& step);

  // Greedy decoding of one prompt (MMMU's model half), forward only, with the contract of
  // cpu::LlavaModel::GenerateGreedy (the stopping rules, context_full, the errors), max_seq
  // being options.max_seq: the image's rows computed once, then every new token reruns the
  // prefix (no KV cache) padded to a multiple of kLlavaWidthMultiple positions, its argmax
  // read at the last real one. The decoder's trainer has every part frozen and one rank (no
  // collective); a trained LM at ZeRO-3 would gather its units, so every rank would call it.
  Result<std::vector<int32_t>> GenerateGreedy(std::span<const int32_t> prompt,
                                              const float* pixel_values,
                                              const int64_t* image_positions, int64_t images,
                                              int64_t max_new_tokens, int32_t eos_id,
                                              bool* context_full = nullptr);

 private:
  struct Impl;
  explicit CudaLlavaTrainer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace bm::train::cuda
