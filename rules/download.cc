#include "rules/download.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "base/archive.h"
#include "base/digest.h"
#include "base/http_client.h"
#include "base/sha256.h"
#include "base/terminal.h"
#include "rules/download_url.h"

namespace bm::rules {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", b, units[u]);
}

// "\rNAME: 12.0 MiB / 40.0 MiB  5.1 MiB/s  ETA 6 s" on a terminal, at most
// five times a second.
class ProgressLine {
 public:
  ProgressLine(std::string name, bool enabled, bool color)
      : name_(Styled(name, Style::kBold, color)), enabled_(enabled) {}
  ~ProgressLine() {
    if (shown_) std::cerr << "\n";
  }
  // `position` and `total` are offsets in the whole file, as http::Progress
  // reports them (a resumed transfer starts at the kept part's end); `start`
  // is where this transfer began, so the rate counts only its own bytes.
  void Update(uint64_t start, uint64_t position, uint64_t total) {
    if (!enabled_) return;
    const auto now = Clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    shown_ = true;
    position = std::max(position, start);  // before the response, the client reports 0
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = secs > 0 ? (position - start) / secs : 0;
    std::string line = fmt::format("\r{}: {}", name_, HumanBytes(position));
    if (total > 0) line += " / " + HumanBytes(total);
    line += fmt::format("  {}/s", HumanBytes(rate));
    if (total > position && rate > 0) {
      line += fmt::format("  ETA {:.0f} s", (total - position) / rate);
    }
    std::cerr << line << "   " << std::flush;
  }

 private:
  std::string name_;
  bool enabled_;
  bool shown_ = false;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_;
};

// A server's Retry-After is waited for up to this long (curl waits any time).
constexpr double kMaxRetryAfterSeconds = 600;

bool IsTransient(const Status& status, long http_status) {
  switch (status.code()) {
    case ErrorCode::kUnavailable:
    case ErrorCode::kTimeout:
    case ErrorCode::kCorrupt:  // truncated body
      return true;
    case ErrorCode::kFailed:
      return http_status >= 500 || http_status == 429;
    default:
      return false;
  }
}

uint64_t FileSize(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : static_cast<uint64_t>(size);
}

// Beside a partial file: the validator (ETag or Last-Modified) of the
// resource its bytes came from, which a resume sends as If-Range.
std::string ValidatorPath(const std::string& part) { return part + ".validator"; }

void RemovePart(const std::string& part) {
  std::error_code ec;
  fs::remove(part, ec);
  fs::remove(ValidatorPath(part), ec);
}

std::string ReadValidator(const std::string& part) {
  std::ifstream in(ValidatorPath(part));
  std::string v;
  std::getline(in, v);
  return v;
}

// One GET of url from the partial file's end into it. The kept bytes are
// extended only while the server's resource has the validator they came with:
// one that changed sends the whole new resource, which replaces them.
Status FetchOnce(http::Client& client, const std::string& url, const std::string& part,
                 ProgressLine& progress, http::Response* response, std::ostream& log) {
  const uint64_t offset = FileSize(part);
  std::FILE* f = std::fopen(part.c_str(), "ab");
  if (f == nullptr) return Errorf(ErrorCode::kIo, "cannot open {}", part);
  http::Transfer t;
  t.url = url;
  t.range_start = offset;
  if (offset > 0) t.if_range = ReadValidator(part);
  uint64_t base = offset;
  t.on_response = [&](const http::Response& r) -> Status {
    if (r.body_offset != offset) {  // the server sent the whole resource
      if (std::fflush(f) != 0 || ::ftruncate(::fileno(f), 0) != 0) {
        return Errorf(ErrorCode::kIo, "cannot truncate {}", part);
      }
      if (offset > 0 && !t.if_range.empty() && r.validator != t.if_range) {
        log << fmt::format(
            "download: {} changed on the server since the partial download "
            "({} → {}); fetching it whole\n",
            url, t.if_range, r.validator.empty() ? "none" : r.validator);
      }
      base = 0;
    }
    if (r.body_offset == 0) {  // the bytes from here on come from this resource
      std::error_code ec;
      if (r.validator.empty()) {
        fs::remove(ValidatorPath(part), ec);
      } else {
        std::ofstream(ValidatorPath(part), std::ios::trunc) << r.validator << "\n";
      }
    }
    return Status::Ok();
  };
  t.sink = [&](const char* data, size_t n) -> Status {
    if (std::fwrite(data, 1, n, f) != n) return Errorf(ErrorCode::kIo, "cannot write {}", part);
    return Status::Ok();
  };
  t.progress = [&](uint64_t so_far, uint64_t total) { progress.Update(base, so_far, total); };
  Status st = client.Run(t);
  *response = t.response;
  if (std::fclose(f) != 0 && st.ok()) st = Errorf(ErrorCode::kIo, "cannot write {}", part);
  return st;
}

void EmptyDirectory(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) fs::remove_all(e.path(), ec);
}

