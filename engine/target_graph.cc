#include "engine/target_graph.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>

#include "base/nearest_name.h"

namespace bm::engine {
namespace {

std::string JsonTypeName(const nlohmann::json& v) {
  if (v.is_string()) return "a string";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number_float()) return "a float";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "a list";
  if (v.is_object()) return "a table";
  return v.type_name();
}

bool AllStrings(const nlohmann::json& v) {
  return std::all_of(v.begin(), v.end(), [](const nlohmann::json& e) { return e.is_string(); });
}

// The index of a list's first element that is not a string, if any.
std::optional<size_t> FirstNonString(const nlohmann::json& v) {
  if (!v.is_array()) return std::nullopt;
  for (size_t i = 0; i < v.size(); ++i)
    if (!v[i].is_string()) return i;
  return std::nullopt;
}

// Whether a string of `v` (or of its elements or values) holds a NUL, which no argv
// element, environment value or path can carry: it would be cut there.
bool HoldsNul(const nlohmann::json& v) {
  if (v.is_string()) return v.get_ref<const std::string&>().find('\0') != std::string::npos;
  if (v.is_array() || v.is_object())
    return std::any_of(v.begin(), v.end(), [](const nlohmann::json& e) { return HoldsNul(e); });
  return false;
}

// True when `path` is the workspace directory `dir` or a directory above it, by their names
// (".", "", "..", "/"): hashed as a source it would take in out/ and .benchmake/.
bool HoldsWorkspace(const std::string& dir, const std::string& path) {
  auto normal = [](const std::string& p) {
    std::string n = std::filesystem::path(p).lexically_normal().string();
    while (n.size() > 1 && n.back() == '/') n.pop_back();
    return n;
  };
  const std::string d = normal(dir), p = normal(path);
  return d == p || p == "/" || d.rfind(p + "/", 0) == 0;
}

// Where a rule's error is reported: the list element, the parameter's value, else the target.
SourceLocation ErrorLocation(const RawTarget& raw, const ParamError& e) {
  for (const RawParam& p : raw.params) {
    if (p.name != e.param) continue;
    if (e.element >= 0 && static_cast<size_t>(e.element) < p.element_locs.size())
      return p.element_locs[static_cast<size_t>(e.element)];
    return p.value_loc;
  }
  return raw.loc;
}

// "an integer from 1 to 2147483647", "an integer of at least 0", ...
std::string IntRangeText(int64_t min, int64_t max) {
  if (max == kInt64ParamMax)
    return min == kInt64ParamMin ? "an integer" : fmt::format("an integer of at least {}", min);
  return fmt::format("an integer from {} to {}", min, max);
}

// Checks `value` against `spec`; returns the normalized value or an error text.
Result<nlohmann::json> Normalize(const ParamSpec& spec, const nlohmann::json& value) {
  auto wrong = [&]() {
    return Errorf(ErrorCode::kInvalidArgument, "parameter '{}' must be {}, not {}", spec.name,
                  ParamTypeName(spec.type), JsonTypeName(value));
  };
  if (HoldsNul(value)) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "parameter '{}' holds a NUL character (\\u0000), which a command, an "
                  "environment or a path cannot carry",
                  spec.name);
  }
  switch (spec.type) {
    case ParamType::kString:
    case ParamType::kInput:
      if (!value.is_string()) return wrong();
      return value;
    case ParamType::kInt: {
      if (!value.is_number_integer()) return wrong();
      const int64_t n = value.get<int64_t>();
      if (n < spec.min || n > spec.max) {
        return Errorf(ErrorCode::kInvalidArgument, "parameter '{}' must be {}, not {}", spec.name,
                      IntRangeText(spec.min, spec.max), value.dump());
      }
      return nlohmann::json(n);
    }
    case ParamType::kFloat:
      if (!value.is_number()) return wrong();
      if (std::isnan(value.get<double>())) {
        return Errorf(ErrorCode::kInvalidArgument, "parameter '{}' must be a number, not nan",
                      spec.name);
      }
      return nlohmann::json(value.get<double>());
    case ParamType::kBool:
      if (!value.is_boolean()) return wrong();
      return value;
    case ParamType::kStringList:
    case ParamType::kInputList:
      if (!value.is_array()) return wrong();
      if (std::optional<size_t> i = FirstNonString(value)) {
        return Errorf(ErrorCode::kInvalidArgument,
                      "parameter '{}' must be {}, but element {} is {}", spec.name,
                      ParamTypeName(spec.type), *i + 1, JsonTypeName(value[*i]));
      }
      return value;
    case ParamType::kStringMap:
      if (!value.is_object() || !AllStrings(value)) return wrong();
      return value;
    case ParamType::kTable:
      if (!value.is_object()) return wrong();
      return value;
  }
  return wrong();
}

