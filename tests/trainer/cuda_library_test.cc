// cuBLASLt is opened on its first call, not when the process starts (cublaslt_lazy.cc).
// Runs without a GPU: neither opening the library nor asking its version needs one.
#include <cublasLt.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "trainer/cuda/check.h"
#include "trainer/cuda/cublaslt_lazy.h"

namespace bm::train::cuda {
namespace {

bool Mapped(const std::string& library) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream all;
  all << maps.rdbuf();
  return all.str().find(library) != std::string::npos;
}

// One test, so that nothing before it in this process has called into cuBLASLt.
TEST(CublasLtLazy, OpenedOnTheFirstCallNotAtStart) {
  ASSERT_FALSE(Mapped("libcublasLt.so")) << "cuBLASLt was loaded with the process";
  const size_t version = cublasLtGetVersion();
  EXPECT_EQ(version / 10000, static_cast<size_t>(CUBLAS_VER_MAJOR));
  EXPECT_TRUE(Mapped("libcublasLt.so"));
  // The library's own words for a status, through the checked-call path.
  Status s = CublasError(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul(...)", "m=1");
  EXPECT_NE(s.message().find("unsupported value"), std::string::npos) << s.message();
}

TEST(CublasLtLazy, ALibraryThatCannotBeOpenedSaysWhyForEachName) {
  LazyLibrary lib = OpenFirst({"libbenchmake-absent.so.1", "/nonexistent/libcublasLt.so"});
  EXPECT_EQ(lib.handle, nullptr);
  EXPECT_NE(lib.error.find("libbenchmake-absent.so.1"), std::string::npos) << lib.error;
  EXPECT_NE(lib.error.find("/nonexistent/libcublasLt.so"), std::string::npos) << lib.error;
}

TEST(CublasLtLazy, TheFirstNameThatOpensIsKept) {
  LazyLibrary lib = OpenFirst({"libbenchmake-absent.so.1", "libc.so.6"});
  EXPECT_NE(lib.handle, nullptr) << lib.error;
}

}  // namespace
}  // namespace bm::train::cuda
