// RunHealth: "a failing remote is marked dead for the run" across processes.
// `benchmake build` runs every step as its own process under ninja, so the
// verdict lives in a file that all steps of one build share:
//
//   <state dir>/remote-dead := line*     line := run-id "\t" url "\t" reason "\n"
//
// The run id comes from $BENCHMAKE_RUN_ID, which `benchmake build` sets for
// its ninja (a fresh one per build); a process without it is a run of its own
// and keeps the verdict in memory only. Lines of older runs are ignored (and
// dropped when the file is rewritten), so the next build tries the remote again.
//
// MarkDead returns true only for the first failure of a url in a run, under an
// flock, so exactly one step reports it.
//
// Thread safety: not thread-safe; one per Cache. Safe across processes.
#pragma once

#include <map>
#include <string>

namespace bm::cache {

class RunHealth {
 public:
  // path: the shared file; "" or an empty run_id: in-memory only.
  RunHealth(std::string path, std::string run_id);
  // <state_dir>/remote-dead with $BENCHMAKE_RUN_ID.
  static RunHealth ForWorkspace(const std::string& state_dir);
  // A fresh run id for a build to export as BENCHMAKE_RUN_ID.
  static std::string NewRunId();

  bool IsDead(const std::string& url);
  // Records that url failed; true when no one had recorded it in this run.
  bool MarkDead(const std::string& url, const std::string& reason);
  // The recorded reason, "" when url is not dead.
  std::string Reason(const std::string& url);

 private:
  std::string path_;
  std::string run_id_;
  std::map<std::string, std::string> dead_;  // url -> reason, known dead (cache of the file)
};

}  // namespace bm::cache