class Validator {
 public:
  Validator(const Benchfile& bf, const RuleRegistry& rules, Filesystem& fs, const std::string& dir)
      : bf_(bf), rules_(rules), fs_(fs), dir_(dir) {}

  Result<TargetGraph> Run() {
    graph_.benchfile = bf_.path;
    graph_.workspace_dir = dir_;
    graph_.settings = bf_.settings;
    for (const RawTarget& raw : bf_.targets) {
      if (graph_.index.count(raw.name)) {
        Error(raw.loc, fmt::format("duplicate target '{}'", raw.name));
        continue;
      }
      graph_.index[raw.name] = static_cast<int>(graph_.targets.size());
      graph_.targets.push_back(
          Target{raw.name, nullptr, nlohmann::json::object(), {}, {}, raw.loc});
    }
    for (const RawTarget& raw : bf_.targets) CheckTarget(raw);
    if (errors_.empty()) Order();
    if (errors_.empty()) CheckInputs();
    if (!errors_.empty()) return Status(ErrorCode::kInvalidArgument, Join());
    return std::move(graph_);
  }

 private:
  void Error(const SourceLocation& loc, std::string_view message) {
    errors_.push_back(loc.ToString() + ": " + std::string(message));
  }
  std::string Join() const {
    std::string out;
    for (const std::string& e : errors_) out += (out.empty() ? "" : "\n") + e;
    return out;
  }

  void CheckTarget(const RawTarget& raw) {
    Target& t = graph_.targets[static_cast<size_t>(graph_.index.at(raw.name))];
    if (t.rule) return;  // a duplicate, reported already
    t.rule = rules_.Find(raw.rule);
    if (!t.rule) {
      std::string known;
      for (const std::string& n : rules_.Names()) known += (known.empty() ? "" : ", ") + n;
      Error(raw.rule_loc, fmt::format("unknown rule '{}'{} (rules: {})", raw.rule,
                                      DidYouMean(raw.rule, rules_.Names()), known));
      return;
    }
    std::map<std::string, const ParamSpec*> specs;
    std::vector<std::string> names;
    for (const ParamSpec& s : t.rule->params()) {
      specs[s.name] = &s;
      names.push_back(s.name);
    }
    // Every platform-dependent target may ask for several measurements
    // (engine/step.h, step 6); not part of the key.
    static const ParamSpec kRounds =
        WithRange({"rounds", ParamType::kInt, nlohmann::json(1),
                   "measurements to keep of this target (median, min-max)", false},
                  1);
    if (t.rule->platform_dependent() && !specs.count(kRounds.name)) {
      specs[kRounds.name] = &kRounds;
      names.push_back(kRounds.name);
    }
    // Where the step runs (engine/placement.h): any target may say; only
    // placeable rules may say anything but the default.
    for (const ParamSpec& s : PlacementParams()) {
      if (specs.count(s.name)) continue;
      specs[s.name] = &s;
      names.push_back(s.name);
    }
    std::set<std::string> given, rejected;
    bool complete = true;  // every parameter given is valid and every required one given
    for (const RawParam& p : raw.params) {
      auto it = specs.find(p.name);
      if (it == specs.end()) {
        Error(p.key_loc, fmt::format("unknown parameter '{}' for rule '{}'{}", p.name, raw.rule,
                                     DidYouMean(p.name, names)));
        continue;
      }
      Result<nlohmann::json> v = Normalize(*it->second, p.value);
      if (!v.ok()) {
        std::optional<size_t> bad = FirstNonString(p.value);
        Error(bad && *bad < p.element_locs.size() ? p.element_locs[*bad] : p.value_loc,
              v.status().message());
        rejected.insert(p.name);  // given, if wrongly: not "lacking"
        complete = false;
        continue;
      }
      t.params[p.name] = *v;
      given.insert(p.name);
      ResolveInputs(t, *it->second, p);
    }
    for (const ParamSpec& s : t.rule->params()) {
      if (given.count(s.name)) continue;
      if (!s.default_value) {
        complete = false;
        if (rejected.count(s.name)) continue;
        Error(raw.loc, fmt::format("target '{}' lacks required parameter '{}' ({})", raw.name,
                                   s.name, s.doc));
        continue;
      }
      t.params[s.name] = *s.default_value;
    }
    // The rule's checks read every parameter: with one missing or mistyped they would
    // report on values the BENCHFILE does not hold ("command must not be empty").
    std::vector<ParamError> errors;
    if (complete) {
      errors = t.rule->Check(t.params);
      for (auto& [param, message] : CheckTargetPlacement(t.rule->placeable(), raw.rule, t.params))
        errors.push_back({param, message});
    }
    for (const ParamError& e : errors) Error(ErrorLocation(raw, e), e.message);
    std::set<int> deps;
    for (const InputRef& in : t.inputs)
      if (in.is_target) deps.insert(in.target);
    t.deps.assign(deps.begin(), deps.end());
  }

