#include "engine/platform.h"

#include <cstdlib>

#include "engine/slurm.h"

namespace bm::engine {

std::string ProbeSite::Key() const {
  if (!slurm) return "local";
  return nlohmann::json{{"partition", options.partition},
                        {"account", options.account},
                        {"srun_args", options.srun_args},
                        {"gpu", gpu}}
      .dump();
}

Result<ProbeSite> ProbeSite::FromKey(std::string_view key) {
  ProbeSite site;
  if (key == "local") return site;
  nlohmann::json j = nlohmann::json::parse(key, nullptr, false);
  if (!j.is_object() || !j.contains("gpu") || !j["gpu"].is_boolean())
    return Errorf(ErrorCode::kCorrupt, "bad probe site '{}'", key);
  site.slurm = true;
  site.gpu = j["gpu"].get<bool>();
  for (const char* k : {"partition", "account", "srun_args"})
    if (j.contains(k)) BM_TRY(ApplySlurmSetting(site.options, k, j[k], /*workspace=*/false));
  return site;
}

ProbeSite ProbeSiteOf(const Placement& p, int gpus) {
  ProbeSite site;
  if (p.executor != "slurm") return site;
  site.slurm = true;
  site.options.partition = p.slurm.partition;
  site.options.account = p.slurm.account;
  site.options.srun_args = p.slurm.srun_args;
  site.gpu = gpus > 0;
  return site;
}

Result<nlohmann::json> ProbePlatform(Filesystem& fs, CommandRunner& runner,
                                     const std::string& tools_dir, const std::string& scratch_dir,
                                     const std::string& needed_by, const ProbeSite& site) {
  if (const char* env = std::getenv("BENCHMAKE_PLATFORM"); env && *env) {
    nlohmann::json j = nlohmann::json::parse(env, nullptr, false);
    if (!j.is_object())
      return Errorf(ErrorCode::kInvalidArgument, "BENCHMAKE_PLATFORM is not a JSON object");
    return j;
  }
  std::string trainer = tools_dir + "/benchmake-train";
  BM_ASSIGN_OR_RETURN(FileInfo info, fs.Stat(trainer));
  if (!info.exists) {
    return Errorf(ErrorCode::kNotFound,
                  "platform-dependent targets ({}) need {} to probe the platform; build it "
                  "(cmake --build build --target benchmake-train)",
                  needed_by, trainer);
  }
  BM_TRY(fs.MakeDirs(scratch_dir));
  std::string out = scratch_dir + "/probe.json";
  BM_TRY(fs.Remove(out));
  Command cmd;
  cmd.argv = {trainer, "--probe"};
  cmd.timeout_seconds = 60;
  std::string log;
  if (site.slurm) {
    // On a node of the site: srun relays the probe's stdout; its own messages
    // go to probe.log. A node may take a while to come free.
    static const std::string kProbeTime = "5";  // minutes
    SlurmOptions options = site.options;
    options.time = kProbeTime;
    SrunShape shape;
    shape.gpus_per_task = site.gpu ? 1 : 0;
    cmd = SrunCommand(options, NewSlurmJobName("probe"), shape, std::move(cmd));
    cmd.timeout_seconds.reset();
    log = scratch_dir + "/probe.log";
    BM_TRY(fs.WriteFileAtomic(log, "", false, /*durable=*/false));
    cmd.log_path = log;
  }
  // stdout alone into the file: "$0" is the file, "$@" the command.
  std::vector<std::string> argv = {"sh", "-c", "exec \"$@\" > \"$0\"", out};
  argv.insert(argv.end(), cmd.argv.begin(), cmd.argv.end());
  cmd.argv = std::move(argv);
  BM_ASSIGN_OR_RETURN(CommandResult r, runner.Run(cmd));
  if (!r.success()) {
    std::string why;
    if (!log.empty()) {
      Result<std::string> text = fs.ReadFile(log);
      if (text.ok()) why = ParseSrunOutput(*text).Describe();
      if (why.empty() && text.ok()) why = *text;
      return Errorf(ErrorCode::kFailed, "probing the platform through Slurm ({}) failed: {}",
                    site.Key(), why.empty() ? fmt::format("srun exited {}", r.exit_code) : why);
    }
    return Errorf(ErrorCode::kFailed, "{} --probe failed (exit {})", trainer, r.exit_code);
  }
  BM_ASSIGN_OR_RETURN(std::string text, fs.ReadFile(out));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object())
    return Errorf(ErrorCode::kInvalidArgument, "{} --probe printed no JSON object", trainer);
  return j;
}

int DetectGpuCount(CommandRunner& runner, const nlohmann::json& facts,
                   const std::string& scratch_dir, Filesystem& fs) {
  if (const char* env = std::getenv("BENCHMAKE_GPUS"); env && *env) return std::atoi(env);
  if (facts.is_object() && facts.contains("gpu_count") && facts["gpu_count"].is_number_integer())
    return facts["gpu_count"].get<int>();
  if (!fs.MakeDirs(scratch_dir).ok()) return 0;
  std::string out = scratch_dir + "/nvidia-smi.txt";
  Command cmd;
  cmd.argv = {"sh", "-c", "command -v nvidia-smi >/dev/null && nvidia-smi -L > \"$0\"", out};
  cmd.timeout_seconds = 30;
  Result<CommandResult> r = runner.Run(cmd);
  if (!r.ok() || !r->success()) return 0;
  Result<std::string> text = fs.ReadFile(out);
  if (!text.ok()) return 0;
  int n = 0;
  for (size_t pos = 0; (pos = text->find("GPU ", pos)) != std::string::npos; ++pos)
    if (pos == 0 || (*text)[pos - 1] == '\n') ++n;
  return n;
}

}  // namespace bm::engine
