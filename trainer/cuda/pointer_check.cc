// See pointer_check.h.
#include "trainer/cuda/pointer_check.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "trainer/cuda/check.h"

namespace bm::train::cuda {
namespace {

const char* KindName(cudaMemoryType t) {
  switch (t) {
    case cudaMemoryTypeUnregistered:
      return "pageable host memory";
    case cudaMemoryTypeHost:
      return "pinned host memory";
    case cudaMemoryTypeDevice:
      return "device memory";
    case cudaMemoryTypeManaged:
      return "managed memory";
  }
  return "memory of an unknown kind";
}

Result<cudaPointerAttributes> Attributes(const void* p, std::string_view what) {
  cudaPointerAttributes a{};
  const cudaError_t e = cudaPointerGetAttributes(&a, p);
  if (e != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it
    return Errorf(ErrorCode::kInvalidArgument, "{}: cudaPointerGetAttributes({}) failed: {}", what,
                  p, cudaGetErrorString(e));
  }
  return a;
}

using AddressRangeFn = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);

// The driver's cuMemGetAddressRange (null when this driver does not give it).
AddressRangeFn AddressRange() {
  static const AddressRangeFn fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      f = nullptr;
    }
    return reinterpret_cast<AddressRangeFn>(f);
  }();
  return fn;
}

}  // namespace

Status CheckDeviceRange(const void* p, size_t bytes, int device, std::string_view what) {
  if (!p) return Errorf(ErrorCode::kInvalidArgument, "{}: null", what);
  BM_ASSIGN_OR_RETURN(cudaPointerAttributes a, Attributes(p, what));
  if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
    return Errorf(ErrorCode::kInvalidArgument, "{}: {} is {}; it must be device memory", what, p,
                  KindName(a.type));
  if (a.type == cudaMemoryTypeDevice && a.device != device)
    return Errorf(ErrorCode::kInvalidArgument, "{}: {} is memory of GPU {}, the model is on GPU {}",
                  what, p, a.device, device);
  const AddressRangeFn range = AddressRange();
  if (!range || bytes == 0) return Status::Ok();
  CUdeviceptr base = 0;
  size_t size = 0;
  const CUdeviceptr at = reinterpret_cast<CUdeviceptr>(p);
  if (range(&base, &size, at) != CUDA_SUCCESS) return Status::Ok();  // not driver-allocated
  if (at + bytes > base + size)
    return Errorf(ErrorCode::kInvalidArgument,
                  "{}: {} bytes from {} run past its allocation ({} bytes left of {})", what, bytes,
                  p, base + size - at, size);
  return Status::Ok();
}

Status CheckHostPointer(const void* p, std::string_view what) {
  if (!p) return Errorf(ErrorCode::kInvalidArgument, "{}: null", what);
  BM_ASSIGN_OR_RETURN(cudaPointerAttributes a, Attributes(p, what));
  if (a.type == cudaMemoryTypeDevice)
    return Errorf(ErrorCode::kInvalidArgument,
                  "{}: {} is device memory (GPU {}); it must be host memory", what, p, a.device);
  return Status::Ok();
}

}  // namespace bm::train::cuda
