// Pillow as the reference of the image tests: runs tests/support/pil_images.py (which writes
// test images and Pillow's answers on them) into a fresh temporary directory. Needs a
// python3 importing PIL and NumPy (Debian's python3-pil, python3-numpy): PATH's python3
// first, then /usr/bin/python3 (a pyenv python3 on PATH may lack them). Header-only, so
// that BENCHMAKE_TEST_SOURCE_DIR is the including test's.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace bm::testing {

struct PilReference {
  bool ok = false;
  std::string skip_reason;  // when !ok: why (shown by GTEST_SKIP)
  std::string python;       // the interpreter that ran it
  std::string dir;          // images, raw answers and manifest.json
  nlohmann::json manifest;

  std::string Path(const std::string& file) const { return dir + "/" + file; }

  std::vector<uint8_t> Bytes(const std::string& file) const {
    std::ifstream in(Path(file), std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }

  void Remove() const {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

inline PilReference MakePilReference() {
  PilReference ref;
  const char* src = std::getenv("BENCHMAKE_SOURCE_DIR");
  const std::string script =
      std::string(src ? src : BENCHMAKE_TEST_SOURCE_DIR) + "/tests/support/pil_images.py";
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    const std::string check = std::string(candidate) + " " + script + " --check >/dev/null 2>&1";
    const int rc = std::system(check.c_str());
    if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0) {
      ref.python = candidate;
      break;
    }
  }
  if (ref.python.empty()) {
    ref.skip_reason =
        "no python3 with Pillow and NumPy (apt-get install python3-pil python3-numpy): the "
        "Pillow comparisons cannot run";
    return ref;
  }
  char tmpl[] = "/tmp/bm_pil_XXXXXX";
  if (!mkdtemp(tmpl)) {
    ref.skip_reason = "mkdtemp failed";
    return ref;
  }
  ref.dir = tmpl;
  const std::string run = ref.python + " " + script + " " + ref.dir;
  const int rc = std::system(run.c_str());
  if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
    ref.skip_reason = "pil_images.py failed: " + run;  // the tests fail on !ok && dir set
    return ref;
  }
  std::ifstream in(ref.Path("manifest.json"));
  ref.manifest = nlohmann::json::parse(in, nullptr, false);
  ref.ok = ref.manifest.is_object() && ref.manifest.contains("images");
  if (!ref.ok) ref.skip_reason = "pil_images.py wrote no readable manifest.json";
  return ref;
}

}  // namespace bm::testing
