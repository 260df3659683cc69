// The training loop end to end on tiny models: overfitting, accumulation,
// determinism, kill-and-resume, divergence, evaluation.
#include "trainer/run/train_loop.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/trainer/test_data.h"
#include "trainer/checkpoint/model_checkpoint.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/run/evaluate.h"

namespace bm::train {
namespace {

using testing::kEot;
using testing::kVocab;

class TrainLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = testing::TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    testing::WriteSplit(data_ + "/data", "train", testing::PatternDocs(40, 30, kVocab, kEot, 1));
    testing::WriteSplit(data_ + "/data", "valid", testing::PatternDocs(8, 30, kVocab, kEot, 2));
    testing::WriteStats(data_ + "/data", kVocab, kEot);
  }
  void TearDown() override { std::filesystem::remove_all(data_); }

  RunConfig Config(const std::string& out, const char* preset = "llama-tiny") {
    nlohmann::json j = testing::TinyPretrainConfig(data_ + "/data", data_ + "/" + out, preset);
    j["threads"] = 2;
    Result<RunConfig> c = ParseRunConfig(j);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return *c;
  }

  static std::vector<double> Losses(const nlohmann::json& metrics, const std::string& dir) {
    std::vector<double> losses;
    for (const nlohmann::json& j : testing::ReadLog(dir)) losses.push_back(j["loss"]);
    (void)metrics;
    return losses;
  }

  std::string data_;
};

