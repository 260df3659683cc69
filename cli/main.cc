// benchmake's main: the one fatal path. Every error below returns a Status;
// here it becomes a message and an exit code.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/terminal.h"
#include "cache/builtin_remotes.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  bm::cache::RegisterBuiltinRemotes(bm::cache::RemoteRegistry::Global());
  std::vector<std::string> args(argv + 1, argv + argc);
  bm::ColorMode color = bm::ColorModeFromEnv();
  bm::Status status = bm::cli::Dispatch(args, &color);
  if (!status.ok()) {
    std::fflush(stdout);
    std::string label = bm::Styled("error:", bm::Style::kError, bm::UseColor(color, STDERR_FILENO));
    std::fprintf(stderr, "benchmake: %s %s\n", label.c_str(), status.message().c_str());
  }
  return status.ExitCode();
}
