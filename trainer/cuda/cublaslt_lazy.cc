// cuBLASLt, loaded on its first call instead of when the process starts.
//
// Loading libcublasLt.so costs about 0.4 s of every process that links it (its relocations and
// initializers touch some 100 MB), GPU or not: every CPU run of benchmake-train and every test
// process of a CUDA build paid it. The trainer calls only the functions below, so it links none
// of cuBLASLt; these definitions of the header's own declarations (the compiler checks each
// against cublasLt.h) open the library on the first call, by its soname so that
// LD_LIBRARY_PATH and the binary's runpath decide as they would for a linked library, then by
// the path CMake found.
//
// When the library cannot be opened, every call returns CUBLAS_STATUS_NOT_INITIALIZED and
// cublasLtGetStatusString says why (dlerror's words), so BM_CUBLAS_CHECK names the cause.
#include "trainer/cuda/cublaslt_lazy.h"

#include <cublasLt.h>
#include <dlfcn.h>

#define BM_STR2(x) #x
#define BM_STR(x) BM_STR2(x)

namespace bm::train::cuda {

LazyLibrary OpenFirst(std::initializer_list<const char*> names) {
  LazyLibrary lib;
  for (const char* name : names) {
    lib.handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib.handle) return lib;
    const char* why = dlerror();
    if (!lib.error.empty()) lib.error += "; ";
    lib.error += why ? why : name;
  }
  return lib;
}

}  // namespace bm::train::cuda

namespace {

using bm::train::cuda::LazyLibrary;

const LazyLibrary& CublasLt() {
  static const LazyLibrary lib = [] {
    LazyLibrary l = bm::train::cuda::OpenFirst({
        "libcublasLt.so." BM_STR(CUBLAS_VER_MAJOR),
#ifdef BENCHMAKE_CUBLASLT_PATH
        BENCHMAKE_CUBLASLT_PATH,
#endif
    });
    if (!l.handle) l.error = "cuBLASLt could not be loaded: " + l.error;
    return l;
  }();
  return lib;
}

// The library's definition of `name`, typed as the header declares it; null if unavailable.
template <typename Fn>
Fn* Symbol(const char* name) {
  const LazyLibrary& lib = CublasLt();
  return lib.handle ? reinterpret_cast<Fn*>(dlsym(lib.handle, name)) : nullptr;
}

}  // namespace

// Looks the function up once, then forwards the call.
#define BM_FORWARD(name, ...)                              \
  static auto* const fn = Symbol<decltype(name)>(#name);   \
  if (fn == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED; \
  return fn(__VA_ARGS__)

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) { BM_FORWARD(cublasLtCreate, handle); }

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) { BM_FORWARD(cublasLtDestroy, handle); }

const char* cublasLtGetStatusString(cublasStatus_t status) {
  static auto* const fn = Symbol<decltype(cublasLtGetStatusString)>("cublasLtGetStatusString");
  return fn != nullptr ? fn(status) : CublasLt().error.c_str();
}

// 0 when the library cannot be loaded.
size_t cublasLtGetVersion(void) {
  static auto* const fn = Symbol<decltype(cublasLtGetVersion)>("cublasLtGetVersion");
  return fn != nullptr ? fn() : 0;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B,
                              cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                              cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  BM_FORWARD(cublasLtMatmul, handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc,
             algo, workspace, workspace_bytes, stream);
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t Adesc,
                                              cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc,
                                              cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference, int requested,
                                              cublasLtMatmulHeuristicResult_t* out, int* returned) {
  BM_FORWARD(cublasLtMatmulAlgoGetHeuristic, handle, desc, Adesc, Bdesc, Cdesc, Ddesc, preference,
             requested, out, returned);
}

cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                       cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                       cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                       const cublasLtMatmulAlgo_t* algo,
                                       cublasLtMatmulHeuristicResult_t* result) {
  BM_FORWARD(cublasLtMatmulAlgoCheck, handle, desc, Adesc, Bdesc, Cdesc, Ddesc, algo, result);
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc,
                                        cublasComputeType_t compute_type,
                                        cudaDataType_t scale_type) {
  BM_FORWARD(cublasLtMatmulDescCreate, desc, compute_type, scale_type);
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  BM_FORWARD(cublasLtMatmulDescDestroy, desc);
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t size) {
  BM_FORWARD(cublasLtMatmulDescSetAttribute, desc, attr, buf, size);
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  BM_FORWARD(cublasLtMatmulPreferenceCreate, pref);
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  BM_FORWARD(cublasLtMatmulPreferenceDestroy, pref);
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t size) {
  BM_FORWARD(cublasLtMatmulPreferenceSetAttribute, pref, attr, buf, size);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  BM_FORWARD(cublasLtMatrixLayoutCreate, layout, type, rows, cols, ld);
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  BM_FORWARD(cublasLtMatrixLayoutDestroy, layout);
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t size) {
  BM_FORWARD(cublasLtMatrixLayoutSetAttribute, layout, attr, buf, size);
}

}  // extern "C"
