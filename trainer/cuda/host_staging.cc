#include "trainer/cuda/host_staging.h"

#include <algorithm>

#include "trainer/cuda/check.h"

namespace bm::train::cuda {

HostStaging::~HostStaging() {
  if (stream_) cudaStreamSynchronize(stream_);
  for (int k = 0; k < 2; ++k) {
    if (host_[k]) cudaFreeHost(host_[k]);
    if (copied_[k]) cudaEventDestroy(copied_[k]);
  }
}

Status HostStaging::Init(cudaStream_t stream, size_t largest) {
  stream_ = stream;
  chunk_ = std::clamp<size_t>(largest, 1, kChunk);
  for (int k = 0; k < 2; ++k) {
    BM_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_[k]), chunk_ * sizeof(float)),
                  "pinned staging chunk of {} floats", chunk_);
    BM_CUDA_CHECK(cudaEventCreateWithFlags(&copied_[k], cudaEventDisableTiming), "staging event");
    BM_CUDA_CHECK(cudaEventRecord(copied_[k], stream_), "staging event");
  }
  return Status::Ok();
}

Status HostStaging::Upload(const RangeSource& fill, size_t first, size_t n, float* dst) {
  for (size_t done = 0, c = 0; done < n; done += chunk_, ++c) {
    const int k = static_cast<int>(c % 2);
    const size_t len = std::min(chunk_, n - done);
    // The chunk's previous copy has left it; then the host fills it while the other copies.
    BM_CUDA_CHECK(cudaEventSynchronize(copied_[k]), "staging chunk {}", c);
    fill(first + done, std::span<float>(host_[k], len));
    BM_CUDA_CHECK(
        cudaMemcpyAsync(dst + done, host_[k], len * sizeof(float), cudaMemcpyHostToDevice, stream_),
        "uploading {} floats at {}", len, first + done);
    BM_CUDA_CHECK(cudaEventRecord(copied_[k], stream_), "staging chunk {}", c);
  }
  BM_CUDA_CHECK(cudaStreamSynchronize(stream_), "uploading {} floats", n);
  return Status::Ok();
}

Status HostStaging::Download(const float* src, size_t n, size_t first, const RangeSink& take) {
  // Chunk c is copied while the host takes chunk c - 1.
  const size_t chunks = (n + chunk_ - 1) / chunk_;
  auto length = [&](size_t c) { return std::min(chunk_, n - c * chunk_); };
  for (size_t c = 0; c <= chunks; ++c) {
    if (c < chunks) {
      const int k = static_cast<int>(c % 2);
      BM_CUDA_CHECK(cudaMemcpyAsync(host_[k], src + c * chunk_, length(c) * sizeof(float),
                                    cudaMemcpyDeviceToHost, stream_),
                    "downloading {} floats at {}", length(c), first + c * chunk_);
      BM_CUDA_CHECK(cudaEventRecord(copied_[k], stream_), "staging chunk {}", c);
    }
    if (c > 0) {
      const int k = static_cast<int>((c - 1) % 2);
      BM_CUDA_CHECK(cudaEventSynchronize(copied_[k]), "staging chunk {}", c - 1);
      take(first + (c - 1) * chunk_, std::span<const float>(host_[k], length(c - 1)));
    }
  }
  return Status::Ok();
}

}  // namespace bm::train::cuda
