// Backend: where a model's parameters live and its steps run. The CPU
// reference (trainer/cpu/, fp32) and the CUDA backend (trainer/cuda/, bf16, fp16
// or fp32) implement it; the training loop, evaluation and checkpoints see only
// this interface. Coarse-grained like llm.c: a backend fuses what it likes.
//
// Parameters, gradients and AdamW moments are exchanged with the host as flat
// fp32 buffers in ParamLayout order (trainer/model/layout.h).
//
// One training step, as the loop drives it:
//   ZeroGrad();
//   ForwardBackwardStep(the gas micro-batches, loss_scale)
//     (= ForwardBackward(micro, loss_scale) on each, unless pipelined);
//   norm = GradNorm();
//   OptimizerStep({lr, ..., clip, step, grad_scale});
// loss_scale is 1 / (number of loss-bearing target tokens in the whole step),
// so that LBS=4,GAS=1 and LBS=2,GAS=2 give the same gradient; with fp16 it is
// also multiplied by the dynamic loss scale S (trainer/run/loss_scaler.h), and
// OptimizerStep's grad_scale = 1 / S takes it out again.
//
// Data parallel (BackendOptions::dp, a communicator over the DP group): every
// rank runs the same calls on its own rows; loss_scale is 1 / the tokens of
// the whole step over all ranks, and gradients are summed across the group
// during the backward of the micro-batch marked `last` (overlapped with it),
// so GradNorm and OptimizerStep see the global gradient. BackendOptions::zero
// shards the AdamW state (1), the gradients (2) and the parameters (3) across
// the group (trainer/dist/shard_plan.h). From zero 1 on, each rank receives the
// sum of its own slices only (a reduce-scatter: Megatron's distributed
// optimizer), so GetGradients then needs a group of one. Calls that communicate are collective:
// every rank of the group makes them in the same order — ForwardBackward,
// GradNorm, OptimizerStep, and with zero >= 1 Get/SetParameters and
// SetLocalState. With no communicator the backend is a world of one.
//
// Tensor and pipeline parallel (BackendOptions::tp and ::pp, the rank's TP and
// PP groups; docs/TRAINER.md): the rank holds its shard of the model
// (trainer/model/shard.h) and its local state; the flat fp32 buffers of
// Get/SetParameters, GetGradients and Get/SetOptimizerState stay the whole
// model's (ParamLayout(model) order): SetParameters takes this rank's slices
// of the whole model, GetParameters gathers the whole model onto the first
// rank of the TP x PP group (GetGradients and GetOptimizerState onto every rank of it) — both
// work across layouts, so a checkpoint of any
// layout initializes any other. ForwardBackwardStep, GradNorm, OptimizerStep,
// GetParameters, GetGradients and GetOptimizerState are collective over the
// TP and PP groups; ForwardBackward (one micro-batch alone) needs PP1 and is
// collective over TP; forward-only evaluation (TokenLosses, the argmax calls)
// runs on one rank (TP1 PP1).
// A backend that does not implement them refuses tp or pp groups of more
// than one rank in Init (kUnsupported).
//
// Contracts common to every method:
//   - Init() first; every other method before Init() returns kInternal.
//   - B <= BackendOptions::max_batch and T <= BackendOptions::max_seq, else
//     kInvalidArgument. Token ids must lie in [0, vocab).
//   - Deterministic: the same calls on the same device and thread count give
//     the same bits.
//   - Errors name the call and the shapes; nothing throws or exits.
// Not thread-safe: one thread drives a backend.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "trainer/model/config.h"
#include "trainer/model/layout.h"

