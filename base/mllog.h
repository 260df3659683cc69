// MLPerf's log lines, so that mlperf-logging's checkers (compliance_checker,
// result_summarizer) can read benchmake-train's runs:
//
//   :::MLLOG {"namespace": "", "time_ms": 1763715600000, "event_type": "POINT_IN_TIME",
//             "key": "seed", "value": 1234, "metadata": {"file": "train.cc", "lineno": 88}}
//
// The fields, their order, the event types and the float conversion of values
// are those of mlperf_logging/mllog/mllog.py; `metadata` gets "file" and "lineno" of the
// caller (std::source_location), as mllog fills them in Python. Keys are
// mlperf_logging/mllog/constants.py's (the common ones are below).
//
// Header-only and free of benchmake types (nlohmann::json only), so the trainer
// includes it without linking anything new:
//
//   bm::mllog::Logger log(std::cout);            // or a file stream
//   log.Point(bm::mllog::kCacheClear, true);
//   log.Start(bm::mllog::kInitStart);
//   log.Point(bm::mllog::kSeed, 1234);
//   log.End(bm::mllog::kInitStop);
//   log.Start(bm::mllog::kRunStart);
//   ...
//   log.End(bm::mllog::kRunStop, nullptr, {{"status", "success"}});
//
// Thread safety: a Logger writes whole lines; callers serialize use.
#pragma once

#include <cctype>
#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <source_location>
#include <string>
#include <string_view>

