#include "trainer/backend.h"

namespace bm::train {

std::string_view PrecisionName(Precision precision) {
  return precision == Precision::kBf16 ? "bf16" : "fp32";
}

Result<Precision> ParsePrecision(std::string_view name) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "bf16" || name == "amp") return Precision::kBf16;
  return Errorf(ErrorCode::kInvalidArgument, "unknown precision '{}' (fp32, bf16, amp)", name);
}

}  // namespace bm::train
