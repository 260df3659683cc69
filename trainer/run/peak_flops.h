// The peak FLOP/s table (docs/METRICS.md, "Peak table"): dense peak of one
// device for a precision, the denominator of MFU. In bm_train_config (no BLAS,
// no OpenMP) so that rules computing MFU from an external trainer's log use
// the same table as benchmake-train.
//
// Values only; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "trainer/backend.h"

namespace bm::train {

struct PeakFlops {
  double flops_per_device = 0;
  std::string source;  // "table: H100 SXM bf16 dense" or "parameter peak_tflops"
};

// Dense peak FLOP/s of one device for a precision. device is the backend
// ("cpu" or "cuda"); device_name the GPU's name (matched by substring: "H100",
// "A800", ...); platform is the probe (CPU cores, clock, AVX2/AVX-512).
// peak_tflops, when given, wins. nullopt when unknown.
std::optional<PeakFlops> LookupPeakFlops(std::string_view device, std::string_view device_name,
                                         Precision precision, int threads,
                                         const nlohmann::json& platform,
                                         std::optional<double> peak_tflops);

}  // namespace bm::train
