#include "trainer/run/run_config.h"

#include <fmt/format.h>

#include <limits>
#include <utility>

namespace bm::train {
namespace {

template <typename T>
Status Get(const nlohmann::json& j, const char* key, T* out) {
  if (!j.contains(key) || j[key].is_null()) return Status::Ok();
  const nlohmann::json& v = j[key];
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return Errorf(ErrorCode::kInvalidArgument, "{} must be a boolean", key);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return Errorf(ErrorCode::kInvalidArgument, "{} must be a string", key);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) return Errorf(ErrorCode::kInvalidArgument, "{} must be a number", key);
  } else {
    if (!v.is_number_integer())
      return Errorf(ErrorCode::kInvalidArgument, "{} must be an integer", key);
    // get<T> would wrap a value past T's range (4294967297 into an int: 1).
    const bool fits = v.is_number_unsigned() ? std::in_range<T>(v.get<uint64_t>())
                                             : std::in_range<T>(v.get<int64_t>());
    if (!fits)
      return Errorf(ErrorCode::kInvalidArgument, "{} {} is out of range (at most {})", key,
                    v.dump(), std::numeric_limits<T>::max());
  }
  *out = v.get<T>();
  return Status::Ok();
}

}  // namespace

std::string_view RunModeName(RunMode mode) {
  switch (mode) {
    case RunMode::kPretrain:
      return "pretrain";
    case RunMode::kFinetune:
      return "finetune";
    case RunMode::kEvaluate:
      return "evaluate";
  }
  return "?";
}

std::string ParallelLayout::ToString() const { return fmt::format("TP{}PP{}DP{}", tp, pp, dp); }

Result<ParallelLayout> ParseLayout(std::string_view text) {
  ParallelLayout l;
  bool seen[3] = {false, false, false};
  size_t i = 0;
  auto bad = [&] {
    return Errorf(ErrorCode::kInvalidArgument,
                  "layout '{}' is not of the form TPxPPyDPz (e.g. TP1PP1DP1)", text);
  };
  while (i < text.size()) {
    if (i + 2 > text.size()) return bad();
    std::string_view tag = text.substr(i, 2);
    int which = tag == "TP" ? 0 : tag == "PP" ? 1 : tag == "DP" ? 2 : -1;
    if (which < 0 || seen[which]) return bad();
    seen[which] = true;
    i += 2;
    size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == start || i - start > 6) return bad();
    int value = std::stoi(std::string(text.substr(start, i - start)));
    if (value < 1) return bad();
    (which == 0 ? l.tp : which == 1 ? l.pp : l.dp) = value;
  }
  return l;
}

