// The backend registry: one line per backend. The CUDA backend registers
// itself here under BENCHMAKE_HAVE_CUDA (trainer/cuda/cuda_backend.h).
#include "trainer/backend.h"
#include "trainer/cpu/cpu_backend.h"

#ifdef BENCHMAKE_HAVE_CUDA
#include "trainer/cuda/cuda_backend.h"
#endif

namespace bm::train {

Status Backend::LastTokenArgmax(const int32_t* inputs, const int64_t* lengths, int64_t B, int64_t T,
                                int32_t* argmax) {
  for (int64_t b = 0; b < B; ++b)
    if (lengths[b] < 1 || lengths[b] > T)
      return Errorf(ErrorCode::kInvalidArgument,
                    "LastTokenArgmax: row {} has length {}, outside [1, {}]", b, lengths[b], T);
  std::vector<int32_t> all(B * T);
  BM_TRY(NextTokenArgmax(inputs, B, T, all.data()));
  for (int64_t b = 0; b < B; ++b) argmax[b] = all[b * T + lengths[b] - 1];
  return Status::Ok();
}

Result<LossSum> Backend::ForwardBackwardStep(std::span<const MicroBatch> micro, float loss_scale) {
  LossSum total;
  for (size_t g = 0; g < micro.size(); ++g) {
    MicroBatch view = micro[g];
    view.last = g + 1 == micro.size();
    BM_ASSIGN_OR_RETURN(LossSum l, ForwardBackward(view, loss_scale));
    total.sum += l.sum;
    total.count += l.count;
  }
  return total;
}

Status Backend::GetWholeTo(int64_t total, const ParamSink& sink) const {
  std::vector<float> all(sink ? static_cast<size_t>(total) : 0);
  BM_TRY(GetParameters(all));
  if (sink) sink(0, all);
  return Status::Ok();
}

std::vector<std::string> BackendNames() {
  std::vector<std::string> names = {"cpu"};
#ifdef BENCHMAKE_HAVE_CUDA
  names.push_back("cuda");
#endif
  return names;
}

Result<std::unique_ptr<Backend>> CreateBackend(std::string_view device) {
  if (device == "cpu") return std::unique_ptr<Backend>(cpu::CreateCpuBackend());
#ifdef BENCHMAKE_HAVE_CUDA
  if (device == "cuda") return cuda::CreateCudaBackend();
#endif
  std::string names;
  for (const auto& n : BackendNames()) names += (names.empty() ? "" : ", ") + n;
  return Errorf(ErrorCode::kUnsupported,
                "device '{}' is not available in this build (available: {})", device, names);
}

}  // namespace bm::train