TEST_F(TrainLoopTest, LossFallsAndMetricsAreComplete) {
  RunConfig c = Config("out");
  c.steps = 30;
  Result<nlohmann::json> m = RunTraining(c, nullptr);
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<double> losses = Losses(*m, c.out_dir);
  ASSERT_EQ(losses.size(), 30u);
  EXPECT_NEAR(losses[0], std::log(64.0), 0.3);  // uniform start
  EXPECT_LT((*m)["loss"]["final"].get<double>(), losses[0] - 1.0);
  EXPECT_EQ((*m)["format"], "benchmake-metrics");
  EXPECT_EQ((*m)["config"]["gbs"], 4);
  EXPECT_EQ((*m)["tokens"], 30 * 4 * 16);
  EXPECT_GT((*m)["throughput"]["tokens_per_device_per_s"].get<double>(), 0);
  EXPECT_GT((*m)["mfu"]["palm"].get<double>(), (*m)["mfu"]["6N"].get<double>());
  EXPECT_TRUE(std::filesystem::exists(c.out_dir + "/model.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(c.out_dir + "/config.json"));
  EXPECT_EQ((*m)["model"]["vocab"], kVocab);  // from stats.json
  EXPECT_TRUE((*m)["energy"].is_null());      // a CPU has no energy counter here
}

// The NCCL window is NCCL's device memory: a run over Gloo (which a BENCHFILE cannot ask for,
// but a run config can) is refused before anything starts.
TEST_F(TrainLoopTest, AnNcclWindowOverGlooIsRefused) {
  nlohmann::json j = testing::TinyPretrainConfig(data_ + "/data", data_ + "/w", "llama-tiny");
  j["device"] = "cuda";
  j["communicator"] = "gloo";
  j["nccl_window"] = true;
  Result<RunConfig> c = ParseRunConfig(j);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("nccl_window = true with device 'cuda' and communicator "
                                      "'gloo': the window is NCCL device memory"),
            std::string::npos)
      << c.status().message();
  j["communicator"] = "nccl";
  EXPECT_TRUE(ParseRunConfig(j).ok());
}

TEST_F(TrainLoopTest, MllogLinesFollowMlperfsOrder) {
  RunConfig c = Config("ml");
  c.mllog = true;
  ASSERT_TRUE(RunTraining(c, nullptr).ok());
  std::ifstream in(c.out_dir + "/mllog.txt");
  std::vector<nlohmann::json> events;
  for (std::string line; std::getline(in, line);) {
    ASSERT_EQ(line.rfind(":::MLLOG ", 0), 0u) << line;
    events.push_back(nlohmann::json::parse(line.substr(9)));
  }
  std::vector<std::string> keys;
  int losses = 0;
  for (const nlohmann::json& e : events) {
    if (e["key"] == "train_loss") {
      ++losses;
      EXPECT_EQ(e["metadata"]["step"], losses);
    } else {
      keys.push_back(e["key"]);
    }
  }
  EXPECT_EQ(losses, 12);
  ASSERT_GE(keys.size(), 4u);
  EXPECT_EQ(keys.front(), "cache_clear");
  EXPECT_EQ(keys[1], "init_start");
  EXPECT_EQ(keys[keys.size() - 2], "run_start");
  EXPECT_EQ(keys.back(), "run_stop");
  EXPECT_EQ(events.back()["metadata"]["status"], "success");
  EXPECT_EQ(events.back()["event_type"], "INTERVAL_END");
  // Without the option there is no MLPerf log.
  RunConfig plain = Config("plain");
  ASSERT_TRUE(RunTraining(plain, nullptr).ok());
  EXPECT_FALSE(std::filesystem::exists(plain.out_dir + "/mllog.txt"));
}

TEST_F(TrainLoopTest, BitIdenticalReruns) {
  RunConfig a = Config("a"), b = Config("b");
  ASSERT_TRUE(RunTraining(a, nullptr).ok());
  ASSERT_TRUE(RunTraining(b, nullptr).ok());
  EXPECT_EQ(Losses({}, a.out_dir), Losses({}, b.out_dir));
  EXPECT_EQ(*ReadFileBytes(a.out_dir + "/model.safetensors"),
            *ReadFileBytes(b.out_dir + "/model.safetensors"));
  RunConfig other = Config("c");
  other.seed = 6;
  ASSERT_TRUE(RunTraining(other, nullptr).ok());
  EXPECT_NE(Losses({}, a.out_dir), Losses({}, other.out_dir));
}

TEST_F(TrainLoopTest, AccumulationMatchesLargerBatch) {
  RunConfig big = Config("big"), acc = Config("acc");
  acc.lbs = 2;
  acc.gas = 2;
  ASSERT_TRUE(RunTraining(big, nullptr).ok());
  ASSERT_TRUE(RunTraining(acc, nullptr).ok());
  std::vector<double> l1 = Losses({}, big.out_dir), l2 = Losses({}, acc.out_dir);
  ASSERT_EQ(l1.size(), l2.size());
  for (size_t i = 0; i < l1.size(); ++i)
    EXPECT_NEAR(l1[i], l2[i], 1e-4 * l1[i]) << "step " << i + 1;
}

TEST_F(TrainLoopTest, KillAndResumeEqualsUninterrupted) {
  RunConfig full = Config("full");
  ASSERT_TRUE(RunTraining(full, nullptr).ok());
  RunConfig part = Config("part");
  part.resume_dir = data_ + "/resume";
  part.checkpoint_every = 5;
  TrainHooks kill;
  kill.after_step = [](int64_t step) { return step < 8; };  // dies after step 8, checkpoint at 5
  EXPECT_FALSE(RunTraining(part, nullptr, kill).ok());
  Result<nlohmann::json> resumed = RunTraining(part, nullptr);
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  EXPECT_EQ((*resumed)["provenance"]["resumed_from_step"], 5);
  EXPECT_EQ(Losses({}, full.out_dir), Losses({}, part.out_dir));
  EXPECT_EQ(*ReadFileBytes(full.out_dir + "/model.safetensors"),
            *ReadFileBytes(part.out_dir + "/model.safetensors"));
  // a changed setting does not resume from the old checkpoint
  RunConfig changed = part;
  changed.lr = 1e-3;
  Result<nlohmann::json> fresh = RunTraining(changed, nullptr);
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE((*fresh)["provenance"]["resumed_from_step"].is_null());
}

// The CPU's bits follow its thread count, so `threads = 0` resumes by the count it resolved to:
// a checkpoint of threads = 0 is resumed by threads = (this machine's cores), and not by one
// more. The fingerprint held the 0 before: the first was refused, and a machine of other cores
// resumed it.
TEST_F(TrainLoopTest, AllCoresResumeByTheCountTheyResolvedTo) {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  TrainHooks kill;
  kill.after_step = [](int64_t step) { return step < 8; };  // dies after step 8, checkpoint at 5
  for (const int threads : {cores, cores + 1}) {
    RunConfig part = Config("part" + std::to_string(threads));
    part.threads = 0;
    part.resume_dir = data_ + "/resume" + std::to_string(threads);
    part.checkpoint_every = 5;
    EXPECT_FALSE(RunTraining(part, nullptr, kill).ok());
    part.threads = threads;
    Result<nlohmann::json> rerun = RunTraining(part, nullptr);
    ASSERT_TRUE(rerun.ok()) << rerun.status().message();
    if (threads == cores)
      EXPECT_EQ((*rerun)["provenance"]["resumed_from_step"], 5);
    else
      EXPECT_TRUE((*rerun)["provenance"]["resumed_from_step"].is_null()) << threads;
  }
}

TEST_F(TrainLoopTest, DivergenceStopsWithAClearError) {
  RunConfig c = Config("nan");
  c.lr = 1e30;
  c.min_lr = 0;
  c.warmup_steps = 0;
  c.grad_clip = 0;
  Result<nlohmann::json> m = RunTraining(c, nullptr);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kFailed);
  EXPECT_NE(m.status().message().find("diverged"), std::string::npos) << m.status().message();
  EXPECT_FALSE(std::filesystem::exists(c.out_dir + "/metrics.json"));
}

