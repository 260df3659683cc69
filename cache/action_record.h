// ActionRecord: what the action cache stores under an action key — the output
// manifest, the step's metrics, the digest of its log, and its provenance.
//
// Serialized form (STYLE §5):
//   record := "benchmake-action 2 " hex32 "\n" json
//             (hex32: XXH3-128 of the json's bytes, its closing newline included, checked on
//             every read: a record is keyed by its action, not by its bytes, so a flipped bit
//             could otherwise still parse, as another file name or another metric)
//           | "benchmake-action 1\n" json   (earlier releases: read, without the check)
//   json   := { "key": hex32, "target": str,
//               "outputs": [ { "path": str, "digest": hex32, "size": int, "exec": bool } ],
//               "metrics": object, "log": hex32 | "",
//               "provenance": { "host": str, "date": iso8601, "benchmake": version,
//                               "platform": object, "duration_s": number },
//               "remeasurements": [ { "metrics": object, "log": hex32 | "",
//                                     "provenance": {...as above} } ] }   (optional)
// "remeasurements" (absent when empty, so older records keep their bytes) are
// later measurements of the same action — `benchmake build --remeasure` and
// `rounds = N` rerun a platform-dependent step and record what it measured
// here, reusing the outputs above, whose digests never change.
// Outputs are sorted by path. A record with a newer version is refused with a
// hint to upgrade; a malformed or damaged one is kCorrupt (the caller evicts it).
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

// One more measurement of an action whose outputs are already cached.
struct RecordedMeasurement {
  nlohmann::json metrics = nlohmann::json::object();
  std::string log_digest;  // the rerun's step log, "" when none was kept
  Provenance provenance;
};

struct ActionRecord {
  Digest key;
  std::string target;
  std::vector<OutputFile> outputs;
  nlohmann::json metrics = nlohmann::json::object();
  std::string log_digest;  // hex, "" when no log was kept
  Provenance provenance;
  // Not serialized: the remote this record was just fetched from (its URL,
  // credentials stripped), "" when it came from the local cache.
  std::string origin;
  std::vector<RecordedMeasurement> remeasurements;  // oldest first
};

std::string SerializeRecord(const ActionRecord& record);
Result<ActionRecord> ParseRecord(std::string_view bytes);

nlohmann::json ManifestToJson(const std::vector<OutputFile>& outputs);
Result<std::vector<OutputFile>> ManifestFromJson(const nlohmann::json& json);

}  // namespace bm::cache
