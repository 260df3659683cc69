#include "cache/builtin_remotes.h"

#include "cache/remote/remote_config.h"

namespace bm::cache {

void RegisterBuiltinRemotes(RemoteRegistry& registry) {
  // http, https (cache/remote/http_remote.h) and file (cache/remote/file_remote.h).
  RegisterRemoteBackends(registry);
}

}  // namespace bm::cache
