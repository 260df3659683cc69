// Files of the source tree for tests (SourcePath), those under tests/data/ (TestDataPath):
// $BENCHMAKE_SOURCE_DIR (set by ctest), else the source directory bm_test compiles in
// (BENCHMAKE_TEST_SOURCE_DIR).
// Header-only, so that the macro is the including test's.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace bm::testing {

inline std::string SourcePath(const std::string& relative) {
  const char* src = std::getenv("BENCHMAKE_SOURCE_DIR");
  return std::string(src ? src : BENCHMAKE_TEST_SOURCE_DIR) + "/" + relative;
}

inline std::string TestDataPath(const std::string& relative) {
  return SourcePath("tests/data/" + relative);
}

// The whole file, or "" when it cannot be read (the test's checks then fail).
inline std::string ReadTestData(const std::string& relative) {
  std::ifstream in(TestDataPath(relative), std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace bm::testing
