// Files of the source tree for tests (SourcePath), those under tests/data/ (TestDataPath):
// $BENCHMAKE_SOURCE_DIR (set by ctest), else the source directory bm_test compiles in
// (BENCHMAKE_TEST_SOURCE_DIR). The built programs the end-to-end tests run (BinaryDir), and
// the text files they write and read (ReadText, WriteText), in a directory of the process's own
// (PrivateTempPath).
// Header-only, so that the macros are the including test's.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
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

// The build tree's top, where `benchmake` and `benchmake-train` are: $BENCHMAKE_BINARY_DIR (set
// by ctest), else the build directory bm_test compiles in (BENCHMAKE_TEST_BINARY_DIR).
inline std::filesystem::path BinaryDir() {
  const char* dir = std::getenv("BENCHMAKE_BINARY_DIR");
  return std::filesystem::path(dir ? dir : BENCHMAKE_TEST_BINARY_DIR);
}

// A whole text file, or "" when it cannot be read (the test's checks then fail).
inline std::string ReadText(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// `text` as the file `p`, its directories made first.
inline void WriteText(const std::filesystem::path& p, const std::string& text) {
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// A fresh path (nothing there) in a temporary directory of this process's own, removed when
// the process exits: two runs of the same tests at once (ctest beside a run by hand) must not
// read each other's files, least of all the pids that one kills.
inline std::string PrivateTempPath(const std::string& name) {
  static const std::filesystem::path dir = [] {
    std::string templ = std::filesystem::temp_directory_path() / "benchmake-test-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) std::abort();
    return std::filesystem::path(templ);
  }();
  static const struct RemoveAtExit {
    ~RemoveAtExit() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } remove_at_exit;
  const std::filesystem::path p = dir / name;
  std::error_code ec;
  std::filesystem::remove(p, ec);
  return p.string();
}

}  // namespace bm::testing
