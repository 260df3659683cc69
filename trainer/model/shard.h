// ModelShard: the part of a model that one rank of a `TPxPPyDPz` layout holds,
// and how each of its tensors maps onto the whole model's — the one mapping
// that both backends and the checkpoints use (docs/TRAINER.md, "Tensor and
// pipeline parallelism").
//
// Pipeline parallelism (PP stages): the embeddings, the L layers and the final
// norm + classifier are L + 2 items, the embeddings and the head counted as one
// layer each; stage p holds the items
//     [ floor(p (L+2) / PP), floor((p+1) (L+2) / PP) )
// (item 0 the embeddings, item l+1 layer l, item L+1 the head), so stages
// differ by at most one item. With tied embeddings (GPT) and PP > 1 the last
// stage holds a copy of the token embedding for its classifier; the two copies
// get the sum of both stages' gradients, so they stay equal.
//
// Tensor parallelism (TP ranks, Megatron-LM's split), rank t of TP:
//   column-parallel, rows [out, in] split:
//     q|k|v (GPT c_attn weight and bias; LLaMA q_proj, k_proj, v_proj): the
//       query heads [t NH/TP, (t+1) NH/TP) and the key/value heads
//       [t KVH/TP, (t+1) KVH/TP), each group of the fused q|k|v split apart
//     MLP up (c_fc weight and bias; gate_proj and up_proj each): rows
//       [t F/TP, (t+1) F/TP)
//   row-parallel, columns split: attention output (c_proj, o_proj) and MLP
//     down (mlp.c_proj, down_proj) take the columns that match the rows above;
//     their biases are whole on every rank (added after the all-reduce)
//   vocabulary-parallel: the token embedding and lm_head rows
//     [t Vp/TP, (t+1) Vp/TP) with Vp = V rounded up to a multiple of TP; the
//     rows at or past V are padding: zero, never trained, never in a checkpoint
//   replicated: norms, position embeddings, row-parallel biases. Every TP rank
//     computes the same values and the same gradients for them.
// Widths are checked by CheckModelParallel (trainer/model/config.h): TP must
// divide heads, kv_heads and ffn_hidden.
//
// Values only; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/result.h"
#include "trainer/model/config.h"
#include "trainer/model/layout.h"

namespace bm::train {

// Where a rank sits among the model-parallel ranks of a layout.
struct ModelParallelRank {
  int tp = 1, tp_rank = 0;  // tensor-parallel size and this rank's index
  int pp = 1, pp_rank = 0;  // pipeline stages and this rank's stage
};

// The stage's layers [begin, end) (global indices; may be empty for a first or
// last stage of a short model) and whether it holds the embeddings / the head.
struct PipelineStage {
  int64_t layer_begin = 0, layer_end = 0;
  bool embeddings = false, head = false;
};
// Preconditions: 1 <= pp <= layers, 0 <= stage < pp.
PipelineStage StageOf(int64_t layers, int pp, int stage);

class ModelShard {
 public:
  // A contiguous copy between a local tensor and the whole model's flat
  // buffer: `rows` runs of `width` floats, at local + r * local_stride and
  // full + r * full_stride (offsets in floats, flat buffers).
  struct Block {
    int64_t local = 0, full = 0, rows = 1, width = 0, local_stride = 0, full_stride = 0;
    int tensor = 0;  // the local tensor's index
  };

  // Errors: CheckModelParallel's; kInvalidArgument for a rank outside the layout.
  static Result<ModelShard> Make(const ModelConfig& config, ModelParallelRank rank);
  // The whole model (TP1PP1). Precondition: Validate(config) is OK.
  static ModelShard Whole(const ModelConfig& config);

  const ModelConfig& config() const { return config_; }  // the whole model's
  const ModelParallelRank& rank() const { return rank_; }
  const ModelPart& part() const { return part_; }
  const ParamLayout& layout() const { return layout_; }  // this rank's tensors
  bool whole() const { return rank_.tp == 1 && rank_.pp == 1; }
  int64_t full_size() const { return full_size_; }  // ParamLayout(config).total()
  // The first vocabulary id of the local embedding / classifier rows, and how
  // many of the local rows are real (the rest are padding).
  int64_t vocab_begin() const { return vocab_begin_; }
  int64_t vocab_real() const { return vocab_real_; }
  // The same embedding / classifier tensor name in either family.
  const ParamTensor* token_embedding() const;
  // The classifier's weight here (lm_head, or the tied token embedding), or
  // nullptr when this stage has no head.
  const ParamTensor* classifier() const;
  // The tied token embedding on the first or the last of several pipeline
  // stages, whose gradients those two stages add to each other after the step's
  // backward (trainer/dist/pipeline_driver.h); else nullptr.
  const ParamTensor* tied_across_stages() const;

