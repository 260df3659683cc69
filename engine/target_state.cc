#include "engine/target_state.h"

#include <ctime>

#include "base/filesystem.h"
#include "base/sealed_text.h"

namespace bm::engine {
namespace {

constexpr std::string_view kOutMagic = "benchmake-out 1\n";
// 2: sealed (base/sealed_text.h): a damaged value would still parse, and the step would run with
// it under the key of the BENCHFILE's. 1: earlier releases' (the generator writes 2 over them).
constexpr std::string_view kParamsMagic = "benchmake-params";
constexpr int kParamsVersion = 2;
constexpr std::string_view kLastMagic = "benchmake-last 1\n";
constexpr std::string_view kLocationsMagic = "benchmake-locations 1\n";

std::optional<nlohmann::json> ParseWithMagic(std::string_view text, std::string_view magic) {
  if (text.substr(0, magic.size()) != magic) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(text.substr(magic.size()), nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

}  // namespace

Status WriteTargetLocations(const Workspace& ws, const std::map<std::string, std::string>& where) {
  const std::string text = std::string(kLocationsMagic) + nlohmann::json(where).dump() + "\n";
  return WriteFileIfChanged(*ws.fs, ws.StateDir() + "/locations", text).status();
}

std::map<std::string, std::string> ReadTargetLocations(const Workspace& ws) {
  Result<std::string> text = ws.fs->ReadFile(ws.StateDir() + "/locations");
  if (!text.ok()) return {};
  std::optional<nlohmann::json> j = ParseWithMagic(*text, kLocationsMagic);
  std::map<std::string, std::string> where;
  if (j && j->is_object())
    for (const auto& [name, loc] : j->items())
      if (loc.is_string()) where[name] = loc.get<std::string>();
  return where;
}

std::string NowIso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string SerializeStepParams(const StepParams& p) {
  nlohmann::json j = {{"rule", p.rule},
                      {"params", p.params},
                      {"inputs", p.inputs},
                      {"upstream", p.upstream_targets},
                      {"platform_dependent", p.platform_dependent},
                      {"gpus", p.gpus},
                      {"placement", PlacementToJson(p.placement)}};
  return SealText(kParamsMagic, kParamsVersion, j.dump() + "\n");
}

Result<StepParams> ParseStepParams(std::string_view text) {
  Result<UnsealedText> sealed = UnsealText(text, kParamsMagic, kParamsVersion, 2);
  if (!sealed.ok()) return sealed.status();
  nlohmann::json j = nlohmann::json::parse(sealed->body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Errorf(ErrorCode::kCorrupt, "bad .params file; run `benchmake build`");
  StepParams p;
  try {
    p.rule = j.at("rule").get<std::string>();
    p.params = j.at("params");
    p.inputs = j.at("inputs").get<std::map<std::string, std::string>>();
    p.upstream_targets = j.at("upstream").get<std::vector<std::string>>();
    p.platform_dependent = j.at("platform_dependent").get<bool>();
    p.gpus = j.at("gpus").get<int>();
  } catch (const nlohmann::json::exception& e) {
    return Errorf(ErrorCode::kCorrupt, "bad .params file: {}", e.what());
  }
  if (j.contains("placement")) {
    Result<Placement> placement = PlacementFromJson(j["placement"]);
    if (!placement.ok())
      return Errorf(ErrorCode::kCorrupt, "bad .params file: {}", placement.status().message());
    p.placement = std::move(*placement);
  }
  return p;
}

Result<std::optional<Digest>> ReadOutStamp(const Workspace& ws, const std::string& target) {
  Result<std::string> text = ws.fs->ReadFile(ws.TargetFile(target, "out"));
  if (!text.ok() || text->size() < kOutMagic.size() + 32 ||
      text->compare(0, kOutMagic.size(), kOutMagic) != 0)
    return std::optional<Digest>();
  Result<Digest> d = Digest::FromHex(std::string_view(*text).substr(kOutMagic.size(), 32));
  if (!d.ok()) return std::optional<Digest>();
  return std::optional<Digest>(*d);
}

Status WriteOutStamp(const Workspace& ws, const std::string& target, const Digest& manifest) {
  return WriteFileIfChanged(*ws.fs, ws.TargetFile(target, "out"),
                            std::string(kOutMagic) + manifest.Hex() + "\n")
      .status();
}

Result<std::optional<LastBuild>> ReadLastBuild(const Workspace& ws, const std::string& target) {
  Result<std::string> text = ws.fs->ReadFile(ws.TargetFile(target, "last"));
  if (!text.ok()) return std::optional<LastBuild>();
  std::optional<nlohmann::json> j = ParseWithMagic(*text, kLastMagic);
  if (!j) return std::optional<LastBuild>();
  LastBuild last;
  try {
    Result<Digest> key = Digest::FromHex(j->at("key").get<std::string>());
    if (!key.ok()) return std::optional<LastBuild>();
    last.key = *key;
    Result<KeyMaterial> m = KeyMaterial::Parse(j->at("material").get<std::string>());
    if (!m.ok()) return std::optional<LastBuild>();
    last.material = *m;
    Result<std::vector<cache::OutputFile>> outs = cache::ManifestFromJson(j->at("outputs"));
    if (!outs.ok()) return std::optional<LastBuild>();
    last.outputs = *outs;
    last.outcome = j->value("outcome", "");
    last.date = j->value("date", "");
    for (const auto& f : j->at("files")) {
      last.files.push_back({f.at("path").get<std::string>(), f.at("size").get<uint64_t>(),
                            f.at("inode").get<uint64_t>()});
    }
  } catch (const nlohmann::json::exception&) {
    return std::optional<LastBuild>();
  }
  return std::optional<LastBuild>(std::move(last));
}

Status WriteLastBuild(const Workspace& ws, const std::string& target, const LastBuild& last) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : last.files)
    files.push_back({{"path", f.path}, {"size", f.size}, {"inode", f.inode}});
  nlohmann::json j = {{"key", last.key.Hex()},
                      {"material", last.material.Serialize()},
                      {"outputs", cache::ManifestToJson(last.outputs)},
                      {"outcome", last.outcome},
                      {"date", last.date},
                      {"files", files}};
  return ws.fs->WriteFileAtomic(ws.TargetFile(target, "last"),
                                std::string(kLastMagic) + j.dump() + "\n",
                                /*read_only=*/false, /*durable=*/false);
}

Result<bool> OutputsPresent(const Workspace& ws, const std::string& target, const LastBuild& last) {
  std::string dir = ws.OutDirOf(target);
  BM_ASSIGN_OR_RETURN(FileInfo d, ws.fs->Stat(dir));
  if (!d.exists) return false;
  for (const auto& f : last.files) {
    BM_ASSIGN_OR_RETURN(FileInfo info, ws.fs->Stat(dir + "/" + f.path));
    if (!info.exists || info.size != f.size || info.inode != f.inode) return false;
  }
  return true;
}

}  // namespace bm::engine
