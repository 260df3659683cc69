// benchmake's main: the one fatal path. Every error below returns a Status;
// here it becomes a message and an exit code.
#include <cstdio>
#include <string>
#include <vector>

#include "cache/builtin_remotes.h"
#include "engine/cli/commands.h"

int main(int argc, char** argv) {
  bm::cache::RegisterBuiltinRemotes(bm::cache::RemoteRegistry::Global());
  std::vector<std::string> args(argv + 1, argv + argc);
  bm::Status status = bm::engine::cli::Dispatch(args);
  if (!status.ok()) {
    std::fflush(stdout);
    std::fprintf(stderr, "benchmake: error: %s\n", status.message().c_str());
  }
  return status.ExitCode();
}
