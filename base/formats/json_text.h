// Parsing JSON text that a person may have edited or cut short (a metrics.json,
// a log.jsonl line), with errors that say where: "metrics.json:3:17: not valid
// JSON: syntax error while parsing object - unexpected end of input; ...".
// Thread safety: a pure function.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "base/result.h"

namespace bm::formats {

// `text` parsed; kCorrupt naming `name`, the line and the column of the error
// otherwise (a number out of a double's range: the file, the line when the text is one
// line, and the number); the parser's
// quote of the token it stopped in keeps its last 40 bytes. `first_line` is the line
// number of the text's first line (a JSON Lines file passes each line's own).
Result<nlohmann::json> ParseJsonText(std::string_view text, std::string_view name,
                                     int first_line = 1);

}  // namespace bm::formats
