// SignalName: how benchmake names the signal that ended a process in its
// messages, "signal 11 (SIGSEGV)": the number a shell's $? shows (139 = 128 + 11)
// and the name kill -l prints.
#pragma once

#include <string>

namespace bm {

// "signal N (SIGNAME)", or "signal N" for a number without a name.
std::string SignalName(int sig);

}  // namespace bm
