#include "trainer/cuda/shard_map.h"

#include <fmt/format.h>

#include <string>

namespace bm::train::cuda {

ModelSpec SpecOfShard(const train::ModelConfig& c, const ModelShard& shard) {
  ModelSpec spec;
  spec.family = c.family == train::Family::kGpt ? Family::kGpt : Family::kLlama;
  spec.vocab = static_cast<int>(c.vocab);
  spec.hidden = static_cast<int>(c.hidden);
  spec.layers = static_cast<int>(c.layers);
  spec.heads = static_cast<int>(c.heads);
  spec.kv_heads = static_cast<int>(c.kv_heads);
  spec.ffn = static_cast<int>(c.ffn_hidden);
  spec.max_positions = static_cast<int>(c.max_seq);
  spec.tied = c.tied_embeddings;
  spec.rope_theta = c.rope_theta;
  spec.norm_eps = static_cast<float>(c.norm_eps);
  const ModelParallelRank& r = shard.rank();
  spec.tp = r.tp;
  spec.tp_rank = r.tp_rank;
  spec.pp = r.pp;
  spec.pp_rank = r.pp_rank;
  spec.layer_begin = static_cast<int>(shard.part().layer_begin);
  spec.layer_end = static_cast<int>(shard.part().layer_end);
  spec.embeddings = shard.part().embeddings;
  spec.head = shard.part().head;
  return spec;
}

Result<std::vector<TensorSpan>> MapOntoTrainer(const ParamLayout& gpu,
                                               const train::ParamLayout& host) {
  std::vector<TensorSpan> spans;
  size_t mapped = 0;
  for (const ParamTensor& t : gpu.tensors()) {
    std::string name = t.name;
    size_t pos;
    if ((pos = name.find("qkv_proj")) != std::string::npos) name.replace(pos, 8, "q_proj");
    if ((pos = name.find("gate_up_proj")) != std::string::npos) name.replace(pos, 12, "gate_proj");
    const train::ParamTensor* h = host.Find(name);
    if (!h) {
      return Errorf(ErrorCode::kInternal, "CUDA layout tensor {} has no trainer tensor {}", t.name,
                    name);
    }
    if (static_cast<size_t>(h->offset) + t.numel() > static_cast<size_t>(host.total())) {
      return Errorf(ErrorCode::kInternal, "CUDA tensor {} ({} floats) overruns the trainer layout",
                    t.name, t.numel());
    }
    spans.push_back({t.offset, static_cast<size_t>(h->offset), t.numel(), host.Index(name)});
    mapped += t.numel();
  }
  if (mapped != static_cast<size_t>(host.total())) {
    return Errorf(ErrorCode::kInternal, "CUDA layout covers {} of the trainer's {} parameters",
                  mapped, host.total());
  }
  return spans;
}

}  // namespace bm::train::cuda
