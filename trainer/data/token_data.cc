#include "trainer/data/token_data.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace bm::train {

TokenData::TokenData(std::string prefix, formats::IndexedDataset tokens,
                     std::optional<formats::IndexedDataset> mask)
    : prefix_(std::move(prefix)), tokens_(std::move(tokens)), mask_(std::move(mask)) {
  starts_.reserve(tokens_.num_sequences() + 1);
  starts_.push_back(0);
  for (int32_t s : tokens_.sizes()) starts_.push_back(starts_.back() + static_cast<uint64_t>(s));
}

Result<TokenData> TokenData::Open(const std::string& dir, const std::string& split) {
  const std::string prefix = dir + "/" + split;
  if (!std::filesystem::exists(prefix + ".idx"))
    return Errorf(ErrorCode::kNotFound, "no {} split in {} ({}.idx is missing)", split, dir, split);
  BM_ASSIGN_OR_RETURN(formats::IndexedDataset tokens, formats::IndexedDataset::Open(prefix));
  std::optional<formats::IndexedDataset> mask;
  if (std::filesystem::exists(prefix + "_mask.idx")) {
    BM_ASSIGN_OR_RETURN(formats::IndexedDataset m, formats::IndexedDataset::Open(prefix + "_mask"));
    if (m.num_sequences() != tokens.num_sequences() ||
        !std::equal(m.sizes().begin(), m.sizes().end(), tokens.sizes().begin()))
      return Errorf(ErrorCode::kCorrupt, "{}_mask does not match {}: different sequence sizes",
                    prefix, prefix);
    mask = std::move(m);
  }
  if (tokens.num_tokens() < 2)
    return Errorf(ErrorCode::kInvalidArgument, "{} has {} tokens; training needs at least 2",
                  prefix, tokens.num_tokens());
  return TokenData(prefix, std::move(tokens), std::move(mask));
}

Status TokenData::CheckIds(const int32_t* tokens, int64_t count, int64_t offset) const {
  for (int64_t i = 0; i < count; ++i) {
    if (tokens[i] >= 0 && tokens[i] < vocab_) continue;
    return Errorf(ErrorCode::kCorrupt,
                  "{}.bin: token {} of the stream is id {}, outside the model's vocabulary (0 to "
                  "{}); the data was tokenized with another vocabulary than its stats.json or "
                  "the model's vocab says",
                  prefix_, offset + i, tokens[i], vocab_ - 1);
  }
  return Status::Ok();
}

Status TokenData::Read(int64_t offset, int64_t count, int32_t* tokens, uint8_t* mask) const {
  if (offset < 0 || count < 0 || offset + count > num_tokens())
    return Errorf(ErrorCode::kInvalidArgument, "read of tokens [{}, {}) past the end ({})", offset,
                  offset + count, num_tokens());
  const int32_t* const first = tokens;
  const int64_t first_offset = offset, total = count;
  // the sequence holding `offset`
  size_t seq = std::upper_bound(starts_.begin(), starts_.end(), static_cast<uint64_t>(offset)) -
               starts_.begin() - 1;
  std::vector<int32_t> mask_buf;
  while (count > 0) {
    const int64_t in_seq = offset - static_cast<int64_t>(starts_[seq]);
    const int64_t n = std::min<int64_t>(count, static_cast<int64_t>(starts_[seq + 1]) - offset);
    BM_TRY(tokens_.ReadTokens(seq, in_seq, n, tokens));
    if (mask) {
      if (mask_) {
        mask_buf.resize(n);
        BM_TRY(mask_->ReadTokens(seq, in_seq, n, mask_buf.data()));
        for (int64_t i = 0; i < n; ++i) mask[i] = mask_buf[i] != 0;
      } else {
        std::fill(mask, mask + n, uint8_t{1});
      }
      mask += n;
    }
    tokens += n;
    offset += n;
    count -= n;
    ++seq;
  }
  return vocab_ > 0 ? CheckIds(first, total, first_offset) : Status::Ok();
}

Result<nlohmann::json> ReadDataStats(const std::string& dir) {
  std::ifstream in(dir + "/stats.json");
  if (!in) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Errorf(ErrorCode::kCorrupt, "{}/stats.json is not a JSON object", dir);
  // The keys the trainer reads (with value(), which would throw on another type).
  for (const char* key : {"vocab_size", "eot_id"})
    if (j.contains(key) && !j[key].is_number_integer())
      return Errorf(ErrorCode::kCorrupt, "{}/stats.json: {} must be an integer (got {})", dir, key,
                    j[key].dump());
  return j;
}

}  // namespace bm::train
