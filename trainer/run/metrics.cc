#include "trainer/run/metrics.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "trainer/dist/pipeline_schedule.h"
#include "trainer/platform.h"

namespace bm::train {
namespace {

// User + system CPU time of this process so far.
double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

// The energy block: what the devices drew over the steps from FirstEnergyStep on, per token of
// those steps.
nlohmann::json EnergyJson(const TrainSummary& s) {
  if (!s.energy || s.energy->seconds <= 0) return nullptr;
  const int64_t first =
      FirstEnergyStep(static_cast<int64_t>(s.steps.size()), s.resumed_from_step.value_or(0));
  int64_t tokens = 0;
  for (const StepRecord& step : s.steps)
    if (step.step >= first) tokens += step.tokens;
  const RunEnergy& e = *s.energy;
  return {{"joules", e.joules},
          {"joules_per_token", tokens > 0 ? nlohmann::json(e.joules / static_cast<double>(tokens))
                                          : nlohmann::json(nullptr)},
          {"watts_per_device", e.joules / e.devices / e.seconds},
          {"seconds", e.seconds},
          {"devices", e.devices},
          {"tokens", tokens},
          {"source", "nvml"}};
}

}  // namespace

namespace {

// A number, or null when it is not finite.
nlohmann::json FiniteOrNull(double x) { return std::isfinite(x) ? nlohmann::json(x) : nullptr; }

// j[key]: 0 when absent, NaN when null.
double NumberOr(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return 0.0;
  return j[key].is_number() ? j[key].get<double>() : std::nan("");
}

}  // namespace

nlohmann::json StepRecord::ToJson() const {
  return {{"step", step},
          {"loss", FiniteOrNull(loss)},
          {"lr", lr},
          {"grad_norm", FiniteOrNull(grad_norm)},
          {"loss_scale", loss_scale ? nlohmann::json(*loss_scale) : nlohmann::json(nullptr)},
          {"skipped", skipped},
          {"tokens", tokens},
          {"tokens_per_s", ms > 0 ? tokens / (ms / 1000.0) : 0.0},
          {"ms", ms}};
}

StepRecord StepRecord::FromJson(const nlohmann::json& j) {
  StepRecord r;
  r.step = j.value("step", int64_t{0});
  r.loss = NumberOr(j, "loss");
  r.lr = NumberOr(j, "lr");
  r.grad_norm = NumberOr(j, "grad_norm");
  r.ms = NumberOr(j, "ms");
  r.tokens = j.value("tokens", int64_t{0});
  if (j.contains("loss_scale") && j["loss_scale"].is_number())
    r.loss_scale = j["loss_scale"].get<double>();
  r.skipped = j.contains("skipped") && j["skipped"].is_boolean() && j["skipped"].get<bool>();
  return r;
}

int64_t WarmupSteps(int64_t steps) {
  return steps >= 2 ? std::min<int64_t>(5, std::max<int64_t>(1, steps / 10)) : 0;
}

int64_t FirstEnergyStep(int64_t steps, int64_t resumed_from) {
  return std::max(WarmupSteps(steps), resumed_from) + 1;
}

Throughput MeasureThroughput(const std::vector<StepRecord>& steps) {
  Throughput t;
  const int64_t n = static_cast<int64_t>(steps.size());
  if (n == 0) return t;
  t.excluded_warmup_steps = WarmupSteps(n);
  double ms = 0;
  int64_t tokens = 0;
  std::vector<double> times;
  for (int64_t i = t.excluded_warmup_steps; i < n; ++i) {
    ms += steps[i].ms;
    tokens += steps[i].tokens;
    times.push_back(steps[i].ms);
  }
  t.measured_steps = static_cast<int64_t>(times.size());
  t.tokens_per_s = ms > 0 ? tokens / (ms / 1000.0) : 0.0;
  std::sort(times.begin(), times.end());
  const size_t m = times.size();
  t.step_ms_median = m % 2 ? times[m / 2] : (times[m / 2 - 1] + times[m / 2]) / 2;
  return t;
}

nlohmann::json BuildMetrics(const TrainSummary& s) {
  const ModelConfig& m = s.model;
  const RunConfig& r = s.run;
  const bool training = r.mode != RunMode::kEvaluate;
  nlohmann::json overrides = r.overrides;
  nlohmann::json model = {{"family", FamilyName(m.family)},
                          {"preset", m.preset},
                          {"parameters", ParameterCount(m)},
                          {"non_embedding_parameters", NonEmbeddingParameterCount(m)},
                          {"layers", m.layers},
                          {"hidden", m.hidden},
                          {"heads", m.heads},
                          {"kv_heads", m.kv_heads},
                          {"head_dim", m.head_dim()},
                          {"ffn_hidden", m.ffn_hidden},
                          {"vocab", m.vocab},
                          {"max_seq", m.max_seq},
                          {"tied_embeddings", m.tied_embeddings},
                          {"overrides", overrides}};
  nlohmann::json config = {
      {"lbs", r.lbs},
      {"mpe", r.mpe},
      {"gas", r.gas},
      {"dp", r.layout.dp},
      {"tp", r.layout.tp},
      {"pp", r.layout.pp},
      {"gbs", r.gbs()},
      {"layout", r.layout.ToString()},
      {"zero", r.zero},
      {"grad_reduce", r.grad_reduce_bf16 ? "bf16" : "fp32"},
      {"sequence_parallel", r.sequence_parallel},
      {"precision", PrecisionName(r.precision)},
      {"recompute", r.recompute},
      {"flash_attention", r.flash_attention},
      {"attention_backward", r.attention_backward},
      {"lr", r.lr},
      {"min_lr", r.min_lr},
      {"steps", r.steps},
      {"warmup_steps", r.warmup_steps},
      {"weight_decay", r.weight_decay},
      {"beta1", r.beta1},
      {"beta2", r.beta2},
      {"eps", r.eps},
      {"grad_clip", r.grad_clip},
      {"loss_scaler",
       r.precision == Precision::kFp16 ? r.loss_scaler.ToJson() : nlohmann::json(nullptr)},
      {"seed", r.seed},
      {"device", r.device},
      {"threads", r.threads}};
  const FlopsPerToken fpt = TrainingFlopsPerToken(m, r.mpe);
  nlohmann::json j = {
      {"format", "benchmake-metrics"},
      {"version", 1},
      {"kind", RunModeName(r.mode)},
      {"model", model},
      {"config", config},
      {"flops_per_token", {{"6N", fpt.six_n}, {"palm", fpt.palm}}},
      {"memory",
       {{"peak_bytes", s.memory.peak_bytes},
        {"device_total_bytes", s.memory.device_total_bytes},
        {"plan", s.memory.plan.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.memory.plan)}}},
      {"parallel",
       {{"world_size", s.world_size},
        {"layout", r.layout.ToString()},
        {"tp", r.layout.tp},
        {"pp", r.layout.pp},
        {"dp", r.layout.dp},
        {"zero", r.zero},
        {"grad_reduce", r.grad_reduce_bf16 ? "bf16" : "fp32"},
        {"nccl_window", r.nccl_window},
        {"zero3_keep_params", r.zero3_keep_params},
        {"comm_wait_s", s.comm_wait_s},
        {"comm_wait_fraction", s.train_s > 0 ? s.comm_wait_s / s.train_s : 0.0},
        {"pipeline_bubble", dist::BubbleFraction(r.layout.pp, static_cast<int>(r.gas))},
        {"pipeline_wait_s", s.pipeline_wait_s},
        {"pipeline_wait_fraction", s.train_s > 0 ? s.pipeline_wait_s / s.train_s : 0.0}}},
      {"eval", s.eval},
      {"wall_s", s.wall_s},
      {"cpu_s", ProcessCpuSeconds()},
      {"platform", s.platform},
      {"provenance",
       {{"host",
         [] {
           char h[256] = {0};
           gethostname(h, sizeof(h) - 1);
           return std::string(h);
         }()},
        {"started_at", s.started_at},
        {"trainer", "benchmake-train"},
        {"trainer_build", TrainerBuildId()},
        {"device_name", s.device_name},
        {"resumed_from_step",
         s.resumed_from_step ? nlohmann::json(*s.resumed_from_step) : nlohmann::json(nullptr)}}}};
  if (!training || s.steps.empty()) {
    j["throughput"] = nullptr;
    j["mfu"] = nullptr;
    j["loss"] = nullptr;
    j["tokens"] = nullptr;
    j["skipped_steps"] = nullptr;
    j["loss_scale"] = nullptr;
    j["energy"] = nullptr;
    return j;
  }
  const Throughput t = MeasureThroughput(s.steps);
  const double per_device = t.tokens_per_s / s.world_size;
  j["throughput"] = {{"tokens_per_s", t.tokens_per_s},
                     {"tokens_per_device_per_s", per_device},
                     {"step_ms_median", t.step_ms_median},
                     {"measured_steps", t.measured_steps},
                     {"excluded_warmup_steps", t.excluded_warmup_steps}};
  const int threads = r.threads > 0
                          ? r.threads
                          : s.platform.value("cpu", nlohmann::json::object()).value("cores", 1);
  std::optional<PeakFlops> peak =
      LookupPeakFlops(r.device, s.device_name, r.precision, threads, s.platform, r.peak_tflops);
  if (peak) {
    j["mfu"] = {{"6N", fpt.six_n * per_device / peak->flops_per_device},
                {"palm", fpt.palm * per_device / peak->flops_per_device},
                {"peak_flops_per_device", peak->flops_per_device},
                {"peak_source", peak->source},
                {"achieved_flops_per_device", fpt.palm * per_device}};
  } else {
    j["mfu"] = {{"6N", nullptr},
                {"palm", nullptr},
                {"peak_flops_per_device", nullptr},
                {"peak_source", "unknown device: set peak_tflops"},
                {"achieved_flops_per_device", fpt.palm * per_device}};
  }
  // Loss statistics over the steps with a finite loss (an fp16 step that overflowed in the
  // forward pass has none); skipped steps with a finite loss count: it is the model's loss.
  std::vector<double> losses;
  int64_t tokens = 0, skipped = 0;
  for (const StepRecord& step : s.steps) {
    if (std::isfinite(step.loss)) losses.push_back(step.loss);
    tokens += step.tokens;
    skipped += step.skipped ? 1 : 0;
  }
  const size_t window = std::min<size_t>(10, losses.size());
  double tail = 0;
  for (size_t i = losses.size() - window; i < losses.size(); ++i) tail += losses[i];
  j["loss"] = losses.empty()
                  ? nlohmann::json(nullptr)
                  : nlohmann::json{{"first", FiniteOrNull(s.steps[0].loss)},
                                   {"final", tail / static_cast<double>(window)},
                                   {"final_window", window},
                                   {"min", *std::min_element(losses.begin(), losses.end())}};
  j["tokens"] = tokens;
  j["skipped_steps"] = skipped;
  j["loss_scale"] = s.loss_scale ? nlohmann::json(*s.loss_scale) : nlohmann::json(nullptr);
  j["energy"] = EnergyJson(s);
  return j;
}

std::string UtcNow() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace bm::train
