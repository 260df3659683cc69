#include "rules/text/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include "base/real_filesystem.h"
#include "rules/text/chunked_encode.h"

namespace bm::text {
namespace {

// The few ModelProto fields (sentencepiece_model.proto) that decide whether
// cutting at newlines is exact. libsentencepiece does not expose them, and
// its generated protobuf header is not installed, so they are read from the
// serialized model with a minimal protobuf wire-format reader.
struct ModelFacts {
  int64_t model_type = 1;                   // TrainerSpec.model_type (3): UNIGRAM = 1, BPE = 2
  bool byte_fallback = false;               // TrainerSpec.byte_fallback (35)
  bool treat_whitespace_as_suffix = false;  // TrainerSpec (24)
  std::string normalizer_name;              // NormalizerSpec.name (1)
  bool has_charsmap = false;                // NormalizerSpec.precompiled_charsmap (2)
  bool add_dummy_prefix = true;             // NormalizerSpec (3)
  bool remove_extra_whitespaces = true;     // NormalizerSpec (4)
};

class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}

  // Reads the next field; false at the end or on malformed input.
  bool Next(uint32_t* field, uint64_t* varint, std::string_view* bytes) {
    if (pos_ >= data_.size()) return false;
    uint64_t tag;
    if (!Varint(&tag)) return false;
    *field = static_cast<uint32_t>(tag >> 3);
    switch (tag & 7) {
      case 0:
        return Varint(varint);
      case 1:
        return Skip(8);
      case 5:
        return Skip(4);
      case 2: {
        uint64_t n;
        if (!Varint(&n) || n > data_.size() - pos_) return false;
        *bytes = data_.substr(pos_, n);
        pos_ += n;
        return true;
      }
      default:
        return false;
    }
  }

 private:
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64 && pos_ < data_.size(); shift += 7) {
      const auto b = static_cast<uint8_t>(data_[pos_++]);
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  bool Skip(size_t n) {
    if (n > data_.size() - pos_) return false;
    pos_ += n;
    return true;
  }

  std::string_view data_;
  size_t pos_ = 0;
};

ModelFacts ReadFacts(std::string_view model) {
  ModelFacts f;
  WireReader top(model);
  uint32_t field;
  uint64_t v = 0;
  std::string_view bytes;
  while (top.Next(&field, &v, &bytes)) {
    if (field == 2) {
      WireReader spec(bytes);
      std::string_view unused;
      while (spec.Next(&field, &v, &unused)) {
        if (field == 3) f.model_type = static_cast<int64_t>(v);
        if (field == 35) f.byte_fallback = v != 0;
        if (field == 24) f.treat_whitespace_as_suffix = v != 0;
      }
    } else if (field == 3) {
      WireReader spec(bytes);
      std::string_view s;
      while (spec.Next(&field, &v, &s)) {
        if (field == 1) f.normalizer_name = std::string(s);
        if (field == 2) f.has_charsmap = !s.empty();
        if (field == 3) f.add_dummy_prefix = v != 0;
        if (field == 4) f.remove_extra_whitespaces = v != 0;
      }
    }
  }
  return f;
}

// A NormalizerSpec { add_dummy_prefix: false } appended to a serialized
// ModelProto: protobuf merges a repeated embedded message field into the
// first, so the model is the same but for the dummy prefix.
constexpr char kNoDummyPrefix[] = {0x1a, 0x02, 0x18, 0x00};

Status FromSp(const sentencepiece::util::Status& s, std::string_view origin) {
  if (s.ok()) return Status::Ok();
  return Errorf(ErrorCode::kCorrupt, "{}: not a SentencePiece model ({})", origin, s.ToString());
}

}  // namespace

struct SentencePieceTokenizer::Impl {
  sentencepiece::SentencePieceProcessor first;  // as the model says
  sentencepiece::SentencePieceProcessor rest;   // the same without the dummy prefix
  bool by_line = false;
  bool dummy_prefix = true;  // NormalizerSpec.add_dummy_prefix

  void EncodeOne(const sentencepiece::SentencePieceProcessor& sp, std::string_view text,
                 std::vector<int>* scratch, std::vector<int32_t>* out) const {
    scratch->clear();
    // Encode fails only on an unloaded model.
    (void)sp.Encode(text, scratch);
    out->insert(out->end(), scratch->begin(), scratch->end());
  }

  // Encodes text, which starts at the beginning of the whole text when
  // at_start, line by line.
  void EncodeLines(std::string_view text, bool at_start, std::vector<int32_t>* out) const {
    std::vector<int> scratch;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      end = end == std::string_view::npos ? text.size() : end + 1;
      EncodeOne(at_start && pos == 0 ? first : rest, text.substr(pos, end - pos), &scratch, out);
      pos = end;
    }
  }
};

SentencePieceTokenizer::SentencePieceTokenizer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
SentencePieceTokenizer::~SentencePieceTokenizer() = default;

Result<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::Open(
    const std::string& path) {
  BM_ASSIGN_OR_RETURN(std::string bytes, DiskFilesystem().ReadFile(path));
  return FromSerialized(std::move(bytes), path);
}

