#include "trainer/checkpoint/resume.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>

#include "trainer/checkpoint/model_checkpoint.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/model/layout.h"

namespace bm::train {
namespace {

constexpr char kMagic[8] = {'B', 'M', 'O', 'P', 'T', 'I', 'M', '\0'};
constexpr uint32_t kVersion = 1;

template <typename T>
void Put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

}  // namespace

Status SaveResume(const std::string& dir, const ModelConfig& config, const std::string& fingerprint,
                  const ResumeState& state) {
  namespace fs = std::filesystem;
  const std::string name = fmt::format("step-{:08d}", state.step);
  const fs::path step_dir = fs::path(dir) / name;
  std::error_code ec;
  fs::remove_all(step_dir, ec);
  fs::create_directories(step_dir, ec);
  if (ec) return Errorf(ErrorCode::kIo, "cannot create {}: {}", step_dir.string(), ec.message());
  BM_TRY(SaveModel(step_dir.string(), config, state.params, -1));
  std::string opt;
  opt.append(kMagic, 8);
  Put<uint32_t>(opt, kVersion);
  Put<uint32_t>(opt, 0);
  Put<uint64_t>(opt, static_cast<uint64_t>(state.step));
  Put<uint64_t>(opt, state.m.size());
  opt.append(reinterpret_cast<const char*>(state.m.data()), state.m.size() * 4);
  opt.append(reinterpret_cast<const char*>(state.v.data()), state.v.size() * 4);
  BM_TRY(WriteFileAtomically((step_dir / "optimizer.bin").string(), opt));
  nlohmann::json s = {{"format", "benchmake-resume"}, {"version", 1},     {"step", state.step},
                      {"fingerprint", fingerprint},   {"log", state.log}, {"extra", state.extra}};
  BM_TRY(WriteFileAtomically((step_dir / "state.json").string(), s.dump()));
  BM_TRY(WriteFileAtomically((fs::path(dir) / "LATEST").string(), name + "\n"));
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string other = entry.path().filename().string();
    if (other.rfind("step-", 0) == 0 && other != name) fs::remove_all(entry.path(), ec);
  }
  return Status::Ok();
}

Result<std::optional<ResumeState>> LoadResume(const std::string& dir, const ModelConfig& config,
                                              const std::string& fingerprint, std::string* why) {
  namespace fs = std::filesystem;
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
  if (s.is_discarded() || s.value("format", "") != "benchmake-resume")
    return Errorf(ErrorCode::kCorrupt, "{}/state.json is not a benchmake resume state",
                  step_dir.string());
  if (s.value("version", 0) != 1)
    return Errorf(ErrorCode::kUnsupported, "{}/state.json has version {}; this trainer reads 1",
                  step_dir.string(), s.value("version", 0));
  if (s.value("fingerprint", "") != fingerprint)
    return none("the checkpoint was written by a run with other settings");
  ResumeState state;
  state.step = s.value("step", int64_t{0});
  state.log = s.value("log", nlohmann::json::array());
  state.extra = s.value("extra", nlohmann::json::object());
  BM_ASSIGN_OR_RETURN(state.params, LoadParameters((step_dir / kModelFile).string(), config));
  BM_ASSIGN_OR_RETURN(std::string opt, ReadFileBytes((step_dir / "optimizer.bin").string()));
  const size_t n = state.params.size();
  const size_t want = 8 + 4 + 4 + 8 + 8 + 2 * 4 * n;
  if (opt.size() != want || std::memcmp(opt.data(), kMagic, 8) != 0)
    return Errorf(ErrorCode::kCorrupt, "{}/optimizer.bin: {} bytes, expected {} for {} parameters",
                  step_dir.string(), opt.size(), want, n);
  uint32_t version;
  uint64_t step, count;
  std::memcpy(&version, opt.data() + 8, 4);
  std::memcpy(&step, opt.data() + 16, 8);
  std::memcpy(&count, opt.data() + 24, 8);
  if (version != kVersion || count != n || static_cast<int64_t>(step) != state.step)
    return Errorf(ErrorCode::kCorrupt, "{}/optimizer.bin does not match state.json",
                  step_dir.string());
  state.m.resize(n);
  state.v.resize(n);
  std::memcpy(state.m.data(), opt.data() + 32, 4 * n);
  std::memcpy(state.v.data(), opt.data() + 32 + 4 * n, 4 * n);
  return std::optional<ResumeState>(std::move(state));
}

}  // namespace bm::train
