// Paths and loaders shared by the tokenizer tests, by tests/support/test_data.h's rules.
#pragma once

#include <string>

#include "tests/support/test_data.h"

namespace bm::text::testing {

using bm::testing::SourcePath;

// A path under the build tree, where test fixtures put what they make (the LLaMA-2 model).
inline std::string BinaryPath(const std::string& relative) {
  return (bm::testing::BinaryDir() / relative).string();
}

inline std::string ReadFile(const std::string& path) { return bm::testing::ReadText(path); }

inline std::string Gpt2RankFile() { return SourcePath("data/gpt2.tiktoken"); }

}  // namespace bm::text::testing