  const std::vector<Block>& blocks() const { return blocks_; }
  // Identical on every tensor-parallel rank (norms, positions, row-parallel biases).
  bool replicated(int tensor) const { return replicated_[tensor]; }
  // The last stage's copy of the tied token embedding.
  bool tied_copy(int tensor) const { return tied_copy_[tensor]; }
  // Whether this rank's copy of a local tensor is the one that counts: in a
  // gathered model, and once in the global gradient norm. False for replicated
  // tensors on TP ranks other than 0 and for the tied copy.
  bool owns(int tensor) const {
    return !tied_copy(tensor) && (!replicated(tensor) || rank_.tp_rank == 0);
  }

  // full (full_size() floats) -> local (layout().total() floats): every local
  // element from the whole model, padding rows zero.
  void Extract(std::span<const float> full, std::span<float> local) const;
  // The same from a source: asks it for this rank's elements only.
  void Extract(const ParamSource& full, std::span<float> local) const;
  // local -> full: writes the elements this rank owns; others are untouched.
  // The owners of all TP x PP shards together write every element once.
  void Place(std::span<const float> local, std::span<float> full) const;
  // The local ranges [begin, end) of the tensors this rank owns, adjacent
  // ones merged: Σ g² over them, summed over the TP x PP ranks, counts every
  // parameter of the model exactly once (the whole layout for TP1PP1).
  std::vector<std::pair<int64_t, int64_t>> OwnedRanges() const;

 private:
  ModelShard(const ModelConfig& config, ModelParallelRank rank, const ModelPart& part);

  ModelConfig config_;
  ModelParallelRank rank_;
  ModelPart part_;
  ParamLayout layout_;
  int64_t full_size_ = 0, vocab_begin_ = 0, vocab_real_ = 0;
  std::vector<Block> blocks_;
  std::vector<bool> replicated_;
  std::vector<bool> tied_copy_;
};

// An all-gather over one model-parallel group: every rank's `count` floats of `send` into
// `recv` (group size x count floats, rank r's at r * count). Empty: a group of one.
using ShardAllGather = std::function<Status(const float* send, float* recv, int64_t count)>;

// Every TP x PP shard's `local` (its layout().total() floats) gathered into the whole model's
// `whole` (full_size() floats) on every rank of the TP x PP group: an all-gather over the TP
// group (equal shards), then one over the PP group (each stage's TP shards, padded to the
// largest stage), then each shard places the elements it owns (Place). Copies only: the whole
// model has the shards' exact bits. Collective over both groups.
Status GatherShards(const ModelShard& me, std::span<const float> local, std::span<float> whole,
                    const ShardAllGather& tp, const ShardAllGather& pp);

// Point-to-point messages of host floats over one model-parallel group: blocking send / receive
// of `count` floats to / from a peer (its index in the group); unused in a group of one.
struct ShardLink {
  std::function<Status(const float* data, int64_t count, int peer)> send;
  std::function<Status(float* data, int64_t count, int peer)> recv;
};

// Every TP x PP shard's `local` placed into `whole` on the group's first rank (TP rank 0 of
// stage 0) only, one shard at a time: TP rank t > 0 sends its shard to its stage's TP rank 0;
// stage p > 0's TP rank 0 passes each of its stage's shards on to the first rank over the PP
// group. No rank holds more than its own shard and one received one, and the first rank the
// whole model besides. `whole`: full_size() floats on the first rank (empty there: the shards
// are received and dropped), empty elsewhere (else kInvalidArgument). Copies only, as
// GatherShards. Collective over both groups.
Status GatherShardsToFirst(const ModelShard& me, std::span<const float> local,
                           std::span<float> whole, const ShardLink& tp, const ShardLink& pp);

}  // namespace bm::train
