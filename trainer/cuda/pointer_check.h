// Where a caller's pointer lives, checked on the host before a kernel reads it: a buffer the
// API says is on the device (cuda_model.h's SplicedRows::rows / grad) must be device memory of
// this GPU spanning the bytes the kernel will touch, and one it says is on the host
// (SplicedRows::positions) must be readable there. A wrong kind or a short buffer otherwise
// shows up as cudaErrorIllegalAddress reported by some later kernel (sticky: every later call
// in the process fails too), or as a host crash; these checks name the buffer instead.
// cudaPointerGetAttributes gives the kind; the driver's cuMemGetAddressRange (looked up through
// the runtime, so libcuda is not linked) gives the allocation's extent.
#pragma once

#include <cstddef>
#include <string_view>

#include "base/result.h"

namespace bm::train::cuda {

// [p, p + bytes) lies in one device (or managed) allocation reachable from `device`.
Status CheckDeviceRange(const void* p, size_t bytes, int device, std::string_view what);
// p is host memory (pageable, pinned or managed), not device-only memory.
Status CheckHostPointer(const void* p, std::string_view what);

}  // namespace bm::train::cuda
