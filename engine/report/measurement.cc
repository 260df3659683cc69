#include "engine/report/measurement.h"

#include <fmt/format.h>

#include "engine/report/metrics_view.h"

namespace bm::report {

std::string_view OriginName(Origin origin) {
  switch (origin) {
    case Origin::kFresh:
      return "fresh";
    case Origin::kRestored:
      return "cache";
    case Origin::kFile:
      return "file";
  }
  return "?";
}

void FillProvenanceFromMetrics(Measurement& m) {
  const nlohmann::json* p = nullptr;
  if (m.metrics.is_object()) {
    auto it = m.metrics.find("provenance");
    if (it != m.metrics.end() && it->is_object()) p = &*it;
  }
  if (p == nullptr) return;
  auto fill = [&](std::string& field, const char* key) {
    auto it = p->find(key);
    if (field.empty() && it != p->end() && it->is_string()) field = it->get<std::string>();
  };
  fill(m.provenance.host, "host");
  fill(m.provenance.measured_at, "started_at");
  if (m.provenance.trainer_build.empty()) m.provenance.trainer_build = TrainerBuildOf(m.metrics);
}

std::string TrainerBuildOf(const nlohmann::json& metrics, const nlohmann::json& platform) {
  std::string build = StringAt(metrics, "provenance.trainer_build")
                          .value_or(StringAt(platform, "trainer_build").value_or(""));
  const nlohmann::json* blas = ValueAt(metrics, "platform.blas");
  if (!build.empty() && StringAt(metrics, "config.device") == "cpu" && blas && blas->is_object())
    build += fmt::format("; {} {}, {} kernels", blas->value("library", "BLAS"),
                         blas->value("version", "?"), blas->value("core", "?"));
  return build;
}

}  // namespace bm::report