Result<RunConfig> ParseRunConfig(const nlohmann::json& j) {
  if (!j.is_object())
    return Status(ErrorCode::kInvalidArgument, "the run config must be a JSON object");
  RunConfig c;
  std::string mode = "pretrain", precision = "fp32", layout = "TP1PP1DP1";
  BM_TRY(Get(j, "mode", &mode));
  if (mode == "pretrain")
    c.mode = RunMode::kPretrain;
  else if (mode == "finetune")
    c.mode = RunMode::kFinetune;
  else if (mode == "evaluate")
    c.mode = RunMode::kEvaluate;
  else
    return Errorf(ErrorCode::kInvalidArgument, "mode '{}' (pretrain, finetune, evaluate)", mode);
  BM_TRY(Get(j, "data", &c.data_dir));
  BM_TRY(Get(j, "out_dir", &c.out_dir));
  BM_TRY(Get(j, "resume_dir", &c.resume_dir));
  BM_TRY(Get(j, "init", &c.init));
  BM_TRY(Get(j, "device", &c.device));
  BM_TRY(Get(j, "threads", &c.threads));
  BM_TRY(Get(j, "precision", &precision));
  BM_ASSIGN_OR_RETURN(c.precision, ParsePrecision(precision));
  BM_TRY(Get(j, "recompute", &c.recompute));
  BM_TRY(Get(j, "flash_attention", &c.flash_attention));
  BM_TRY(Get(j, "attention", &c.attention));
  BM_TRY(Get(j, "layout", &layout));
  BM_ASSIGN_OR_RETURN(c.layout, ParseLayout(layout));
  BM_TRY(Get(j, "zero", &c.zero));
  BM_TRY(Get(j, "sequence_parallel", &c.sequence_parallel));
  BM_TRY(Get(j, "communicator", &c.communicator));
  std::string grad_reduce = "fp32";
  BM_TRY(Get(j, "grad_reduce", &grad_reduce));
  if (grad_reduce != "fp32" && grad_reduce != "bf16")
    return Errorf(ErrorCode::kInvalidArgument,
                  "grad_reduce '{}': the gradients' type on the wire is fp32 or bf16", grad_reduce);
  c.grad_reduce_bf16 = grad_reduce == "bf16";
  BM_TRY(Get(j, "nccl_window", &c.nccl_window));
  BM_TRY(Get(j, "attention_backward", &c.attention_backward));
  for (auto [key, ptr] : {std::pair{"lbs", &c.lbs},
                          {"mpe", &c.mpe},
                          {"gas", &c.gas},
                          {"steps", &c.steps},
                          {"warmup_steps", &c.warmup_steps},
                          {"checkpoint_every", &c.checkpoint_every},
                          {"eval_tokens", &c.eval_tokens},
                          {"eval_examples", &c.eval_examples},
                          {"eval_choices", &c.eval_choices},
                          {"eval_max_answer", &c.eval_max_answer},
                          {"max_new_tokens", &c.max_new_tokens},
                          {"zero3_keep_params", &c.zero3_keep_params}})
    BM_TRY(Get(j, key, ptr));
  for (auto [key, ptr] : {std::pair{"lr", &c.lr},
                          {"min_lr", &c.min_lr},
                          {"weight_decay", &c.weight_decay},
                          {"beta1", &c.beta1},
                          {"beta2", &c.beta2},
                          {"eps", &c.eps},
                          {"grad_clip", &c.grad_clip},
                          {"init_scale", &c.loss_scaler.init_scale},
                          {"growth_factor", &c.loss_scaler.growth_factor},
                          {"backoff_factor", &c.loss_scaler.backoff_factor},
                          {"min_scale", &c.loss_scaler.min_scale}})
    BM_TRY(Get(j, key, ptr));
  BM_TRY(Get(j, "growth_interval", &c.loss_scaler.growth_interval));
  BM_TRY(Get(j, "hysteresis", &c.loss_scaler.hysteresis));
  int64_t seed = static_cast<int64_t>(c.seed);
  BM_TRY(Get(j, "seed", &seed));
  c.seed = static_cast<uint64_t>(seed);
  BM_TRY(Get(j, "progress", &c.progress));
  BM_TRY(Get(j, "mllog", &c.mllog));
  BM_TRY(Get(j, "save_init", &c.save_init));
  if (j.contains("llava_stage") && j.contains("freeze"))
    return Status(ErrorCode::kInvalidArgument,
                  "llava_stage and freeze both given: use one (llava_stage names a set of "
                  "frozen parts)");
  if (j.contains("llava_stage")) {
    std::string stage;
    BM_TRY(Get(j, "llava_stage", &stage));
    BM_ASSIGN_OR_RETURN(c.freeze, LlavaFreezeForStage(stage));
    c.freeze_set = true;
  }
  if (j.contains("freeze")) {
    const nlohmann::json& f = j["freeze"];
    std::vector<std::string> names;
    if (!f.is_array())
      return Status(ErrorCode::kInvalidArgument,
                    "freeze must be a list of part names (vision_tower, projector, "
                    "language_model)");
    for (const nlohmann::json& name : f) {
      if (!name.is_string())
        return Errorf(ErrorCode::kInvalidArgument, "freeze: {} is not a part name (a string)",
                      name.dump());
      names.push_back(name.get<std::string>());
    }
    BM_ASSIGN_OR_RETURN(c.freeze, LlavaFreezeFromNames(names));
    c.freeze_set = true;
  }
  if (j.contains("peak_tflops") && !j["peak_tflops"].is_null()) {
    double p = 0;
    BM_TRY(Get(j, "peak_tflops", &p));
    if (!(p > 0)) return Status(ErrorCode::kInvalidArgument, "peak_tflops must be positive");
    c.peak_tflops = p;
  }
  if (j.contains("model")) {
    const nlohmann::json& m = j["model"];
    if (!m.is_object()) return Status(ErrorCode::kInvalidArgument, "model must be an object");
    BM_TRY(Get(m, "preset", &c.preset));
    if (m.contains("overrides") && !m["overrides"].is_null()) c.overrides = m["overrides"];
    if (m.contains("trainable") && !m["trainable"].is_null()) {
      const nlohmann::json& t = m["trainable"];
      if (!t.is_array() || t.empty())
        return Status(ErrorCode::kInvalidArgument,
                      "model.trainable must be a non-empty list of \"vision_tower\", "
                      "\"projector\", \"language_model\"");
      for (const nlohmann::json& part : t) {
        const std::string name = part.is_string() ? part.get<std::string>() : part.dump();
        if (name != "vision_tower" && name != "projector" && name != "language_model")
          return Errorf(ErrorCode::kInvalidArgument,
                        "model.trainable: '{}' is not a part (vision_tower, projector, "
                        "language_model)",
                        name);
      }
      // the complement of what trains is frozen
      if (c.freeze_set)
        return Status(ErrorCode::kInvalidArgument,
                      "model.trainable and llava_stage / freeze both given: use one");
      auto trains = [&t](const char* part) {
        for (const nlohmann::json& p : t)
          if (p == part) return true;
        return false;
      };
      c.freeze = {!trains("vision_tower"), !trains("projector"), !trains("language_model")};
      BM_TRY(Validate(c.freeze));
      c.freeze_set = true;
    }
  }
  if (c.freeze_set && c.mode == RunMode::kEvaluate)
    return Status(ErrorCode::kInvalidArgument,
                  "llava_stage / freeze / model.trainable: evaluate trains nothing, so nothing "
                  "is frozen");

#define invalid(...) Errorf(ErrorCode::kInvalidArgument, __VA_ARGS__)
  if (c.lbs < 1) return invalid("lbs must be >= 1 (got {})", c.lbs);
  if (c.mpe < 1) return invalid("mpe must be >= 1 (got {})", c.mpe);
  if (c.gas < 1) return invalid("gas must be >= 1 (got {})", c.gas);
  if (c.mode != RunMode::kEvaluate) {
    if (c.steps < 1) return invalid("steps must be >= 1 (got {})", c.steps);
    if (c.warmup_steps < 0 || c.warmup_steps > c.steps)
      return invalid("warmup_steps must lie in [0, steps = {}] (got {})", c.steps, c.warmup_steps);
    if (!(c.lr > 0)) return invalid("lr must be positive (got {})", c.lr);
    if (c.min_lr < 0 || c.min_lr > c.lr)
      return invalid("min_lr must lie in [0, lr] (got {})", c.min_lr);
    if (c.beta1 < 0 || c.beta1 >= 1 || c.beta2 < 0 || c.beta2 >= 1)
      return invalid("beta1 and beta2 must lie in [0, 1)");
    if (c.weight_decay < 0) return invalid("weight_decay must be >= 0");
    // torch.optim.AdamW refuses eps < 0; a negative clipping norm would flip the gradients.
    if (!(c.eps >= 0)) return invalid("eps must be >= 0 (got {})", c.eps);
    if (!(c.grad_clip >= 0))
      return invalid("grad_clip must be >= 0; 0 is off (got {})", c.grad_clip);
    if (c.checkpoint_every < 0) return invalid("checkpoint_every must be >= 0");
    BM_TRY(c.loss_scaler.Validate());
  }
  if (c.eval_max_answer < 0)
    return invalid("eval_max_answer must be >= 0 (got {})", c.eval_max_answer);
  if (c.max_new_tokens < 1)
    return invalid("max_new_tokens must be >= 1 (got {})", c.max_new_tokens);
  if (c.eval_choices < 2) return invalid("eval_choices must be >= 2 (got {})", c.eval_choices);
  if (c.mode == RunMode::kPretrain && c.preset.empty() && c.init.empty())
    return invalid("pretrain needs model.preset");
  if (c.mode != RunMode::kPretrain && c.init.empty())
    return invalid("{} needs init (a checkpoint)", mode);
  if (c.mode == RunMode::kEvaluate && c.save_init)
    return invalid("save_init: evaluate trains nothing; only pretrain and finetune have an init");
  if (c.data_dir.empty()) return invalid("data is required");
  if (c.out_dir.empty()) return invalid("out_dir is required");
#undef invalid
  // What this trainer supports.
  if (c.zero < 0 || c.zero > 3)
    return Errorf(ErrorCode::kInvalidArgument, "zero = {}: the ZeRO stage is 0, 1, 2 or 3", c.zero);
  if (c.mode == RunMode::kEvaluate && c.layout.tp * c.layout.pp * c.layout.dp != 1)
    return Errorf(ErrorCode::kUnsupported,
                  "layout {}: evaluation runs on one rank (use TP1PP1DP1; the checkpoint is "
                  "whole)",
                  c.layout.ToString());
  if (c.sequence_parallel && c.layout.tp == 1)
    return Errorf(ErrorCode::kInvalidArgument,
                  "sequence_parallel = true with layout {}: sequence parallelism splits the "
                  "tokens over the tensor-parallel group, so it needs TP > 1",
                  c.layout.ToString());
  if (c.sequence_parallel && (c.lbs * c.mpe) % c.layout.tp != 0)
    return Errorf(ErrorCode::kInvalidArgument,
                  "sequence_parallel = true: TP{} must divide a micro-batch's lbs x mpe = {} x {} "
                  "tokens",
                  c.layout.tp, c.lbs, c.mpe);
  // ZeRO 0-3 over each TP rank's / stage's data-parallel group, with TP, PP or both, on either
  // device.
  if (c.communicator != "auto" && c.communicator != "gloo" && c.communicator != "nccl")
    return Errorf(ErrorCode::kInvalidArgument, "communicator '{}' (auto, gloo, nccl)",
                  c.communicator);
  if (c.nccl_window && (c.device != "cuda" || c.communicator == "gloo"))
    return Errorf(ErrorCode::kInvalidArgument,
                  "nccl_window = true with device '{}' and communicator '{}': the window is NCCL "
                  "device memory (device cuda, communicator auto or nccl)",
                  c.device, c.communicator);
  if (c.attention_backward != "auto" && c.attention_backward != "one_call" &&
      c.attention_backward != "blocks")
    return Errorf(ErrorCode::kInvalidArgument,
                  "attention_backward '{}': cuDNN's attention backward runs over \"blocks\" of "
                  "keys, in \"one_call\", or as the memory plan chooses (\"auto\")",
                  c.attention_backward);
  if (c.attention_backward != "auto" &&
      (c.device != "cuda" || c.precision == Precision::kFp32 || c.attention == "flash"))
    return Errorf(ErrorCode::kInvalidArgument,
                  "attention_backward '{}' with device '{}', precision '{}' and attention '{}': it "
                  "chooses how cuDNN's attention runs, which needs device cuda, precision bf16 or "
                  "fp16 and attention auto or cudnn",
                  c.attention_backward, c.device, PrecisionName(c.precision), c.attention);
  if (c.zero3_keep_params < 0)
    return Errorf(ErrorCode::kInvalidArgument,
                  "zero3_keep_params = {}: a count of parameters, 0 or more", c.zero3_keep_params);
  if (c.zero3_keep_params > 0 && c.zero != 3)
    return Errorf(ErrorCode::kInvalidArgument,
                  "zero3_keep_params = {} with zero = {}: it keeps ZeRO-3's gathered units to "
                  "their backward (set zero = 3, or leave it out)",
                  c.zero3_keep_params, c.zero);
  if (c.device == "cpu" && c.precision != Precision::kFp32)
    return Errorf(ErrorCode::kUnsupported,
                  "precision '{}' on device cpu: the cpu backend is fp32 only (bf16 and fp16 "
                  "need device cuda)",
                  PrecisionName(c.precision));
  return c;
}

