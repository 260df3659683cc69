// The generator: brings .benchmake/ up to date with the BENCHFILE before ninja
// runs — key material (.spec) and step parameters (.params) per target,
// config.json, platform, build.ninja — writing each file only when its
// bytes change, so that ninja's mtimes mean "content changed".
//
// No-op fast path: the stamp .benchmake/generated records the stat (size,
// mtime, inode) of the BENCHFILE, of the benchmake binary and of every source
// file, a digest of the environment that affects keys, and each target's spec
// and params digests. When nothing of that changed, Generate() parses nothing,
// hashes nothing and writes nothing. (Whether out/NAME still holds what its
// step left there is the build's check, engine/out_check.h, under the
// workspace lock: `status` and `explain` look but change no stamp.) The platform facts, needed only
// when some target is platform-dependent, come from the platform cache (engine/platform_cache.h),
// in the fast path too: a site (engine/platform.h: this machine, or a node of a Slurm placement) is
// probed only when what can change its facts changed, so a no-op build starts no process.
//
// Stamp layout:
//   stamp  := "benchmake-generated 2\n" line*
//   line   := "benchfile" stat | "exe" stat | "env" hex | "platform" (hex|"-") | "ninja" hex
//           | "probe" site   (a ProbeSite::Key(): where the platform was probed)
//           | "source" stat path | "target" name spec-hex params-hex
//   stat   := size mtime_ns inode executable(0|1)
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/target_graph.h"
#include "engine/workspace.h"

namespace bm::engine {

struct GenerateResult {
  bool fast_path = false;            // nothing changed; nothing parsed
  std::vector<std::string> targets;  // every target, dependencies first
  int files_hashed = 0;              // source files read (stat cache misses)
  int specs_written = 0;
  int jobs = 0;  // [benchmake] jobs
};

struct GenerateOptions {
  bool force = false;  // skip the fast path
  // The executor the build asks for (--executor): "local", "slurm", or "" for
  // $BENCHMAKE_EXECUTOR, else the BENCHFILE's (engine/placement.h).
  std::string executor;
  // The fast path also looks at what the generator wrote: build.ninja's bytes, config.json, and
  // every target's spec and params. For a caller about to start ninja: a file removed or damaged by
  // hand, which the stamp cannot tell, is written again (ninja cannot make a spec it needs, and
  // fails on a damaged build.ninja). A no-op's cost: the stats and the read are left out of it.
  bool look_past_stamp = false;
};

Result<GenerateResult> Generate(const Workspace& ws, const GenerateOptions& options = {});

// A spec, params or config.json (`path`) that does not read (`why`; "missing" when it is not
// there): the generator writes them atomically (and seals specs and params), so something else
// damaged it (a disk, a hand). Removes it and forgets the fast path's stamp, so that the next
// Generate() writes again every file whose bytes differ from what the BENCHFILE makes, and
// returns kCorrupt "PATH: WHY; the next `benchmake build` writes it again".
Status GeneratedFileDamaged(const Workspace& ws, const std::string& path, const Status& why);

// The text of t/TARGET.EXT (spec or params), or, when it does not read (removed by hand, a
// dangling link, a directory), GeneratedFileDamaged's error: the next build writes it again.
Result<std::string> ReadGeneratedFile(const Workspace& ws, const std::string& target,
                                      std::string_view ext);

// The workspace's config.json (LoadConfig), for a caller after Generate(), which wrote it: one
// that does not read is GeneratedFileDamaged.
Result<WorkspaceConfig> LoadGeneratedConfig(const Workspace& ws);

// A directory where one of the files benchmake or ninja keep in .benchmake/ belongs (`path`,
// `what` it stands in for): a hand's or a restore's damage, since they are only ever written
// whole, which stops every build at EISDIR. Removed, with a warning naming it, so that the file
// is written again; nothing done where there is none.
Status RemoveDirectoryWhereStateBelongs(const Workspace& ws, const std::string& path,
                                        std::string_view what);

// The validated graph (parses the BENCHFILE; no state written).
Result<TargetGraph> LoadWorkspaceGraph(const Workspace& ws);

}  // namespace bm::engine
