#include "engine/generate.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "base/stat_cache.h"
#include "cache/cache.h"
#include "engine/ninja_writer.h"
#include "engine/platform.h"
#include "engine/platform_cache.h"
#include "engine/spec_builder.h"
#include "engine/target_state.h"

namespace bm::engine {
namespace {

constexpr std::string_view kStampMagic = "benchmake-generated 2\n";

struct StatSig {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t inode = 0;
  bool executable = false;  // chmod changes no mtime, and the bit is in a source's key
  bool operator==(const StatSig&) const = default;
};

StatSig SigOf(const FileInfo& i) { return {i.size, i.mtime_ns, i.inode, i.executable}; }

struct Stamp {
  StatSig benchfile, exe;
  std::string env, platform = "-", ninja;
  std::vector<std::string> probe_sites;  // ProbeSite::Key() of every site probed
  int jobs = 0;
  std::vector<std::pair<std::string, StatSig>> sources;
  std::vector<std::string> targets;                                    // dependencies first
  std::map<std::string, std::pair<std::string, std::string>> digests;  // name → (spec, params)
};

// `executor`: the executor the build was asked for (--executor), or "".
std::string EnvDigest(const std::string& executor) {
  Hasher h;
  for (const char* name : {"BENCHMAKE_PLATFORM", "BENCHMAKE_CACHE_DIR", "XDG_CACHE_HOME", "HOME",
                           "BENCHMAKE_GPUS", "BENCHMAKE_REMOTE", "BENCHMAKE_EXECUTOR"}) {
    const char* v = std::getenv(name);
    h.Field(name, v ? v : "\x01unset");
  }
  h.Field("executor", executor);
  return h.Finish().Hex();
}

std::string SerializeStamp(const Stamp& s) {
  std::string out(kStampMagic);
  auto sig = [](const StatSig& g) {
    return fmt::format("{} {} {} {}", g.size, g.mtime_ns, g.inode, g.executable ? 1 : 0);
  };
  out += "benchfile " + sig(s.benchfile) + "\n";
  out += "exe " + sig(s.exe) + "\n";
  out += "env " + s.env + "\nplatform " + s.platform + "\nninja " + s.ninja + "\n";
  out += fmt::format("jobs {}\n", s.jobs);
  for (const std::string& site : s.probe_sites) out += "probe " + site + "\n";
  for (const auto& [path, g] : s.sources) out += "source " + sig(g) + " " + path + "\n";
  for (const std::string& t : s.targets) {
    const auto& d = s.digests.at(t);
    out += "target " + t + " " + d.first + " " + d.second + "\n";
  }
  return out;
}

std::optional<Stamp> ParseStamp(std::string_view text) {
  if (text.substr(0, kStampMagic.size()) != kStampMagic) return std::nullopt;
  std::istringstream in{std::string(text.substr(kStampMagic.size()))};
  Stamp s;
  std::string kind;
  auto read_sig = [&](StatSig* g) {
    return static_cast<bool>(in >> g->size >> g->mtime_ns >> g->inode >> g->executable);
  };
  while (in >> kind) {
    bool ok = true;
    if (kind == "benchfile")
      ok = read_sig(&s.benchfile);
    else if (kind == "exe")
      ok = read_sig(&s.exe);
    else if (kind == "env")
      ok = static_cast<bool>(in >> s.env);
    else if (kind == "platform")
      ok = static_cast<bool>(in >> s.platform);
    else if (kind == "ninja")
      ok = static_cast<bool>(in >> s.ninja);
    else if (kind == "jobs")
      ok = static_cast<bool>(in >> s.jobs);
    else if (kind == "probe") {
      std::string site;
      in.get();
      ok = static_cast<bool>(std::getline(in, site));
      s.probe_sites.push_back(site);
    } else if (kind == "source") {
      StatSig g;
      std::string path;
      ok = read_sig(&g);
      in.get();
      ok = ok && std::getline(in, path);
      s.sources.emplace_back(path, g);
    } else if (kind == "target") {
      std::string name, spec, params;
      ok = static_cast<bool>(in >> name >> spec >> params);
      s.targets.push_back(name);
      s.digests[name] = {spec, params};
    } else {
      return std::nullopt;
    }
    if (!ok) return std::nullopt;
  }
  return s;
}

Result<StatSig> StatOf(Filesystem& fs, const std::string& path) {
  BM_ASSIGN_OR_RETURN(FileInfo info, fs.Stat(path));
  return SigOf(info);
}

std::string TargetsNeedingPlatform(const TargetGraph& g) {
  std::string names;
  for (const Target& t : g.targets)
    if (t.rule->platform_dependent()) names += (names.empty() ? "" : ", ") + t.name;
  return names;
}

// The facts of every site, keyed by ProbeSite::Key(): from the platform cache
// while each site's fingerprint holds (engine/platform_cache.h), else probed.
Result<nlohmann::json> ProbeSites(const Workspace& ws, const std::vector<std::string>& sites,
                                  const std::string& needed_by) {
  Filesystem& fs = *ws.fs;
  // The test override (BENCHMAKE_PLATFORM) is no probe: nothing to keep.
  const char* overridden = std::getenv("BENCHMAKE_PLATFORM");
  const bool cached = !(overridden && *overridden);
  PlatformCache cache(fs, ws.StateDir() + "/platform_cache");
  if (cached) cache.Load();
  nlohmann::json facts = nlohmann::json::object();
  for (const std::string& key : sites) {
    BM_ASSIGN_OR_RETURN(ProbeSite site, ProbeSite::FromKey(key));
    std::string fingerprint;
    if (cached) {
      BM_ASSIGN_OR_RETURN(fingerprint,
                          SiteFingerprint(fs, ws.tools_dir + "/benchmake-train", site));
      if (std::optional<nlohmann::json> known = cache.Find(key, fingerprint)) {
        facts[key] = std::move(*known);
        continue;
      }
    }
    BM_ASSIGN_OR_RETURN(facts[key], ProbePlatform(fs, *ws.runner, ws.tools_dir,
                                                  ws.StateDir() + "/tmp", needed_by, site));
    if (cached) cache.Put(key, fingerprint, facts[key]);
  }
  BM_TRY(cache.Save());
  return facts;
}

// The workspace's placement as the steps see it: the executor the build asks
// for (--executor, else $BENCHMAKE_EXECUTOR) over the BENCHFILE's, the
// hostfile relative to the workspace.
Result<Placement> WorkspacePlacement(const Workspace& ws, const TargetGraph& graph,
                                     const std::string& executor) {
  Placement p = graph.settings.placement;
  std::string wanted = executor;
  if (const char* env = std::getenv("BENCHMAKE_EXECUTOR"); wanted.empty() && env && *env)
    wanted = env;
  if (!wanted.empty())
    BM_TRY(ApplyPlacementSetting(p, "executor", wanted)
               .WithContext(executor.empty() ? "BENCHMAKE_EXECUTOR" : "--executor"));
  if (!p.mpirun.hostfile.empty()) p.mpirun.hostfile = JoinPath(ws.root, p.mpirun.hostfile);
  return p;
}

// Whether t/NAME.EXT is a file (not missing, a dangling link or a directory,
// which is removed with a warning).
Result<bool> GeneratedFilePresent(const Workspace& ws, const std::string& target,
                                  std::string_view ext) {
  const std::string path = ws.TargetFile(target, ext);
  BM_ASSIGN_OR_RETURN(FileInfo info, ws.fs->Stat(path));
  if (info.is_dir)
    BM_TRY(RemoveDirectoryWhereStateBelongs(ws, path, fmt::format("a target's .{}", ext)));
  return info.exists && !info.is_dir;
}

// Whether the generator's files of `target` are there (GeneratedFilePresent); a directory where
// the build's own (ninja's stamp, the last build's record) belong is removed too.
Result<bool> TargetStateFilesPresent(const Workspace& ws, const std::string& target) {
  bool present = true;
  for (std::string_view ext : {"spec", "params", "out", "last"}) {
    BM_ASSIGN_OR_RETURN(bool there, GeneratedFilePresent(ws, target, ext));
    if (ext == "spec" || ext == "params") present = present && there;
  }
  return present;
}

// Whether the stamp still describes the BENCHFILE, the sources, the binary and the environment;
// with `look_past_stamp`, also whether what it wrote is still there: build.ninja with the bytes
// it wrote, and every target's spec and params.
Result<bool> FastPathValid(const Workspace& ws, const Stamp& stamp, const std::string& env,
                           bool look_past_stamp) {
  Filesystem& fs = *ws.fs;
  BM_ASSIGN_OR_RETURN(FileInfo ninja_file, fs.Stat(ws.StateDir() + "/build.ninja"));
  if (!ninja_file.exists) return false;
  BM_ASSIGN_OR_RETURN(StatSig bf, StatOf(fs, ws.benchfile));
  if (!(bf == stamp.benchfile) || stamp.env != env) return false;
  BM_ASSIGN_OR_RETURN(StatSig exe, StatOf(fs, ws.self_exe));
  if (!(exe == stamp.exe)) return false;
  for (const auto& [path, sig] : stamp.sources) {
    BM_ASSIGN_OR_RETURN(StatSig now, StatOf(fs, path));
    if (!(now == sig)) return false;
  }
  if (stamp.platform != "-") {
    Result<nlohmann::json> facts = ProbeSites(ws, stamp.probe_sites, "(from the last build)");
    if (!facts.ok()) return false;  // the slow path reports why
    if (DigestOf(facts->dump()).Hex() != stamp.platform) return false;
  }
  if (!look_past_stamp) return true;
  if (!LoadConfig(ws).ok()) return false;
  Result<std::string> ninja_text = fs.ReadFile(ws.StateDir() + "/build.ninja");
  if (!ninja_text.ok() || DigestOf(*ninja_text).Hex() != stamp.ninja) return false;
  bool present = true;
  for (const std::string& t : stamp.targets) {
    BM_ASSIGN_OR_RETURN(bool there, TargetStateFilesPresent(ws, t));
    present = present && there;
  }
  return present;
}

// The platform facts in a platform-dependent target's key: those of the site
// it runs at; under Slurm also how many of its ranks share a node (its
// measurement spans that many nodes fewer or more).
nlohmann::json PlatformOf(const Target& t, const StepParams& p, const nlohmann::json& facts) {
  if (!t.rule->platform_dependent()) return nlohmann::json::object();
  nlohmann::json f = facts.value(ProbeSiteOf(p.placement, p.gpus).Key(), nlohmann::json::object());
  if (p.placement.executor == "slurm" && t.rule->ranks(t.params) > 1)
    f["slurm_ranks_per_node"] = p.placement.slurm.ranks_per_node;
  return f;
}

std::string StampPath(const Workspace& ws) { return ws.StateDir() + "/generated"; }

}  // namespace

Result<TargetGraph> LoadWorkspaceGraph(const Workspace& ws) {
  return LoadGraph(*ws.fs, *ws.rules, ws.benchfile);
}

Status GeneratedFileDamaged(const Workspace& ws, const std::string& path, const Status& why) {
  // A file that is not there (removed by hand, a dangling link) is said to be missing, whatever
  // the reader made of it.
  Result<FileInfo> info = ws.fs->Stat(path);
  const std::string what = info.ok() && !info->exists ? "missing" : why.message();
  // Both removed (a directory in the file's place too): best effort, the message stands.
  (void)ws.fs->RemoveAll(path);
  (void)ws.fs->Remove(StampPath(ws));
  // A reader's message that names the file already is not prefixed with it again.
  const bool named = what.find(path) != std::string::npos;
  return Errorf(ErrorCode::kCorrupt, "{}{}{}; the next `benchmake build` writes it again",
                named ? "" : path, named ? "" : ": ", what);
}

Result<std::string> ReadGeneratedFile(const Workspace& ws, const std::string& target,
                                      std::string_view ext) {
  const std::string path = ws.TargetFile(target, ext);
  Result<std::string> text = ws.fs->ReadFile(path);
  if (text.ok()) return text;
  return GeneratedFileDamaged(ws, path, text.status());
}

Result<WorkspaceConfig> LoadGeneratedConfig(const Workspace& ws) {
  Result<WorkspaceConfig> config = LoadConfig(ws);
  if (config.ok()) return config;
  return GeneratedFileDamaged(ws, ws.StateDir() + "/config.json", config.status());
}

Status RemoveDirectoryWhereStateBelongs(const Workspace& ws, const std::string& path,
                                        std::string_view what) {
  BM_ASSIGN_OR_RETURN(FileInfo info, ws.fs->Stat(path));
  if (!info.is_dir) return Status::Ok();
  BM_TRY(ws.fs->RemoveAll(path));
  std::fprintf(stderr,
               "benchmake: warning: %s was a directory, not %.*s; removed, to be written again\n",
               path.c_str(), static_cast<int>(what.size()), what.data());
  return Status::Ok();
}

Result<GenerateResult> Generate(const Workspace& ws, const GenerateOptions& options) {
  Filesystem& fs = *ws.fs;
  std::string stamp_path = StampPath(ws);
  BM_TRY(RemoveDirectoryWhereStateBelongs(ws, stamp_path, "the generator's stamp"));
  BM_TRY(
      RemoveDirectoryWhereStateBelongs(ws, ws.StateDir() + "/build.ninja", "ninja's build file"));
  BM_TRY(RemoveDirectoryWhereStateBelongs(ws, ws.StateDir() + "/config.json",
                                          "the workspace's config"));
  std::string env = EnvDigest(options.executor);
  std::optional<Stamp> old;
  if (Result<std::string> text = fs.ReadFile(stamp_path); text.ok()) old = ParseStamp(*text);

  GenerateResult result;
  if (old && !options.force) {
    BM_ASSIGN_OR_RETURN(bool valid, FastPathValid(ws, *old, env, options.look_past_stamp));
    if (valid) {
      result.fast_path = true;
      result.targets = old->targets;
      result.jobs = old->jobs;
      return result;
    }
  }

  BM_ASSIGN_OR_RETURN(TargetGraph graph, LoadWorkspaceGraph(ws));
  BM_TRY(fs.MakeDirs(ws.StateDir() + "/t"));
  Stamp stamp;
  BM_ASSIGN_OR_RETURN(stamp.benchfile, StatOf(fs, ws.benchfile));
  BM_ASSIGN_OR_RETURN(stamp.exe, StatOf(fs, ws.self_exe));
  stamp.env = env;
  stamp.jobs = graph.settings.jobs;

  // Where each step runs, and so where its platform is probed (platform.h).
  BM_ASSIGN_OR_RETURN(Placement placement, WorkspacePlacement(ws, graph, options.executor));
  std::map<std::string, StepParams> params;
  std::set<std::string> site_keys;
  NinjaOptions ninja;
  bool needs_gpus = false;
  for (const Target& t : graph.targets) {
    StepParams& p = params[t.name] = BuildStepParams(graph, t, ws.OutRoot(), placement);
    if (t.rule->platform_dependent()) site_keys.insert(ProbeSiteOf(p.placement, p.gpus).Key());
    if (p.gpus > 0 && !UsesLocalGpus(p.placement)) ninja.remote_gpus.insert(t.name);
    if (p.placement.executor == "slurm") ninja.slurm.insert(t.name);
    needs_gpus |= p.gpus > 0 && UsesLocalGpus(p.placement);
  }
  stamp.probe_sites.assign(site_keys.begin(), site_keys.end());
  nlohmann::json facts = nlohmann::json::object();  // by site
  if (!stamp.probe_sites.empty()) {
    BM_ASSIGN_OR_RETURN(facts, ProbeSites(ws, stamp.probe_sites, TargetsNeedingPlatform(graph)));
    stamp.platform = DigestOf(facts.dump()).Hex();
  }

  WorkspaceConfig config;
  config.cache_dir = CacheDirOf(ws, graph.settings.cache_dir);
  config.remote = graph.settings.remote;
  const nlohmann::json local_facts = facts.value("local", nlohmann::json::object());
  config.gpus = graph.settings.gpus >= 0 ? graph.settings.gpus
                : needs_gpus ? DetectGpuCount(*ws.runner, local_facts, ws.StateDir() + "/tmp", fs)
                             : 0;

  // Every target's key material first: a source that cannot be hashed refuses the
  // BENCHFILE before any of the state below changes.
  StatCache stat_cache(fs, ws.StateDir() + "/stat_cache");
  BM_TRY(stat_cache.Load());
  SourceHasher sources(fs, stat_cache);
  std::vector<std::pair<std::string, std::string>> texts;  // (spec, params), graph.order's
  for (int i : graph.order) {
    const Target& t = graph.targets[static_cast<size_t>(i)];
    const StepParams& p = params.at(t.name);
    BM_ASSIGN_OR_RETURN(KeyMaterial spec, BuildSpec(graph, t, sources, PlatformOf(t, p, facts)));
    texts.emplace_back(spec.Serialize(), SerializeStepParams(p));
  }
  if (!stamp.probe_sites.empty())
    BM_TRY(WriteFileIfChanged(fs, ws.StateDir() + "/platform",
                              "benchmake-platform 2\n" + facts.dump(1) + "\n")
               .status());
  BM_TRY(SaveConfig(ws, config));
  for (size_t n = 0; n < texts.size(); ++n) {
    const Target& t = graph.targets[static_cast<size_t>(graph.order[n])];
    const auto& [spec_text, params_text] = texts[n];
    std::string spec_hex = DigestOf(spec_text).Hex(), params_hex = DigestOf(params_text).Hex();
    bool known = old && old->digests.count(t.name);
    BM_ASSIGN_OR_RETURN(bool there, TargetStateFilesPresent(ws, t.name));
    if (!known || old->digests[t.name].first != spec_hex || !there) {
      BM_ASSIGN_OR_RETURN(bool wrote,
                          WriteFileIfChanged(fs, ws.TargetFile(t.name, "spec"), spec_text));
      result.specs_written += wrote ? 1 : 0;
    }
    if (!known || old->digests[t.name].second != params_hex || !there) {
      BM_TRY(WriteFileIfChanged(fs, ws.TargetFile(t.name, "params"), params_text).status());
    }
    stamp.targets.push_back(t.name);
    stamp.digests[t.name] = {spec_hex, params_hex};
  }
  std::map<std::string, std::string> where;
  for (const Target& t : graph.targets) where[t.name] = t.loc.ToString();
  BM_TRY(WriteTargetLocations(ws, where));
  BM_TRY(stat_cache.Save());
  for (const auto& s : sources.seen()) stamp.sources.emplace_back(s.path, SigOf(s.info));

  // exec: the step is ninja's own child, not a shell's. Ninja passes an
  // interrupt to its job's process group and waits for the job alone; a shell
  // between them would die of SIGTERM at once, ninja would exit, and the step,
  // its output pipe gone, would die mid-way through stopping its command.
  ninja.step_command =
      "exec " + NinjaShellQuote(ws.self_exe) + " step -f " + NinjaShellQuote(ws.benchfile);
  ninja.gpu_pool_depth = config.gpus;
  std::string ninja_text = RenderNinja(graph, ninja);
  stamp.ninja = DigestOf(ninja_text).Hex();
  BM_TRY(WriteFileIfChanged(fs, ws.StateDir() + "/build.ninja", ninja_text).status());
  BM_TRY(fs.WriteFileAtomic(stamp_path, SerializeStamp(stamp), false, /*durable=*/false));
  result.targets = stamp.targets;
  result.files_hashed = stat_cache.hashed_count();
  result.jobs = stamp.jobs;
  return result;
}

}  // namespace bm::engine
