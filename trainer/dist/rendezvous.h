// Rendezvous: the file store through which the ranks of one run meet, a
// directory every rank can read and write (RankEnv::rendezvous: the step's
// scratch directory on one machine, a shared filesystem across machines).
//
// Gloo's FileStore does the storing: one file per key, written under a
// temporary name and renamed into place, and readers poll for it every 10 ms
// (no inotify, so NFS and other shared filesystems work). Process groups keep
// their keys apart by prefix: "<group>/<key>" (trainer/dist/process_groups.cc).
//
// The directory must be fresh for each run: keys are written once, and a key
// that exists already (a directory left by an earlier run) is kAlreadyExists
// naming the directory. Waiting is bounded by the timeout given to Open
// (RankEnv::timeout_s); a wait that runs out is kUnavailable naming what was
// missing. Nothing here throws.
//
// Thread safety: one thread at a time.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace gloo::rendezvous {
class Store;
}

namespace bm::train::dist {

class Rendezvous {
 public:
  // Creates `dir` when it is missing. kIo naming the directory when it can
  // be neither made nor resolved.
  static Result<std::unique_ptr<Rendezvous>> Open(const std::string& dir, double timeout_s);
  ~Rendezvous();

  const std::string& dir() const { return dir_; }
  double timeout_s() const { return timeout_s_; }

  Status Set(const std::string& key, std::string_view value);
  // Waits up to the timeout for `key` to be set.
  Result<std::string> Get(const std::string& key);

  // Member `me` of a group (members[i] is the global rank of group rank i)
  // announces itself under "<group>/arrived/<me>" and waits until every
  // member has. kUnavailable naming the global ranks that did not arrive
  // within the timeout.
  Status Arrive(const std::string& group, int me, std::span<const int> members);

  // The store itself, for Gloo's connectFullMesh (gloo_communicator.cc).
  gloo::rendezvous::Store& store();

 private:
  class Store;
  // Polls until every key is set or the timeout passes; the indices of the
  // keys still missing then (none: all set).
  Result<std::vector<size_t>> WaitFor(const std::vector<std::string>& keys);
  Rendezvous(std::string dir, double timeout_s, std::unique_ptr<Store> store);

  std::string dir_;
  double timeout_s_;
  std::unique_ptr<Store> store_;
};

}  // namespace bm::train::dist
