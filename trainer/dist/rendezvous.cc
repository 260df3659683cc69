#include "trainer/dist/rendezvous.h"

#include <fmt/ranges.h>
#include <gloo/rendezvous/file_store.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

namespace bm::train::dist {

namespace {
std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}
}  // namespace

// FileStore can say whether a key is there without waiting (check(), which
// FileStore keeps protected); Arrive needs that to name the missing ranks.
class Rendezvous::Store final : public gloo::rendezvous::FileStore {
 public:
  using FileStore::FileStore;
  bool Has(const std::string& key) { return check({key}); }
};

Rendezvous::Rendezvous(std::string dir, double timeout_s, std::unique_ptr<Store> store)
    : dir_(std::move(dir)), timeout_s_(timeout_s), store_(std::move(store)) {}

Rendezvous::~Rendezvous() = default;

Result<std::unique_ptr<Rendezvous>> Rendezvous::Open(const std::string& dir, double timeout_s) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Errorf(ErrorCode::kIo, "cannot create the rendezvous directory {}: {}", dir,
                  ec.message());
  try {
    return std::unique_ptr<Rendezvous>(
        new Rendezvous(dir, timeout_s, std::make_unique<Store>(dir)));
  } catch (const std::exception& e) {
    return Errorf(ErrorCode::kIo, "cannot open the rendezvous directory {}: {}", dir, e.what());
  }
}

Status Rendezvous::Set(const std::string& key, std::string_view value) {
  // FileStore refuses to overwrite, and says only "File already exists".
  if (store_->Has(key))
    return Errorf(ErrorCode::kAlreadyExists,
                  "rendezvous key '{}' exists already in {}: the directory holds an earlier "
                  "run's keys; give each run a fresh, empty one",
                  key, dir_);
  try {
    store_->set(key, std::vector<char>(value.begin(), value.end()));
    return Status::Ok();
  } catch (const std::exception& e) {
    return Errorf(ErrorCode::kIo, "cannot write rendezvous key '{}' in {}: {}", key, dir_,
                  e.what());
  }
}

Result<std::vector<size_t>> Rendezvous::WaitFor(const std::vector<std::string>& keys) {
  const auto deadline = std::chrono::steady_clock::now() + Millis(timeout_s_);
  std::vector<size_t> missing;
  try {
    while (true) {
      missing.clear();
      for (size_t i = 0; i < keys.size(); ++i)
        if (!store_->Has(keys[i])) missing.push_back(i);
      if (missing.empty() || std::chrono::steady_clock::now() >= deadline) return missing;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  } catch (const std::exception& e) {
    return Errorf(ErrorCode::kIo, "cannot read the rendezvous directory {}: {}", dir_, e.what());
  }
}

Result<std::string> Rendezvous::Get(const std::string& key) {
  BM_ASSIGN_OR_RETURN(std::vector<size_t> missing, WaitFor({key}));
  if (!missing.empty())
    return Errorf(ErrorCode::kUnavailable, "rendezvous key '{}' did not appear in {} within {} s",
                  key, dir_, timeout_s_);
  try {
    std::vector<char> value = store_->get(key);
    return std::string(value.begin(), value.end());
  } catch (const std::exception& e) {
    return Errorf(ErrorCode::kIo, "cannot read rendezvous key '{}' in {}: {}", key, dir_, e.what());
  }
}

Status Rendezvous::Arrive(const std::string& group, int me, std::span<const int> members) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < members.size(); ++i)
    keys.push_back(fmt::format("{}/arrived/{}", group, i));
  BM_TRY(Set(keys[static_cast<size_t>(me)], fmt::format("{}", members[static_cast<size_t>(me)])));
  BM_ASSIGN_OR_RETURN(std::vector<size_t> missing, WaitFor(keys));
  if (missing.empty()) return Status::Ok();
  std::vector<int> ranks;
  for (size_t i : missing) ranks.push_back(members[i]);
  return Errorf(ErrorCode::kUnavailable,
                "rank{} {} of group '{}' did not arrive at the rendezvous {} within {} s",
                ranks.size() > 1 ? "s" : "", fmt::join(ranks, ", "), group, dir_, timeout_s_);
}

gloo::rendezvous::Store& Rendezvous::store() { return *store_; }

}  // namespace bm::train::dist
