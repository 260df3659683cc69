#include "cache/builtin_remotes.h"

namespace bm::cache {

void RegisterBuiltinRemotes(RemoteRegistry& registry) {
  (void)registry;
  // One line per backend, e.g.:
  //   registry.Register("http", &MakeHttpRemote);
  //   registry.Register("https", &MakeHttpRemote);
}

}  // namespace bm::cache
