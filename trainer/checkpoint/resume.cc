#include "trainer/checkpoint/resume.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>

#include "trainer/checkpoint/safetensors.h"

namespace bm::train {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'B', 'M', 'S', 'T', 'A', 'T', 'E', '\0'};
constexpr uint32_t kVersion = 2;
constexpr size_t kHeader = 8 + 4 + 4 + 8 + 8;

template <typename T>
void Put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

std::string StepName(int64_t step) { return fmt::format("step-{:08d}", step); }

// The rank whose file holds `who`'s state.
int FileRank(const ResumeRank& who) { return who.sharded ? who.rank : 0; }

fs::path RankFile(const fs::path& step_dir, int rank) {
  return step_dir / fmt::format("rank-{:05d}.bin", rank);
}

}  // namespace

Status SaveResumeRank(const std::string& dir, const ResumeRank& who, const ResumeState& state) {
  if (FileRank(who) != who.rank) return Status::Ok();  // rank 0's file holds this state
  const fs::path step_dir = fs::path(dir) / StepName(state.step);
  std::error_code ec;
  fs::create_directories(step_dir, ec);
  if (ec) return Errorf(ErrorCode::kIo, "cannot create {}: {}", step_dir.string(), ec.message());
  const size_t n = state.params.size();
  if (state.m.size() != n || state.v.size() != n)
    return Errorf(ErrorCode::kInternal, "resume state of rank {}: {} parameters, {} and {} moments",
                  who.rank, n, state.m.size(), state.v.size());
  std::string bytes;
  bytes.reserve(kHeader + 12 * n);
  bytes.append(kMagic, 8);
  Put<uint32_t>(bytes, kVersion);
  Put<uint32_t>(bytes, static_cast<uint32_t>(who.rank));
  Put<uint64_t>(bytes, static_cast<uint64_t>(state.step));
  Put<uint64_t>(bytes, n);
  for (const std::vector<float>* v : {&state.params, &state.m, &state.v})
    bytes.append(reinterpret_cast<const char*>(v->data()), 4 * n);
  return WriteFileAtomically(RankFile(step_dir, who.rank).string(), bytes);
}

Status CommitResume(const std::string& dir, const ResumeRank& who, const std::string& fingerprint,
                    const ResumeState& state) {
  const std::string name = StepName(state.step);
  const fs::path step_dir = fs::path(dir) / name;
  nlohmann::json s = {{"format", "benchmake-resume"},
                      {"version", kVersion},
                      {"step", state.step},
                      {"fingerprint", fingerprint},
                      {"ranks", who.ranks},
                      {"sharded", who.sharded},
                      {"log", state.log},
                      {"extra", state.extra}};
  BM_TRY(WriteFileAtomically((step_dir / "state.json").string(), s.dump()));
  BM_TRY(WriteFileAtomically((fs::path(dir) / "LATEST").string(), name + "\n"));
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string other = entry.path().filename().string();
    if (other.rfind("step-", 0) == 0 && other != name) fs::remove_all(entry.path(), ec);
  }
  return Status::Ok();
}

