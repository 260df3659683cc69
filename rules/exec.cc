#include "rules/exec.h"

#include <cctype>
#include <optional>
#include <string_view>
#include <vector>

#include "base/signal_name.h"
#include "rules/external_metrics.h"

namespace bm::rules {
namespace {

using engine::ParamSpec;
using engine::ParamType;
using nlohmann::json;

std::string EnvName(std::string_view input) {
  std::string out = "BENCHMAKE_IN_";
  for (char c : input)
    out += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '_';
  return out;
}

bool IsRelativeInside(std::string_view p) {
  if (p.empty() || p.front() == '/') return false;
  size_t pos = 0;
  while (pos <= p.size()) {
    size_t slash = p.find('/', pos);
    std::string_view part =
        p.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    if (part == "..") return false;
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  return true;
}

// Calls fn(offset, name) for each "{name}" of `text`, in order: the placeholders, and any other
// braces (a shell's ${VAR}), which the caller keeps as they are.
template <typename Fn>
void ForEachBraced(std::string_view text, Fn fn) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t open = text.find('{', pos);
    if (open == std::string_view::npos) return;
    const size_t close = text.find('}', open);
    if (close == std::string_view::npos) return;
    fn(open, text.substr(open + 1, close - open - 1));
    pos = close + 1;
  }
}

// The input a "{in.NAME}" placeholder names, or nullopt for another name.
std::optional<std::string_view> InputOf(std::string_view braced) {
  if (braced.substr(0, 3) != "in.") return std::nullopt;
  return braced.substr(3);
}

// Replaces {out}, {in.NAME}, ...; other braces are kept (Check refuses an {in.NAME} that names
// no input before anything runs).
std::string Expand(std::string_view text, const engine::StepContext& ctx) {
  std::string out;
  size_t pos = 0;
  ForEachBraced(text, [&](size_t open, std::string_view name) {
    out.append(text.substr(pos, open - pos));
    pos = open + name.size() + 2;
    const std::optional<std::string_view> input = InputOf(name);
    if (name == "out")
      out += ctx.out_dir;
    else if (name == "scratch")
      out += ctx.scratch_dir;
    else if (name == "workspace")
      out += ctx.workspace_dir;
    else if (name == "resume")
      out += ctx.resume_dir;
    else if (input && ctx.inputs.count(std::string(*input)))
      out += ctx.inputs.at(std::string(*input));
    else
      out.append(text.substr(open, pos - open));  // not ours (e.g. shell ${VAR})
  });
  out.append(text.substr(pos));
  return out;
}

// "{in.NAME}" placeholders of `text` whose NAME is not in `inputs`: what is wrong with each.
std::vector<std::string> UnknownInputs(std::string_view text, const json& inputs) {
  std::vector<std::string> wrong;
  ForEachBraced(text, [&](size_t, std::string_view name) {
    const std::optional<std::string_view> input = InputOf(name);
    if (!input) return;
    for (const json& i : inputs)
      if (i.get<std::string>() == *input) return;
    wrong.push_back(fmt::format("{{{}}}: no input named '{}' (inputs: {})", name, *input,
                                inputs.empty() ? "none" : inputs.dump()));
  });
  return wrong;
}

class ExecRule : public engine::Rule {
 public:
  ExecRule(std::string_view name, bool platform_dependent)
      : name_(name), platform_dependent_(platform_dependent) {
    params_ = {
        {"command", ParamType::kStringList, std::nullopt, "argv; {out} and {in.NAME} are replaced",
         true},
        {"shell", ParamType::kBool, json(false), "run the command through sh -c", true},
        {"inputs", ParamType::kInputList, json::array(), "upstream targets or source files", true},
        {"outputs", ParamType::kStringList, json::array(), "files the command writes below {out}",
         true},
        {"env", ParamType::kStringMap, json::object(), "extra environment variables", true},
        {"metrics", ParamType::kString, json(""), "a JSON output file holding the step's metrics",
         true},
        engine::WithRange({"gpus", ParamType::kInt, json(0),
                           "GPUs the command needs (CUDA_VISIBLE_DEVICES is set)", true},
                          0),
        {"description", ParamType::kString, json(""), "a note for humans; not part of the key",
         false},
        {"progress", ParamType::kBool, json(false), "show the command's output live (console pool)",
         false},
        {"timeout", ParamType::kFloat, json(0.0), "seconds before the command is killed (0: none)",
         false},
    };
    for (ParamSpec& s : ExternalLogParams()) params_.push_back(std::move(s));
  }

  std::string_view name() const override { return name_; }
  bool platform_dependent() const override { return platform_dependent_; }
  int version() const override { return 1; }
  const std::vector<ParamSpec>& params() const override { return params_; }
  std::vector<std::pair<std::string, std::string>> ImplementationVersions(
      const json& p) const override {
    if (p.value("log_format", std::string("none")) == "none") return {};
    return {{"log_reading", std::to_string(kLogReadingVersion)}};
  }
  int gpus(const json& p) const override { return static_cast<int>(p.value("gpus", int64_t{0})); }
  bool placeable() const override { return true; }
  bool streams_progress(const json& p) const override { return p.value("progress", false); }

