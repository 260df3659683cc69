// Precompiled into benchmake's own C++ targets (cmake/BenchmakeHelpers.cmake: bm_warnings
// and bm_test arrange it): the third-party and standard headers that most files include,
// parsed once per build instead of once per file. CI builds everything from scratch on two
// cores; parsing these took a fifth of a file's compile time (docs/PERFORMANCE.md, "CI").
// A file still includes what it uses: this list is a build-time cache, not an interface.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
