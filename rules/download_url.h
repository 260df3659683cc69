// URL and header expansion for the download rule.
//
// URLs: "${BENCHFILE_DIR}" is replaced by the workspace (the BENCHFILE's
// directory), and a file URL without "//" is relative to it:
//   file:data/kjv.txt                      → file:///ws/data/kjv.txt
//   file://${BENCHFILE_DIR}/data/kjv.txt   → file:///ws/data/kjv.txt
//   file:///abs/kjv.txt, https://host/x    unchanged
// so the default BENCHFILE works from any checkout. The key holds the URL as
// written, so moving the checkout does not invalidate the download.
//
// Header values: "${NAME}" is replaced by the environment variable NAME
// (an error when unset), so secrets live in the environment, never in the
// BENCHFILE, the key or the logs. "$$" is a literal "$".
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace bm::rules {

Result<std::string> ExpandUrl(std::string_view url, const std::string& workspace_dir);

// Errors: kInvalidArgument naming the variable (never its value) when unset
// or when "${" is not closed. `what` names the header in messages.
Result<std::string> ExpandEnvironment(std::string_view value, std::string_view what);

// The last path segment of a URL, without query or fragment ("download" when
// empty).
std::string FileNameForUrl(std::string_view url);

}  // namespace bm::rules