Status MoveFile(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (!ec) return Status::Ok();
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);  // across filesystems
  if (ec) return Errorf(ErrorCode::kIo, "cannot move {} to {}: {}", from, to, ec.message());
  fs::remove(from, ec);
  return Status::Ok();
}

Result<std::string> Xxh128OfFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Errorf(ErrorCode::kIo, "cannot open {}", path);
  Hasher h;
  char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) h.Update(buf, n);
  std::fclose(f);
  return h.Finish().Hex();
}

class DownloadRule final : public engine::Rule {
 public:
  std::string_view name() const override { return "download"; }
  int version() const override { return 1; }

  const std::vector<engine::ParamSpec>& params() const override {
    using engine::ParamType;
    static const std::vector<engine::ParamSpec> specs = {
        {"url", ParamType::kString, std::nullopt,
         "https://, http://, file:///abs, or file:relative/to/BENCHFILE (${BENCHFILE_DIR} "
         "expands)"},
        {"sha256", ParamType::kString, json(""), "expected SHA-256 (64 hex digits)"},
        {"xxh128", ParamType::kString, json(""), "expected XXH3-128 (32 hex digits)"},
        {"headers", ParamType::kStringMap, json::object(),
         "request headers; ${ENV} in values expands from the environment", false},
        {"unpack", ParamType::kString, json(""), "\"\", gz, zst, xz, tar, tar.gz, tar.zst, tar.xz"},
        {"filename", ParamType::kString, json(""), "output file name (default: from the URL)"},
        engine::WithRange(
            {"retries", ParamType::kInt, json(3), "retries of transient failures", false}, 0),
        {"retry_delay_s", ParamType::kFloat, json(1.0), "first retry delay, doubling", false},
        {"connect_timeout_s", ParamType::kFloat, json(10.0), "connect timeout", false},
        {"stall_timeout_s", ParamType::kFloat, json(30.0),
         "fail when no byte arrives for this long", false},
    };
    return specs;
  }

  // Network downloads take the terminal (ninja's console pool) for their
  // progress line; file:// copies are quick and run alongside other steps.
  bool streams_progress(const json& p) const override {
    const std::string url = p.value("url", "");
    return url.starts_with("http://") || url.starts_with("https://");
  }

  std::vector<engine::ParamError> Check(const json& p) const override {
    std::vector<engine::ParamError> errors;
    auto hex = [&](const char* name, size_t len) {
      if (!p.contains(name)) return;
      const std::string v = p[name];
      if (!v.empty() &&
          (v.size() != len || v.find_first_not_of("0123456789abcdef") != std::string::npos)) {
        errors.push_back({name, fmt::format("expected {} lowercase hex digits", len)});
      }
    };
    hex("sha256", 64);
    hex("xxh128", 32);
    if (p.contains("unpack") && p["unpack"] != "" &&
        !IsUnpackFormat(p["unpack"].get<std::string>())) {
      errors.push_back({"unpack", "expected \"\", gz, zst, xz, tar, tar.gz, tar.zst or tar.xz"});
    }
    if (p.contains("url")) {
      const std::string url = p["url"];
      if (!url.starts_with("file:") && !url.starts_with("http://") &&
          !url.starts_with("https://")) {
        errors.push_back({"url", "expected http://, https:// or file:"});
      }
    }
    // Refused as curl refuses --retry-delay -1 and --connect-timeout 0.
    auto seconds = [&](const char* name, bool zero_ok) {
      if (!p.contains(name) || !p[name].is_number()) return;
      const double v = p[name].get<double>();
      if (v < 0 || (v == 0 && !zero_ok)) {
        errors.push_back(
            {name, fmt::format("{} ({:g}) must be {} 0 seconds", name, v, zero_ok ? ">=" : ">")});
      }
    };
    seconds("retry_delay_s", true);
    seconds("connect_timeout_s", false);
    seconds("stall_timeout_s", false);
    if (p.contains("filename")) {
      const std::string f = p["filename"];
      if (f.find('/') != std::string::npos || f == "." || f == "..") {
        errors.push_back({"filename", "a plain file name, without '/'"});
      }
    }
    return errors;
  }

  Result<engine::StepResult> Run(engine::StepContext& ctx) const override {
    Result<engine::StepResult> r = Download(ctx);
    if (!r.ok()) EmptyDirectory(ctx.out_dir);
    return r;
  }

