#include "engine/workspace.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace bm::engine {
namespace {

constexpr std::string_view kConfigMagic = "benchmake-config 1\n";

}  // namespace

std::string BenchmakeVersion() { return "0.1.0"; }

Result<Workspace> OpenWorkspace(Filesystem& fs, CommandRunner& runner, const RuleRegistry& rules,
                                const std::string& dir_flag, const std::string& file_flag) {
  Workspace ws;
  ws.fs = &fs;
  ws.runner = &runner;
  ws.rules = &rules;
  std::error_code ec;
  std::filesystem::path dir =
      dir_flag.empty() ? std::filesystem::current_path(ec) : std::filesystem::path(dir_flag);
  dir = std::filesystem::absolute(dir, ec).lexically_normal();
  if (!dir_flag.empty()) {
    Result<FileInfo> info = fs.Stat(dir.string());
    if (!info.ok() || !info->exists)
      return Errorf(ErrorCode::kInvalidArgument, "-C {}: no such directory", dir_flag);
    if (!info->is_dir)
      return Errorf(ErrorCode::kInvalidArgument, "-C {}: not a directory", dir_flag);
  }
  std::string file = file_flag.empty() ? "BENCHFILE.toml" : file_flag;
  std::filesystem::path bf =
      std::filesystem::path(file).is_absolute() ? std::filesystem::path(file) : dir / file;
  ws.benchfile = bf.lexically_normal().string();
  ws.root = bf.lexically_normal().parent_path().string();
  while (ws.root.size() > 1 && ws.root.back() == '/') ws.root.pop_back();
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  ws.self_exe = ec ? "benchmake" : self.string();
  ws.tools_dir = ec ? "." : self.parent_path().string();
  return ws;
}

Status SaveConfig(const Workspace& ws, const WorkspaceConfig& c) {
  nlohmann::json j = {{"cache_dir", c.cache_dir},
                      {"remote", cache::RemoteConfigToJson(c.remote)},
                      {"gpus", c.gpus}};
  BM_TRY(ws.fs->MakeDirs(ws.StateDir()));
  return WriteFileIfChanged(*ws.fs, ws.StateDir() + "/config.json",
                            std::string(kConfigMagic) + j.dump() + "\n")
      .status();
}

std::string CacheDirOf(const Workspace& ws, const std::string& cache_dir_setting) {
  return cache_dir_setting.empty() ? cache::DefaultCacheDir()
                                   : JoinPath(ws.root, cache_dir_setting);
}

Result<WorkspaceConfig> LoadConfig(const Workspace& ws) {
  Result<std::string> text = ws.fs->ReadFile(ws.StateDir() + "/config.json");
  if (!text.ok()) {
    return Errorf(ErrorCode::kNotFound, "{} has no build state; run `benchmake build` first",
                  ws.root);
  }
  if (text->compare(0, kConfigMagic.size(), kConfigMagic) != 0) {
    return Errorf(ErrorCode::kUnsupported,
                  "{}/config.json is from another benchmake version; run `benchmake build`",
                  ws.StateDir());
  }
  nlohmann::json j = nlohmann::json::parse(text->substr(kConfigMagic.size()), nullptr, false);
  if (!j.is_object())
    return Errorf(ErrorCode::kCorrupt, "{}/config.json is corrupt", ws.StateDir());
  WorkspaceConfig c;
  c.cache_dir = j.value("cache_dir", "");
  if (j.contains("remote")) {
    BM_ASSIGN_OR_RETURN(c.remote, cache::RemoteConfigFromJson(j["remote"]));
  }
  c.gpus = j.value("gpus", 0);
  return c;
}

Result<std::unique_ptr<cache::Cache>> OpenCache(const Workspace& ws,
                                                const WorkspaceConfig& config) {
  auto c = std::make_unique<cache::Cache>(*ws.fs, config.cache_dir);
  BM_TRY(c->Init());
  c->SetRunHealth(cache::RunHealth::ForWorkspace(ws.StateDir()));
  cache::RemoteConfig remote = config.remote;
  Status env = cache::ApplyRemoteEnvironment(remote);
  if (!env.ok()) {
    c->ReportRemoteProblem("BENCHMAKE_REMOTE_CACHE", env);
    return c;
  }
  if (!remote.enabled()) return c;
  Result<std::unique_ptr<cache::RemoteBackend>> r =
      cache::OpenRemote(remote, cache::RemoteRegistry::Global());
  if (!r.ok()) {
    c->ReportRemoteProblem(cache::RedactUrl(remote.url), r.status());
    return c;
  }
  c->AddRemote(std::move(*r), !remote.write);
  c->SetRemoteParallel(remote.parallel);
  return c;
}

}  // namespace bm::engine