namespace bm::train {

namespace dist {
class Communicator;
}

// kBf16 / kFp16: bf16 / fp16 compute over fp32 master weights, gradients and AdamW moments
// (kFp16 with dynamic loss scaling in the training loop). The CPU backend is fp32 only.
enum class Precision { kFp32, kBf16, kFp16 };
std::string_view PrecisionName(Precision precision);  // "fp32" | "bf16" | "fp16"
// Also accepts "amp", which means bf16: what the suites' "amp" runs on NVIDIA GPUs are
// (FlagPerf's llama2 README says amp, its NVIDIA ds_config enables bf16); docs/TRAINER.md.
Result<Precision> ParsePrecision(std::string_view name);

struct BackendOptions {
  int64_t max_batch = 1;  // largest B passed to any call
  int64_t max_seq = 1;    // largest T passed to any call (<= model max_seq)
  Precision precision = Precision::kFp32;
  bool recompute = false;  // activation recompute (CUDA); the CPU ignores it
  // CUDA attention: "auto" (cuDNN's fused SDPA when built in and the shape suits it in bf16,
  // else ours), "flash" (our kernels) or "cudnn" (insists). Both are deterministic. The CPU
  // ignores it.
  std::string attention = "auto";
  // cuDNN's deterministic attention backward: "blocks" of at most 1024 keys a call (memory
  // linear in T), "one_call" over every key (faster, B·H·T²·2 bytes of scratch), or "auto" (one
  // call where its scratch fits in room the memory plan holds anyway, else blocks). Only with
  // cuDNN's attention; the CPU ignores it.
  std::string attention_backward = "auto";
  int threads = 0;       // CPU threads; 0 = all cores
  int device_index = 0;  // which GPU (after CUDA_VISIBLE_DEVICES)
  // Data parallel: the DP group's communicator (host buffers for the CPU,
  // device buffers for CUDA; not owned, outlives the backend), nullptr for a
  // world of one; and the ZeRO stage, 0-3 (stages run with a group of one too).
  dist::Communicator* dp = nullptr;
  int zero = 0;
  // Tensor and pipeline parallel: the TP and PP groups (not owned; nullptr or
  // a group of one: none). ZeRO 0-3 over each TP rank's / stage's DP group, on
  // both backends.
  dist::Communicator* tp = nullptr;
  dist::Communicator* pp = nullptr;
  // The micro-batches of one optimizer step (GAS): a pipeline stage keeps up to
  // that many in flight and the CUDA backend plans their activation slots at Init.
  int micro_batches = 1;
  // Megatron's sequence parallelism over the TP group (trainer/cpu/model.h,
  // trainer/cuda/cuda_model.h); nothing with TP1.
  bool sequence_parallel = false;
  // Gradients summed over the DP group in bf16 (CUDA: CudaDataParallel::ReduceInBf16; a world of
  // one rounds them the same way). The CPU refuses it.
  bool grad_reduce_bf16 = false;
  // CUDA over NCCL: the device memory allocated as the DP group's NCCL window (RunSpec::
  // nccl_window): the same bits, NCCL's symmetric kernels (or copy engines) for the DP group.
  bool nccl_window = false;
  // Zero 3: parameters of the forward's last units that stay gathered until their backward
  // (zero3_keep_params: CudaDataParallel::KeepGatheredLast, the CPU's twin); 0: every unit is
  // gathered again for its backward (FSDP2's reshard_after_forward). The same bits.
  int64_t zero3_keep_params = 0;
};

// One micro-batch: B rows of T positions. targets[b*T+t] is the token that
// should follow inputs[b*T+t]. loss_mask (nullable = all ones) is 1 where that
// target counts for the loss and 0 where it does not (prompt tokens).
struct MicroBatch {
  const int32_t* inputs = nullptr;     // [B, T]
  const int32_t* targets = nullptr;    // [B, T]
  const uint8_t* loss_mask = nullptr;  // [B, T] or nullptr
  int64_t B = 0;
  int64_t T = 0;
  // The optimizer step's last micro-batch: data-parallel gradients are reduced
  // during its backward (ZeRO 2-3 reduce every micro-batch's).
  bool last = true;
  // A model with a vision tower (LLaVA, trainer/model/llava_config.h): the micro-batch's
  // `images` images, pixel values [images, 3, S, S] (CLIP-normalised), and for image i's
  // token k the flat position image_positions[i * image_tokens + k] = b*T+t where its projected
  // feature replaces the token embedding, or -1 where truncation cut it off. inputs hold a
  // valid id (0) there and the mask is 0. Other models refuse images.
  const float* pixel_values = nullptr;
  const int64_t* image_positions = nullptr;
  int64_t images = 0;
};

struct LossSum {
  double sum = 0;     // sum of -log p(target) over masked-in positions
  int64_t count = 0;  // number of masked-in positions
};

struct AdamWStep {
  float lr = 0;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;  // decoupled, on tensors with ParamTensor::weight_decay only
  float grad_clip = 1.0f;     // global-norm clipping; <= 0 disables
  int64_t step = 1;           // 1-based, for bias correction
  // The true gradients are the accumulated ones times grad_scale (1 / the loss scale with
  // fp16, else 1): clipping sees their norm, AdamW their values, with no extra pass.
  float grad_scale = 1.0f;
};

struct MemoryStats {
  int64_t peak_bytes = 0;  // peak bytes held by the backend (parameters, state, activations)
  int64_t device_total_bytes = 0;  // the device's memory (CPU: physical RAM)
  std::string plan;  // CUDA: the arena's plan, an entry a line (this rank's); CPU: empty
};

// A GPU model's device for metrics.json: the GPU's name and the memory the model holds there.
struct GpuDevice {
  std::string name;
  MemoryStats memory;
};

// The energy counter of the device a rank trains on (CUDA: NVML's, of its GPU's board).
struct EnergyReading {
  std::string device;  // which device: ranks sharing one count its energy once
  double joules = 0;   // used since the counter started (the driver loaded); subtract two
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view device() const = 0;  // "cpu" | "cuda"
  // A short description of the device ("AMD EPYC, 2 threads"; "NVIDIA H100 80GB HBM3").
  virtual std::string device_name() const = 0;

