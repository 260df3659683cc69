// cuBLASLt is opened on the first call of one of its functions (cublaslt_lazy.cc), not when the
// process starts. What opens it, exposed for its test.
#pragma once

#include <initializer_list>
#include <string>

namespace bm::train::cuda {

struct LazyLibrary {
  void* handle = nullptr;  // null when none of the names could be opened
  std::string error;       // dlerror()'s words for each name tried, "; " between them
};

// dlopen()s each name in turn (RTLD_NOW | RTLD_LOCAL) and returns the first that opens.
LazyLibrary OpenFirst(std::initializer_list<const char*> names);

}  // namespace bm::train::cuda
