// "Did you mean ...?": the one edit-distance suggestion every part of benchmake
// uses for a mistyped name (BENCHFILE keys, rules, targets, remote-cache
// settings, commands, flags, flag values).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace bm {

// Levenshtein distance: insertions, deletions and substitutions cost 1.
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word`, or "" when none is close enough to be a
// typo: at most max(2, |word| / 3) edits away. Ties go to the first candidate.
std::string NearestName(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'NEAREST'?)" for the nearest candidate, or "" when none is close.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace bm
