// The remote cache backends built into benchmake, registered by URL scheme.
// Adding a backend: one file in cache/ (e.g. http_remote.cc) and one line in
// builtin_remotes.cc. main() calls RegisterBuiltinRemotes once at start.
#pragma once

#include "cache/remote_backend.h"

namespace bm::cache {

void RegisterBuiltinRemotes(RemoteRegistry& registry);

}  // namespace bm::cache
