// Paths and loaders shared by the tokenizer tests.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace bm::text::testing {

inline std::string SourcePath(const std::string& relative) {
  const char* root = std::getenv("BENCHMAKE_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") + "/" + relative;
}

// A path under the build tree (BENCHMAKE_BINARY_DIR), where test fixtures
// put what they make (the LLaMA-2 model).
inline std::string BinaryPath(const std::string& relative) {
  const char* root = std::getenv("BENCHMAKE_BINARY_DIR");
  return std::string(root != nullptr ? root : ".") + "/" + relative;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

inline std::string Gpt2RankFile() { return SourcePath("data/gpt2.tiktoken"); }

}  // namespace bm::text::testing
