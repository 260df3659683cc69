#include "engine/benchfile.h"

#include <toml++/toml.h>

#include <limits>
#include <sstream>

#include "base/nearest_name.h"

namespace bm::engine {
namespace {

SourceLocation Loc(const std::string& file, const toml::source_region& region) {
  return SourceLocation{file, static_cast<int>(region.begin.line),
                        static_cast<int>(region.begin.column)};
}

// `node` as JSON. A TOML date or time, which no parameter or setting takes (an unquoted date
// is more likely a string missing its quotes), is an error at its place; `what` ("parameter
// 'log'", "[benchmake] executor") names the value it is in.
Result<nlohmann::json> ToJson(const std::string& file, const toml::node& node,
                              std::string_view what) {
  if (auto* s = node.as_string()) return nlohmann::json(s->get());
  if (auto* i = node.as_integer()) return nlohmann::json(static_cast<int64_t>(i->get()));
  if (auto* f = node.as_floating_point()) return nlohmann::json(f->get());
  if (auto* b = node.as_boolean()) return nlohmann::json(b->get());
  if (auto* a = node.as_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const toml::node& e : *a) {
      BM_ASSIGN_OR_RETURN(nlohmann::json v, ToJson(file, e, what));
      out.push_back(std::move(v));
    }
    return out;
  }
  if (auto* t = node.as_table()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : *t) {
      BM_ASSIGN_OR_RETURN(out[std::string(k.str())], ToJson(file, v, what));
    }
    return out;
  }
  std::ostringstream text;
  if (auto* date = node.as_date())
    text << date->get();
  else if (auto* time = node.as_time())
    text << time->get();
  else if (auto* date_time = node.as_date_time())
    text << date_time->get();
  return LocatedError(Loc(file, node.source()),
                      fmt::format("{} holds a TOML date or time ({}); benchmake takes none: "
                                  "quote it for a string (\"{}\")",
                                  what, text.str(), text.str()));
}

Status ParseSettings(const std::string& file, const toml::table& t, Settings* settings) {
  for (const auto& [key, node] : t) {
    std::string k(key.str());
    SourceLocation loc = Loc(file, node.source());
    if (k == "cache_dir") {
      if (!node.is_string()) return LocatedError(loc, "[benchmake] cache_dir must be a string");
      settings->cache_dir = node.as_string()->get();
    } else if (k == "jobs" || k == "gpus") {
      if (!node.is_integer())
        return LocatedError(loc, fmt::format("[benchmake] {} must be an integer", k));
      int64_t n = node.as_integer()->get();
      if (n < 0 || n > std::numeric_limits<int>::max())
        return LocatedError(loc, fmt::format("[benchmake] {} must be between 0 and {}, not {}", k,
                                             std::numeric_limits<int>::max(), n));
      (k == "jobs" ? settings->jobs : settings->gpus) = static_cast<int>(n);
    } else if (IsPlacementSetting(k)) {
      BM_ASSIGN_OR_RETURN(nlohmann::json value, ToJson(file, node, "[benchmake] " + k));
      Status s = ApplyPlacementSetting(settings->placement, k, value);
      if (!s.ok()) return LocatedError(loc, "[benchmake] " + s.message());
    } else if (k == "slurm" || k == "mpirun") {
      if (!node.is_table())
        return LocatedError(loc, fmt::format("[benchmake.{}] must be a table", k));
      for (const auto& [skey, snode] : *node.as_table()) {
        BM_ASSIGN_OR_RETURN(
            nlohmann::json value,
            ToJson(file, snode, fmt::format("[benchmake.{}] {}", k, std::string(skey.str()))));
        Status s = k == "slurm" ? ApplySlurmSetting(settings->placement.slurm, skey.str(), value,
                                                    /*workspace=*/true)
                                : ApplyMpirunSetting(settings->placement.mpirun, skey.str(), value);
        if (!s.ok())
          return LocatedError(Loc(file, skey.source()), "[benchmake." + k + "] " + s.message());
      }
    } else if (k == "cache") {
      if (!node.is_table()) return LocatedError(loc, "[benchmake.cache] must be a table");
      for (const auto& [ckey, cnode] : *node.as_table()) {
        BM_ASSIGN_OR_RETURN(
            nlohmann::json value,
            ToJson(file, cnode, fmt::format("[benchmake.cache] {}", std::string(ckey.str()))));
        Status s = cache::ApplyRemoteSetting(settings->remote, ckey.str(), value);
        if (!s.ok()) {
          return LocatedError(Loc(file, ckey.source()), "[benchmake.cache] " + s.message());
        }
      }
    } else {
      return LocatedError(
          Loc(file, key.source()),
          fmt::format("unknown setting '{}' in [benchmake]{} (known: cache_dir, jobs, gpus, "
                      "executor, launcher, and the tables [benchmake.cache], [benchmake.slurm], "
                      "[benchmake.mpirun])",
                      k,
                      DidYouMean(k, {"cache_dir", "jobs", "gpus", "executor", "launcher", "cache",
                                     "slurm", "mpirun"})));
    }
  }
  return Status::Ok();
}

