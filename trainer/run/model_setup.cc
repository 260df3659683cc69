#include "trainer/run/model_setup.h"

#include <filesystem>

#include "trainer/checkpoint/model_checkpoint.h"

namespace bm::train {

Result<ModelSetup> SetUpModel(const RunConfig& run, const nlohmann::json& stats) {
  namespace fs = std::filesystem;
  ModelSetup setup;
  const int64_t data_vocab = stats.value("vocab_size", int64_t{0});
  if (run.mode == RunMode::kPretrain && run.init.empty()) {
    BM_ASSIGN_OR_RETURN(setup.model, Preset(run.preset));
    BM_ASSIGN_OR_RETURN(setup.model, ApplyOverrides(setup.model, run.overrides));
    if (!run.overrides.contains("vocab") && data_vocab > 0) setup.model.vocab = data_vocab;
  } else {
    fs::path init(run.init);
    fs::path dir = fs::is_directory(init) ? init : init.parent_path();
    fs::path file = fs::is_directory(init) ? init / kModelFile : init;
    if (!fs::exists(file))
      return Errorf(ErrorCode::kNotFound, "init checkpoint {} does not exist", file.string());
    BM_ASSIGN_OR_RETURN(setup.model, ReadCheckpointConfig(dir.string()));
    Result<ParamSource> loaded = CheckpointParameters(file.string(), setup.model);
    if (!loaded.ok()) return loaded.status().WithContext("loading init");
    setup.loaded = std::move(*loaded);
    setup.init_file = file.string();
  }
  BM_TRY(Validate(setup.model));
  if (run.mpe > setup.model.max_seq)
    return Errorf(ErrorCode::kInvalidArgument, "mpe ({}) exceeds the model's max_seq ({})", run.mpe,
                  setup.model.max_seq);
  if (data_vocab > setup.model.vocab)
    return Errorf(
        ErrorCode::kInvalidArgument,
        "the data's vocabulary ({} tokens, stats.json) does not fit the model's vocab ({})",
        data_vocab, setup.model.vocab);
  return setup;
}

}  // namespace bm::train
