// ActionRecord: what the action cache stores under an action key — the output
// manifest, the step's metrics, the digest of its log, and its provenance.
//
// Serialized form (STYLE §5):
//   record := "benchmake-action 1\n" json
//   json   := { "key": hex32, "target": str,
//               "outputs": [ { "path": str, "digest": hex32, "size": int, "exec": bool } ],
//               "metrics": object, "log": hex32 | "",
//               "provenance": { "host": str, "date": iso8601, "benchmake": version,
//                               "platform": object, "duration_s": number } }
// Outputs are sorted by path. A record with a newer version is refused with a
// hint to upgrade; a malformed one is kCorrupt (the caller evicts it).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/digest.h"
#include "base/result.h"

namespace bm::cache {

struct OutputFile {
  std::string path;  // relative to the target's output directory, '/'-separated
  Digest digest;
  uint64_t size = 0;
  bool executable = false;
  friend bool operator==(const OutputFile&, const OutputFile&) = default;
};

// The digest that stands for a whole output tree: what dependents' keys see.
Digest ManifestDigest(const std::vector<OutputFile>& outputs);

struct Provenance {
  std::string host;
  std::string date;  // UTC, ISO 8601
  std::string benchmake_version;
  nlohmann::json platform = nlohmann::json::object();
  double duration_s = 0;
};

struct ActionRecord {
  Digest key;
  std::string target;
  std::vector<OutputFile> outputs;
  nlohmann::json metrics = nlohmann::json::object();
  std::string log_digest;  // hex, "" when no log was kept
  Provenance provenance;
};

std::string SerializeRecord(const ActionRecord& record);
Result<ActionRecord> ParseRecord(std::string_view bytes);

nlohmann::json ManifestToJson(const std::vector<OutputFile>& outputs);
Result<std::vector<OutputFile>> ManifestFromJson(const nlohmann::json& json);

}  // namespace bm::cache
