#include "rules/text/tiktoken_ranks.h"

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/real_filesystem.h"

namespace bm::text {
namespace {

constexpr std::array<int8_t, 256> MakeBase64Table() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 64; ++i) t[static_cast<uint8_t>(alphabet[i])] = static_cast<int8_t>(i);
  return t;
}
constexpr std::array<int8_t, 256> kBase64 = MakeBase64Table();

}  // namespace

Result<std::string> DecodeBase64(std::string_view text) {
  if (text.size() % 4 != 0) {
    return Errorf(ErrorCode::kCorrupt, "base64 length {} is not a multiple of 4", text.size());
  }
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t acc = 0;
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = text[i + j];
      if (c == '=' && i + 4 == text.size() && j >= 2) {
        ++pad;
        acc <<= 6;
        continue;
      }
      const int8_t v = kBase64[static_cast<uint8_t>(c)];
      if (v < 0 || pad > 0) return Errorf(ErrorCode::kCorrupt, "bad base64 character '{}'", c);
      acc = (acc << 6) | static_cast<uint32_t>(v);
    }
    out.push_back(static_cast<char>(acc >> 16));
    if (pad < 2) out.push_back(static_cast<char>((acc >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(acc & 0xff));
  }
  return out;
}

Result<Vocabulary> ParseTiktokenRanks(std::string_view contents, std::string_view origin) {
  Vocabulary vocab;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < contents.size()) {
    size_t eol = contents.find('\n', pos);
    if (eol == std::string_view::npos) eol = contents.size();
    std::string_view line = contents.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) {
      return Errorf(ErrorCode::kCorrupt, "{}:{}: expected 'base64 rank'", origin, line_no);
    }
    Result<std::string> token = DecodeBase64(line.substr(0, space));
    if (!token.ok()) return token.status().WithContext(fmt::format("{}:{}", origin, line_no));
    if (token->empty()) return Errorf(ErrorCode::kCorrupt, "{}:{}: empty token", origin, line_no);
    std::string_view rank_text = line.substr(space + 1);
    uint32_t rank = 0;
    auto [end, ec] = std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
    if (ec != std::errc() || end != rank_text.data() + rank_text.size() ||
        rank >= RankMap::kNotFound - 1 || rank > (1u << 30)) {
      return Errorf(ErrorCode::kCorrupt, "{}:{}: bad rank '{}'", origin, line_no, rank_text);
    }
    if (vocab.ranks.Find(*token) != RankMap::kNotFound) {
      return Errorf(ErrorCode::kCorrupt, "{}:{}: token repeated", origin, line_no);
    }
    if (rank >= vocab.tokens.size()) vocab.tokens.resize(rank + 1);
    if (!vocab.tokens[rank].empty()) {
      return Errorf(ErrorCode::kCorrupt, "{}:{}: rank {} repeated", origin, line_no, rank);
    }
    vocab.ranks.Insert(*token, rank);
    vocab.tokens[rank] = std::move(*token);
  }
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    if (vocab.ranks.Find(std::string_view(&c, 1)) == RankMap::kNotFound) {
      return Errorf(ErrorCode::kCorrupt, "{}: byte 0x{:02x} has no token", origin, b);
    }
  }
  return vocab;
}

Result<Vocabulary> LoadTiktokenRanks(const std::string& path) {
  BM_ASSIGN_OR_RETURN(std::string contents, DiskFilesystem().ReadFile(path));
  return ParseTiktokenRanks(contents, path);
}

Vocabulary ByteVocabulary() {
  Vocabulary vocab;
  vocab.tokens.resize(256);
  for (int b = 0; b < 256; ++b) {
    vocab.tokens[b] = std::string(1, static_cast<char>(b));
    vocab.ranks.Insert(vocab.tokens[b], static_cast<uint32_t>(b));
  }
  return vocab;
}

}  // namespace bm::text