TEST_F(TrainLoopTest, TinyModelOverfitsOneBatch) {
  // one document, windows all drawn from it: the model memorizes it
  testing::WriteSplit(data_ + "/one", "train", {testing::PatternDocs(1, 17, kVocab, kEot, 9)[0]});
  testing::WriteStats(data_ + "/one", kVocab, kEot);
  RunConfig c = Config("overfit", "gpt-tiny");
  c.data_dir = data_ + "/one";
  c.steps = 250;
  c.lr = 1e-2;
  c.min_lr = 1e-2;
  c.weight_decay = 0;
  Result<nlohmann::json> m = RunTraining(c, nullptr);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_LT((*m)["loss"]["final"].get<double>(), 0.05);
}

TEST_F(TrainLoopTest, FinetuneAndEvaluateOnMaskedData) {
  // instruction data: prompt token p (mask 0) -> answer (p+1, p+2, eot) (mask 1)
  std::vector<std::vector<int32_t>> docs, masks;
  for (int32_t p = 0; p < 40; ++p) {
    docs.push_back({p, (p * 3 + 1) % 60, (p * 5 + 2) % 60, kEot});
    masks.push_back({0, 1, 1, 1});
  }
  testing::WriteSplit(data_ + "/ft", "train", docs, masks);
  testing::WriteSplit(data_ + "/ft", "valid", docs, masks);
  testing::WriteStats(data_ + "/ft", kVocab, kEot);
  RunConfig pre = Config("pre");
  ASSERT_TRUE(RunTraining(pre, nullptr).ok());
  nlohmann::json ft = {{"mode", "finetune"},
                       {"data", data_ + "/ft"},
                       {"out_dir", data_ + "/ftout"},
                       {"init", pre.out_dir},
                       {"lbs", 8},
                       {"mpe", 16},
                       {"steps", 150},
                       {"warmup_steps", 5},
                       {"lr", 1e-2},
                       {"min_lr", 1e-3},
                       {"weight_decay", 0.0},
                       {"threads", 2}};
  Result<nlohmann::json> m = RunTraining(*ParseRunConfig(ft), nullptr);
  ASSERT_TRUE(m.ok()) << m.status().message();
  nlohmann::json ev = {{"mode", "evaluate"},
                       {"data", data_ + "/ft"},
                       {"out_dir", data_ + "/evout"},
                       {"init", data_ + "/ftout"},
                       {"lbs", 8},
                       {"mpe", 16},
                       {"eval_choices", 4},
                       {"threads", 2}};
  Result<nlohmann::json> e = RunEvaluation(*ParseRunConfig(ev), nullptr);
  ASSERT_TRUE(e.ok()) << e.status().message();
  const nlohmann::json& eval = (*e)["eval"];
  EXPECT_EQ(eval["task"], "instruction");
  EXPECT_EQ(eval["examples"], 40);
  EXPECT_GT(eval["accuracy"].get<double>(), 0.9) << eval.dump();
  EXPECT_GT(eval["exact_match"].get<double>(), 0.5) << eval.dump();
  EXPECT_LT(eval["val_loss"].get<double>(), 0.5) << eval.dump();
}

