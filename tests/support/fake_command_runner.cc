#include "tests/support/fake_command_runner.h"

#include <csignal>

namespace bm::testing {

Result<CommandResult> FakeCommandRunner::Run(const Command& command) {
  {
    std::lock_guard lock(mu_);
    record_.push_back(command);
  }
  if (handler_) return handler_(command);
  return Interpret(command);
}

Result<GroupResult> FakeCommandRunner::RunGroup(const std::vector<Command>& commands,
                                                const GroupOptions& /*options*/) {
  GroupResult group;
  for (const Command& c : commands) {
    if (group.first_failure >= 0) {
      std::lock_guard lock(mu_);
      record_.push_back(c);
      CommandResult stopped;
      stopped.term_signal = SIGTERM;
      stopped.stopped = true;
      group.results.push_back(stopped);
      continue;
    }
    BM_ASSIGN_OR_RETURN(CommandResult r, Run(c));
    if (!r.success()) group.first_failure = static_cast<int>(group.results.size());
    group.results.push_back(r);
  }
  return group;
}

Result<CommandResult> FakeCommandRunner::Interpret(const Command& c) {
  auto path = [&](const std::string& p) { return p.empty() || p[0] == '/' ? p : c.cwd + "/" + p; };
  const std::vector<std::string>& a = c.argv;
  CommandResult r;
  if (!a.empty() && a[0] == "write" && a.size() == 3) {
    fs_->Write(path(a[1]), a[2]);
    return r;
  }
  if (!a.empty() && a[0] == "copy" && a.size() == 3) {
    if (!fs_->Exists(path(a[1]))) {
      r.exit_code = 1;
      return r;
    }
    fs_->Write(path(a[2]), fs_->Read(path(a[1])));
    return r;
  }
  if (!a.empty() && a[0] == "fail") {
    r.exit_code = a.size() > 1 ? std::stoi(a[1]) : 1;
    return r;
  }
  return Errorf(ErrorCode::kNotFound, "cannot run '{}': no such program (fake runner)",
                a.empty() ? "" : a[0]);
}

std::vector<Command> FakeCommandRunner::commands() {
  std::lock_guard lock(mu_);
  return record_;
}

int FakeCommandRunner::run_count() {
  std::lock_guard lock(mu_);
  return static_cast<int>(record_.size());
}

void FakeCommandRunner::ClearRecord() {
  std::lock_guard lock(mu_);
  record_.clear();
}

}  // namespace bm::testing
