// A data rule's output files (tokenize, llava_data, mmmu_data): written atomically (a temporary
// renamed into place, so a failed step leaves no half-written file), writable, and without the
// directory fsync — the step's outputs are hashed and stored by the engine afterwards.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/result.h"

namespace bm::rules {

Status WriteOutputFile(const std::string& path, std::string_view bytes);
// value.dump(2) and a newline.
Status WriteOutputJson(const std::string& path, const nlohmann::json& value);

}  // namespace bm::rules
