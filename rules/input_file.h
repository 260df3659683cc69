// A data rule's inputs (tokenize, llava_data, mmmu_data): the path of an input the
// BENCHFILE names, and the one file a download's output directory holds.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "engine/rule.h"

namespace bm::rules {

// Input `name` as the step sees it: an upstream target's output directory (ctx.inputs), or a
// file, absolute or relative to the BENCHFILE's directory.
std::string InputPath(const engine::StepContext& ctx, const std::string& name);

// `path` itself, or the one regular file in it when it is a directory (out/NAME of a
// download target). `what` names the input in the error ("vocab").
Result<std::string> OneFileIn(const std::string& path, std::string_view what);

}  // namespace bm::rules