  // Allocates parameters, gradients, optimizer state and activations for
  // `options`. Parameters start at zero; call SetParameters next.
  virtual Status Init(const ModelConfig& model, const BackendOptions& options) = 0;

  // Flat fp32 buffers of ParamLayout(model).total() floats. GetParameters also takes an
  // empty span: the rank takes part in the gather (collective under ZeRO and TP/PP) and keeps
  // nothing, so that only the rank that writes the checkpoint holds the whole model. Under
  // TP/PP the whole model arrives on the first rank of the TP x PP group (TP rank 0 of stage
  // 0) only; the group's other ranks pass an empty span (else kInvalidArgument).
  virtual Status SetParameters(std::span<const float> params) = 0;
  virtual Status GetParameters(std::span<float> params) const = 0;
  // SetParameters from a source (trainer/model/layout.h) that the backend asks for the ranges
  // this rank holds only: under ZeRO-3, TP or PP a rank never holds the whole model, and a
  // fresh run draws only its own slices of the initial weights. The same bits as
  // SetParameters of the whole buffer.
  virtual Status SetParametersFrom(const ParamSource& source) = 0;
  // GetParameters handing the values to `sink` as the gather brings them: each piece inside one
  // unit of ParamLayout(model), the units in order, so that the rank writing the model never
  // holds it whole (trainer/checkpoint's ModelWriter; under TP/PP the first rank still
  // assembles it from the shards). Collective as GetParameters; the other ranks pass no sink.
  virtual Status GetParametersTo(const ParamSink& sink) const = 0;
  // The gradients as they stand after the step's backward: summed over the DP group at zero 0;
  // kUnsupported when each rank holds the sum of its own slices only (zero >= 1, several DP
  // ranks) or at zero >= 2.
  virtual Status GetGradients(std::span<float> grads) const = 0;

  // AdamW first and second moments, fp32, ParamLayout order. kUnsupported when
  // they are sharded (zero >= 1): use the local state.
  virtual Status GetOptimizerState(std::span<float> m, std::span<float> v) const = 0;
  virtual Status SetOptimizerState(std::span<const float> m, std::span<const float> v) = 0;

  // This rank's part of the training state, for resume checkpoints: the fp32
  // master parameters and AdamW moments it owns, LocalStateSize() floats each
  // — everything without ZeRO (every rank of the group then holds the same),
  // its shard (trainer/dist/shard_plan.h order) with zero >= 1.
  virtual int64_t LocalStateSize() const = 0;
  virtual Status GetLocalState(std::span<float> params, std::span<float> m,
                               std::span<float> v) const = 0;
  virtual Status SetLocalState(std::span<const float> params, std::span<const float> m,
                               std::span<const float> v) = 0;

