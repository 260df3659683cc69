#include "trainer/checkpoint/model_checkpoint.h"

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "trainer/checkpoint/hf_config.h"
#include "trainer/checkpoint/safetensors.h"

namespace bm::train {
namespace {

// [rows, cols] -> [cols, rows], in tiles that stay in cache (a 7B model's matrices are
// hundreds of MB: element by element, every write of a column misses).
void Transpose(const float* in, int64_t rows, int64_t cols, float* out) {
  constexpr int64_t kTile = 64;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) out[c * rows + r] = in[r * cols + c];
    }
}

std::vector<int64_t> CheckpointShape(const ParamTensor& t) {
  if (!t.transposed_in_checkpoint) return t.shape;
  return {t.shape[1], t.shape[0]};
}

// transformers' base_model_prefix: a checkpoint saved from the base model (GPT2Model, LlamaModel)
// names its tensors without it — the GPT-2 weights Hugging Face publishes do — and from_pretrained
// reads either form. The tensor `name` (ours, prefixed) in `file`, under either.
const MappedSafetensors::Tensor* FindTensor(const MappedSafetensors& file, const std::string& name,
                                            Family family) {
  if (const MappedSafetensors::Tensor* t = file.Find(name)) return t;
  const std::string_view prefix = family == Family::kGpt ? "transformer." : "model.";
  return name.starts_with(prefix) ? file.Find(name.substr(prefix.size())) : nullptr;
}

}  // namespace

Status SaveModel(const std::string& dir, const ModelConfig& config, std::span<const float> params,
                 int64_t eot_id) {
  const int64_t total = ParamLayout(config).total();
  if (static_cast<int64_t>(params.size()) != total)
    return Errorf(ErrorCode::kInternal, "SaveModel: {} floats for a model of {}", params.size(),
                  total);
  BM_ASSIGN_OR_RETURN(std::unique_ptr<ModelWriter> writer,
                      ModelWriter::Create(dir, config, eot_id));
  writer->Put(0, params);  // whole units: written straight from `params`
  return writer->Commit();
}

ModelWriter::ModelWriter(const std::string& dir, const ModelConfig& config, int64_t eot_id)
    : dir_(dir), config_(config), eot_id_(eot_id), layout_(config) {}

ModelWriter::~ModelWriter() = default;

Result<std::unique_ptr<ModelWriter>> ModelWriter::Create(const std::string& dir,
                                                         const ModelConfig& config,
                                                         int64_t eot_id) {
  std::unique_ptr<ModelWriter> w(new ModelWriter(dir, config, eot_id));
  std::vector<SafetensorsWriter::Tensor> tensors;
  int64_t widest = 0;
  for (const ParamTensor& t : w->layout_.tensors()) {
    tensors.push_back({t.name, CheckpointShape(t)});
    if (t.transposed_in_checkpoint) widest = std::max(widest, t.numel);
  }
  BM_ASSIGN_OR_RETURN(
      w->file_, SafetensorsWriter::Create(dir + "/" + kModelFile, tensors, {{"format", "pt"}}));
  w->transposed_.resize(static_cast<size_t>(widest));
  return w;
}

void ModelWriter::Put(int64_t begin, std::span<const float> values) {
  // A piece may span units (SaveModel's whole buffer): one unit at a time.
  while (failed_.ok() && !values.empty()) {
    const int64_t end = begin + static_cast<int64_t>(values.size());
    if (unit_ >= layout_.units().size()) {
      failed_ = Errorf(ErrorCode::kInternal, "ModelWriter: values [{}, {}) after the last unit",
                       begin, end);
      return;
    }
    const ParamUnit& u = layout_.units()[unit_];
    if (begin < u.offset || begin >= u.offset + u.numel) {
      failed_ = Errorf(ErrorCode::kInternal,
                       "ModelWriter: values [{}, {}) outside unit '{}' [{}, {}), the one being "
                       "written",
                       begin, end, u.name, u.offset, u.offset + u.numel);
      return;
    }
    const int64_t n = std::min(end, u.offset + u.numel) - begin;
    failed_ = PutInUnit(begin, values.first(static_cast<size_t>(n)));
    begin += n;
    values = values.subspan(static_cast<size_t>(n));
  }
}

Status ModelWriter::PutInUnit(int64_t begin, std::span<const float> values) {
  const ParamUnit& u = layout_.units()[unit_];
  const int64_t n = static_cast<int64_t>(values.size());
  if (received_ == 0 && n == u.numel) return WriteUnit(values.data());  // whole: no copy
  if (buffer_.empty()) buffer_.resize(static_cast<size_t>(u.numel));
  std::copy(values.begin(), values.end(), buffer_.begin() + (begin - u.offset));
  received_ += n;
  if (received_ > u.numel)
    return Errorf(ErrorCode::kInternal, "ModelWriter: {} values for unit '{}' of {}", received_,
                  u.name, u.numel);
  if (received_ < u.numel) return Status::Ok();
  BM_TRY(WriteUnit(buffer_.data()));
  buffer_ = {};
  return Status::Ok();
}

