#include "base/signal_name.h"

#include <fmt/format.h>

#include <cstring>

namespace bm {

std::string SignalName(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? fmt::format("signal {} (SIG{})", sig, abbrev) : fmt::format("signal {}", sig);
}

}  // namespace bm
