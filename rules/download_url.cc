#include "rules/download_url.h"

#include <cstdlib>
#include <filesystem>

namespace bm::rules {

Result<std::string> ExpandUrl(std::string_view url, const std::string& workspace) {
  std::error_code ec;
  std::string workspace_dir = std::filesystem::absolute(workspace, ec).lexically_normal().string();
  while (workspace_dir.size() > 1 && workspace_dir.back() == '/') workspace_dir.pop_back();
  std::string out(url);
  const std::string var = "${BENCHFILE_DIR}";
  for (size_t p; (p = out.find(var)) != std::string::npos;)
    out.replace(p, var.size(), workspace_dir);
  if (out.starts_with("file:") && !out.starts_with("file://")) {
    const std::string rest = out.substr(5);
    out = rest.starts_with("/") ? "file://" + rest : "file://" + workspace_dir + "/" + rest;
  }
  if (!out.starts_with("file://") && !out.starts_with("http://") && !out.starts_with("https://")) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "url '{}': expected http://, https:// or file:", url);
  }
  return out;
}

Result<std::string> ExpandEnvironment(std::string_view value, std::string_view what) {
  std::string out;
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] != '$') {
      out += value[i];
      continue;
    }
    if (i + 1 < value.size() && value[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (i + 1 < value.size() && value[i + 1] == '{') {
      const size_t close = value.find('}', i + 2);
      if (close == std::string_view::npos) {
        return Errorf(ErrorCode::kInvalidArgument, "{}: unclosed ${{ in its value", what);
      }
      const std::string name(value.substr(i + 2, close - i - 2));
      const char* v = std::getenv(name.c_str());
      if (v == nullptr) {
        return Errorf(ErrorCode::kInvalidArgument, "{}: environment variable {} is not set", what,
                      name);
      }
      out += v;
      i = close;
      continue;
    }
    out += '$';
  }
  return out;
}

std::string FileNameForUrl(std::string_view url) {
  std::string_view path = url.substr(0, url.find_first_of("?#"));
  const size_t scheme = path.find("://");
  if (scheme != std::string_view::npos) {
    const size_t host_end = path.find('/', scheme + 3);
    path = host_end == std::string_view::npos ? std::string_view() : path.substr(host_end);
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (name.empty() || name.find(':') != std::string_view::npos || name == "." || name == "..") {
    return "download";
  }
  return std::string(name);
}

}  // namespace bm::rules
