#include "engine/report/measurement.h"

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
  fill(m.provenance.trainer_build, "trainer_build");
}

}  // namespace bm::report