  // Rule::OutputFacts of every target, dependencies first, and each target's
  // Rule::CheckInputs on its inputs' facts. The targets are bf_.targets in
  // order here (a duplicate name stopped the load before).
  void CheckInputs() {
    std::vector<nlohmann::json> facts(graph_.targets.size(), nlohmann::json::object());
    for (int i : graph_.order) {
      const Target& t = graph_.targets[static_cast<size_t>(i)];
      std::vector<UpstreamInput> inputs;
      for (const InputRef& in : t.inputs) {
        UpstreamInput u{in.param, in.name, "", nullptr};
        if (in.is_target) {
          u.rule = std::string(graph_.targets[static_cast<size_t>(in.target)].rule->name());
          u.facts = facts[static_cast<size_t>(in.target)];
        }
        inputs.push_back(std::move(u));
      }
      facts[static_cast<size_t>(i)] = t.rule->OutputFacts(t.params, inputs);
      const RawTarget& raw = bf_.targets[static_cast<size_t>(i)];
      for (const ParamError& e : t.rule->CheckInputs(t.params, inputs)) {
        Error(ErrorLocation(raw, e), e.message);
      }
    }
  }

  void ResolveInputs(Target& t, const ParamSpec& spec, const RawParam& p) {
    if (spec.type != ParamType::kInput && spec.type != ParamType::kInputList) return;
    std::vector<std::pair<std::string, SourceLocation>> items;
    if (spec.type == ParamType::kInput) {
      items.emplace_back(p.value.get<std::string>(), p.value_loc);
    } else {
      for (size_t i = 0; i < p.value.size(); ++i) {
        items.emplace_back(p.value[i].get<std::string>(),
                           i < p.element_locs.size() ? p.element_locs[i] : p.value_loc);
      }
    }
    for (auto& [name, loc] : items) {
      if (name.empty()) {
        Error(loc, fmt::format("empty name in {}: a target or a source path", p.name));
        continue;
      }
      InputRef in{p.name, name, false, -1, "", loc};
      auto it = graph_.index.find(name);
      if (it != graph_.index.end()) {
        in.is_target = true;
        in.target = it->second;
        t.inputs.push_back(in);
        continue;
      }
      in.path = JoinPath(dir_, name);
      if (HoldsWorkspace(dir_, in.path)) {
        Error(loc, fmt::format("source '{}' in {} holds this workspace, whose out/ and .benchmake/ "
                               "change with every build: name the files or directories it reads",
                               name, p.name));
        continue;
      }
      Result<FileInfo> info = fs_.Stat(in.path);
      if (info.ok() && info->exists) {
        t.inputs.push_back(in);
        continue;
      }
      bool looks_like_target = name.find('/') == std::string::npos && IsValidTargetName(name);
      std::vector<std::string> targets;
      for (const auto& [n, i] : graph_.index) targets.push_back(n);
      std::string near = NearestName(name, targets);
      if (looks_like_target && !near.empty()) {
        Error(loc,
              fmt::format("unknown target '{}' in {} (did you mean '{}'?)", name, p.name, near));
      } else if (looks_like_target && name.find('.') == std::string::npos) {
        Error(loc,
              fmt::format("unknown target '{}' in {} (and no file of that name)", name, p.name));
      } else {
        Error(loc, fmt::format("source file '{}' not found (looked at {})", name, in.path));
      }
    }
  }

