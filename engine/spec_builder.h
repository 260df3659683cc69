// From a validated target to what the generator writes for it: its key
// material (the .spec, without upstream digests) and its StepParams (the
// .params). Source-file inputs are hashed through the stat cache; a directory
// input hashes every file below it (path and digest, sorted). A file's
// executable bit is part of its key, as Bazel puts it in a file's digest: a
// step that runs `./prepare.sh` behaves differently once the bit is gone.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/stat_cache.h"
#include "engine/key_material.h"
#include "engine/target_graph.h"
#include "engine/target_state.h"

namespace bm::engine {

// Hashes source inputs and remembers every file it looked at (for the
// generator's no-op stamp).
class SourceHasher {
 public:
  SourceHasher(Filesystem& fs, StatCache& stat_cache) : fs_(fs), stat_cache_(stat_cache) {}
  // What the key holds for a source: its digest's hex, followed by
  // kExecutableMark when the file is executable; for a directory, the digest
  // of every file's relative path and value.
  Result<std::string> KeyValue(const std::string& path);

  struct Seen {
    std::string path;
    FileInfo info;
  };
  const std::vector<Seen>& seen() const { return seen_; }

 private:
  Filesystem& fs_;
  StatCache& stat_cache_;
  std::vector<Seen> seen_;
};

// `platform` is used only when the target's rule is platform-dependent.
// Errors: a source file or directory that cannot be hashed, as "FILE:LINE:COL: source 'NAME':
// ..." at the input's place in the BENCHFILE (the filesystem's code kept).
Result<KeyMaterial> BuildSpec(const TargetGraph& graph, const Target& target, SourceHasher& sources,
                              const nlohmann::json& platform);

// `workspace`: the workspace's placement as the generator resolved it (the
// --executor override applied, the hostfile made absolute).
StepParams BuildStepParams(const TargetGraph& graph, const Target& target,
                           const std::string& out_root, const Placement& workspace);

}  // namespace bm::engine
