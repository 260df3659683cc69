// Test support for engine/report: the fixture set (tests/data/report/set.json,
// written by tests/data/report/make_fixtures.py) as measured targets, and
// golden-file comparison.
#pragma once

#include <string>
#include <vector>

#include "engine/report/measurement.h"

namespace bm::report::testing {

// tests/data/report (below $BENCHMAKE_SOURCE_DIR, else the source dir that
// bm_test compiles in).
std::string DataDir();

// The fixture set; each measurement's origin and source as set.json says.
// Fails the calling test (ADD_FAILURE) and returns {} when a file is broken.
std::vector<MeasuredTarget> LoadFixtureSet();

// The measurement of one run directory under tests/data/report/runs.
Measurement LoadRun(const std::string& name);

// Compares `actual` with tests/data/report/golden/NAME. With
// BENCHMAKE_UPDATE_GOLDEN=1 in the environment it rewrites the file instead
// (and the test still passes); review the diff before committing.
void ExpectGolden(const std::string& name, const std::string& actual);

}  // namespace bm::report::testing
