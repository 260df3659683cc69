// The Rule interface: one step kind (download, tokenize, pretrain, finetune,
// evaluate, exec). engine/ owns this contract; rules/ implements it, one file
// per rule, registered by name in rules/registry.cc.
//
// A rule declares
//   - its parameters (ParamSpec): type, default, doc, whether it enters the key,
//     and whether it names inputs (other targets or source files);
//   - its version, bumped whenever its outputs for the same key would change;
//   - whether its results depend on the platform (GPU model and count, driver,
//     trainer build): then the platform facts enter its key;
//   - how many GPUs a step needs and whether it streams live progress;
//   - how to run: Run() reads inputs and writes every output under ctx.out_dir.
//
// Parameter values are nlohmann::json, normalized by the engine before they
// reach a rule: integers are int64 (1_000 == 1000), floats are double, every
// parameter with a default is present. Inputs (kInput, kInputList) arrive as
// the target or file names the user wrote; ctx.inputs maps each to a path.
//
// Thread safety: a Rule is immutable after registration; Run() may be called
// from several processes at once (each with its own StepContext).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/command_runner.h"
#include "base/filesystem.h"
#include "base/result.h"
#include "engine/placement.h"

namespace bm::engine {

enum class ParamType {
  kString,
  kInt,
  kFloat,  // an integer literal is accepted and stored as a double
  kBool,
  kStringList,  // ["a", "b"]
  kStringMap,   // { KEY = "value", ... }
  kTable,       // a table of scalars, e.g. model overrides { hidden = 256, layers = 4 }
  kInput,       // one upstream target name, or a source file path (relative to the BENCHFILE)
  kInputList,   // a list of those
};

std::string_view ParamTypeName(ParamType type);

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kString;
  std::optional<nlohmann::json> default_value;  // nullopt: required
  std::string doc;
  bool in_key = true;  // false for knobs that cannot change outputs (log interval, ...)
  // false: left out of the key while it has its default value (a parameter added to a rule
  // later, whose default does what the rule did before it: the targets cached before it keep
  // their keys); in the key like any other once set to something else.
  bool in_key_at_default = true;
  // kInt: the values accepted, checked where the BENCHFILE is read and reported at the value.
  // An int's range unless the rule says otherwise (WithRange): the rules hand these counts to
  // code that counts in int, where 4294967297 would become 1.
  int64_t min = std::numeric_limits<int>::min();
  int64_t max = std::numeric_limits<int>::max();
};

inline constexpr int64_t kIntParamMax = std::numeric_limits<int>::max();
inline constexpr int64_t kInt64ParamMin = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kInt64ParamMax = std::numeric_limits<int64_t>::max();

// `spec` (a kInt parameter) accepting [min, max] only.
inline ParamSpec WithRange(ParamSpec spec, int64_t min, int64_t max = kIntParamMax) {
  spec.min = min;
  spec.max = max;
  return spec;
}

// A parameter value that a rule refuses in Check(). The engine reports it at
// the parameter's BENCHFILE line and column.
struct ParamError {
  std::string param;    // the parameter the message is about ("" = the target)
  std::string message;  // what is wrong, e.g. "heads (12) must divide hidden (100)"
  int element = -1;     // the list element it is about (reported at that element); -1: the value
};

// What a running step sees. Paths are absolute.
struct StepContext {
  std::string target;     // the target's name
  nlohmann::json params;  // validated, normalized, defaults filled
  // For each input name the user wrote (a target or a file): its path. A target
  // input maps to that target's output directory (out/NAME), a file to itself.
  std::map<std::string, std::string> inputs;
  std::string workspace_dir;  // the BENCHFILE's directory
  std::string scratch_dir;    // fresh and empty; the working directory of commands
  std::string out_dir;        // empty directory; every output goes below it
  std::string resume_dir;     // survives a killed run of the same action key
  std::string tools_dir;      // where benchmake and benchmake-train are installed
  nlohmann::json platform;    // platform facts (benchmake-train --probe), or {}
  std::vector<int> gpus;      // devices allocated to this step (CUDA_VISIBLE_DEVICES)
  // Where the rule's processes run (engine/placement.h, set by the executor):
  // every command goes through PlaceCommand(placement, ...), several ranks
  // through the launcher it names (rules/launch/launcher.h). Under Slurm,
  // ctx.gpus is empty: srun asks for the GPUs.
  Placement placement;
  CommandRunner* runner = nullptr;  // for rules that launch processes
  Filesystem* fs = nullptr;         // every file access of the rule (an in-memory fake in tests)
  std::string log_path;             // the file behind `log`: give it to Command::log_path
  std::ostream* log = nullptr;      // the step's log (also shown on failure)
  bool interactive = false;         // attached to a terminal: progress lines welcome
  bool color = false;               // progress lines may be colored (base/terminal.h)
};

