#include "engine/platform.h"

#include <cstdlib>

namespace bm::engine {

Result<nlohmann::json> ProbePlatform(Filesystem& fs, CommandRunner& runner,
                                     const std::string& tools_dir, const std::string& scratch_dir,
                                     const std::string& needed_by) {
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
  cmd.argv = {"sh", "-c", "exec \"$0\" --probe > \"$1\"", trainer, out};
  cmd.timeout_seconds = 60;
  BM_ASSIGN_OR_RETURN(CommandResult r, runner.Run(cmd));
  if (!r.success())
    return Errorf(ErrorCode::kFailed, "{} --probe failed (exit {})", trainer, r.exit_code);
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
