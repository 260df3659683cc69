#include "rules/pretokenized_input.h"

#include "base/formats/npy.h"

namespace bm::rules {
namespace {

Result<std::vector<int32_t>> LoadIds(const std::string& path, size_t vocab_size) {
  BM_ASSIGN_OR_RETURN(formats::NpyArray array, formats::ReadNpy(path));
  if (array.shape.size() != 1) {
    return Errorf(ErrorCode::kInvalidArgument, "{}: expected a 1-D id array, shape has {} dims",
                  path, array.shape.size());
  }
  BM_ASSIGN_OR_RETURN(std::vector<int64_t> wide, array.ToInt64());
  std::vector<int32_t> ids(wide.size());
  for (size_t i = 0; i < wide.size(); ++i) {
    if (wide[i] < 0 || static_cast<uint64_t>(wide[i]) >= vocab_size) {
      return Errorf(ErrorCode::kInvalidArgument,
                    "{}: id {} at position {} is outside the tokenizer's vocabulary (0 to {}): "
                    "were these ids made with another tokenizer?",
                    path, wide[i], i, vocab_size - 1);
    }
    ids[i] = static_cast<int32_t>(wide[i]);
  }
  return ids;
}

}  // namespace

Result<ConvertedStats> ConvertPaddle(const std::string& ids_path, const std::string& idx_path,
                                     size_t vocab_size, SplitDatasetWriter& writer) {
  BM_ASSIGN_OR_RETURN(std::vector<int32_t> ids, LoadIds(ids_path, vocab_size));
  BM_ASSIGN_OR_RETURN(auto arrays, formats::ReadNpz(idx_path));
  if (!arrays.contains("lens") || !arrays.contains("docs")) {
    return Errorf(ErrorCode::kCorrupt, "{}: needs arrays 'lens' and 'docs'", idx_path);
  }
  BM_ASSIGN_OR_RETURN(std::vector<int64_t> lens, arrays.at("lens").ToInt64());
  BM_ASSIGN_OR_RETURN(std::vector<int64_t> docs, arrays.at("docs").ToInt64());
  uint64_t total = 0;
  for (int64_t len : lens) {
    if (len < 0) return Errorf(ErrorCode::kCorrupt, "{}: negative sentence length", idx_path);
    total += static_cast<uint64_t>(len);
  }
  if (total != ids.size()) {
    return Errorf(ErrorCode::kCorrupt, "{}: lens sum to {} but {} holds {} ids", idx_path, total,
                  ids_path, ids.size());
  }
  if (docs.empty() || docs.front() != 0 || static_cast<size_t>(docs.back()) != lens.size()) {
    return Errorf(ErrorCode::kCorrupt, "{}: docs must run from 0 to the number of sentences ({})",
                  idx_path, lens.size());
  }
  std::vector<uint64_t> offsets(lens.size() + 1, 0);
  for (size_t i = 0; i < lens.size(); ++i) offsets[i + 1] = offsets[i] + lens[i];
  ConvertedStats stats;
  for (size_t d = 0; d + 1 < docs.size(); ++d) {
    if (docs[d + 1] < docs[d]) {
      return Errorf(ErrorCode::kCorrupt, "{}: docs decreases at entry {}", idx_path, d + 1);
    }
    writer.BeginDocument();
    for (int64_t s = docs[d]; s < docs[d + 1]; ++s) {
      std::span<const int32_t> sentence(ids.data() + offsets[s], static_cast<size_t>(lens[s]));
      BM_TRY(writer.AddSequence(sentence).WithContext(ids_path));
    }
    writer.EndDocument();
    ++stats.documents;
  }
  stats.tokens = ids.size();
  return stats;
}

Result<ConvertedStats> ConvertNpy(const std::string& path, int32_t eot_id, size_t vocab_size,
                                  SplitDatasetWriter& writer) {
  BM_ASSIGN_OR_RETURN(std::vector<int32_t> ids, LoadIds(path, vocab_size));
  ConvertedStats stats;
  size_t begin = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    const bool end_of_doc = i == ids.size() ? i > begin : ids[i] == eot_id;
    if (!end_of_doc) continue;
    const size_t end = i == ids.size() ? i : i + 1;
    writer.BeginDocument();
    BM_TRY(writer.AddSequence(std::span<const int32_t>(ids.data() + begin, end - begin))
               .WithContext(path));
    writer.EndDocument();
    ++stats.documents;
    begin = end;
  }
  stats.tokens = ids.size();
  return stats;
}

}  // namespace bm::rules