  void Order() {
    // Depth-first; gray nodes on the stack reveal a cycle.
    std::vector<int> color(graph_.targets.size(), 0);
    std::vector<int> stack;
    std::function<bool(int)> visit = [&](int i) -> bool {
      if (color[static_cast<size_t>(i)] == 2) return true;
      if (color[static_cast<size_t>(i)] == 1) {
        auto from = std::find(stack.begin(), stack.end(), i);
        std::string cycle;
        for (auto it = from; it != stack.end(); ++it)
          cycle += graph_.targets[static_cast<size_t>(*it)].name + " -> ";
        cycle += graph_.targets[static_cast<size_t>(i)].name;
        // Point at the input that closes the cycle.
        const Target& last = graph_.targets[static_cast<size_t>(stack.back())];
        SourceLocation loc = last.loc;
        for (const InputRef& in : last.inputs)
          if (in.is_target && in.target == i) loc = in.loc;
        Error(loc, "dependency cycle: " + cycle);
        return false;
      }
      color[static_cast<size_t>(i)] = 1;
      stack.push_back(i);
      for (int d : graph_.targets[static_cast<size_t>(i)].deps)
        if (!visit(d)) return false;
      stack.pop_back();
      color[static_cast<size_t>(i)] = 2;
      graph_.order.push_back(i);
      return true;
    };
    for (size_t i = 0; i < graph_.targets.size(); ++i)
      if (!visit(static_cast<int>(i))) return;
  }

  const Benchfile& bf_;
  const RuleRegistry& rules_;
  Filesystem& fs_;
  std::string dir_;
  TargetGraph graph_;
  std::vector<std::string> errors_;
};

}  // namespace

const Target* TargetGraph::Find(std::string_view name) const {
  auto it = index.find(std::string(name));
  return it == index.end() ? nullptr : &targets[static_cast<size_t>(it->second)];
}

bool TargetGraph::AnyPlatformDependent() const {
  return std::any_of(targets.begin(), targets.end(),
                     [](const Target& t) { return t.rule && t.rule->platform_dependent(); });
}

Result<TargetGraph> BuildGraph(const Benchfile& benchfile, const RuleRegistry& rules,
                               Filesystem& fs, const std::string& workspace_dir) {
  return Validator(benchfile, rules, fs, workspace_dir).Run();
}

Result<TargetGraph> LoadGraph(Filesystem& fs, const RuleRegistry& rules,
                              const std::string& benchfile) {
  Result<std::string> text = fs.ReadFile(benchfile);
  if (!text.ok()) {
    return Errorf(ErrorCode::kInvalidArgument, "cannot read {}: {}", benchfile,
                  text.status().message());
  }
  BM_ASSIGN_OR_RETURN(Benchfile bf, ParseBenchfile(*text, benchfile));
  return BuildGraph(bf, rules, fs, DirName(benchfile));
}

}  // namespace bm::engine