Status ModelWriter::WriteUnit(const float* unit) {
  const ParamUnit& u = layout_.units()[unit_];
  for (const ParamTensor& t : layout_.tensors()) {
    if (t.offset < u.offset || t.offset >= u.offset + u.numel) continue;
    const float* data = unit + (t.offset - u.offset);
    if (t.transposed_in_checkpoint) {
      Transpose(data, t.shape[0], t.shape[1], transposed_.data());
      data = transposed_.data();
    }
    BM_TRY(file_->Append(data, t.numel));
  }
  ++unit_;
  received_ = 0;
  return Status::Ok();
}

Status ModelWriter::Commit() {
  BM_TRY(failed_);
  if (unit_ != layout_.units().size())
    return Errorf(ErrorCode::kInternal, "ModelWriter: {} of the model's {} units came whole", unit_,
                  layout_.units().size());
  BM_TRY(file_->Commit());
  return WriteFileAtomically(dir_ + "/" + kConfigFile,
                             HuggingFaceConfig(config_, eot_id_).dump(2) + "\n");
}

Result<ParamSource> CheckpointParameters(const std::string& path, const ModelConfig& config) {
  BM_ASSIGN_OR_RETURN(MappedSafetensors mapped, MappedSafetensors::Open(path));
  auto file = std::make_shared<const MappedSafetensors>(std::move(mapped));
  auto layout = std::make_shared<const ParamLayout>(config);
  // file->tensors()' entry of each layout tensor
  auto of = std::make_shared<std::vector<const MappedSafetensors::Tensor*>>();
  std::set<std::string> expected;  // the file's names of the model's tensors
  for (const ParamTensor& t : layout->tensors()) {
    const MappedSafetensors::Tensor* n = FindTensor(*file, t.name, config.family);
    if (!n)
      return Errorf(ErrorCode::kInvalidArgument, "{}: tensor {} is missing (the model needs it)",
                    path, t.name);
    std::vector<int64_t> shape = CheckpointShape(t);
    if (n->shape != shape)
      return Errorf(ErrorCode::kInvalidArgument, "{}: tensor {} has shape {}, the model needs {}",
                    path, n->name, nlohmann::json(n->shape).dump(), nlohmann::json(shape).dump());
    expected.insert(n->name);
    of->push_back(n);
  }
  for (const MappedSafetensors::Tensor& n : file->tensors()) {
    // HF GPT-2 files may carry attention-mask buffers; they are not parameters.
    if (n.name.ends_with(".attn.bias") || n.name.ends_with(".attn.masked_bias")) continue;
    if (n.name == "lm_head.weight" && config.tied_embeddings) continue;
    if (!expected.count(n.name))
      return Errorf(ErrorCode::kInvalidArgument, "{}: unexpected tensor {} (not in a {} model)",
                    path, n.name, FamilyName(config.family));
  }
  return ParamSource([file, layout, of](int64_t begin, std::span<float> out) {
    ForEachTensorRange(*layout, begin, static_cast<int64_t>(out.size()),
                       [&](size_t t, int64_t first, int64_t n, int64_t at) {
                         const ParamTensor& p = layout->tensors()[t];
                         const MappedSafetensors::Tensor& f = *(*of)[t];
                         if (!p.transposed_in_checkpoint) {
                           file->Read(f, first, out.subspan(at, n));
                           return;
                         }
                         // trainer [rows, cols] element (r, c) is the file's (c, r)
                         const int64_t rows = p.shape[0], cols = p.shape[1];
#pragma omp parallel for schedule(static)
                         for (int64_t j = 0; j < n; ++j) {
                           const int64_t e = first + j;
                           out[at + j] = file->At(f, (e % cols) * rows + e / cols);
                         }
                       });
  });
}

Result<std::vector<float>> LoadParameters(const std::string& path, const ModelConfig& config) {
  BM_ASSIGN_OR_RETURN(ParamSource source, CheckpointParameters(path, config));
  std::vector<float> params(ParamLayout(config).total());
  source(0, params);
  return params;
}

Result<ModelConfig> ReadCheckpointConfig(const std::string& dir) {
  BM_ASSIGN_OR_RETURN(std::string text, ReadFileBytes(dir + "/" + kConfigFile));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return Errorf(ErrorCode::kCorrupt, "{}/{} is not JSON", dir, kConfigFile);
  Result<ModelConfig> c = ModelConfigFromHuggingFace(j);
  if (!c.ok()) return c.status().WithContext(dir + "/" + kConfigFile);
  return c;
}

}  // namespace bm::train
