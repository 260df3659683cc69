// Reading a run from files: a metrics.json (docs/METRICS.md) and the log.jsonl
// beside it. This is how `benchmake report` and `benchmake compare` take runs
// that are not targets of the workspace (a reference run copied from another
// lab, an external trainer's output directory).
//
// `path` is a directory holding metrics.json (log.jsonl optional) or a
// metrics file itself. The result's origin is kFile, its source the path.
//
// Errors: kNotFound (no metrics.json), kIo, kCorrupt (not JSON, not an object,
// a "format" other than "benchmake-metrics", a figure the tables read that is
// not a number: "loss.final is \"2.1\", not a number", a bad log.jsonl line),
// kUnsupported (a version newer than 1: "upgrade benchmake").
#pragma once

#include <string>

#include "base/result.h"
#include "engine/report/measurement.h"

namespace bm::report {

inline constexpr int kMetricsVersion = 1;

Result<Measurement> LoadRunFiles(const std::string& path);

// Checks the magic and version of a parsed metrics.json; `name` is for messages.
Status CheckMetricsFormat(const nlohmann::json& metrics, const std::string& name);

// The whole file; kNotFound / kIo with the path in the message.
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace bm::report
