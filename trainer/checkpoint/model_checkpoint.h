// Model checkpoints: a directory with model.safetensors (Hugging Face tensor
// names, fp32; GPT-2's Conv1D weights transposed to [in, out] as HF stores
// them) and config.json (trainer/checkpoint/hf_config.h).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "trainer/model/config.h"
#include "trainer/model/layout.h"

namespace bm::train {

inline constexpr char kModelFile[] = "model.safetensors";
inline constexpr char kConfigFile[] = "config.json";
// The subdirectory of a run's out_dir that holds its starting model (RunConfig::save_init), in
// the same format: init/model.safetensors + init/config.json.
inline constexpr char kInitDir[] = "init";

// Writes DIR/model.safetensors and DIR/config.json (atomically each).
Status SaveModel(const std::string& dir, const ModelConfig& config, std::span<const float> params,
                 int64_t eot_id);

class SafetensorsWriter;

// SaveModel as the parameters come, from a gather that hands them over unit by unit
// (Backend::GetParametersTo): pieces of the flat buffer (ParamLayout order), each inside one
// unit, the units in order, a unit's pieces in any order. It holds at most one unit (a 7B
// layer: 808 MB) when the pieces are smaller, none when a piece is a whole unit; never the
// model. Put's failures are kept and returned by Commit, so that a Put that cannot return a
// Status (a gather's sink) loses none.
class ModelWriter {
 public:
  static Result<std::unique_ptr<ModelWriter>> Create(const std::string& dir,
                                                     const ModelConfig& config, int64_t eot_id);
  ~ModelWriter();
  void Put(int64_t begin, std::span<const float> values);
  // model.safetensors, then config.json; kInternal unless every unit came whole.
  Status Commit();

 private:
  ModelWriter(const std::string& dir, const ModelConfig& config, int64_t eot_id);
  Status PutInUnit(int64_t begin, std::span<const float> values);
  Status WriteUnit(const float* unit);  // the current unit's tensors, then the next unit

  std::string dir_;
  ModelConfig config_;
  int64_t eot_id_;
  ParamLayout layout_;
  std::unique_ptr<SafetensorsWriter> file_;
  size_t unit_ = 0;            // the unit being written
  std::vector<float> buffer_;  // its values, when they come in pieces
  int64_t received_ = 0;       // of its values
  std::vector<float> transposed_;
  Status failed_;
};

// Reads parameters for `config` from a safetensors file into layout order. A tensor may also
// be named without transformers' base_model_prefix ("transformer." for gpt, "model." for
// llama), as a base model's checkpoint names it (the published GPT-2 weights).
// Refuses, naming the tensor, a missing tensor, an unexpected one, or a shape
// that differs from the model's ("tensor X has shape [64, 32] in FILE, the
// model needs [64, 64]"); and any file the safetensors reader refuses.
Result<std::vector<float>> LoadParameters(const std::string& safetensors_path,
                                          const ModelConfig& config);
// The same checks, then the parameters by range (trainer/model/layout.h's ParamSource) from
// the file mapped read-only: values are read (and widened, transposed) only as they are asked
// for, so each rank of a run reads only what it keeps and none holds the file. The source
// keeps the mapping alive.
Result<ParamSource> CheckpointParameters(const std::string& safetensors_path,
                                         const ModelConfig& config);

// The ModelConfig of a checkpoint directory (its config.json).
Result<ModelConfig> ReadCheckpointConfig(const std::string& dir);

}  // namespace bm::train
