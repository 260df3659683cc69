// Precompiled into the tests (through cmake/pch/tests.h) and into bm_train and bm_train_cuda
// (cmake/BenchmakeHelpers.cmake: bm_precompile_headers): the third-party and standard headers
// that most of their files include, parsed once per build instead of once per file. CI builds
// everything from scratch on two cores; parsing these was about 3 s of a 15 s test file
// (docs/PERFORMANCE.md, "CI"). A file still includes what it uses: this list is a build-time
// cache, not an interface.
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
