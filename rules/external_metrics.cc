#include "rules/external_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/nearest_name.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/records_mfu.h"
#include "trainer/model/config.h"
#include "trainer/run/peak_flops.h"
#include "trainer/run/run_config.h"

namespace bm::rules {
namespace {

using engine::ParamSpec;
using engine::ParamType;
using logparse::Iteration;
using logparse::ParsedLog;
using nlohmann::json;

constexpr std::string_view kNoLog = "none";
constexpr int64_t kFinalLossWindow = 10;  // as benchmake-train's loss.final

// JSON has no NaN: a missing or non-finite number is null.
json Num(std::optional<double> v) { return v && std::isfinite(*v) ? json(*v) : json(nullptr); }

// A count (a batch size, a sequence length) as a JSON integer when it is one that int64_t holds
// exactly (up to 2^53: a cast of a larger one, a log's `seq_length 99999999999999999999`, was
// undefined behaviour and wrote INT64_MIN).
json Count(std::optional<double> v) {
  if (v && std::fabs(*v) <= 9007199254740992.0 && *v == std::floor(*v))
    return static_cast<int64_t>(*v);
  return Num(v);
}

std::optional<double> Given(const json& params, const char* name) {
  double v = params[name].get<double>();
  return v > 0 ? std::optional<double>(v) : std::nullopt;
}

// What the log says and what the BENCHFILE says, reconciled.
class Facts {
 public:
  Facts(const ParsedLog& log, std::string_view log_name, const json& params)
      : log_(log), name_(log_name), params_(params) {}

  std::optional<double> Logged(const char* fact) const {
    auto it = log_.facts.find(fact);
    return it == log_.facts.end() ? std::nullopt : std::optional<double>(it->second.value);
  }

  // A parallel size or device count the log states (tp, pp, dp, devices): a whole number from 1
  // to 2^31; any other (a mangled log's 0 or 1e+20, which the layout divides by or casts) is
  // an error naming the line.
  Result<std::optional<int64_t>> LoggedRanks(const char* fact) const {
    auto it = log_.facts.find(fact);
    if (it == log_.facts.end()) return std::optional<int64_t>();
    const double v = it->second.value;
    if (!(v >= 1 && v <= 2147483648.0) || v != std::floor(v)) {
      return Errorf(ErrorCode::kCorrupt, "{}:{}: {} {} is not a number of ranks", name_,
                    it->second.line, fact, v);
    }
    return std::optional<int64_t>(static_cast<int64_t>(v));
  }

  // The BENCHFILE's value when given, else the log's; both and different: an error.
  Result<std::optional<double>> Pick(const char* param, const char* fact) const {
    std::optional<double> given = Given(params_, param);
    auto it = log_.facts.find(fact);
    if (given && it != log_.facts.end() && it->second.value != *given) {
      return Errorf(ErrorCode::kInvalidArgument,
                    "{} = {}, but {}:{} says {}: the log is what ran; leave {} unset (or set it "
                    "to {})",
                    param, *given, name_, it->second.line, it->second.value, param,
                    it->second.value);
    }
    return given ? given : Logged(fact);
  }

  // `fix` says what to set instead.
  Status Agree(const char* what, double value, const char* fact, std::string_view fix) const {
    auto it = log_.facts.find(fact);
    if (it == log_.facts.end() || it->second.value == value) return Status::Ok();
    return Errorf(ErrorCode::kInvalidArgument, "{}, but {}:{} says {} {}: {}", what, name_,
                  it->second.line, fact, it->second.value, fix);
  }

  std::string_view name() const { return name_; }

