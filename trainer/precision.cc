#include "trainer/backend.h"

namespace bm::train {

std::string_view PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
  }
  return "?";
}

Result<Precision> ParsePrecision(std::string_view name) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "bf16" || name == "amp") return Precision::kBf16;
  if (name == "fp16") return Precision::kFp16;
  return Errorf(ErrorCode::kInvalidArgument,
                "unknown precision '{}' (fp32, bf16, fp16, or amp = bf16)", name);
}

}  // namespace bm::train