Result<std::optional<ResumeState>> LoadResume(const std::string& dir, const ResumeRank& who,
                                              const std::string& fingerprint, int64_t local_size,
                                              std::string* why) {
  auto none = [&](std::string reason) -> Result<std::optional<ResumeState>> {
    if (why) *why = std::move(reason);
    return std::optional<ResumeState>();
  };
  if (dir.empty() || !fs::exists(fs::path(dir) / "LATEST")) return none("no checkpoint");
  BM_ASSIGN_OR_RETURN(std::string latest, ReadFileBytes((fs::path(dir) / "LATEST").string()));
  while (!latest.empty() && (latest.back() == '\n' || latest.back() == ' ')) latest.pop_back();
  const fs::path step_dir = fs::path(dir) / latest;
  BM_ASSIGN_OR_RETURN(std::string state_text, ReadFileBytes((step_dir / "state.json").string()));
  nlohmann::json s = nlohmann::json::parse(state_text, nullptr, false);
  // Each field read below must have its type (s.value() throws on another): a damaged file is
  // kCorrupt, never an exception.
  auto has = [&s](const char* key, bool (nlohmann::json::*is)() const noexcept) {
    return s.contains(key) && (s[key].*is)();
  };
  using J = nlohmann::json;
  if (!s.is_object() || !has("format", &J::is_string) || s["format"] != "benchmake-resume" ||
      !has("version", &J::is_number_integer))
    return Errorf(ErrorCode::kCorrupt, "{}/state.json is not a benchmake resume state",
                  step_dir.string());
  if (s["version"] == kVersion &&
      (!has("step", &J::is_number_integer) || !has("fingerprint", &J::is_string) ||
       !has("ranks", &J::is_number_integer) || !has("sharded", &J::is_boolean) ||
       (s.contains("log") && !s["log"].is_array()) ||
       (s.contains("extra") && !s["extra"].is_object())))
    return Errorf(ErrorCode::kCorrupt,
                  "{}/state.json: step, fingerprint, ranks, sharded, log or extra is missing or "
                  "of another type",
                  step_dir.string());
  if (s.value("version", 0) != static_cast<int>(kVersion))
    return none(fmt::format("the checkpoint has version {}; this trainer reads {}",
                            s.value("version", 0), kVersion));
  // The log's records as StepRecord::FromJson reads them (value() on step and tokens).
  for (const nlohmann::json& r : s.value("log", nlohmann::json::array()))
    if (!r.is_object() || (r.contains("step") && !r["step"].is_number_integer()) ||
        (r.contains("tokens") && !r["tokens"].is_number_integer()))
      return Errorf(ErrorCode::kCorrupt, "{}/state.json: a log record is damaged: {}",
                    step_dir.string(), r.dump());
  if (s.value("fingerprint", "") != fingerprint)
    return none("the checkpoint was written by a run with other settings");
  if (s.value("ranks", 0) != who.ranks || s.value("sharded", false) != who.sharded)
    return none(fmt::format("the checkpoint was written by {} ranks ({}), this run has {} ({})",
                            s.value("ranks", 0), s.value("sharded", false) ? "sharded" : "whole",
                            who.ranks, who.sharded ? "sharded" : "whole"));
  ResumeState state;
  state.step = s.value("step", int64_t{0});
  state.log = s.value("log", nlohmann::json::array());
  state.extra = s.value("extra", nlohmann::json::object());
  const fs::path file = RankFile(step_dir, FileRank(who));
  BM_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(file.string()));
  const size_t n = static_cast<size_t>(local_size);
  if (bytes.size() != kHeader + 12 * n || std::memcmp(bytes.data(), kMagic, 8) != 0)
    return Errorf(ErrorCode::kCorrupt, "{}: {} bytes, expected {} for a local state of {} floats",
                  file.string(), bytes.size(), kHeader + 12 * n, n);
  uint32_t version, rank;
  uint64_t step, count;
  std::memcpy(&version, bytes.data() + 8, 4);
  std::memcpy(&rank, bytes.data() + 12, 4);
  std::memcpy(&step, bytes.data() + 16, 8);
  std::memcpy(&count, bytes.data() + 24, 8);
  if (version != kVersion || static_cast<int>(rank) != FileRank(who) || count != n ||
      static_cast<int64_t>(step) != state.step)
    return Errorf(ErrorCode::kCorrupt, "{} does not match {}/state.json", file.string(),
                  step_dir.string());
  for (std::vector<float>* v : {&state.params, &state.m, &state.v}) v->resize(n);
  const char* p = bytes.data() + kHeader;
  for (std::vector<float>* v : {&state.params, &state.m, &state.v}) {
    std::memcpy(v->data(), p, 4 * n);
    p += 4 * n;
  }
  return std::optional<ResumeState>(std::move(state));
}

}  // namespace bm::train