Result<RawTarget> ParseTarget(const std::string& file, const toml::key& name,
                              const toml::node& node) {
  RawTarget target;
  target.name = std::string(name.str());
  target.loc = Loc(file, name.source());
  if (target.name == "." || target.name == "..") {
    return LocatedError(target.loc,
                        fmt::format("bad target name '{}': its outputs would go to out/{}, "
                                    "which is not a directory of its own",
                                    target.name, target.name));
  }
  if (!IsValidTargetName(target.name)) {
    return LocatedError(
        target.loc, fmt::format("bad target name '{}': names use only a-z 0-9 _ . -", target.name));
  }
  const toml::table* t = node.as_table();
  if (!t)
    return LocatedError(Loc(file, node.source()),
                        fmt::format("target '{}' must be a table", target.name));
  for (const auto& [key, value] : *t) {
    std::string k(key.str());
    if (k == "rule") {
      if (!value.is_string())
        return LocatedError(Loc(file, value.source()), "rule must be a string");
      target.rule = value.as_string()->get();
      target.rule_loc = Loc(file, value.source());
      continue;
    }
    RawParam p;
    p.name = k;
    BM_ASSIGN_OR_RETURN(p.value, ToJson(file, value, fmt::format("parameter '{}'", k)));
    p.key_loc = Loc(file, key.source());
    p.value_loc = Loc(file, value.source());
    if (auto* a = value.as_array()) {
      for (const toml::node& e : *a) p.element_locs.push_back(Loc(file, e.source()));
    }
    target.params.push_back(std::move(p));
  }
  if (target.rule.empty()) {
    return LocatedError(target.loc,
                        fmt::format("target '{}' has no rule (rule = \"exec\", ...)", target.name));
  }
  return target;
}

}  // namespace

std::string SourceLocation::ToString() const { return fmt::format("{}:{}:{}", file, line, column); }

Status LocatedError(const SourceLocation& loc, std::string_view message) {
  return Errorf(ErrorCode::kInvalidArgument, "{}: {}", loc.ToString(), message);
}

bool IsValidTargetName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return name != "." && name != "..";
}

Result<Benchfile> ParseBenchfile(std::string_view text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    SourceLocation loc{path, static_cast<int>(e.source().begin.line),
                       static_cast<int>(e.source().begin.column)};
    std::string what(e.description());
    size_t redefine = what.find("cannot redefine existing table '");
    if (redefine != std::string::npos) {
      std::string name = what.substr(redefine + 32);
      name = name.substr(0, name.find('\''));
      if (name.rfind("target.", 0) == 0) name = name.substr(7);
      return LocatedError(
          loc, fmt::format("duplicate target '{}' (each [target.NAME] appears once)", name));
    }
    return LocatedError(loc, "TOML syntax error: " + what);
  }
  Benchfile bf;
  bf.path = path;
  for (const auto& [key, node] : root) {
    std::string k(key.str());
    if (k == "benchmake") {
      if (!node.is_table())
        return LocatedError(Loc(path, node.source()), "[benchmake] must be a table");
      BM_TRY(ParseSettings(path, *node.as_table(), &bf.settings));
    } else if (k == "target") {
      if (!node.is_table())
        return LocatedError(Loc(path, node.source()), "'target' must be tables [target.NAME]");
      for (const auto& [name, tnode] : *node.as_table()) {
        BM_ASSIGN_OR_RETURN(RawTarget t, ParseTarget(path, name, tnode));
        bf.targets.push_back(std::move(t));
      }
    } else {
      return LocatedError(Loc(path, key.source()),
                          fmt::format("unknown top-level {} '{}'{} (a BENCHFILE holds the tables "
                                      "[benchmake] and [target.NAME] only)",
                                      node.is_table() ? "table" : "key", k,
                                      DidYouMean(k, {"benchmake", "target"})));
    }
  }
  // toml++ iterates tables in key order; keep the file order for messages.
  std::sort(bf.targets.begin(), bf.targets.end(), [](const RawTarget& a, const RawTarget& b) {
    return a.loc.line != b.loc.line ? a.loc.line < b.loc.line : a.loc.column < b.loc.column;
  });
  for (RawTarget& t : bf.targets) {
    std::sort(t.params.begin(), t.params.end(), [](const RawParam& a, const RawParam& b) {
      return a.key_loc.line != b.key_loc.line ? a.key_loc.line < b.key_loc.line
                                              : a.key_loc.column < b.key_loc.column;
    });
  }
  return bf;
}

}  // namespace bm::engine