 private:
  Result<engine::StepResult> Download(engine::StepContext& ctx) const {
    const json& p = ctx.params;
    std::ostream& log = ctx.log != nullptr ? *ctx.log : std::clog;
    BM_ASSIGN_OR_RETURN(const std::string url,
                        ExpandUrl(p.at("url").get<std::string>(), ctx.workspace_dir));
    http::ClientOptions options;
    for (const auto& [name, value] : p.at("headers").items()) {
      BM_ASSIGN_OR_RETURN(std::string v,
                          ExpandEnvironment(value.get<std::string>(), "header " + name));
      options.headers.push_back(name + ": " + v);
    }
    options.connect_timeout_seconds = p.at("connect_timeout_s").get<double>();
    options.stall_seconds = p.at("stall_timeout_s").get<double>();
    options.stall_bytes_per_second = 1;
    const std::string filename =
        p.at("filename") != "" ? p.at("filename").get<std::string>() : FileNameForUrl(url);
    const std::string part_dir = !ctx.resume_dir.empty() ? ctx.resume_dir : ctx.scratch_dir;
    const std::string part = part_dir + "/" + filename + ".part";
    const uint64_t resumed_from = FileSize(part);
    const int retries = static_cast<int>(p.at("retries").get<int64_t>());
    const double delay = p.at("retry_delay_s").get<double>();

    const auto t0 = Clock::now();
    http::Client client(options);
    ProgressLine progress(ctx.target, ctx.interactive, ctx.color);
    int attempts = 0;
    for (;;) {
      ++attempts;
      http::Response response;
      Status st = FetchOnce(client, url, part, progress, &response, log);
      if (st.ok()) break;
      const long http_status = response.status;
      if (http_status == 416 && response.resource_length > 0 &&
          static_cast<uint64_t>(response.resource_length) == FileSize(part)) {
        break;  // the kept part is the whole file already (curl -C -, wget -c)
      }
      if (http_status == 416) {  // the partial file is not a prefix we can extend
        RemovePart(part);
        st = Errorf(ErrorCode::kCorrupt, "the server refused to resume (HTTP 416)");
      }
      if (!IsTransient(st, http_status) || attempts > retries) {
        if (!IsTransient(st, http_status) && http_status != 416) RemovePart(part);
        return st.WithContext(
            fmt::format("download {} (attempt {} of {})", url, attempts, retries + 1));
      }
      double wait = delay * static_cast<double>(1 << std::min(attempts - 1, 10));
      if (http_status == 429 || http_status == 503) {  // the server says how long to wait
        wait = std::max(wait, std::min(static_cast<double>(response.retry_after_seconds),
                                       kMaxRetryAfterSeconds));
      }
      log << fmt::format("download: {} (attempt {}); retrying in {:.1f} s\n", st.message(),
                         attempts, wait);
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }

    json metrics = {{"url", url},
                    {"file", filename},
                    {"bytes", FileSize(part)},
                    {"attempts", attempts},
                    {"resumed_from", resumed_from},
                    {"unpack", p.at("unpack")}};
    BM_ASSIGN_OR_RETURN(metrics["sha256"], Sha256OfFile(part));
    BM_ASSIGN_OR_RETURN(metrics["xxh128"], Xxh128OfFile(part));
    const std::string want_xxh = p.at("xxh128");
    const std::string want_sha = p.at("sha256");
    auto mismatch = [&](const char* kind, const std::string& want, const std::string& got) {
      RemovePart(part);
      return Errorf(ErrorCode::kCorrupt, "download {}: {} mismatch: expected {}, got {}", url, kind,
                    want, got);
    };
    if (!want_sha.empty() && metrics["sha256"] != want_sha) {
      return mismatch("sha256", want_sha, metrics["sha256"]);
    }
    if (!want_xxh.empty() && metrics["xxh128"] != want_xxh) {
      return mismatch("xxh128", want_xxh, metrics["xxh128"]);
    }
    if (want_sha.empty() && want_xxh.empty()) {
      log << fmt::format(
          "download: warning: no checksum pinned for {}; this download has sha256 = \"{}\" "
          "(add it to the target to pin the content)\n",
          url, metrics["sha256"].get<std::string>());
    }

    const std::string unpack = p.at("unpack");
    Status placed;
    if (unpack.empty()) {
      placed = MoveFile(part, ctx.out_dir + "/" + filename);
    } else if (unpack == "gz" || unpack == "zst" || unpack == "xz") {
      std::string out_name = filename;
      const std::string suffix = "." + unpack;
      if (out_name.ends_with(suffix) && out_name.size() > suffix.size()) {
        out_name.resize(out_name.size() - suffix.size());
      } else {
        out_name += ".out";
      }
      placed = DecompressFile(part, unpack, ctx.out_dir + "/" + out_name);
    } else {
      placed = ExtractArchive(part, unpack, ctx.out_dir);
    }
    if (!placed.ok()) {
      RemovePart(part);
      return placed.WithContext(fmt::format("download {}: unpack {}", url, unpack));
    }
    RemovePart(part);
    metrics["seconds"] = std::chrono::duration<double>(Clock::now() - t0).count();
    log << fmt::format("download: {} ({}) in {:.2f} s\n", filename,
                       HumanBytes(metrics["bytes"].get<double>()),
                       metrics["seconds"].get<double>());
    engine::StepResult result;
    result.metrics = std::move(metrics);
    return result;
  }
};

}  // namespace

std::unique_ptr<engine::Rule> MakeDownloadRule() { return std::make_unique<DownloadRule>(); }

}  // namespace bm::rules
