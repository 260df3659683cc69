#include "base/sealed_text.h"

#include <charconv>

#include "base/digest.h"

namespace bm {

std::string SealText(std::string_view magic, int version, std::string_view body) {
  return fmt::format("{} {} {}\n{}", magic, version, DigestOf(body).Hex(), body);
}

Result<UnsealedText> UnsealText(std::string_view text, std::string_view magic, int current,
                                int sealed_since) {
  const size_t nl = text.find('\n');
  if (!text.starts_with(magic) || text.substr(magic.size(), 1) != " " || nl == text.npos)
    return Errorf(ErrorCode::kCorrupt, "no '{} N' header", magic);
  const std::string_view header = text.substr(magic.size() + 1, nl - magic.size() - 1);
  const std::string_view version_text = header.substr(0, header.find(' '));
  UnsealedText out;
  auto [end, ec] =
      std::from_chars(version_text.data(), version_text.data() + version_text.size(), out.version);
  if (ec != std::errc() || end != version_text.data() + version_text.size() || out.version < 1)
    return Errorf(ErrorCode::kCorrupt, "'{} {}' is no version", magic, header);
  if (out.version > current) {
    return Errorf(ErrorCode::kUnsupported, "version {} (this benchmake reads {})", out.version,
                  current);
  }
  out.body = text.substr(nl + 1);
  const bool sealed = out.version >= sealed_since;
  const std::string_view seal =
      header.size() > version_text.size() ? header.substr(version_text.size() + 1) : "";
  if (!sealed && !seal.empty())
    return Errorf(ErrorCode::kCorrupt, "'{} {}' carries a digest its version has not", magic,
                  header);
  if (sealed && DigestOf(out.body).Hex() != seal)
    return Errorf(ErrorCode::kCorrupt, "damaged: its bytes do not match its digest");
  return out;
}

}  // namespace bm