namespace bm::mllog {

enum class EventType { kPointInTime, kIntervalStart, kIntervalEnd };

inline std::string_view EventTypeName(EventType t) {
  switch (t) {
    case EventType::kIntervalStart:
      return "INTERVAL_START";
    case EventType::kIntervalEnd:
      return "INTERVAL_END";
    case EventType::kPointInTime:
      break;
  }
  return "POINT_IN_TIME";
}

// mlperf_logging/mllog/constants.py (those a training run needs).
inline constexpr std::string_view kCacheClear = "cache_clear";
inline constexpr std::string_view kInitStart = "init_start";
inline constexpr std::string_view kInitStop = "init_stop";
inline constexpr std::string_view kRunStart = "run_start";
inline constexpr std::string_view kRunStop = "run_stop";
inline constexpr std::string_view kBlockStart = "block_start";
inline constexpr std::string_view kBlockStop = "block_stop";
inline constexpr std::string_view kEpochStart = "epoch_start";
inline constexpr std::string_view kEpochStop = "epoch_stop";
inline constexpr std::string_view kEvalStart = "eval_start";
inline constexpr std::string_view kEvalStop = "eval_stop";
inline constexpr std::string_view kEvalAccuracy = "eval_accuracy";
inline constexpr std::string_view kTrainLoss = "train_loss";
inline constexpr std::string_view kSeed = "seed";
inline constexpr std::string_view kGlobalBatchSize = "global_batch_size";
inline constexpr std::string_view kGradientAccumulationSteps = "gradient_accumulation_steps";
inline constexpr std::string_view kMaxSequenceLength = "max_sequence_length";
inline constexpr std::string_view kOptName = "opt_name";
inline constexpr std::string_view kOptBaseLearningRate = "opt_base_learning_rate";
inline constexpr std::string_view kOptLearningRateWarmupSteps = "opt_learning_rate_warmup_steps";
inline constexpr std::string_view kTrainSamples = "train_samples";
inline constexpr std::string_view kEvalSamples = "eval_samples";
inline constexpr std::string_view kSubmissionBenchmark = "submission_benchmark";
inline constexpr std::string_view kSubmissionOrg = "submission_org";
inline constexpr std::string_view kSubmissionDivision = "submission_division";
inline constexpr std::string_view kSubmissionStatus = "submission_status";
inline constexpr std::string_view kSubmissionPlatform = "submission_platform";
inline constexpr std::string_view kTargetAccuracy = "target_accuracy";

// A benchmark's name as MLPerf's rules write it: lower case, '_' for '-' (Primus logs
// "gpt-oss-20b" for gpt_oss_20b).
inline std::string BenchmarkName(std::string_view logged) {
  std::string out;
  for (char c : logged)
    out += c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

inline int64_t WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One line, without the trailing newline. `metadata` must be an object or null.
inline std::string FormatLine(std::string_view name_space, int64_t time_ms, EventType type,
                              std::string_view key, const nlohmann::json& value,
                              const nlohmann::json& metadata) {
  nlohmann::ordered_json j;
  j["namespace"] = name_space;
  j["time_ms"] = time_ms;
  j["event_type"] = EventTypeName(type);
  j["key"] = key;
  // mllog.py turns every value float() accepts into a float: 1234 -> 1234.0, true -> 1.0.
  if (value.is_number() || value.is_boolean()) {
    j["value"] = value.is_boolean() ? (value.get<bool>() ? 1.0 : 0.0) : value.get<double>();
  } else {
    j["value"] = nlohmann::ordered_json::parse(value.dump());
  }
  // "file" and "lineno" first, as mllog.py writes them, then the caller's keys.
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  if (metadata.is_object()) {
    for (const char* first : {"file", "lineno"}) {
      if (metadata.contains(first))
        meta[first] = nlohmann::ordered_json::parse(metadata[first].dump());
    }
    for (auto it = metadata.begin(); it != metadata.end(); ++it) {
      if (it.key() != "file" && it.key() != "lineno") {
        meta[it.key()] = nlohmann::ordered_json::parse(it.value().dump());
      }
    }
  }
  j["metadata"] = std::move(meta);
  // ", " and ": " as Python's json.dumps writes them.
  std::string out = ":::MLLOG ";
  std::string compact = j.dump();
  bool in_string = false;
  for (size_t i = 0; i < compact.size(); ++i) {
    char c = compact[i];
    out += c;
    if (in_string && c == '\\' && i + 1 < compact.size()) {
      out += compact[++i];  // an escaped character, possibly a quote
    } else if (c == '"') {
      in_string = !in_string;
    } else if (!in_string && (c == ',' || c == ':')) {
      out += ' ';
    }
  }
  return out;
}

class Logger {
 public:
  explicit Logger(std::ostream& out, std::function<int64_t()> clock = WallClockMs,
                  std::string name_space = "")
      : out_(out), clock_(std::move(clock)), namespace_(std::move(name_space)) {}

  void Point(std::string_view key, const nlohmann::json& value = nullptr,
             nlohmann::json metadata = nlohmann::json::object(),
             std::source_location where = std::source_location::current()) {
    Event(EventType::kPointInTime, key, value, std::move(metadata), where);
  }
  void Start(std::string_view key, const nlohmann::json& value = nullptr,
             nlohmann::json metadata = nlohmann::json::object(),
             std::source_location where = std::source_location::current()) {
    Event(EventType::kIntervalStart, key, value, std::move(metadata), where);
  }
  void End(std::string_view key, const nlohmann::json& value = nullptr,
           nlohmann::json metadata = nlohmann::json::object(),
           std::source_location where = std::source_location::current()) {
    Event(EventType::kIntervalEnd, key, value, std::move(metadata), where);
  }

  void Event(EventType type, std::string_view key, const nlohmann::json& value,
             nlohmann::json metadata, std::source_location where) {
    if (!metadata.is_object()) metadata = nlohmann::json::object();
    std::string file = where.file_name();
    size_t slash = file.rfind('/');
    if (!metadata.contains("file")) metadata["file"] = file.substr(slash + 1);
    if (!metadata.contains("lineno")) metadata["lineno"] = where.line();
    out_ << FormatLine(namespace_, clock_(), type, key, value, metadata) << '\n' << std::flush;
  }

 private:
  std::ostream& out_;
  std::function<int64_t()> clock_;
  std::string namespace_;
};

}  // namespace bm::mllog
