// Processes as /proc shows them, for the tests that check what a command,
// a step or a build leaves running: a process's parent, whether it still
// runs, its nearest ancestor of a name, its descendants. Header-only.
#pragma once

#include <sys/types.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include "tests/support/test_data.h"

namespace bm::testing {

// "PID (COMM) STATE PPID ..." of a process, or "" when it is gone.
inline std::string StatOf(pid_t pid) { return ReadText("/proc/" + std::to_string(pid) + "/stat"); }

// The parent of `pid`, or 0 when it is gone.
inline pid_t ParentOf(pid_t pid) {
  const std::string stat = StatOf(pid);
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 4 >= stat.size()
             ? 0
             : std::atoi(stat.c_str() + paren + 4);
}

// Running, not a zombie waiting for whoever inherited it to reap it.
inline bool Running(pid_t pid) {
  const std::string stat = StatOf(pid);
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// The closest ancestor of `pid` whose name is `comm`, or 0.
inline pid_t AncestorNamed(pid_t pid, const std::string& comm) {
  for (int depth = 0; pid > 1 && depth < 16; ++depth) {
    pid = ParentOf(pid);
    if (pid > 0 && ReadText("/proc/" + std::to_string(pid) + "/comm") == comm + "\n") return pid;
  }
  return 0;
}

// Every process below `root` now (children first, then theirs), not `root`.
inline std::vector<pid_t> Descendants(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::atoi(name.c_str());
    children[ParentOf(pid)].push_back(pid);
  }
  std::vector<pid_t> found = {root};
  for (size_t i = 0; i < found.size(); ++i)
    for (pid_t c : children[found[i]]) found.push_back(c);
  found.erase(found.begin());
  return found;
}

}  // namespace bm::testing
