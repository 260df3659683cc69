// Typed reads from a metrics.json (docs/METRICS.md) that tolerate absence:
// every report column is optional, because an evaluate step has no throughput
// and an exec step may report only a few numbers.
//
//   NumberAt(m, "throughput.tokens_per_device_per_s")  -> 3564.2 or nullopt
//
// A path is dot-separated object keys. A value of the wrong type reads as
// absent. Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace bm::report {

const nlohmann::json* ValueAt(const nlohmann::json& metrics, std::string_view path);
std::optional<double> NumberAt(const nlohmann::json& metrics, std::string_view path);
std::optional<std::string> StringAt(const nlohmann::json& metrics, std::string_view path);

// A JSON scalar as a short word: 4 -> "4", 0.0003 -> "0.0003", true -> "true",
// "bf16" -> "bf16". Used for fix_hp and config differences.
std::string ScalarText(const nlohmann::json& value);

// The device name: the first GPU's name without a leading "NVIDIA "
// (platform.gpus[0].name), else provenance.device_name, else platform.device,
// else platform.gpu_name, else config.device, else the MLPerf submission's platform
// (mlperf.platform: "8xNVIDIA DGX H100", the system as submitted), else "". A run with
// config.device "cpu" is "cpu".
std::string DeviceName(const nlohmann::json& metrics);

// Devices the run used: config.devices, else tp × pp × dp; 0 when unknown.
int DeviceCount(const nlohmann::json& metrics);

// config.layout, else "TP1PP2DP4" from config.tp / pp / dp; "" when missing.
std::string ParallelLayout(const nlohmann::json& metrics);

// The suites' fix_hp: model overrides ("layers=4") in key order, then the
// batch terms as FlagPerf writes them — "MPE=4096", "LBS=1", "GAS=8" only
// when GAS is not 1 — then the training switches: precision, "zero=1" when
// zero > 0, "recompute" and "flash" when on. Items are joined by ", ";
// "" when the metrics carry none of these.
std::string FixHp(const nlohmann::json& metrics);

// Which trainer measured the run: provenance.trainer ("benchmake-train",
// "megatron", "deepspeed", ...), else "benchmake-train" for metrics whose
// trainer_build is benchmake-train's (written before the field existed),
// else "".
std::string TrainerName(const nlohmann::json& metrics);

}  // namespace bm::report
