#include "cli/flags.h"

#include "base/real_filesystem.h"
#include "base/subprocess_runner.h"
#include "rules/registry.h"

namespace bm::cli {

Result<engine::Workspace> OpenWorkspaceFromFlags(const ParsedArgs& args) {
  static SubprocessRunner runner;
  static engine::RuleRegistry* rules = [] {
    auto* r = new engine::RuleRegistry;
    rules::RegisterBuiltinRules(*r);
    return r;
  }();
  return engine::OpenWorkspace(DiskFilesystem(), runner, *rules, args.dir(), args.file());
}

}  // namespace bm::cli
