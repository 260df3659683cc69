#include "engine/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

#include "base/nearest_name.h"
#include "engine/rule.h"
#include "engine/slurm.h"

namespace bm::engine {
namespace {

using nlohmann::json;

const std::vector<std::string>& SlurmKeys(bool workspace) {
  static const std::vector<std::string> kTarget = {"partition", "account", "time", "ranks_per_node",
                                                   "srun_args"};
  static const std::vector<std::string> kWorkspace = {
      "partition", "account", "time", "ranks_per_node", "srun_args", "steps", "retries"};
  return workspace ? kWorkspace : kTarget;
}

bool IsStringList(const json& v) {
  if (!v.is_array()) return false;
  for (const json& e : v)
    if (!e.is_string()) return false;
  return true;
}

std::vector<std::string> Strings(const json& v) {
  std::vector<std::string> out;
  for (const json& e : v) out.push_back(e.get<std::string>());
  return out;
}

// Slurm's time formats: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
bool IsSlurmTime(const std::string& t) {
  static const std::regex re(R"((\d+-\d+(:\d+){0,2})|(\d+(:\d+){0,2})|UNLIMITED|infinite)");
  return std::regex_match(t, re);
}

Status Wrong(std::string_view key, std::string_view what, const json& value) {
  return Errorf(ErrorCode::kInvalidArgument, "{} must be {}, not {}", key, what, value.dump());
}

}  // namespace

bool IsPlacementSetting(std::string_view key) { return key == "executor" || key == "launcher"; }

Status ApplyPlacementSetting(Placement& p, std::string_view key, const json& value) {
  if (key == "executor") {
    if (!value.is_string() || (value != "local" && value != "slurm"))
      return Wrong(key, "\"local\" or \"slurm\"", value);
    p.executor = value.get<std::string>();
    return Status::Ok();
  }
  if (key == "launcher") {
    if (!value.is_string() || (value != "local" && value != "mpirun"))
      return Wrong(key, "\"local\" or \"mpirun\" (Slurm steps start their ranks with srun)", value);
    p.launcher = value.get<std::string>();
    return Status::Ok();
  }
  return Errorf(ErrorCode::kInvalidArgument, "unknown placement setting '{}'", key);
}

Status ApplySlurmSetting(SlurmOptions& o, std::string_view key, const json& value, bool workspace) {
  const std::vector<std::string>& keys = SlurmKeys(workspace);
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
    std::string hint = !workspace && (key == "steps" || key == "retries")
                           ? " (a workspace setting: [benchmake.slurm])"
                           : DidYouMean(key, keys);
    return Errorf(ErrorCode::kInvalidArgument, "unknown setting '{}'{} (known: {})", key, hint,
                  fmt::join(keys, ", "));
  }
  if (key == "partition" || key == "account" || key == "time" || key == "steps") {
    if (!value.is_string()) return Wrong(key, "a string", value);
    const std::string v = value.get<std::string>();
    if (key == "time" && !v.empty() && !IsSlurmTime(v))
      return Errorf(ErrorCode::kInvalidArgument,
                    "time must be a Slurm time limit (minutes, MM:SS, HH:MM:SS, D-HH[:MM[:SS]]), "
                    "not '{}'",
                    v);
    if (key == "steps" && v != "gpu" && v != "all")
      return Wrong(key, "\"gpu\" (steps that need GPUs) or \"all\"", value);
    (key == "partition" ? o.partition
     : key == "account" ? o.account
     : key == "time"    ? o.time
                        : o.steps) = v;
    return Status::Ok();
  }
  if (key == "ranks_per_node" || key == "retries") {
    if (!value.is_number_integer()) return Wrong(key, "an integer", value);
    int64_t n = value.get<int64_t>();
    if (key == "ranks_per_node" && (n < 1 || n > 4096))
      return Errorf(ErrorCode::kInvalidArgument, "ranks_per_node must be 1..4096, not {}", n);
    if (key == "retries" && (n < 0 || n > 100))
      return Errorf(ErrorCode::kInvalidArgument, "retries must be 0..100, not {}", n);
    (key == "ranks_per_node" ? o.ranks_per_node : o.retries) = static_cast<int>(n);
    return Status::Ok();
  }
  if (!IsStringList(value)) return Wrong(key, "a list of strings", value);
  o.srun_args = Strings(value);
  return Status::Ok();
}

Status ApplyMpirunSetting(MpirunOptions& o, std::string_view key, const json& value) {
  static const std::vector<std::string> kKeys = {"hostfile", "mpirun_args"};
  if (key == "hostfile") {
    if (!value.is_string()) return Wrong(key, "a string", value);
    o.hostfile = value.get<std::string>();
    return Status::Ok();
  }
  if (key == "mpirun_args") {
    if (!IsStringList(value)) return Wrong(key, "a list of strings", value);
    o.mpirun_args = Strings(value);
    return Status::Ok();
  }
  return Errorf(ErrorCode::kInvalidArgument, "unknown setting '{}'{} (known: {})", key,
                DidYouMean(key, kKeys), fmt::join(kKeys, ", "));
}

