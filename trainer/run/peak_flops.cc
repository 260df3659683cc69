#include "trainer/run/peak_flops.h"

#include <fmt/format.h>

namespace bm::train {
namespace {

struct PeakEntry {
  const char* match;  // substring of the device name
  const char* label;
  double bf16, fp32;  // bf16 = fp16 dense tensor-core peak on every entry
};

// Dense, per device, from the vendors' datasheets (fp32 without TF32).
constexpr PeakEntry kPeaks[] = {
    {"H100 PCIe", "H100 PCIe", 756.5e12, 51.2e12},
    {"H100", "H100 SXM", 989.4e12, 66.9e12},
    {"H800", "H800 SXM", 989.4e12, 66.9e12},
    {"H200", "H200 SXM", 989.4e12, 66.9e12},
    {"A100", "A100", 312e12, 19.5e12},
    {"A800", "A800", 312e12, 19.5e12},
};

}  // namespace

std::optional<PeakFlops> LookupPeakFlops(std::string_view device, std::string_view device_name,
                                         Precision precision, int threads,
                                         const nlohmann::json& platform,
                                         std::optional<double> peak_tflops) {
  if (peak_tflops) return PeakFlops{*peak_tflops * 1e12, "parameter peak_tflops"};
  if (device == "cpu") {
    const nlohmann::json cpu = platform.value("cpu", nlohmann::json::object());
    const double ghz = cpu.value("ghz", 0.0);
    if (ghz <= 0 || threads <= 0) return std::nullopt;
    // fp32 FLOP per cycle per core: 2 FMA pipes x lanes x 2
    const double per_cycle = cpu.value("avx512", false) ? 64.0
                             : cpu.value("avx2", false) ? 32.0
                                                        : 8.0;
    return PeakFlops{threads * per_cycle * ghz * 1e9,
                     fmt::format("table: cpu fp32 ({} threads x {} FLOP/cycle x {} GHz)", threads,
                                 per_cycle, ghz)};
  }
  for (const PeakEntry& e : kPeaks) {
    if (device_name.find(e.match) != std::string_view::npos) {
      const bool half = precision != Precision::kFp32;
      return PeakFlops{half ? e.bf16 : e.fp32,
                       fmt::format("table: {} {} dense", e.label, PrecisionName(precision))};
    }
  }
  return std::nullopt;
}

}  // namespace bm::train