std::string Fingerprint(const RunConfig& c, const ModelConfig& model) {
  nlohmann::json j = {{"model", ToJson(model)},
                      {"mode", RunModeName(c.mode)},
                      {"init", c.init},
                      {"device", c.device},
                      {"threads", c.threads},
                      {"precision", PrecisionName(c.precision)},
                      {"recompute", c.recompute},
                      {"layout", c.layout.ToString()},
                      {"zero", c.zero},
                      {"lbs", c.lbs},
                      {"mpe", c.mpe},
                      {"gas", c.gas},
                      {"steps", c.steps},
                      {"warmup", c.warmup_steps},
                      {"lr", c.lr},
                      {"min_lr", c.min_lr},
                      {"wd", c.weight_decay},
                      {"b1", c.beta1},
                      {"b2", c.beta2},
                      {"eps", c.eps},
                      {"clip", c.grad_clip},
                      {"seed", c.seed},
                      {"data", c.data_dir}};
  if (c.grad_reduce_bf16) j["grad_reduce"] = "bf16";  // (fp32 runs keep their fingerprints)
  if (c.precision == Precision::kFp16) j["loss_scaler"] = c.loss_scaler.ToJson();
  if (c.sequence_parallel) j["sequence_parallel"] = true;  // other sums: other bits
  return j.dump();
}

}  // namespace bm::train
