#include "rules/split_dataset_writer.h"

#include <unistd.h>

namespace bm::rules {

using formats::DType;
using formats::IndexedDatasetWriter;

bool SplitRule::IsValid(uint64_t document_index) const {
  uint64_t z = seed + document_index * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 < valid_fraction;
}

Result<SplitDatasetWriter> SplitDatasetWriter::Create(const std::string& dir, DType dtype,
                                                      bool with_masks, SplitRule split) {
  SplitDatasetWriter w;
  w.dir_ = dir;
  w.split_ = split;
  w.with_masks_ = with_masks;
  const char* names[2] = {"train", "valid"};
  for (int side = 0; side < 2; ++side) {
    BM_ASSIGN_OR_RETURN(IndexedDatasetWriter ids,
                        IndexedDatasetWriter::Create(dir + "/" + names[side], dtype));
    w.ids_[side].emplace(std::move(ids));
    if (with_masks) {
      BM_ASSIGN_OR_RETURN(
          IndexedDatasetWriter m,
          IndexedDatasetWriter::Create(dir + "/" + names[side] + "_mask", DType::kUInt8));
      w.masks_[side].emplace(std::move(m));
    }
  }
  return w;
}

void SplitDatasetWriter::BeginDocument() { current_valid_ = split_.IsValid(next_index_++); }

Status SplitDatasetWriter::AddSequence(std::span<const int32_t> ids,
                                       std::span<const uint8_t> mask) {
  const int side = current_valid_ ? 1 : 0;
  BM_TRY(ids_[side]->AddSequence(ids));
  if (with_masks_) {
    if (!mask.empty() && mask.size() != ids.size()) {
      return Errorf(ErrorCode::kInternal, "mask of {} values for {} tokens", mask.size(),
                    ids.size());
    }
    mask_buffer_.assign(ids.size(), 1);
    for (size_t i = 0; i < mask.size(); ++i) mask_buffer_[i] = mask[i];
    BM_TRY(masks_[side]->AddSequence(mask_buffer_));
  }
  Side& s = current_valid_ ? valid_ : train_;
  ++s.sequences;
  s.tokens += ids.size();
  return Status::Ok();
}

void SplitDatasetWriter::EndDocument() {
  const int side = current_valid_ ? 1 : 0;
  ids_[side]->EndDocument();
  if (with_masks_) masks_[side]->EndDocument();
  ++(current_valid_ ? valid_ : train_).documents;
}

Status SplitDatasetWriter::Finish() {
  const char* names[2] = {"train", "valid"};
  std::vector<std::string> published;
  for (int side = 0; side < 2; ++side) {
    Status st = ids_[side]->Finish();
    if (st.ok()) published.push_back(dir_ + "/" + names[side]);
    if (st.ok() && with_masks_) {
      st = masks_[side]->Finish();
      if (st.ok()) published.push_back(dir_ + "/" + names[side] + "_mask");
    }
    if (!st.ok()) {
      for (const std::string& prefix : published) {
        ::unlink((prefix + ".bin").c_str());
        ::unlink((prefix + ".idx").c_str());
      }
      return st;
    }
  }
  return Status::Ok();
}

}  // namespace bm::rules