 private:
  const ParsedLog& log_;
  std::string_view name_;
  const json& params_;
};

// The run's terms: layout, devices, sequence length, batch sizes, precision.
// devices and mpe are nullopt when neither the log nor the BENCHFILE says.
struct Terms {
  int64_t tp = 1, pp = 1, dp = 1;
  // devices, and with it the layout, nullopt when neither the log nor the BENCHFILE says (then
  // tp, pp and dp are 1 for the arithmetic, and metrics.json states only the logged tp and pp).
  std::optional<int64_t> devices;
  bool tp_logged = false, pp_logged = false;
  std::optional<double> mpe;
  std::optional<double> lbs, gas, gbs;
  std::string precision;
};

// The global batch every record states, when they all state the same one (Megatron's `global
// batch size:` in each iteration line of a log without its argument block); nullopt otherwise.
std::optional<double> ConstantBatch(const std::vector<Iteration>& records) {
  std::optional<double> batch;
  for (const Iteration& it : records) {
    if (!it.samples) continue;
    if (batch && *batch != *it.samples) return std::nullopt;
    batch = it.samples;
  }
  return batch;
}

Result<Terms> ResolveTerms(const ParsedLog& log, const Facts& f, const json& p) {
  Terms t;
  const std::string layout = p["layout"].get<std::string>();
  if (!layout.empty()) {
    BM_ASSIGN_OR_RETURN(train::ParallelLayout l, train::ParseLayout(layout));
    const std::string what = "layout = " + layout;
    constexpr std::string_view kFix = "leave layout unset (the log's is used) or set what ran";
    BM_TRY(f.Agree(what.c_str(), l.tp, "tp", kFix));
    BM_TRY(f.Agree(what.c_str(), l.pp, "pp", kFix));
    BM_TRY(f.Agree(what.c_str(), l.dp, "dp", kFix));
    t.tp = l.tp, t.pp = l.pp, t.dp = l.dp;
    t.devices = t.tp * t.pp * t.dp;
  } else {
    BM_ASSIGN_OR_RETURN(std::optional<int64_t> tp, f.LoggedRanks("tp"));
    BM_ASSIGN_OR_RETURN(std::optional<int64_t> pp, f.LoggedRanks("pp"));
    BM_ASSIGN_OR_RETURN(std::optional<int64_t> dp, f.LoggedRanks("dp"));
    BM_ASSIGN_OR_RETURN(std::optional<int64_t> devices, f.LoggedRanks("devices"));
    t.tp = tp.value_or(1);
    t.pp = pp.value_or(1);
    t.tp_logged = tp.has_value();
    t.pp_logged = pp.has_value();
    if (!devices && p["gpus"].get<int64_t>() > 0) devices = p["gpus"].get<int64_t>();
    if (dp) {
      t.dp = *dp;
      // world_size also counts context-parallel ranks, which TPxPPyDPz does not show.
      t.devices = devices ? *devices : t.tp * t.pp * t.dp;
    } else if (devices) {
      t.dp = std::max<int64_t>(1, *devices / (t.tp * t.pp));
      t.devices = *devices;
    }
  }
  BM_ASSIGN_OR_RETURN(t.mpe, f.Pick("mpe", "mpe"));
  BM_ASSIGN_OR_RETURN(t.lbs, f.Pick("lbs", "lbs"));
  BM_ASSIGN_OR_RETURN(t.gas, f.Pick("gas", "gas"));
  t.gbs = f.Logged("gbs");
  if (!t.gbs) t.gbs = ConstantBatch(log.iterations);
  if (!t.gbs && t.lbs && t.devices) t.gbs = *t.lbs * t.gas.value_or(1) * static_cast<double>(t.dp);
  if (!t.gas && t.gbs && t.lbs && t.devices) {
    double gas = *t.gbs / (*t.lbs * static_cast<double>(t.dp));
    if (gas >= 1 && gas == std::floor(gas)) t.gas = gas;
  }
  t.precision = p["precision"].get<std::string>();
  if (t.precision.empty()) t.precision = log.precision;
  return t;
}

struct Timing {
  std::optional<double> tokens_per_s;  // over all devices
  std::optional<double> tokens_per_device_per_s;
  std::optional<double> step_ms_median;
  int64_t measured_steps = 0;
  int64_t excluded_warmup_steps = 0;
  std::string method;
};

std::optional<double> SamplesOf(const Iteration& it, const Terms& t) {
  return it.samples ? it.samples : t.gbs;
}

std::optional<double> MsOf(const Iteration& it, const Terms& t) {
  if (it.ms) return it.ms;
  std::optional<double> samples = SamplesOf(it, t);
  if (samples && it.samples_per_s && *it.samples_per_s > 0)
    return *samples / *it.samples_per_s * 1000.0;
  return std::nullopt;
}

// The tokens of one step over all devices: the trainer's own count (TRL's num_tokens, padding left
// out) over the record's steps, else samples x mpe, else the printed rate x the step's time.
std::optional<double> StepTokens(const Iteration& it, const Terms& t) {
  if (it.tokens && it.span > 0) return *it.tokens / static_cast<double>(it.span);
  std::optional<double> samples = SamplesOf(it, t);
  if (samples && t.mpe) return *samples * *t.mpe;
  std::optional<double> ms = MsOf(it, t);
  if (!ms) return std::nullopt;
  if (it.tokens_per_s) return *it.tokens_per_s * *ms / 1000.0;
  if (it.tokens_per_device_per_s && t.devices)
    return *it.tokens_per_device_per_s * static_cast<double>(*t.devices) * *ms / 1000.0;
  return std::nullopt;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size();
  return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

void FillPerDevice(Timing& timing, const Terms& t) {
  if (t.devices && timing.tokens_per_s && !timing.tokens_per_device_per_s)
    timing.tokens_per_device_per_s = *timing.tokens_per_s / static_cast<double>(*t.devices);
  if (t.devices && timing.tokens_per_device_per_s && !timing.tokens_per_s)
    timing.tokens_per_s = *timing.tokens_per_device_per_s * static_cast<double>(*t.devices);
}

// The trainer's own figure (log_parser.h, TrainerAverage).
std::optional<Timing> TimeByTrainerAverage(const logparse::TrainerAverage& avg,
                                           const ParsedLog& log, std::string_view name,
                                           const Terms& t, std::vector<std::string>& notes) {
  Timing timing;
  if (avg.samples_per_s) {
    if (!t.mpe) {
      notes.push_back(fmt::format(
          "token/p/s: {} ({}:{}) counts samples and the log does not say the sequence length: set "
          "mpe (tokens = samples x mpe)",
          avg.what, name, avg.line));
      return std::nullopt;
    }
    timing.tokens_per_s = *avg.samples_per_s * *t.mpe;
  } else if (avg.tokens_per_s) {
    timing.tokens_per_s = avg.tokens_per_s;
  } else {
    timing.tokens_per_device_per_s = avg.tokens_per_device_per_s;
  }
  FillPerDevice(timing, t);
  timing.excluded_warmup_steps = avg.excluded_steps;
  if (avg.through_step > 0) {
    timing.measured_steps = std::max<int64_t>(0, avg.through_step - avg.excluded_steps);
    timing.method = fmt::format("{}, steps {}\u2013{} ({}:{})", avg.what, avg.excluded_steps + 1,
                                avg.through_step, name, avg.line);
  } else {
    timing.method = fmt::format("{} ({}:{})", avg.what, name, avg.line);
  }
  std::vector<double> times;
  for (const Iteration& it : log.iterations) {
    std::optional<double> ms = MsOf(it, t);
    if (it.step > avg.excluded_steps && (avg.through_step == 0 || it.step <= avg.through_step) &&
        ms)
      times.push_back(*ms);
  }
  if (!times.empty()) timing.step_ms_median = Median(times);
  return timing;
}

// The timing, or nullopt with a note saying what is missing. Errors only for
// an excluded_warmup_steps the log cannot honour.
Result<std::optional<Timing>> MeasureTiming(const logparse::LogParser& parser, const ParsedLog& log,
                                            std::string_view name, const Terms& t, const json& p,
                                            std::vector<std::string>& notes) {
  int64_t warmup = p["excluded_warmup_steps"].get<int64_t>();
  bool any_ms = false;
  for (const Iteration& it : log.iterations) any_ms = any_ms || MsOf(it, t).has_value();
  if (warmup < 0 && log.trainer_average)
    return TimeByTrainerAverage(*log.trainer_average, log, name, t, notes);
  if (warmup >= 0 && !any_ms && log.trainer_average) {
    const logparse::TrainerAverage& avg = *log.trainer_average;
    return Errorf(ErrorCode::kInvalidArgument,
                  "excluded_warmup_steps = {}, but {} times no step of its own: its only timing "
                  "is {} ({}:{}), which sets its own window: leave excluded_warmup_steps unset "
                  "(-1)",
                  warmup, name, avg.what, name, avg.line);
  }
  if (warmup < 0) warmup = parser.default_warmup_steps;
  Timing timing;
  double tokens = 0, seconds = 0, device_rate_time = 0, device_seconds = 0;
  // Records with a printed per-device rate and no time (torchtitan's `tps` without the start-up
  // lines that give a step's tokens): their steps and the sum of steps / rate.
  int64_t rate_steps = 0;
  double rate_inverse = 0;
  std::vector<double> times;
  int64_t latest_window = -1;  // the largest warm-up that would leave a timed record
  bool samples_missing = false, mpe_missing = false;
  for (const Iteration& it : log.iterations) {
    std::optional<double> ms = MsOf(it, t);
    if (ms) latest_window = std::max(latest_window, it.step - it.span);
    if (it.step - it.span + 1 <= warmup) {
      timing.excluded_warmup_steps += it.span;
      continue;
    }
    if (!ms) {
      if (it.tokens_per_device_per_s && *it.tokens_per_device_per_s > 0) {
        rate_steps += it.span;
        rate_inverse += static_cast<double>(it.span) / *it.tokens_per_device_per_s;
      }
      continue;
    }
    const double secs = static_cast<double>(it.span) * *ms / 1000.0;
    std::optional<double> step_tokens = StepTokens(it, t);
    if (step_tokens) {
      tokens += static_cast<double>(it.span) * *step_tokens;
      seconds += secs;
    } else if (it.tokens_per_device_per_s) {
      device_rate_time += *it.tokens_per_device_per_s * secs;
      device_seconds += secs;
    } else {
      samples_missing = samples_missing || !SamplesOf(it, t);
      mpe_missing = mpe_missing || !t.mpe;
      continue;
    }
    timing.measured_steps += it.span;
    times.push_back(*ms);
  }
  if (seconds > 0) {
    timing.tokens_per_s = tokens / seconds;
  } else if (device_seconds > 0) {
    timing.tokens_per_device_per_s = device_rate_time / device_seconds;
  } else if (rate_steps > 0) {
    // A step's tokens are the same at every step (a fixed batch): the rate over the steps is
    // their harmonic mean, each step's time being tokens / its rate.
    timing.tokens_per_device_per_s = static_cast<double>(rate_steps) / rate_inverse;
    timing.measured_steps = rate_steps;
    FillPerDevice(timing, t);
    timing.method = fmt::format(
        "the per-device token rate {} prints, over the {} steps after step {} (no step's time "
        "given: their harmonic mean, as for a fixed batch)",
        name, rate_steps, warmup);
    return std::optional<Timing>(timing);
  } else {
    const int64_t records = static_cast<int64_t>(log.iterations.size());
    const int64_t last = records ? log.iterations.back().step : 0;
    if (!any_ms) {
      notes.push_back(fmt::format(
          "token/p/s: {} times no step (no elapsed time, rate or timestamp on its {} records)",
          name, records));
    } else if (samples_missing) {
      notes.push_back(fmt::format(
          "token/p/s: {} does not give the global batch size: set lbs (and gas when not 1)", name));
    } else if (mpe_missing) {
      notes.push_back(fmt::format(
          "token/p/s: {} does not say the sequence length: set mpe (tokens = samples x mpe)",
          name));
    } else {
      notes.push_back(fmt::format(
          "token/p/s: no timed step after the first {} warm-up steps ({} records up to step {}): "
          "set excluded_warmup_steps to {} or less",
          warmup, records, last, std::max<int64_t>(0, latest_window)));
    }
    return std::optional<Timing>();
  }
  FillPerDevice(timing, t);
  timing.step_ms_median = Median(times);
  timing.method = fmt::format("tokens / time of the {} timed steps after step {}",
                              timing.measured_steps, warmup);
  return std::optional<Timing>(timing);
}

// Where no token rate could be measured (no sequence length or batch), the steps the log times
// keep their time: the median ms of those past the warm-up, as a measured rate would have it.
void FillStepTimeWithoutRate(const logparse::LogParser& parser, const ParsedLog& log,
                             const Terms& t, const json& p, Timing& timing) {
  int64_t warmup = p["excluded_warmup_steps"].get<int64_t>();
  if (warmup < 0) warmup = parser.default_warmup_steps;
  std::vector<double> times;
  int64_t excluded = 0;
  for (const Iteration& it : log.iterations) {
    if (it.step - it.span + 1 <= warmup) {
      excluded += it.span;
    } else if (std::optional<double> ms = MsOf(it, t)) {
      times.push_back(*ms);
    }
  }
  if (times.empty()) return;
  timing.step_ms_median = Median(times);
  timing.excluded_warmup_steps = excluded;
}

// N, L and hidden: from a preset, the parameters, or the log.
struct ModelFacts {
  json model = json::object();
  std::optional<double> parameters;
  std::optional<double> layers, hidden;
};

Result<ModelFacts> ResolveModel(const Facts& f, const json& p) {
  ModelFacts m;
  const std::string preset = p["model"].get<std::string>();
  if (!preset.empty()) {
    BM_ASSIGN_OR_RETURN(train::ModelConfig c, train::Preset(preset));
    BM_ASSIGN_OR_RETURN(c, train::ApplyOverrides(c, p["overrides"]));
    // The log's geometry is what ran: a preset that differs is the wrong one.
    for (auto [fact, value] : {std::pair{"layers", c.layers}, std::pair{"hidden", c.hidden},
                               std::pair{"heads", c.heads}}) {
      std::string what = fmt::format("model = {} has {} {}", preset, fact, value);
      BM_TRY(f.Agree(what.c_str(), static_cast<double>(value), fact,
                     "set the preset (or overrides) the run used, or parameters, layers and "
                     "hidden instead of model"));
    }
    m.parameters = static_cast<double>(train::ParameterCount(c));
    m.layers = static_cast<double>(c.layers);
    m.hidden = static_cast<double>(c.hidden);
    m.model = {{"family", train::FamilyName(c.family)},
               {"preset", preset},
               {"parameters", train::ParameterCount(c)},
               {"layers", c.layers},
               {"hidden", c.hidden},
               {"heads", c.heads},
               {"overrides", p["overrides"]}};
    return m;
  }
  m.parameters = Given(p, "parameters");
  if (!m.parameters) m.parameters = f.Logged("parameters");
  BM_ASSIGN_OR_RETURN(m.layers, f.Pick("layers", "layers"));
  BM_ASSIGN_OR_RETURN(m.hidden, f.Pick("hidden", "hidden"));
  m.model = {{"preset", nullptr},
             {"parameters", Count(m.parameters)},
             {"layers", Count(m.layers)},
             {"hidden", Count(m.hidden)},
             {"heads", Count(f.Logged("heads"))},
             {"overrides", json::object()}};
  return m;
}

// The platform's first GPU ({"name", "memory_bytes", ...}), or nullptr.
const json* FirstGpu(const json& platform) {
  auto gpus = platform.find("gpus");
  if (gpus == platform.end() || !gpus->is_array() || gpus->empty() || !(*gpus)[0].is_object())
    return nullptr;
  return &(*gpus)[0];
}

// Where the log was measured: the `device` parameter, else the platform's GPU.
std::string LoggedDevice(const json& p, const json& platform) {
  std::string device = p["device"].get<std::string>();
  if (!device.empty()) return device;
  const json* gpu = FirstGpu(platform);
  return gpu ? gpu->value("name", "") : "";
}

// The platform GPU's memory, unless `device` says the log came from elsewhere.
std::optional<double> DeviceMemory(const json& p, const json& platform) {
  const json* gpu = FirstGpu(platform);
  if (!p["device"].get<std::string>().empty() || !gpu) return std::nullopt;
  auto bytes = gpu->find("memory_bytes");
  if (bytes == gpu->end() || !bytes->is_number()) return std::nullopt;
  return bytes->get<double>();
}

// A model dimension (layers, hidden, sequence length) as TrainingFlopsPerToken takes it: 0 when
// unknown or no whole number up to 2^53 (a mangled log's 1e+20, whose cast was undefined).
int64_t FlopsDimension(std::optional<double> v) { return logparse::WholeCount(v).value_or(0); }

json MfuJson(const ModelFacts& m, const Terms& t, std::optional<double> per_device, const json& p,
             const json& platform, std::vector<std::string>& notes) {
  std::optional<double> six_n, palm;
  if (m.parameters) {
    train::FlopsPerToken f = train::TrainingFlopsPerToken(
        *m.parameters, FlopsDimension(m.layers), FlopsDimension(m.hidden), FlopsDimension(t.mpe));
    six_n = f.six_n;
    if (FlopsDimension(m.layers) && FlopsDimension(m.hidden) && FlopsDimension(t.mpe)) {
      palm = f.palm;
    } else if (m.layers && m.hidden) {
      notes.push_back("MFU (PaLM) needs the sequence length: set mpe");
    } else {
      notes.push_back(
          "MFU (PaLM) needs layers and hidden: set model (a preset), or layers and "
          "hidden");
    }
  } else {
    notes.push_back("MFU needs the parameter count: set model (a preset) or parameters");
  }
  std::optional<double> tflops = Given(p, "peak_tflops");
  std::optional<train::PeakFlops> peak;
  const std::string device = LoggedDevice(p, platform);
  std::optional<train::Precision> column;
  if (t.precision == "bf16" || t.precision == "fp16" || t.precision == "amp") {
    column = train::Precision::kBf16;
  } else if (t.precision == "fp32") {
    column = train::Precision::kFp32;
  }
  if (tflops || column) {
    peak = train::LookupPeakFlops("cuda", device, column.value_or(train::Precision::kBf16), 0,
                                  platform, tflops);
  }
  std::string peak_source = peak ? peak->source : "";
  if (!peak) {
    if (t.precision.empty()) {
      peak_source = "the log does not say the precision: set precision or peak_tflops";
    } else if (!column) {
      peak_source =
          fmt::format("no peak for precision '{}' in the table: set peak_tflops", t.precision);
    } else {
      peak_source = fmt::format("unknown device '{}': set device or peak_tflops", device);
    }
    notes.push_back("MFU: " + peak_source);
  }
  auto mfu = [&](std::optional<double> fpt) -> json {
    return peak && fpt && per_device ? json(*fpt * *per_device / peak->flops_per_device)
                                     : json(nullptr);
  };
  std::optional<double> achieved = palm ? palm : six_n;
  if (achieved && per_device)
    achieved = *achieved * *per_device;
  else
    achieved.reset();
  return {{"flops_per_token", {{"6N", Num(six_n)}, {"palm", Num(palm)}}},
          {"mfu",
           {{"6N", mfu(six_n)},
            {"palm", mfu(palm)},
            {"peak_flops_per_device", peak ? json(peak->flops_per_device) : json(nullptr)},
            {"peak_source", peak_source},
            {"achieved_flops_per_device", Num(achieved)}}}};
}

// The warm-up steps MeasureTiming leaves out: the parameter, else the trainer average's, else the
// format's.
int64_t WarmupSteps(const logparse::LogParser& parser, const ParsedLog& log, const json& p) {
  const int64_t warmup = p["excluded_warmup_steps"].get<int64_t>();
  if (warmup >= 0) return warmup;
  return log.trainer_average ? log.trainer_average->excluded_steps : parser.default_warmup_steps;
}

// The trainer's own MFU: its figure for the run (FlagPerf's), else the time-weighted mean of the
// MFU it printed on each record (torchtitan's) over the steps past the warm-up MeasureTiming leaves
// out (rules/logparse/records_mfu.h), with a note naming them.
json StatedMfu(const logparse::LogParser& parser, const ParsedLog& log, std::string_view name,
               const json& p, std::vector<std::string>& notes) {
  if (log.stated_mfu) return log.stated_mfu->value;
  const int64_t warmup = WarmupSteps(parser, log, p);
  std::optional<logparse::RecordsMfu> w = logparse::MfuOverRecords(log.iterations, warmup);
  if (!w) {
    if (logparse::MfuOverRecords(log.iterations, 0)) {
      notes.push_back(
          fmt::format("mfu.stated: no record after the first {} warm-up steps prints an MFU: set "
                      "excluded_warmup_steps lower",
                      warmup));
    }
    return nullptr;
  }
  notes.push_back(fmt::format(
      "mfu.stated: the MFU {} printed on {} record(s) of steps {}\u2013{} (after the first {} "
      "warm-up steps; line {} the last), weighted by each record's time (its steps / its MFU){}",
      name, w->records, w->first_step, w->last_step, warmup, w->line,
      w->left_out > 0 ? fmt::format("; {} record(s) of those steps print none", w->left_out)
                      : std::string()));
  return w->value;
}

// The trainer's own achieved FLOP/s per device as mfu.stated_flops_per_device, and over the peak
// as mfu.stated where the log states no MFU: the records' own figure (Megatron-DeepSpeed's
// `TFLOPs`, Megatron-LM's `throughput per GPU`, GPT-NeoX's, NeMo 2's, Nanotron's, torchtitan's:
// Iteration::flops_per_device_per_s) over the steps past the warm-up, records not above 0 left out
// with a note, time-weighted as MfuOverRecords weighs an MFU, else
// the log's one figure (DeepSpeed's flops profiler). The records' wins: it covers the steps
// token/p/s times, where the profiler's is one micro-batch of one step, counting the FLOPs its
// hooks see (on Megatron's layers far fewer: deepspeedai/DeepSpeed#2565); the other is noted.
void StatedFlops(const logparse::LogParser& parser, const ParsedLog& log, std::string_view name,
                 const json& p, json& mfu, std::vector<std::string>& notes) {
  mfu["stated_flops_per_device"] = nullptr;
  const int64_t warmup = WarmupSteps(parser, log, p);
  // A record's figure of 0 or below (a step NeMo timed by a wall clock that stepped back, a rate
  // below the printed digits) is no figure: MfuOverRecords leaves it out; say so.
  int64_t not_positive = 0, not_positive_line = 0;
  for (const logparse::Iteration& it : log.iterations) {
    if (!it.flops_per_device_per_s || *it.flops_per_device_per_s > 0) continue;
    not_positive_line = not_positive_line ? not_positive_line : it.line;
    ++not_positive;
  }
  if (not_positive > 0) {
    notes.push_back(fmt::format(
        "mfu.stated_flops_per_device: {} record(s) print a FLOP/s per device that is not above 0 "
        "({}:{} the first): no figure, left out",
        not_positive, name, not_positive_line));
  }
  const std::optional<logparse::RecordsMfu> w = logparse::MfuOverRecords(
      log.iterations, warmup, &logparse::Iteration::flops_per_device_per_s);
  const std::optional<logparse::Fact>& profiled = log.stated_flops_per_device;
  if (!w && !profiled) {
    if (logparse::MfuOverRecords(log.iterations, 0, &logparse::Iteration::flops_per_device_per_s)) {
      notes.push_back(fmt::format(
          "mfu.stated_flops_per_device: no record after the first {} warm-up steps prints a "
          "FLOP/s: set excluded_warmup_steps lower",
          warmup));
    }
    return;
  }
  const double flops = w ? w->value : profiled->value;
  const int64_t line = w ? w->line : profiled->line;
  mfu["stated_flops_per_device"] = flops;
  if (w) {
    notes.push_back(fmt::format(
        "mfu.stated_flops_per_device: the FLOP/s per device {} printed on {} record(s) of steps "
        "{}\u2013{} (after the first {} warm-up steps; line {} the last), weighted by each "
        "record's time (its steps / its FLOP/s){}{}",
        name, w->records, w->first_step, w->last_step, warmup, w->line,
        w->left_out > 0
            ? fmt::format("; {} record(s) of those steps print none above 0", w->left_out)
            : std::string(),
        profiled ? fmt::format("; not the flops profiler's {:g} at line {} (one profiled "
                               "micro-batch, the FLOPs its hooks see)",
                               profiled->value, profiled->line)
                 : std::string()));
  }
  if (!mfu["stated"].is_null()) return;
  if (!mfu["peak_flops_per_device"].is_number()) {
    notes.push_back(fmt::format(
        "mfu.stated: {}:{} states {:g} FLOP/s per device, but the peak is not known (set device "
        "or peak_tflops, and precision)",
        name, line, flops));
    return;
  }
  const double peak = mfu["peak_flops_per_device"].get<double>();
  mfu["stated"] = flops / peak;
  notes.push_back(fmt::format(
      "mfu.stated: the FLOP/s per device {}:{} states ({:g}) over the peak ({:g}): {}", name, line,
      flops, peak,
      w ? "the records' figure over the timed steps, its FLOPs as the trainer counts them"
        : "one profiled micro-batch, its FLOPs as the trainer counts them"));
}

json LossJson(const ParsedLog& log) {
  std::vector<double> losses;
  for (const Iteration& it : log.iterations)
    if (it.loss && std::isfinite(*it.loss)) losses.push_back(*it.loss);
  if (losses.empty()) return nullptr;
  const size_t window = std::min<size_t>(kFinalLossWindow, losses.size());
  double tail = 0;
  for (size_t i = losses.size() - window; i < losses.size(); ++i) tail += losses[i];
  return {{"first", losses.front()},
          {"final", tail / static_cast<double>(window)},
          {"final_window", window},
          {"min", *std::min_element(losses.begin(), losses.end())}};
}

std::string LogJsonl(const ParsedLog& log, const Terms& t) {
  std::string out = json{{"format", "benchmake-log"}, {"version", 1}}.dump() + "\n";
  for (const Iteration& it : log.iterations) {
    std::optional<double> tokens = StepTokens(it, t);
    std::optional<double> ms = MsOf(it, t);
    json rate = nullptr;
    if (tokens && ms && *ms > 0) {
      rate = Num(*tokens / (*ms / 1000.0));
    } else if (it.tokens_per_device_per_s && t.devices) {
      rate = Num(*it.tokens_per_device_per_s * static_cast<double>(*t.devices));
    }
    json line = {{"step", it.step},
                 {"loss", Num(it.loss)},
                 {"lr", Num(it.lr)},
                 {"grad_norm", Num(it.grad_norm)},
                 {"tokens", Count(tokens)},
                 {"tokens_per_s", rate},
                 {"ms", Num(ms)},
                 {"steps", it.span},
                 {"loss_scale", Num(it.loss_scale)},
                 {"skipped", it.skipped},
                 {"nan", it.nan}};
    out += line.dump() + "\n";
  }
  return out;
}

// An MLPerf log's own result (docs/METRICS.md, "mlperf").
json MlperfJson(const logparse::MlperfRun& run, size_t evaluations) {
  auto text = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  return {{"benchmark", text(run.benchmark)},
          {"submitter", text(run.submitter)},
          {"division", text(run.division)},
          {"platform", text(run.platform)},
          {"status", text(run.status)},
          {"time_to_train_s", Num(run.time_to_train_s)},
          {"run_s", Num(run.run_s)},
          {"epochs", run.epochs ? json(*run.epochs) : json(nullptr)},
          {"epoch_s_median", Num(run.epoch_s_median)},
          {"train_samples", Num(run.train_samples)},
          {"eval_samples", Num(run.eval_samples)},
          {"evaluations", evaluations},
          {"eval_epoch_num", Num(run.eval_epoch_num)},
          {"read_by", run.by_time_to_train ? "time to train" : "training steps"}};
}

// The evaluations' quality metric (docs/METRICS.md, "eval"): the last value, and whether an
// evaluation reached the target.
json QualityJson(const ParsedLog& log) {
  if (!log.eval_metric) return nullptr;
  const logparse::EvalMetric& m = *log.eval_metric;
  const json reached = m.reached ? json(*m.reached) : json(nullptr);
  return {{"metric", m.name.empty() ? json(nullptr) : json(m.name)},
          {"value", Num(log.evals.back().value)},
          {"higher_is_better", m.higher_is_better ? json(*m.higher_is_better) : json(nullptr)},
          {"target", Num(m.target)},
          {"reached", reached}};
}

}  // namespace

std::vector<ParamSpec> ExternalLogParams() {
  return {
      {"log_format", ParamType::kString, json(kNoLog),
       "parse a training log into metrics.json and log.jsonl: none, " + logparse::LogParserNames(),
       true},
      {"log", ParamType::kString, json(""),
       "the log file, relative to {out} or the working directory (\"\": the command's output)",
       true},
      {"layout", ParamType::kString, json(""),
       "the logged run's parallel layout TPxPPyDPz (\"\": the log's, else gpus)", true},
      engine::WithRange({"mpe", ParamType::kInt, json(0),
                         "sequence length (MPE) where the log does not say", true},
                        0),
      engine::WithRange({"lbs", ParamType::kInt, json(0),
                         "micro-batch size (LBS) where the log does not say", true},
                        0),
      engine::WithRange({"gas", ParamType::kInt, json(0),
                         "gradient accumulation steps (GAS) where the log does not say", true},
                        0),
      {"precision", ParamType::kString, json(""),
       "bf16, fp16, amp, fp32, ... (\"\": the log's): the peak table's column", true},
      {"model", ParamType::kString, json(""), "a model preset: N, layers and hidden for MFU", true},
      {"overrides", ParamType::kTable, json::object(), "model fields changed from the preset",
       true},
      {"parameters", ParamType::kFloat, json(0.0), "parameter count N for MFU without a preset",
       true},
      engine::WithRange(
          {"layers", ParamType::kInt, json(0), "layers L for MFU (PaLM) without a preset", true},
          0),
      engine::WithRange({"hidden", ParamType::kInt, json(0),
                         "hidden size (H x Q) for MFU (PaLM) without a preset", true},
                        0),
      {"peak_tflops", ParamType::kFloat, json(0.0), "peak TFLOP/s per device (0: the peak table)",
       true},
      {"device", ParamType::kString, json(""),
       "the device the log was measured on, e.g. \"H100\" (\"\": the platform's)", true},
      engine::WithRange({"excluded_warmup_steps", ParamType::kInt, json(-1),
                         "leading steps left out of token/p/s (-1: the format's convention)", true},
                        -1),
  };
}

std::vector<engine::ParamError> CheckExternalLogParams(const json& p) {
  std::vector<engine::ParamError> errors;
  const std::string format = p["log_format"].get<std::string>();
  if (format == kNoLog) {
    for (const ParamSpec& s : ExternalLogParams()) {
      if (s.name != "log_format" && p[s.name] != *s.default_value)
        errors.push_back({s.name, fmt::format("{} describes a parsed log: set log_format too "
                                              "(one of {})",
                                              s.name, logparse::LogParserNames())});
    }
    return errors;
  }
  if (!logparse::FindLogParser(format)) {
    std::vector<std::string> names = logparse::LogParserNameList();
    names.insert(names.begin(), "none");
    errors.push_back(
        {"log_format", fmt::format("unknown log_format '{}'{}: one of none, {}", format,
                                   DidYouMean(format, names), logparse::LogParserNames())});
  }
  if (const std::string layout = p["layout"].get<std::string>(); !layout.empty()) {
    if (Result<train::ParallelLayout> l = train::ParseLayout(layout); !l.ok())
      errors.push_back({"layout", l.status().message()});
  }
  for (const char* n : {"parameters", "peak_tflops"})
    if (p[n].get<double>() < 0) errors.push_back({n, fmt::format("{} must be >= 0", n)});
  const std::string preset = p["model"].get<std::string>();
  if (!preset.empty()) {
    Result<train::ModelConfig> m = train::Preset(preset);
    if (!m.ok()) {
      errors.push_back({"model", m.status().message()});
    } else if (Result<train::ModelConfig> o = train::ApplyOverrides(*m, p["overrides"]); !o.ok()) {
      errors.push_back({"overrides", o.status().message()});
    } else if (Status valid = train::Validate(*o); !valid.ok()) {
      errors.push_back({"overrides", valid.message()});  // as pretrain refuses the same model
    }
    for (const char* n : {"parameters", "layers", "hidden"})
      if (p[n].get<double>() > 0)
        errors.push_back({n, fmt::format("{} comes from model '{}': set one of them", n, preset)});
  } else if (!p["overrides"].empty()) {
    errors.push_back({"overrides", "overrides change a preset: set model"});
  }
  return errors;
}

Result<ExternalMetrics> BuildExternalMetrics(const logparse::LogParser& requested,
                                             const ParsedLog& log, std::string_view log_name,
                                             const json& p, const json& platform) {
  // `auto` times and labels the log as the format it recognised.
  const logparse::LogParser* found =
      requested.name == "auto" ? logparse::FindLogParser(log.format) : nullptr;
  const logparse::LogParser& parser = found ? *found : requested;
  ExternalMetrics out;
  out.notes = log.notes;
  Facts facts(log, log_name, p);
  BM_ASSIGN_OR_RETURN(Terms t, ResolveTerms(log, facts, p));
  BM_ASSIGN_OR_RETURN(std::optional<Timing> timed,
                      MeasureTiming(parser, log, log_name, t, p, out.notes));
  json loss = LossJson(log);
  const bool has_time_to_train = log.mlperf && log.mlperf->by_time_to_train;
  if (!timed && loss.is_null() && log.evals.empty() && !has_time_to_train) {
    // An MLPerf run that never reached run_stop (crashed, killed, cut off) says so first.
    const bool unfinished = log.mlperf && !log.mlperf->run_s;
    return Errorf(ErrorCode::kInvalidArgument,
                  "{}: nothing to report: no loss and no timed step in its {} records ({}){}",
                  log_name, log.iterations.size(), out.notes.empty() ? "" : out.notes.back(),
                  unfinished ? "; the MLPerf run has no run_stop: it did not finish" : "");
  }
  Timing timing = timed.value_or(Timing{});
  if (!timed) FillStepTimeWithoutRate(parser, log, t, p, timing);
  if (timed && timing.tokens_per_s && !t.devices) {
    out.notes.push_back(fmt::format(
        "token/p/s per device: {} does not say how many devices ran it: set layout (TPxPPyDPz)",
        log_name));
  }
  BM_ASSIGN_OR_RETURN(ModelFacts model, ResolveModel(facts, p));
  const std::optional<double> per_device = timing.tokens_per_device_per_s;
  const std::string device = LoggedDevice(p, platform);

  json& m = out.metrics;
  m = {{"format", "benchmake-metrics"}, {"version", 1}, {"kind", "train"}};
  m["model"] = model.model;
  m["config"] = {
      {"lbs", Count(t.lbs)},
      {"mpe", Count(t.mpe)},
      {"gas", Count(t.gas)},
      {"dp", t.devices ? json(t.dp) : json(nullptr)},
      {"tp", t.devices || t.tp_logged ? json(t.tp) : json(nullptr)},
      {"pp", t.devices || t.pp_logged ? json(t.pp) : json(nullptr)},
      {"gbs", Count(t.gbs)},
      {"layout", t.devices
                     ? json(train::ParallelLayout{static_cast<int>(t.tp), static_cast<int>(t.pp),
                                                  static_cast<int>(t.dp)}
                                .ToString())
                     : json(nullptr)},
      {"devices", t.devices ? json(*t.devices) : json(nullptr)},
      {"precision", t.precision.empty() ? json(nullptr) : json(t.precision)},
      {"steps", log.iterations.empty() ? json(nullptr) : json(log.iterations.back().step)},
      {"device", device.empty() ? json(nullptr) : json(device)}};
  m["throughput"] = {{"tokens_per_s", Num(timing.tokens_per_s)},
                     {"tokens_per_device_per_s", Num(per_device)},
                     {"step_ms_median", Num(timing.step_ms_median)},
                     {"measured_steps", timing.measured_steps},
                     {"excluded_warmup_steps", timing.excluded_warmup_steps},
                     {"method", timed ? json(timing.method) : json(nullptr)}};
  // A run read by its time to train has no token rate: what MFU would need from the BENCHFILE
  // (parameters, a peak) would not give one, so the notes do not ask for it.
  std::vector<std::string> mfu_notes;
  json mfu = MfuJson(model, t, per_device, p, platform, mfu_notes);
  if (has_time_to_train) {
    out.notes.push_back("MFU: none for a run read by its time to train (no token rate)");
  } else {
    out.notes.insert(out.notes.end(), mfu_notes.begin(), mfu_notes.end());
  }
  m["flops_per_token"] = mfu["flops_per_token"];
  m["mfu"] = mfu["mfu"];
  m["mfu"]["stated"] = StatedMfu(parser, log, log_name, p, out.notes);
  StatedFlops(parser, log, log_name, p, m["mfu"], out.notes);
  if (!log.peak_memory_bytes) out.notes.push_back("mem: the log reports no memory");
  m["memory"] = {{"peak_bytes", Num(log.peak_memory_bytes)},
                 {"device_total_bytes", Num(DeviceMemory(p, platform))},
                 {"source", log.memory_source.empty() ? json(nullptr) : json(log.memory_source)}};
  m["loss"] = loss;
  if (m["loss"].is_null()) out.notes.push_back("loss: no record of the log has a loss");
  m["eval"] = nullptr;
  if (!log.evals.empty()) {
    const logparse::EvalPoint& last = log.evals.back();
    using Kind = logparse::EvalMetric::Kind;
    const Kind kind = log.eval_metric ? log.eval_metric->kind : Kind::kLoss;
    m["eval"] = {{"task", log.eval_what},
                 {"val_loss", kind == Kind::kLoss ? json(last.value) : json(nullptr)},
                 {"accuracy", kind == Kind::kAccuracy ? json(last.value) : json(nullptr)},
                 {"quality", QualityJson(log)},
                 {"step", last.step > 0 ? json(last.step) : json(nullptr)}};
  }
  double tokens = 0;
  bool all_counted = !log.iterations.empty();
  int64_t skipped = 0, nans = 0;
  for (const Iteration& it : log.iterations) {
    std::optional<double> samples = SamplesOf(it, t);
    if (it.tokens) {
      tokens += *it.tokens;  // the trainer's own count (TRL's num_tokens)
    } else if (samples && t.mpe) {
      tokens += static_cast<double>(it.span) * *samples * *t.mpe;
    } else {
      all_counted = false;
    }
    skipped += it.skipped;
    nans += it.nan;
  }
  m["tokens"] = all_counted ? Count(tokens) : json(nullptr);
  m["wall_s"] = Num(log.wall_s);
  m["mlperf"] = log.mlperf ? MlperfJson(*log.mlperf, log.evals.size()) : json(nullptr);
  m["cpu_s"] = nullptr;
  if (!device.empty() && !p["device"].get<std::string>().empty())
    m["platform"] = {{"gpus", json::array({{{"name", device}}})}, {"source", "parameter device"}};
  if (log.restarts > 0) {
    out.notes.push_back(fmt::format(
        "the step count went back {} time(s) (a resumed run, or several ranks' output): the later "
        "records won",
        log.restarts));
  }
  m["provenance"] = {{"trainer", parser.name},
                     {"trainer_build", fmt::format("{} (log)", parser.name)},
                     {"log", log_name},
                     {"device_name", device.empty() ? json(nullptr) : json(device)},
                     {"skipped_iterations", skipped},
                     {"nan_iterations", nans},
                     {"notes", out.notes}};
  out.log_jsonl = LogJsonl(log, t);
  return out;
}

Result<engine::StepResult> MetricsFromLog(engine::StepContext& ctx) {
  const json& p = ctx.params;
  const logparse::LogParser* parser = logparse::FindLogParser(p["log_format"].get<std::string>());
  if (!parser) {
    return Errorf(ErrorCode::kInvalidArgument, "unknown log_format '{}'",
                  p["log_format"].get<std::string>());
  }
  Filesystem& fs = *ctx.fs;
  const std::string rel = p["log"].get<std::string>();
  std::string path = ctx.log_path, name = ctx.log_path;  // the command's own output
  if (!rel.empty()) {
    name = rel;
    path = ctx.out_dir + "/" + rel;
    BM_ASSIGN_OR_RETURN(FileInfo in_out, fs.Stat(path));
    if (!in_out.exists) path = ctx.scratch_dir + "/" + rel;
  }
  Result<std::string> text = fs.ReadFile(path);
  if (!text.ok() && rel.empty()) {
    return Errorf(ErrorCode::kFailed, "the command's output ({}) cannot be read: {}", path,
                  text.status().message());
  }
  if (!text.ok()) {
    return Errorf(ErrorCode::kFailed,
                  "log '{}' was not produced ({{out}} and the working directory have none): set "
                  "log to the file the command writes (\"\": its own output)",
                  rel);
  }
  BM_ASSIGN_OR_RETURN(ParsedLog log, parser->parse(*text, name));
  BM_ASSIGN_OR_RETURN(ExternalMetrics ext,
                      BuildExternalMetrics(*parser, log, name, p, ctx.platform));
  for (const char* own : {"metrics.json", "log.jsonl"}) {
    BM_ASSIGN_OR_RETURN(FileInfo info, fs.Stat(ctx.out_dir + "/" + own));
    if (info.exists) {
      return Errorf(ErrorCode::kFailed,
                    "the command wrote {{out}}/{} itself, which log_format writes: drop one", own);
    }
  }
  // The parsers quote log text in notes and labels through NoteText (invalid UTF-8 as U+FFFD);
  // a place that does not would make dump() throw here or in the action record. Backstop: the
  // metrics as written, any such byte replaced, are the step's metrics too.
  const std::string metrics_text =
      ext.metrics.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  ext.metrics = json::parse(metrics_text);
  BM_TRY(fs.WriteFileAtomic(ctx.out_dir + "/metrics.json", metrics_text));
  BM_TRY(fs.WriteFileAtomic(ctx.out_dir + "/log.jsonl", ext.log_jsonl));
  if (ctx.log) {
    const json& th = ext.metrics["throughput"];
    std::string rate =
        th["tokens_per_device_per_s"].is_number()
            ? fmt::format("token/p/s {:.1f} ({})", th["tokens_per_device_per_s"].get<double>(),
                          th["method"].get<std::string>())
            : std::string("token/p/s unknown (see the notes)");
    if (const json& ttt = ext.metrics["mlperf"];
        ttt.is_object() && ttt["time_to_train_s"].is_number())
      rate += fmt::format("; MLPerf time to train {:.1f} s", ttt["time_to_train_s"].get<double>());
    *ctx.log << fmt::format(
        "{} log {}: {} records{}; {}\n", ext.metrics["provenance"]["trainer"].get<std::string>(),
        name, log.iterations.size(),
        log.iterations.empty() ? "" : fmt::format(" up to step {}", log.iterations.back().step),
        rate);
    for (const std::string& n : ext.notes) *ctx.log << "note: " << n << "\n";
  }
  engine::StepResult result;
  result.metrics = std::move(ext.metrics);
  return result;
}

}  // namespace bm::rules
