// FakeCommandRunner: a CommandRunner that runs nothing. Each Run() is recorded
// and answered by a handler; the default handler is a tiny command language
// over a MemoryFilesystem, enough for exec-rule scenarios:
//   write PATH TEXT       writes TEXT to PATH (relative paths: Command::cwd)
//   copy FROM TO          copies a file
//   fail [CODE]           exits with CODE (default 1)
// Anything else fails the Run() with kNotFound ("no such program").
// RunGroup() answers its members one after another in order, through the same
// handler; the first failure stops the group: the members after it are
// recorded but not answered, and come back stopped (SIGTERM). Members before
// it have already ended as their handler said.
//
// Thread safety: a mutex guards the record.
#pragma once

#include <functional>
#include <mutex>
#include <vector>

#include "base/command_runner.h"
#include "tests/support/memory_filesystem.h"

namespace bm::testing {

class FakeCommandRunner : public CommandRunner {
 public:
  using Handler = std::function<Result<CommandResult>(const Command&)>;

  explicit FakeCommandRunner(MemoryFilesystem* fs) : fs_(fs) {}
  void SetHandler(Handler handler) { handler_ = std::move(handler); }

  Result<CommandResult> Run(const Command& command) override;
  Result<GroupResult> RunGroup(const std::vector<Command>& commands,
                               const GroupOptions& options) override;

  std::vector<Command> commands();  // every command run so far
  int run_count();
  void ClearRecord();

 private:
  Result<CommandResult> Interpret(const Command& command);

  MemoryFilesystem* fs_;
  Handler handler_;
  std::mutex mu_;
  std::vector<Command> record_;
};

}  // namespace bm::testing
