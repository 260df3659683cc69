#include "cache/action_record.h"

namespace bm::cache {
namespace {

constexpr std::string_view kMagic = "benchmake-action ";
constexpr int kVersion = 1;

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
      {"key", r.key.Hex()},
      {"target", r.target},
      {"outputs", ManifestToJson(r.outputs)},
      {"metrics", r.metrics},
      {"log", r.log_digest},
      {"provenance",
       {{"host", r.provenance.host},
        {"date", r.provenance.date},
        {"benchmake", r.provenance.benchmake_version},
        {"platform", r.provenance.platform},
        {"duration_s", r.provenance.duration_s}}},
  };
  return fmt::format("{}{}\n{}\n", kMagic, kVersion, j.dump(1));
}

Result<ActionRecord> ParseRecord(std::string_view bytes) {
  if (bytes.substr(0, kMagic.size()) != kMagic)
    return Errorf(ErrorCode::kCorrupt, "not an action record");
  size_t nl = bytes.find('\n');
  if (nl == std::string_view::npos) return Errorf(ErrorCode::kCorrupt, "truncated action record");
  std::string version(bytes.substr(kMagic.size(), nl - kMagic.size()));
  if (version != std::to_string(kVersion)) {
    return Errorf(ErrorCode::kUnsupported,
                  "action record version {} (this benchmake reads {}): upgrade benchmake", version,
                  kVersion);
  }
  ActionRecord r;
  try {
    nlohmann::json j = nlohmann::json::parse(bytes.substr(nl + 1));
    BM_ASSIGN_OR_RETURN(r.key, Digest::FromHex(j.at("key").get<std::string>()));
    r.target = j.value("target", "");
    BM_ASSIGN_OR_RETURN(r.outputs, ManifestFromJson(j.at("outputs")));
    r.metrics = j.value("metrics", nlohmann::json::object());
    r.log_digest = j.value("log", "");
    const auto& p = j.at("provenance");
    r.provenance.host = p.value("host", "");
    r.provenance.date = p.value("date", "");
    r.provenance.benchmake_version = p.value("benchmake", "");
    r.provenance.platform = p.value("platform", nlohmann::json::object());
    r.provenance.duration_s = p.value("duration_s", 0.0);
  } catch (const nlohmann::json::exception& e) {
    return Errorf(ErrorCode::kCorrupt, "bad action record: {}", e.what());
  }
  return r;
}

}  // namespace bm::cache
