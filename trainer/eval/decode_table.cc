#include "trainer/eval/decode_table.h"

#include <fstream>
#include <sstream>

namespace bm::train::eval {
namespace {

// The length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF), or 0.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

std::string ReplaceInvalidUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = Utf8Length(bytes, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

Result<DecodeTable> DecodeTable::Read(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Errorf(ErrorCode::kNotFound, "{}: cannot open the decode table", path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Errorf(ErrorCode::kCorrupt, "{}: not valid JSON", path);
  return FromJson(j, path);
}

Result<DecodeTable> DecodeTable::FromJson(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object() || j.value("format", "") != kDecodeTableFormat)
    return Errorf(ErrorCode::kCorrupt, "{}: not a decode table (format \"{}\")", origin,
                  kDecodeTableFormat);
  const auto version = j.value("version", 0);
  if (version != kDecodeTableVersion)
    return Errorf(ErrorCode::kCorrupt,
                  "{}: decode table version {}; this benchmake-train reads version {} (a newer "
                  "benchmake wrote it? rebuild the mmmu_data target)",
                  origin, version, kDecodeTableVersion);
  auto pieces = j.find("pieces");
  auto eos = j.find("eos_id");
  if (pieces == j.end() || !pieces->is_array() || eos == j.end() || !eos->is_number_integer())
    return Errorf(ErrorCode::kCorrupt, "{}: \"pieces\" (a list) or \"eos_id\" is missing", origin);
  DecodeTable t;
  t.eos_id_ = eos->get<int32_t>();
  t.strip_leading_space_ = j.value("strip_leading_space", true);
  t.pieces_.reserve(pieces->size());
  for (size_t i = 0; i < pieces->size(); ++i) {
    const nlohmann::json& e = (*pieces)[i];
    Piece p;
    if (e.is_null()) {
      p.kind = Piece::kSkip;
    } else if (e.is_number_integer() && e.get<int64_t>() >= 0 && e.get<int64_t>() <= 255) {
      p.kind = Piece::kByte;
      p.bytes = std::string(1, static_cast<char>(e.get<int>()));
    } else if (e.is_string()) {
      p.kind = Piece::kText;
      p.bytes = e.get<std::string>();
    } else {
      return Errorf(ErrorCode::kCorrupt,
                    "{}: pieces[{}] is {}; an entry is null, a byte 0..255 or a string", origin, i,
                    e.dump());
    }
    t.pieces_.push_back(std::move(p));
  }
  return t;
}

std::string DecodeTable::Decode(std::span<const int32_t> ids) const {
  std::string bytes;
  bool first = true;
  for (int32_t id : ids) {
    if (id < 0 || id >= size()) continue;
    const Piece& p = pieces_[id];
    if (p.kind == Piece::kSkip) continue;
    if (first && p.kind == Piece::kText && strip_leading_space_ && !p.bytes.empty() &&
        p.bytes[0] == ' ') {
      bytes.append(p.bytes, 1);
    } else {
      bytes += p.bytes;
    }
    first = false;
  }
  return ReplaceInvalidUtf8(bytes);
}

}  // namespace bm::train::eval
