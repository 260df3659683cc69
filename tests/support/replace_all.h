// ReplaceAll: the servers' configuration templates (nginx_server.cc, slurm_cluster.cc) filled in.
#pragma once

#include <string>

namespace bm::testing {

// Every `from` in `s` replaced by `to`, left to right (a replacement is not searched again).
inline void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
}

}  // namespace bm::testing