Result<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::FromSerialized(
    std::string serialized, std::string_view origin) {
  auto impl = std::make_unique<Impl>();
  BM_TRY(FromSp(impl->first.LoadFromSerializedProto(serialized), origin));
  const ModelFacts facts = ReadFacts(serialized);
  bool newline_in_pieces = false;
  for (int id = 0; id < impl->first.GetPieceSize(); ++id) {
    newline_in_pieces |= impl->first.IdToPiece(id).find('\n') != std::string::npos;
  }
  impl->by_line = facts.model_type == 2 && facts.normalizer_name == "identity" &&
                  !facts.has_charsmap && !facts.remove_extra_whitespaces &&
                  !facts.treat_whitespace_as_suffix && facts.byte_fallback && !newline_in_pieces;
  impl->dummy_prefix = facts.add_dummy_prefix;
  serialized.append(kNoDummyPrefix, sizeof(kNoDummyPrefix));
  BM_TRY(FromSp(impl->rest.LoadFromSerializedProto(serialized), origin));
  return std::unique_ptr<SentencePieceTokenizer>(new SentencePieceTokenizer(std::move(impl)));
}

size_t SentencePieceTokenizer::vocab_size() const {
  return static_cast<size_t>(impl_->first.GetPieceSize());
}

std::optional<int32_t> SentencePieceTokenizer::bos_id() const {
  const int id = impl_->first.bos_id();
  return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
}

std::optional<int32_t> SentencePieceTokenizer::eos_id() const {
  const int id = impl_->first.eos_id();
  return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
}

bool SentencePieceTokenizer::encodes_by_line() const { return impl_->by_line; }

int32_t SentencePieceTokenizer::unk_id() const { return impl_->first.unk_id(); }

std::string SentencePieceTokenizer::Piece(int32_t id) const {
  if (id < 0 || id >= impl_->first.GetPieceSize()) return "";
  return impl_->first.IdToPiece(id);
}

SentencePieceTokenizer::PieceBytes SentencePieceTokenizer::Bytes(int32_t id) const {
  const sentencepiece::SentencePieceProcessor& sp = impl_->first;
  if (id < 0 || id >= sp.GetPieceSize() || sp.IsControl(id) || sp.IsUnknown(id)) return {};
  const std::string piece = sp.IdToPiece(id);
  if (sp.IsByte(id)) {  // "<0xNN>"
    return {PieceBytes::kByte,
            std::string(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)))};
  }
  std::string text;
  static constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581
  for (size_t i = 0; i < piece.size();) {
    if (std::string_view(piece).substr(i, kSpace.size()) == kSpace) {
      text += ' ';
      i += kSpace.size();
    } else {
      text += piece[i++];
    }
  }
  return {PieceBytes::kText, std::move(text)};
}

bool SentencePieceTokenizer::adds_dummy_prefix() const { return impl_->dummy_prefix; }

void SentencePieceTokenizer::EncodeWithoutDummyPrefix(std::string_view text,
                                                      std::vector<int32_t>* out) const {
  if (impl_->by_line) {
    impl_->EncodeLines(text, false, out);
    return;
  }
  std::vector<int> scratch;
  impl_->EncodeOne(impl_->dummy_prefix ? impl_->rest : impl_->first, text, &scratch, out);
}

void SentencePieceTokenizer::Encode(std::string_view text, std::vector<int32_t>* out) const {
  if (impl_->by_line) {
    impl_->EncodeLines(text, true, out);
    return;
  }
  std::vector<int> scratch;
  impl_->EncodeOne(impl_->first, text, &scratch, out);
}

std::vector<int32_t> SentencePieceTokenizer::EncodeParallel(std::string_view text,
                                                            int threads) const {
  if (threads <= 1 || !impl_->by_line) return Encode(text);
  return EncodeChunks(
      text, ChunkStarts(text, static_cast<size_t>(threads) * 4, 1 << 16, CutRule::kAfterNewline),
      threads, [this](std::string_view chunk, size_t offset, std::vector<int32_t>* out) {
        impl_->EncodeLines(chunk, offset == 0, out);
      });
}

Status SentencePieceTokenizer::Decode(std::span<const int32_t> ids, std::string* out) const {
  const int size = impl_->first.GetPieceSize();
  std::vector<int> checked;
  checked.reserve(ids.size());
  for (const int32_t id : ids) {
    if (id < 0 || id >= size) {
      std::string before;
      if (!checked.empty()) (void)impl_->first.Decode(checked, &before);
      out->append(before);
      return Errorf(ErrorCode::kInvalidArgument, "id {} is not a token of this SentencePiece model",
                    id);
    }
    checked.push_back(id);
  }
  std::string text;
  const auto s = impl_->first.Decode(checked, &text);
  if (!s.ok()) return Errorf(ErrorCode::kInvalidArgument, "cannot decode: {}", s.ToString());
  out->append(text);
  return Status::Ok();
}

}  // namespace bm::text