json PlacementToJson(const Placement& p) {
  return {{"executor", p.executor},
          {"launcher", p.launcher},
          {"slurm",
           {{"partition", p.slurm.partition},
            {"account", p.slurm.account},
            {"time", p.slurm.time},
            {"ranks_per_node", p.slurm.ranks_per_node},
            {"srun_args", p.slurm.srun_args},
            {"steps", p.slurm.steps},
            {"retries", p.slurm.retries}}},
          {"mpirun", {{"hostfile", p.mpirun.hostfile}, {"mpirun_args", p.mpirun.mpirun_args}}}};
}

Result<Placement> PlacementFromJson(const json& j) {
  Placement p;
  if (!j.is_object()) return p;
  if (j.contains("executor")) BM_TRY(ApplyPlacementSetting(p, "executor", j["executor"]));
  if (j.contains("launcher")) {
    // "slurm" is what PlaceTarget gives Slurm steps; the BENCHFILE cannot say it.
    if (j["launcher"] == "slurm")
      p.launcher = "slurm";
    else
      BM_TRY(ApplyPlacementSetting(p, "launcher", j["launcher"]));
  }
  if (j.contains("slurm") && j["slurm"].is_object())
    for (const auto& [k, v] : j["slurm"].items()) BM_TRY(ApplySlurmSetting(p.slurm, k, v, true));
  if (j.contains("mpirun") && j["mpirun"].is_object())
    for (const auto& [k, v] : j["mpirun"].items()) BM_TRY(ApplyMpirunSetting(p.mpirun, k, v));
  return p;
}

const std::vector<ParamSpec>& PlacementParams() {
  static const std::vector<ParamSpec> kParams = {
      {"executor", ParamType::kString, json(""),
       "where this step's processes run: \"local\" or \"slurm\" (default: [benchmake] executor "
       "and [benchmake.slurm] steps); not part of the key",
       false},
      {"slurm", ParamType::kTable, json::object(),
       "this step's Slurm settings over [benchmake.slurm]'s: partition, account, time, "
       "ranks_per_node, srun_args (added); not part of the key",
       false},
  };
  return kParams;
}

std::vector<std::pair<std::string, std::string>> CheckTargetPlacement(bool placeable,
                                                                      std::string_view rule,
                                                                      const json& params) {
  std::vector<std::pair<std::string, std::string>> errors;
  const std::string executor = params.value("executor", "");
  const bool has_slurm = params.contains("slurm") && !params["slurm"].empty();
  if (!placeable && (!executor.empty() || has_slurm)) {
    errors.emplace_back(
        executor.empty() ? "slurm" : "executor",
        fmt::format("rule '{}' works inside benchmake, so its steps run where benchmake runs: "
                    "it takes no executor or slurm settings",
                    rule));
    return errors;
  }
  if (!executor.empty() && executor != "local" && executor != "slurm")
    errors.emplace_back("executor",
                        fmt::format("executor must be \"local\" or \"slurm\", not '{}'", executor));
  if (has_slurm) {
    SlurmOptions o;
    for (const auto& [k, v] : params["slurm"].items())
      if (Status s = ApplySlurmSetting(o, k, v, /*workspace=*/false); !s.ok())
        errors.emplace_back("slurm", "slurm: " + s.message());
  }
  return errors;
}

Placement PlaceTarget(const Placement& workspace, bool placeable, int gpus, int ranks,
                      const json& params) {
  Placement p = workspace;
  std::string executor = params.value("executor", "");
  if (!placeable) {
    executor = "local";
  } else if (executor.empty()) {
    executor = workspace.executor == "slurm" && (workspace.slurm.steps == "all" || gpus > 0)
                   ? "slurm"
                   : "local";
  }
  p.executor = executor;
  p.launcher = ranks <= 1 ? "local" : executor == "slurm" ? "slurm" : workspace.launcher;
  if (params.contains("slurm") && params["slurm"].is_object()) {
    for (const auto& [k, v] : params["slurm"].items()) {
      if (k == "srun_args") {
        for (const json& a : v) p.slurm.srun_args.push_back(a.get<std::string>());
      } else {
        (void)ApplySlurmSetting(p.slurm, k, v, /*workspace=*/false);
      }
    }
  }
  return p;
}

bool UsesLocalGpus(const Placement& p) { return p.executor == "local" && p.launcher == "local"; }

Command PlaceCommand(const Placement& p, Command cmd, int gpus) {
  if (p.executor != "slurm") return cmd;
  SrunShape shape;
  shape.gpus_per_task = gpus;
  return SrunCommand(p.slurm, p.job_name, shape, std::move(cmd));
}

}  // namespace bm::engine