  virtual Status ZeroGrad() = 0;

  // Forward and backward of one micro-batch: adds
  //   d/dθ [ loss_scale * Σ_{b,t} mask[b,t] * -log p(targets[b,t] | inputs[b,:t+1]) ]
  // to the gradients. Returns the unscaled masked loss sum and count.
  virtual Result<LossSum> ForwardBackward(const MicroBatch& batch, float loss_scale) = 0;

  // One optimizer step's micro-batches (the last one `last`), as
  // ForwardBackward on each in order — the default — or, pipelined, in the
  // 1F1B schedule (trainer/dist/pipeline_schedule.h). Returns the sum of
  // their losses: on a pipeline's last stage only (zero elsewhere).
  virtual Result<LossSum> ForwardBackwardStep(std::span<const MicroBatch> micro, float loss_scale);

  // sqrt(Σ g²) over all gradients, as they stand (of the whole model, every
  // parameter once, whatever the layout).
  virtual Result<float> GradNorm() = 0;

  // Multiplies the gradients by step.grad_scale, clips them to step.grad_clip by
  // global norm (of the scaled ones), then one AdamW update; leaves the gradient
  // buffers as they were (ZeroGrad clears them).
  virtual Status OptimizerStep(const AdamWStep& step) = 0;

  // Forward only: losses[b*T+t] = -log p(targets[b*T+t] | inputs[b, :t+1]) for
  // every position (the mask is ignored). losses has B*T floats.
  virtual Status TokenLosses(const MicroBatch& batch, float* losses) = 0;

  // Forward only: argmax[b*T+t] = the most likely next token after inputs[b, :t+1]
  // (lowest id on ties), for every position. argmax has B*T entries.
  virtual Status NextTokenArgmax(const int32_t* inputs, int64_t B, int64_t T, int32_t* argmax) = 0;

  // Forward only, for greedy decoding: argmax[b] = the most likely token after
  // inputs[b, :lengths[b]], 1 <= lengths[b] <= T; positions at or past
  // lengths[b] are padding and cannot affect it (causal). The default runs
  // NextTokenArgmax and picks one position per row; a backend may override it
  // to run the classifier on those B rows only.
  virtual Status LastTokenArgmax(const int32_t* inputs, const int64_t* lengths, int64_t B,
                                 int64_t T, int32_t* argmax);

  virtual MemoryStats Memory() const = 0;

  // Seconds the computation has waited for data-parallel communication since
  // Init (the part the overlap did not hide); 0 without a communicator.
  virtual double CommWaitSeconds() const { return 0; }
  // Seconds this rank has spent in pipeline sends and receives since Init
  // (the bubble as it saw it, and the transfers); 0 without pipeline stages.
  virtual double PipelineWaitSeconds() const { return 0; }
  // The device's energy counter once the work queued so far has run; nullopt where there is
  // none to read (the CPU backend; a GPU without NVML, as in CI).
  virtual std::optional<EnergyReading> ReadEnergy() { return std::nullopt; }

 protected:
  // GetParametersTo for a backend that assembles the whole model (`total` floats) anyway: into
  // one buffer on the rank with a sink, handed over in one piece; the others only take part.
  Status GetWholeTo(int64_t total, const ParamSink& sink) const;
};

// Backends by name: "cpu" always; "cuda" when built with CUDA. The CUDA backend
// provides, in trainer/cuda/cuda_backend.h (namespace bm::train::cuda):
//   Result<std::unique_ptr<Backend>> CreateCudaBackend();
//   nlohmann::json ProbeCudaPlatform(bool libraries);   // see trainer/platform.h
// and a trainer/cuda/CMakeLists.txt defining the library bm_train_cuda;
// trainer/backends.cc and trainer/platform.cc call them under BENCHMAKE_HAVE_CUDA.
// kUnsupported for a device this build lacks, naming the ones it has.
Result<std::unique_ptr<Backend>> CreateBackend(std::string_view device);
std::vector<std::string> BackendNames();

}  // namespace bm::train
