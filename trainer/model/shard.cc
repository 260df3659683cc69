#include "trainer/model/shard.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string_view>

namespace bm::train {
namespace {

// How a tensor is split across tensor-parallel ranks (shard.h).
enum class Split {
  kReplicated,  // whole on every rank
  kVocabRows,   // rows [t Vp/TP, (t+1) Vp/TP) ∩ [0, V)
  kFusedQkv,    // the query rows of the rank's heads, then its key rows, then its value rows
  kQueryRows,   // LLaMA q_proj
  kKvRows,      // LLaMA k_proj, v_proj
  kFfnRows,     // MLP up: c_fc, gate_proj, up_proj
  kQueryCols,   // attention output: c_proj, o_proj
  kFfnCols,     // MLP down: mlp.c_proj, down_proj
};

Split SplitOf(std::string_view name) {
  auto ends = [&](std::string_view suffix) { return name.ends_with(suffix); };
  if (ends("wte.weight") || ends("embed_tokens.weight") || name == "lm_head.weight")
    return Split::kVocabRows;
  if (ends("attn.c_attn.weight") || ends("attn.c_attn.bias")) return Split::kFusedQkv;
  if (ends("q_proj.weight")) return Split::kQueryRows;
  if (ends("k_proj.weight") || ends("v_proj.weight")) return Split::kKvRows;
  if (ends("mlp.c_fc.weight") || ends("mlp.c_fc.bias") || ends("gate_proj.weight") ||
      ends("up_proj.weight"))
    return Split::kFfnRows;
  if (ends("attn.c_proj.weight") || ends("o_proj.weight")) return Split::kQueryCols;
  if (ends("mlp.c_proj.weight") || ends("down_proj.weight")) return Split::kFfnCols;
  return Split::kReplicated;  // norms, wpe, the row-parallel biases
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

PipelineStage StageOf(int64_t layers, int pp, int stage) {
  const int64_t items = layers + 2;
  const int64_t a = stage * items / pp, b = (stage + 1) * items / pp;
  PipelineStage s;
  s.embeddings = a == 0;
  s.head = b == items;
  s.layer_begin = std::max<int64_t>(a, 1) - 1;
  s.layer_end = std::min<int64_t>(b, layers + 1) - 1;
  if (s.layer_end < s.layer_begin) s.layer_end = s.layer_begin;
  return s;
}

ModelShard::ModelShard(const ModelConfig& config, ModelParallelRank rank, const ModelPart& part)
    : config_(config), rank_(rank), part_(part), layout_(config, part) {
  const ParamLayout full(config);
  full_size_ = full.total();
  vocab_begin_ = rank.tp_rank * part.vocab;
  vocab_real_ = std::clamp<int64_t>(config.vocab - vocab_begin_, 0, part.vocab);
  const int64_t C = config.hidden, HS = config.head_dim(), t = rank.tp_rank;
  const int64_t Q = part.heads * HS, KV = part.kv_heads * HS, F = part.ffn_hidden;
  const int n = static_cast<int>(layout_.tensors().size());
  replicated_.assign(n, false);
  tied_copy_.assign(n, false);
  for (int i = 0; i < n; ++i) {
    const ParamTensor& lt = layout_.tensors()[i];
    const ParamTensor& ft = *full.Find(lt.name);
    const int64_t width = lt.shape.size() == 2 ? lt.shape[1] : 1;
    // `count` rows of the full tensor from `full_row`, to local rows from `local_row`.
    auto rows = [&](int64_t full_row, int64_t local_row, int64_t count) {
      if (count > 0)
        blocks_.push_back({lt.offset + local_row * width, ft.offset + full_row * width, 1,
                           count * width, 0, 0, i});
    };
    switch (SplitOf(lt.name)) {
      case Split::kReplicated:
        replicated_[i] = true;
        rows(0, 0, lt.shape[0]);
        break;
      case Split::kVocabRows:
        tied_copy_[i] = part.tied_copy && lt.offset >= layout_.units().back().offset;
        rows(vocab_begin_, 0, vocab_real_);
        break;
      case Split::kFusedQkv: {
        const int64_t full_kv = config.kv_dim();
        rows(t * Q, 0, Q);
        rows(C + t * KV, Q, KV);
        rows(C + full_kv + t * KV, Q + KV, KV);
        break;
      }
      case Split::kQueryRows:
        rows(t * Q, 0, Q);
        break;
      case Split::kKvRows:
        rows(t * KV, 0, KV);
        break;
      case Split::kFfnRows:
        rows(t * F, 0, F);
        break;
      case Split::kQueryCols:
      case Split::kFfnCols: {
        const int64_t w = lt.shape[1], full_w = ft.shape[1];
        blocks_.push_back({lt.offset, ft.offset + t * w, C, w, w, full_w, i});
        break;
      }
    }
  }
}

Result<ModelShard> ModelShard::Make(const ModelConfig& config, ModelParallelRank rank) {
  BM_TRY(CheckModelParallel(config, rank.tp, rank.pp));
  if (rank.tp_rank < 0 || rank.tp_rank >= rank.tp || rank.pp_rank < 0 || rank.pp_rank >= rank.pp)
    return Errorf(ErrorCode::kInvalidArgument,
                  "model-parallel rank (tp {}, stage {}) outside TP{} PP{}", rank.tp_rank,
                  rank.pp_rank, rank.tp, rank.pp);
  const PipelineStage stage = StageOf(config.layers, rank.pp, rank.pp_rank);
  ModelPart part;
  part.layer_begin = stage.layer_begin;
  part.layer_end = stage.layer_end;
  part.embeddings = stage.embeddings;
  part.head = stage.head;
  part.tied_copy = config.tied_embeddings && stage.head && !stage.embeddings;
  part.vocab = CeilDiv(config.vocab, rank.tp);
  part.heads = config.heads / rank.tp;
  part.kv_heads = config.kv_heads / rank.tp;
  part.ffn_hidden = config.ffn_hidden / rank.tp;
  return ModelShard(config, rank, part);
}

ModelShard ModelShard::Whole(const ModelConfig& config) {
  return ModelShard(config, ModelParallelRank{}, ModelPart::Whole(config));
}

const ParamTensor* ModelShard::token_embedding() const {
  return layout_.Find(config_.family == Family::kLlama ? "model.embed_tokens.weight"
                                                       : "transformer.wte.weight");
}

const ParamTensor* ModelShard::classifier() const {
  if (!part_.head) return nullptr;
  return config_.tied_embeddings ? token_embedding() : layout_.Find("lm_head.weight");
}

const ParamTensor* ModelShard::tied_across_stages() const {
  if (!config_.tied_embeddings || rank_.pp == 1) return nullptr;
  if (rank_.pp_rank != 0 && rank_.pp_rank != rank_.pp - 1) return nullptr;
  return token_embedding();
}

void ModelShard::Extract(std::span<const float> full, std::span<float> local) const {
  Extract(SourceOf(full), local);
}

void ModelShard::Extract(const ParamSource& full, std::span<float> local) const {
  std::fill(local.begin(), local.end(), 0.0f);
  for (const Block& b : blocks_) {
    if (b.full_stride == b.width && b.local_stride == b.width) {  // one run
      full(b.full, local.subspan(b.local, b.rows * b.width));
      continue;
    }
    for (int64_t r = 0; r < b.rows; ++r)
      full(b.full + r * b.full_stride, local.subspan(b.local + r * b.local_stride, b.width));
  }
}

void ModelShard::Place(std::span<const float> local, std::span<float> full) const {
  for (const Block& b : blocks_) {
    if (!owns(b.tensor)) continue;
    for (int64_t r = 0; r < b.rows; ++r)
      std::copy_n(local.data() + b.local + r * b.local_stride, b.width,
                  full.data() + b.full + r * b.full_stride);
  }
}

std::vector<std::pair<int64_t, int64_t>> ModelShard::OwnedRanges() const {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (size_t i = 0; i < layout_.tensors().size(); ++i) {
    if (!owns(static_cast<int>(i))) continue;
    const ParamTensor& t = layout_.tensors()[i];
    if (!ranges.empty() && ranges.back().second == t.offset) {
      ranges.back().second += t.numel;
    } else {
      ranges.emplace_back(t.offset, t.offset + t.numel);
    }
  }
  return ranges;
}

Status GatherShards(const ModelShard& me, std::span<const float> local, std::span<float> whole,
                    const ShardAllGather& tp, const ShardAllGather& pp) {
  const ModelParallelRank r = me.rank();
  std::vector<ModelShard> shards;  // [stage][tp rank]
  int64_t largest = 0;
  for (int p = 0; p < r.pp; ++p)
    for (int t = 0; t < r.tp; ++t) {
      BM_ASSIGN_OR_RETURN(ModelShard s, ModelShard::Make(me.config(), {r.tp, t, r.pp, p}));
      largest = std::max(largest, s.layout().total());
      shards.push_back(std::move(s));
    }
  const int64_t n = me.layout().total();
  // stage p's block: its TP shards at [t * largest, t * largest + size), the rest padding
  std::vector<float> stage(r.tp * largest, 0.0f), all(r.pp * r.tp * largest);
  std::vector<float> mine(largest, 0.0f);
  std::copy(local.begin(), local.begin() + n, mine.begin());
  auto gather = [](const ShardAllGather& g, const float* send, float* recv, int64_t count) {
    if (!g) {
      std::copy(send, send + count, recv);
      return Status::Ok();
    }
    return g(send, recv, count);
  };
  BM_TRY(gather(tp, mine.data(), stage.data(), largest));
  BM_TRY(gather(pp, stage.data(), all.data(), r.tp * largest));
  for (size_t i = 0; i < shards.size(); ++i) {
    const int64_t size = shards[i].layout().total();
    shards[i].Place(std::span<const float>(all.data() + i * largest, size), whole);
  }
  return Status::Ok();
}

Status GatherShardsToFirst(const ModelShard& me, std::span<const float> local,
                           std::span<float> whole, const ShardLink& tp, const ShardLink& pp) {
  const ModelParallelRank r = me.rank();
  const bool first = r.tp_rank == 0 && r.pp_rank == 0;
  if (!first && !whole.empty())
    return Errorf(ErrorCode::kInvalidArgument,
                  "the whole model is gathered onto TP rank 0 of stage 0 only; TP rank {} of "
                  "stage {} passes an empty buffer",
                  r.tp_rank, r.pp_rank);
  if (first && !whole.empty() && static_cast<int64_t>(whole.size()) != me.full_size())
    return Errorf(ErrorCode::kInvalidArgument, "gathering {} floats into a buffer of {}",
                  me.full_size(), whole.size());
  const int64_t n = me.layout().total();
  if (r.tp_rank != 0) return tp.send(local.data(), n, 0);
  // TP rank 0 of a stage: each of the stage's shards, placed here (stage 0) or passed on.
  std::vector<float> received;
  auto take = [&](int t, int p, const ShardLink& from, int peer) -> Result<ModelShard> {
    BM_ASSIGN_OR_RETURN(ModelShard s, ModelShard::Make(me.config(), {r.tp, t, r.pp, p}));
    received.resize(static_cast<size_t>(s.layout().total()));
    BM_TRY(from.recv(received.data(), s.layout().total(), peer));
    return s;
  };
  for (int t = 0; t < r.tp; ++t) {
    std::span<const float> data = local.first(static_cast<size_t>(n));
    std::optional<ModelShard> shard;
    if (t > 0) {
      BM_ASSIGN_OR_RETURN(shard, take(t, r.pp_rank, tp, t));
      data = received;
    }
    if (r.pp_rank > 0) {
      BM_TRY(pp.send(data.data(), static_cast<int64_t>(data.size()), 0));
    } else if (!whole.empty()) {
      (shard ? *shard : me).Place(data, whole);
    }
  }
  if (r.pp_rank > 0) return Status::Ok();
  for (int p = 1; p < r.pp; ++p)
    for (int t = 0; t < r.tp; ++t) {
      BM_ASSIGN_OR_RETURN(ModelShard shard, take(t, p, pp, p));
      if (!whole.empty()) shard.Place(received, whole);
    }
  return Status::Ok();
}

}  // namespace bm::train
