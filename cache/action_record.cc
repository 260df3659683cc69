#include "cache/action_record.h"

#include "base/sealed_text.h"

namespace bm::cache {
namespace {

constexpr std::string_view kMagic = "benchmake-action";
// 2: sealed (base/sealed_text.h). 1 (no digest) is still read: the records earlier releases left
// in caches stay usable.
constexpr int kVersion = 2;

nlohmann::json ProvenanceToJson(const Provenance& p) {
  return {{"host", p.host},
          {"date", p.date},
          {"benchmake", p.benchmake_version},
          {"platform", p.platform},
          {"duration_s", p.duration_s}};
}

Provenance ProvenanceFromJson(const nlohmann::json& p) {
  Provenance out;
  out.host = p.value("host", "");
  out.date = p.value("date", "");
  out.benchmake_version = p.value("benchmake", "");
  out.platform = p.value("platform", nlohmann::json::object());
  out.duration_s = p.value("duration_s", 0.0);
  return out;
}

}  // namespace

Digest ManifestDigest(const std::vector<OutputFile>& outputs) {
  Hasher h;
  h.Field("manifest", "1");
  for (const OutputFile& f : outputs) {
    h.Field("path", f.path);
    h.Field("digest", f.digest.Hex());
    h.Field("exec", f.executable ? "1" : "0");
  }
  return h.Finish();
}

nlohmann::json ManifestToJson(const std::vector<OutputFile>& outputs) {
  nlohmann::json out = nlohmann::json::array();
  for (const OutputFile& f : outputs) {
    out.push_back(
        {{"path", f.path}, {"digest", f.digest.Hex()}, {"size", f.size}, {"exec", f.executable}});
  }
  return out;
}

Result<std::vector<OutputFile>> ManifestFromJson(const nlohmann::json& json) {
  if (!json.is_array()) return Errorf(ErrorCode::kCorrupt, "manifest is not a list");
  std::vector<OutputFile> outputs;
  try {
    for (const auto& f : json) {
      OutputFile o;
      o.path = f.at("path").get<std::string>();
      BM_ASSIGN_OR_RETURN(o.digest, Digest::FromHex(f.at("digest").get<std::string>()));
      o.size = f.at("size").get<uint64_t>();
      o.executable = f.value("exec", false);
      outputs.push_back(std::move(o));
    }
  } catch (const nlohmann::json::exception& e) {
    return Errorf(ErrorCode::kCorrupt, "bad manifest: {}", e.what());
  }
  return outputs;
}

std::string SerializeRecord(const ActionRecord& r) {
  nlohmann::json j = {
      {"key", r.key.Hex()},   {"target", r.target},  {"outputs", ManifestToJson(r.outputs)},
      {"metrics", r.metrics}, {"log", r.log_digest}, {"provenance", ProvenanceToJson(r.provenance)},
  };
  if (!r.remeasurements.empty()) {
    nlohmann::json& list = j["remeasurements"] = nlohmann::json::array();
    for (const RecordedMeasurement& m : r.remeasurements) {
      list.push_back({{"metrics", m.metrics},
                      {"log", m.log_digest},
                      {"provenance", ProvenanceToJson(m.provenance)}});
    }
  }
  return SealText(kMagic, kVersion, j.dump(1) + "\n");
}

Result<ActionRecord> ParseRecord(std::string_view bytes) {
  Result<UnsealedText> text = UnsealText(bytes, kMagic, kVersion, 2);
  if (!text.ok()) {
    const bool newer = text.status().code() == ErrorCode::kUnsupported;
    return Status(text.status().code(), "action record: " + text.status().message() +
                                            (newer ? ": upgrade benchmake" : ""));
  }
  ActionRecord r;
  try {
    nlohmann::json j = nlohmann::json::parse(text->body);
    BM_ASSIGN_OR_RETURN(r.key, Digest::FromHex(j.at("key").get<std::string>()));
    r.target = j.value("target", "");
    BM_ASSIGN_OR_RETURN(r.outputs, ManifestFromJson(j.at("outputs")));
    r.metrics = j.value("metrics", nlohmann::json::object());
    r.log_digest = j.value("log", "");
    r.provenance = ProvenanceFromJson(j.at("provenance"));
    if (auto it = j.find("remeasurements"); it != j.end()) {
      for (const auto& m : it->get_ref<const nlohmann::json::array_t&>()) {
        RecordedMeasurement rm;
        rm.metrics = m.value("metrics", nlohmann::json::object());
        rm.log_digest = m.value("log", "");
        rm.provenance = ProvenanceFromJson(m.at("provenance"));
        r.remeasurements.push_back(std::move(rm));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return Errorf(ErrorCode::kCorrupt, "bad action record: {}", e.what());
  }
  return r;
}

}  // namespace bm::cache
