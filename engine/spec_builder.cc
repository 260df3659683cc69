#include "engine/spec_builder.h"

#include <algorithm>

namespace bm::engine {

namespace {

std::string FileValue(const Digest& d, const FileInfo& info) {
  std::string v = d.Hex();
  if (info.executable) v += kExecutableMark;
  return v;
}

}  // namespace

Result<std::string> SourceHasher::KeyValue(const std::string& path) {
  BM_ASSIGN_OR_RETURN(FileInfo info, fs_.Stat(path));
  if (!info.exists) return Errorf(ErrorCode::kNotFound, "source {} disappeared", path);
  if (!info.is_dir) {
    seen_.push_back({path, info});
    BM_ASSIGN_OR_RETURN(Digest d, stat_cache_.Hash(path, info));
    return FileValue(d, info);
  }
  std::vector<std::string> subdirs;
  BM_ASSIGN_OR_RETURN(std::vector<std::string> files, ListFilesRecursive(fs_, path, &subdirs));
  Hasher tree;
  tree.Field("tree", "1");
  for (const std::string& rel : files) {
    std::string abs = path + "/" + rel;
    BM_ASSIGN_OR_RETURN(FileInfo fi, fs_.Stat(abs));
    seen_.push_back({abs, fi});
    BM_ASSIGN_OR_RETURN(Digest d, stat_cache_.Hash(abs, fi));
    tree.Field(rel, FileValue(d, fi));
  }
  // Adding or removing a file changes the listing of the directory that holds
  // it, and only that one's mtime: keep the stat of every directory of the tree.
  seen_.push_back({path, info});
  for (const std::string& rel : subdirs) {
    BM_ASSIGN_OR_RETURN(FileInfo di, fs_.Stat(path + "/" + rel));
    seen_.push_back({path + "/" + rel, di});
  }
  return tree.Finish().Hex();
}

Result<KeyMaterial> BuildSpec(const TargetGraph& graph, const Target& target, SourceHasher& sources,
                              const nlohmann::json& platform) {
  KeyMaterial m;
  m.fields.push_back({"tool", "benchmake", std::string(kKeySalt)});
  m.fields.push_back(
      {"rule", std::string(target.rule->name()), std::to_string(target.rule->version())});
  for (auto& [name, version] : target.rule->ImplementationVersions(target.params))
    m.fields.push_back({"impl", std::move(name), std::move(version)});
  std::vector<const ParamSpec*> specs;
  for (const ParamSpec& s : target.rule->params()) specs.push_back(&s);
  std::sort(specs.begin(), specs.end(), [](auto* a, auto* b) { return a->name < b->name; });
  for (const ParamSpec* s : specs) {
    if (!s->in_key || !target.params.contains(s->name)) continue;
    if (!s->in_key_at_default && s->default_value && target.params[s->name] == *s->default_value)
      continue;
    m.fields.push_back({"param", s->name, target.params[s->name].dump()});
  }
  std::vector<std::pair<std::string, std::string>> srcs;
  std::vector<std::string> ups;
  for (const InputRef& in : target.inputs) {
    if (in.is_target) {
      ups.push_back(graph.targets[static_cast<size_t>(in.target)].name);
    } else {
      // A source that cannot be hashed (unreadable, a directory holding a link loop) is
      // named where the BENCHFILE names it.
      Result<std::string> value = sources.KeyValue(in.path);
      if (!value.ok())
        return Errorf(value.status().code(), "{}: source '{}': {}", in.loc.ToString(), in.name,
                      value.status().message());
      srcs.emplace_back(in.name, std::move(*value));
    }
  }
  std::sort(srcs.begin(), srcs.end());
  srcs.erase(std::unique(srcs.begin(), srcs.end()), srcs.end());
  for (auto& [name, hex] : srcs) m.fields.push_back({"source", name, hex});
  std::sort(ups.begin(), ups.end());
  ups.erase(std::unique(ups.begin(), ups.end()), ups.end());
  for (const std::string& u : ups) m.fields.push_back({"input", u, ""});
  if (target.rule->platform_dependent()) m.fields.push_back({"platform", "facts", platform.dump()});
  return m;
}

StepParams BuildStepParams(const TargetGraph& graph, const Target& target,
                           const std::string& out_root, const Placement& workspace) {
  StepParams p;
  p.rule = std::string(target.rule->name());
  p.params = target.params;
  for (const InputRef& in : target.inputs) {
    if (in.is_target) {
      const std::string& up = graph.targets[static_cast<size_t>(in.target)].name;
      p.inputs[in.name] = out_root + "/" + up;
    } else {
      p.inputs[in.name] = in.path;
    }
  }
  for (int d : target.deps)
    p.upstream_targets.push_back(graph.targets[static_cast<size_t>(d)].name);
  p.platform_dependent = target.rule->platform_dependent();
  p.gpus = target.rule->gpus(target.params);
  p.placement = PlaceTarget(workspace, target.rule->placeable(), p.gpus,
                            target.rule->ranks(target.params), target.params);
  return p;
}

}  // namespace bm::engine