// One input of a target as the load-time input check sees it (Rule::CheckInputs):
// the parameter naming it, the name written, and for an upstream target its
// rule's name and what that rule says of its output (Rule::OutputFacts); for a
// source file rule is "" and facts null.
struct UpstreamInput {
  std::string param;
  std::string name;
  std::string rule;
  nlohmann::json facts;
};

// What a successful step reports besides its files.
struct StepResult {
  // Measurements and results (the metrics.json of a trainer run, stats of a
  // tokenize step, ...). Stored in the action record; may be empty.
  nlohmann::json metrics = nlohmann::json::object();
};

class Rule {
 public:
  virtual ~Rule() = default;

  virtual std::string_view name() const = 0;
  virtual int version() const = 0;
  virtual const std::vector<ParamSpec>& params() const = 0;
  // What else the outputs depend on for these parameters, as (name, version) pairs that enter the
  // key as `impl` fields: code whose output can change between releases while the rule's own
  // version stays (exec and measure with a log_format: how the log is read). Empty: nothing.
  virtual std::vector<std::pair<std::string, std::string>> ImplementationVersions(
      const nlohmann::json& /*params*/) const {
    return {};
  }

  // True when results depend on the platform: the platform facts enter the key.
  virtual bool platform_dependent() const { return false; }

  // GPUs the step needs given its parameters (0: none). The engine takes them
  // from its device allocator before Run() and sets CUDA_VISIBLE_DEVICES.
  virtual int gpus(const nlohmann::json& /*params*/) const { return 0; }

  // Processes the step starts as the ranks of one run (a training layout's
  // TP*PP*DP); several are started by a launcher (rules/launch/launcher.h).
  virtual int ranks(const nlohmann::json& /*params*/) const { return 1; }

  // True when the rule's work is the processes it starts (through
  // PlaceCommand and the launchers), so that an executor can run them on
  // another machine (engine/placement.h); false for rules that work inside
  // benchmake: they run where benchmake runs.
  virtual bool placeable() const { return false; }

  // True when the step shows live progress on the terminal (ninja's console pool).
  virtual bool streams_progress(const nlohmann::json& /*params*/) const { return false; }

  // Semantic checks beyond types, run when the BENCHFILE is loaded (before
  // anything runs). Types and unknown names are checked by the engine.
  virtual std::vector<ParamError> Check(const nlohmann::json& /*params*/) const { return {}; }

  // What the targets reading this one may know of its output when the
  // BENCHFILE is loaded, from its parameters and its own inputs' facts (e.g. a
  // LLaVA pretrain says {"llava": true}; a finetune passes on its init's). The
  // engine computes it in dependency order; an object, {} by default.
  virtual nlohmann::json OutputFacts(const nlohmann::json& /*params*/,
                                     const std::vector<UpstreamInput>& /*inputs*/) const {
    return nlohmann::json::object();
  }

  // Load-time checks of the inputs against the parameters (a text-only model on
  // a dataset with images, ...): run after Check() and after the graph is
  // ordered. The engine reports each error at the named parameter's value.
  virtual std::vector<ParamError> CheckInputs(const nlohmann::json& /*params*/,
                                              const std::vector<UpstreamInput>& /*inputs*/) const {
    return {};
  }

  // What valid parameters need that this build lacks (a layout needing tensor
  // parallelism this trainer does not implement, a precision the device does
  // not have): one message per missing thing, empty when the target can run.
  // Checked when a build is planned (engine/plan.h), for the targets being
  // built and their dependencies only, so that a BENCHFILE holding such a
  // target still loads and its other targets still build; Check() keeps
  // refusing invalid values at load time. (GPUs the machine lacks are the
  // engine's check, from gpus().)
  virtual std::vector<std::string> Unsupported(const nlohmann::json& /*params*/) const {
    return {};
  }

  // Runs the step. On failure nothing under ctx.out_dir is kept and nothing is
  // cached; the message should say what failed and where.
  virtual Result<StepResult> Run(StepContext& ctx) const = 0;
};

// Rules by name. Adding a step kind is one new file in rules/ and one line in
// rules/registry.cc.
class RuleRegistry {
 public:
  void Register(std::unique_ptr<Rule> rule);
  const Rule* Find(std::string_view name) const;  // nullptr when unknown
  std::vector<std::string> Names() const;         // sorted

 private:
  std::map<std::string, std::unique_ptr<Rule>, std::less<>> rules_;
};

}  // namespace bm::engine