// An init checkpoint whose config.json has a model_type that is not a string: the finetune
// fails naming the file and the field, and writes nothing (it aborted on an uncaught
// nlohmann::json type_error before, while asking whether the checkpoint is a LLaVA model).
TEST_F(TrainLoopTest, AnInitConfigWithAMistypedModelTypeIsAnErrorNamingIt) {
  const ModelConfig model = *Preset("llama-tiny");
  const std::string init = data_ + "/init";
  std::filesystem::create_directories(init);
  ASSERT_TRUE(SaveModel(init, model, InitParameters(model, ParamLayout(model), 1), kEot).ok());
  nlohmann::json config = nlohmann::json::parse(*ReadFileBytes(init + "/config.json"));
  config.erase("benchmake");
  config["model_type"] = 5;
  ASSERT_TRUE(WriteFileAtomically(init + "/config.json", config.dump()).ok());
  nlohmann::json ft = testing::TinyPretrainConfig(data_ + "/data", data_ + "/ftout", "");
  ft["mode"] = "finetune";
  ft.erase("model");
  ft["init"] = init;
  Result<RunConfig> run = ParseRunConfig(ft);
  ASSERT_TRUE(run.ok()) << run.status().message();
  Result<nlohmann::json> m = RunTraining(*run, nullptr);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kInvalidArgument) << m.status().message();
  EXPECT_NE(m.status().message().find(init + "/config.json"), std::string::npos)
      << m.status().message();
  EXPECT_NE(m.status().message().find("model_type must be a string"), std::string::npos)
      << m.status().message();
  EXPECT_FALSE(std::filesystem::exists(data_ + "/ftout"));
}

// stats.json is the data's: a vocab_size or eot_id that is not an integer is refused naming the
// file and the key (nlohmann's value() threw out of RunTraining before: an abort).
TEST_F(TrainLoopTest, AMistypedStatsJsonIsCorruptNamingTheKey) {
  for (const char* key : {"vocab_size", "eot_id"}) {
    nlohmann::json stats = {{"vocab_size", kVocab}, {"eot_id", kEot}};
    stats[key] = "64";
    std::ofstream(data_ + "/data/stats.json") << stats.dump();
    Result<nlohmann::json> m = RunTraining(Config("out"), nullptr);
    ASSERT_FALSE(m.ok()) << key;
    EXPECT_EQ(m.status().code(), ErrorCode::kCorrupt) << m.status().message();
    EXPECT_NE(m.status().message().find(data_ + "/data/stats.json: " + key), std::string::npos)
        << m.status().message();
  }
}

// A dataset holding an id past the vocabulary its stats.json gives (one made elsewhere, or by an
// older tokenize) is refused as it is read, naming the file, the id and the vocabulary: the
// embedding has 64 rows, and id 100 indexed past them before. Ids 100 sit at positions 5 and 20
// of every 30-token document, so every 17-token window holds one.
TEST_F(TrainLoopTest, AnIdPastTheVocabularyIsCorruptNamingTheFileAndTheId) {
  RunConfig pre = Config("pre");
  pre.steps = 2;
  ASSERT_TRUE(RunTraining(pre, nullptr).ok());
  std::vector<std::vector<int32_t>> docs = testing::PatternDocs(40, 30, kVocab, kEot, 1);
  for (std::vector<int32_t>& doc : docs) doc[5] = doc[20] = 100;
  testing::WriteSplit(data_ + "/data", "train", docs);
  testing::WriteSplit(data_ + "/data", "valid", docs);
  const std::string why = "is id 100, outside the model's vocabulary (0 to 63)";
  RunConfig c = Config("out");
  Result<nlohmann::json> m = RunTraining(c, nullptr);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kCorrupt) << m.status().message();
  EXPECT_NE(m.status().message().find(data_ + "/data/train.bin: token "), std::string::npos)
      << m.status().message();
  EXPECT_NE(m.status().message().find(why), std::string::npos) << m.status().message();
  EXPECT_FALSE(std::filesystem::exists(c.out_dir + "/model.safetensors"));

  nlohmann::json ev = {{"mode", "evaluate"},
                       {"data", data_ + "/data"},
                       {"out_dir", data_ + "/evout"},
                       {"init", pre.out_dir},
                       {"lbs", 4},
                       {"mpe", 16},
                       {"threads", 2}};
  Result<nlohmann::json> e = RunEvaluation(*ParseRunConfig(ev), nullptr);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find(data_ + "/data/valid.bin: token 5 of the stream " + why),
            std::string::npos)
      << e.status().message();
}

}  // namespace
}  // namespace bm::train