  std::vector<engine::ParamError> Check(const json& p) const override {
    std::vector<engine::ParamError> errors;
    // const json's operator[] on a missing key is undefined (ASan: a use after free)
    if (!p.contains("command") || p["command"].empty())
      errors.push_back({"command", "command must not be empty"});
    const json inputs = p.value("inputs", json::array());
    const json command = p.value("command", json::array());
    for (size_t i = 0; i < command.size(); ++i)
      for (std::string& e : UnknownInputs(command[i].get<std::string>(), inputs))
        errors.push_back({"command", std::move(e), static_cast<int>(i)});
    const json env = p.value("env", json::object());
    for (const auto& [k, v] : env.items())
      for (std::string& e : UnknownInputs(v.get<std::string>(), inputs))
        errors.push_back({"env", fmt::format("{}: {}", k, e)});
    const json outputs = p.value("outputs", json::array());
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!IsRelativeInside(outputs[i].get<std::string>()))
        errors.push_back({"outputs",
                          fmt::format("output '{}' must be a relative path inside {{out}}",
                                      outputs[i].get<std::string>()),
                          static_cast<int>(i)});
    }
    std::string metrics = p["metrics"].get<std::string>();
    if (!metrics.empty() && !IsRelativeInside(metrics))
      errors.push_back({"metrics", "metrics must be a relative path inside {out}"});
    if (p["timeout"].get<double>() < 0)
      errors.push_back({"timeout", "timeout must be >= 0 (0: none)"});
    for (engine::ParamError& e : CheckExternalLogParams(p)) errors.push_back(std::move(e));
    if (p["log_format"] != "none") {
      std::string log = p["log"].get<std::string>();
      if (!log.empty() && !IsRelativeInside(log))
        errors.push_back(
            {"log", "log must be a relative path inside {out} or the working directory"});
      if (!metrics.empty())
        errors.push_back(
            {"metrics", "metrics and log_format both make the step's metrics: use one"});
      for (const auto& o : p["outputs"]) {
        if (o == "metrics.json" || o == "log.jsonl")
          errors.push_back({"outputs", fmt::format("{} is what log_format writes: do not declare "
                                                   "it as an output",
                                                   o.get<std::string>())});
      }
    }
    return errors;
  }

  Result<engine::StepResult> Run(engine::StepContext& ctx) const override {
    const json& p = ctx.params;
    Command cmd;
    for (const auto& a : p["command"]) cmd.argv.push_back(Expand(a.get<std::string>(), ctx));
    if (p["shell"].get<bool>()) {
      std::string script;
      for (const std::string& a : cmd.argv) script += (script.empty() ? "" : " ") + a;
      cmd.argv = {"/bin/sh", "-c", script};
    }
    cmd.cwd = ctx.scratch_dir;
    cmd.log_path = ctx.log_path;
    cmd.echo_to_terminal = ctx.interactive && p["progress"].get<bool>();
    if (double t = p["timeout"].get<double>(); t > 0) cmd.timeout_seconds = t;
    cmd.env["BENCHMAKE_OUT"] = ctx.out_dir;
    cmd.env["BENCHMAKE_SCRATCH"] = ctx.scratch_dir;
    cmd.env["BENCHMAKE_WORKSPACE"] = ctx.workspace_dir;
    cmd.env["BENCHMAKE_RESUME_DIR"] = ctx.resume_dir;
    cmd.env["BENCHMAKE_TARGET"] = ctx.target;
    cmd.env["BENCHMAKE_TOOLS_DIR"] = ctx.tools_dir;
    for (const auto& [name, path] : ctx.inputs) cmd.env[EnvName(name)] = path;
    for (const auto& [k, v] : p["env"].items()) cmd.env[k] = Expand(v.get<std::string>(), ctx);
    cmd = engine::PlaceCommand(ctx.placement, std::move(cmd), gpus(p));
    if (ctx.log) *ctx.log << "$ " << fmt::format("{}", fmt::join(cmd.argv, " ")) << "\n";
    BM_ASSIGN_OR_RETURN(CommandResult r, ctx.runner->Run(cmd));
    if (r.timed_out)
      return Errorf(ErrorCode::kTimeout, "command timed out after {}s", p["timeout"].get<double>());
    if (r.term_signal)
      return Errorf(ErrorCode::kFailed, "command killed by {}", SignalName(r.term_signal));
    if (r.exit_code)
      return Errorf(ErrorCode::kFailed, "command exited with status {}", r.exit_code);

    Filesystem& fs = *ctx.fs;
    for (const auto& o : p["outputs"]) {
      std::string rel = o.get<std::string>();
      std::string dest = ctx.out_dir + "/" + rel;
      BM_ASSIGN_OR_RETURN(FileInfo info, fs.Stat(dest));
      if (info.exists) continue;
      std::string left = ctx.scratch_dir + "/" + rel;
      BM_ASSIGN_OR_RETURN(FileInfo lf, fs.Stat(left));
      if (!lf.exists)
        return Errorf(ErrorCode::kFailed, "declared output '{}' was not produced", rel);
      BM_TRY(fs.MakeDirs(DirName(dest)));
      BM_TRY(fs.Rename(left, dest));
    }
    if (p["log_format"] != "none") return MetricsFromLog(ctx);
    engine::StepResult result;
    if (std::string m = p["metrics"].get<std::string>(); !m.empty()) {
      Result<std::string> text = fs.ReadFile(ctx.out_dir + "/" + m);
      if (!text.ok()) return Errorf(ErrorCode::kFailed, "metrics file '{}' was not produced", m);
      json j = json::parse(*text, nullptr, false);
      if (j.is_discarded()) return Errorf(ErrorCode::kFailed, "metrics file '{}' is not JSON", m);
      result.metrics = std::move(j);
    }
    return result;
  }

 private:
  std::vector<ParamSpec> params_;
  std::string name_;
  bool platform_dependent_ = false;
};

}  // namespace

std::unique_ptr<engine::Rule> MakeExecRule() { return std::make_unique<ExecRule>("exec", false); }

std::unique_ptr<engine::Rule> MakeMeasureRule() {
  return std::make_unique<ExecRule>("measure", true);
}

}  // namespace bm::rules
