// The examples (examples/*/BENCHFILE.toml) end to end, with the real binaries
// and real ninja: every example's smoke variant builds from a fresh copy of its
// folder on the CPU; `benchmake report` prints the suites' columns; a full-size
// target whose layout needs what is missing fails when planned, before anything
// runs. The smoke targets are the ones named `smoke` and `smoke_*`.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tests/support/test_data.h"

namespace bm {
namespace {

namespace fs = std::filesystem;
using bm::testing::BinaryDir;
using bm::testing::ReadText;

fs::path SourceDir() {
  const char* dir = std::getenv("BENCHMAKE_SOURCE_DIR");
  return dir ? fs::path(dir) : fs::path(BENCHMAKE_TEST_SOURCE_DIR);
}

// Every folder of examples/ that holds a BENCHFILE.toml, sorted.
std::vector<std::string> ExampleNames() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(SourceDir() / "examples"))
    if (fs::exists(e.path() / "BENCHFILE.toml")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The [target.NAME] blocks of a BENCHFILE, by name: the text up to the next header.
std::map<std::string, std::string> TargetBlocks(const std::string& benchfile) {
  std::map<std::string, std::string> blocks;
  static const std::regex header(R"re(^\[target\."?([a-z0-9_.-]+)"?\]\s*$)re");
  std::istringstream in(benchfile);
  std::string line, current;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, header)) {
      current = m[1];
      blocks[current];
    } else if (!current.empty() && !line.empty() && line[0] == '[') {
      current.clear();
    } else if (!current.empty()) {
      blocks[current] += line + "\n";
    }
  }
  return blocks;
}

bool HasKey(const std::string& block, const std::string& key) {
  return std::regex_search(block, std::regex("(^|\n)" + key + " *="));
}

// A fresh copy of one example beside examples/tools, and the repository's
// data/ where "../../data/..." expects it, with its own cache.
class ExampleWorkspace : public ::testing::Test {
 protected:
  void Prepare(const std::string& example) {
    binary_ = (BinaryDir() / "benchmake").string();
    ASSERT_TRUE(fs::exists(binary_)) << binary_ << " (set BENCHMAKE_BINARY_DIR)";
    char templ[] = "/tmp/benchmake-examples-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    root_ = templ;
    fs::create_directories(root_ / "examples");
    fs::copy(SourceDir() / "examples" / example, root_ / "examples" / example,
             fs::copy_options::recursive);
    fs::copy(SourceDir() / "examples/tools", root_ / "examples/tools", fs::copy_options::recursive);
    fs::create_directory_symlink(SourceDir() / "data", root_ / "data");
    ws_ = root_ / "examples" / example;
    ASSERT_FALSE(fs::exists(ws_ / "out")) << "the source folder holds build outputs";
    ::setenv("BENCHMAKE_CACHE_DIR", (root_ / "cache").c_str(), 1);
    ::setenv("BENCHMAKE_GPUS", "0", 1);  // the same plan on any CI machine
    ::unsetenv("BENCHMAKE_PLATFORM");
    ::unsetenv("BENCHMAKE_REMOTE_CACHE");
    blocks_ = TargetBlocks(ReadText(ws_ / "BENCHFILE.toml"));
  }
  void TearDown() override {
    ::unsetenv("BENCHMAKE_GPUS");
    if (root_.empty()) return;
    std::error_code ec;
    for (auto& p : fs::recursive_directory_iterator(root_, ec))
      fs::permissions(p.path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(root_, ec);
  }

  struct Run {
    int exit_code;
    std::string output;
    double seconds;
  };
  Run Benchmake(const std::string& args) {
    const std::string out = (root_ / "output.txt").string();
    const std::string cmd =
        "cd '" + ws_.string() + "' && '" + binary_ + "' " + args + " > '" + out + "' 2>&1";
    const auto t0 = std::chrono::steady_clock::now();
    const int status = std::system(cmd.c_str());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return Run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadText(out), s};
  }

  std::string binary_;
  fs::path root_, ws_;
  std::map<std::string, std::string> blocks_;
};

class ExampleTest : public ExampleWorkspace, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override { Prepare(GetParam()); }
  std::vector<std::string> SmokeTargets() const {
    std::vector<std::string> names;
    for (const auto& [name, block] : blocks_)
      if (name == "smoke" || name.rfind("smoke_", 0) == 0) names.push_back(name);
    return names;
  }
  // An external trainer's smoke target: its log, and metrics once it names a log format.
  bool ParsesALog(const std::string& target) const {
    return HasKey(blocks_.at(target), "log_format");
  }
};

TEST_P(ExampleTest, SmokeVariantBuildsOnTheCpu) {
  const std::vector<std::string> smoke = SmokeTargets();
  ASSERT_TRUE(blocks_.count("smoke")) << "every example has a target named smoke";
  std::string args = "build";
  for (const std::string& t : smoke) args += " " + t;
  Run r = Benchmake(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::cout << GetParam() << ": benchmake " << args << ": " << r.seconds << " s\n";
  EXPECT_LT(r.seconds, 60) << "a smoke variant must stay well under a minute in CI";
  EXPECT_TRUE(fs::exists(ws_ / "out/smoke/metrics.json"));
  const std::string metrics = ReadText(ws_ / "out/smoke/metrics.json");
  EXPECT_NE(metrics.find("\"format\": \"benchmake-metrics\""), std::string::npos) << metrics;
  for (const std::string& t : smoke) {
    const std::string& block = blocks_.at(t);
    if (block.find("rule = \"measure\"") == std::string::npos) continue;
    EXPECT_TRUE(fs::exists(ws_ / "out" / t / "train.log")) << t;
    if (ParsesALog(t)) {
      EXPECT_TRUE(fs::exists(ws_ / "out" / t / "metrics.json")) << t;
    }
  }
  // The second build finds everything up to date.
  r = Benchmake(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("ran in"), std::string::npos) << r.output;
}

// `benchmake report` over the example: the suites' table (case, layout, fix_hp
// with MPE and LBS, token/p/s, loss, mem, MFU), the smoke run in it; an external
// run parsed from its log sits in the same table and in `compare`.
TEST_P(ExampleTest, ReportPrintsTheSuitesColumns) {
  std::string args = "build";
  for (const std::string& t : SmokeTargets()) args += " " + t;
  ASSERT_EQ(Benchmake(args).exit_code, 0);
  Run r = Benchmake("report");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("| case | trainer | config | layout | fix_hp | token/p/s | loss | "
                          "mem (GiB) | MFU (6N) | MFU (PaLM) |"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex(R"(\n\| smoke \| benchmake-train \| cpu[^|]*\| TP1PP1DP1 \| )"
                           R"([^|]*MPE=[0-9]+, LBS=[0-9]+[^|]*\| [0-9,.]+ \| [0-9.]+ \|)")))
      << r.output;
  for (const std::string& t : SmokeTargets()) {
    if (!ParsesALog(t)) continue;
    // The external run's row: its trainer, 8 devices, its layout, a token/p/s, a loss.
    EXPECT_TRUE(std::regex_search(
        r.output,
        std::regex("\\n\\| " + t +
                   R"( \| [a-z]+ \| [^|]*×8 \| TP1PP1DP8 \| [^|]*\| [0-9,.]+ \| [0-9.]+ \|)")))
        << r.output;
    Run c = Benchmake("compare " + t + " smoke --no-alignment");
    EXPECT_EQ(c.exit_code, 0) << c.output;
  }
}

// Item 3 of the examples issue: a full-size target needing more than this machine
// offers fails when planned, naming it, its layout and what is missing, and
// nothing runs (not even its downloads); the smoke variant beside it builds.
TEST_F(ExampleWorkspace, UnsupportedLayoutFailsWhenPlannedNothingRuns) {
  Prepare("gpt3_paddle");
  ::setenv("BENCHMAKE_GPUS", "4", 1);  // TP2 with ZeRO-2 over DP4 runs, on eight GPUs
  Run r = Benchmake("build gpt3_6.7b_tp2pp1sh2sp4");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("target 'gpt3_6.7b_tp2pp1sh2sp4' needs 8 GPU(s) for layout TP2PP1DP4 "
                          "but this machine has 4"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("cannot run here"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("nothing was run"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(ws_ / "out/gpt_en_ids")) << "its download did not start";
  EXPECT_FALSE(fs::exists(ws_ / "out/gpt_en_tokens"));
  // The smoke variant in the same file builds, and so does the row's shrunk 4-rank twin (TP2
  // with ZeRO-2 over DP2), whose losses are one rank's step for step (the same global batch;
  // ModelParallelTest's bound, 1e-4 relative).
  ::setenv("BENCHMAKE_GPUS", "0", 1);
  r = Benchmake("build smoke smoke_tp2pp1sh2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(ws_ / "out/smoke/metrics.json"));
  auto losses = [&](const std::string& target) {
    std::vector<double> out;
    std::ifstream in(ws_ / "out" / target / "log.jsonl");
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("step")) out.push_back(j["loss"].get<double>());
    }
    return out;
  };
  const std::vector<double> one = losses("smoke"), sharded = losses("smoke_tp2pp1sh2");
  ASSERT_EQ(one.size(), 6u);
  ASSERT_EQ(sharded.size(), one.size());
  for (size_t i = 0; i < one.size(); ++i)
    EXPECT_NEAR(sharded[i], one[i], 1e-4 * one[i]) << "step " << i + 1;
}

// The targets a build ran: "NAME: ran in" lines of its output, in order.
std::vector<std::string> RanTargets(const std::string& output) {
  std::vector<std::string> ran;
  static const std::regex line(R"(([a-z0-9_.-]+): ran in )");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), line);
       it != std::sregex_iterator(); ++it)
    ran.push_back((*it)[1]);
  return ran;
}

// LLaVA through the engine (issues 36, 37): llava-tiny pretrained on the sample's llava_data,
// finetuned from that checkpoint on the conversations' llava_data, then evaluated on MMMU's
// sample (mmmu_data, greedy decoding on the CPU); all three in the report, the evaluation's eval
// column MMMU's accuracy; an edit of the finetune's lr reruns the finetune and the evaluation
// only, and `explain` says why.
TEST_F(ExampleWorkspace, LlavaPretrainFinetuneMmmuAndAnLrEditRerunsOnlyTheFinetuneAndMmmu) {
  Prepare("llava1.5_13b");
  Run r = Benchmake("build smoke_llava_mmmu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> ran = RanTargets(r.output);
  std::sort(ran.begin(), ran.end());
  EXPECT_EQ(ran, (std::vector<std::string>{"smoke_llava_finetune", "smoke_llava_finetune_data",
                                           "smoke_llava_finetune_images", "smoke_llava_mmmu",
                                           "smoke_llava_pretrain", "smoke_llava_pretrain_data",
                                           "smoke_llava_pretrain_images", "smoke_mmmu_data"}))
      << r.output;
  // The pretrain's model in llava-hf's format is the finetune's start.
  for (const char* f : {"model.safetensors", "config.json", "metrics.json", "log.jsonl"})
    EXPECT_TRUE(fs::exists(ws_ / "out/smoke_llava_pretrain" / f)) << f;
  EXPECT_NE(
      ReadText(ws_ / "out/smoke_llava_pretrain/config.json").find("\"model_type\": \"llava\""),
      std::string::npos);
  const std::string run_json = ReadText(ws_ / "out/smoke_llava_finetune/metrics.json");
  EXPECT_TRUE(std::regex_search(run_json, std::regex(R"("final_loss": [0-9])"))) << run_json;
  // Four steps in each log (the header line, then one line a step).
  for (const char* t : {"smoke_llava_pretrain", "smoke_llava_finetune"}) {
    const std::string log = ReadText(ws_ / "out" / t / "log.jsonl");
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 5) << t << ":\n" << log;
  }
  // MMMU: accuracy overall, by subject and by category, over mmmu_sample's 10 questions, and
  // run_llava.py's predictions file with one entry per question.
  const std::string mmmu = ReadText(ws_ / "out/smoke_llava_mmmu/metrics.json");
  for (const char* field :
       {R"("task": "mmmu")", R"("accuracy": [0-9.e-]+)", R"("examples": 10)", R"("by_subject": \{)",
        R"("by_category": \{)", R"("Art and Design": \{)", R"("questions": 10)",
        R"("max_new_tokens": 8)"})
    EXPECT_TRUE(std::regex_search(mmmu, std::regex(field))) << field << "\n" << mmmu;
  const std::string predictions = ReadText(ws_ / "out/smoke_llava_mmmu/predictions.json");
  EXPECT_EQ(std::count(predictions.begin(), predictions.end(), '\n'), 12) << predictions;

  Run report = Benchmake("report");
  ASSERT_EQ(report.exit_code, 0) << report.output;
  for (const char* t : {"smoke_llava_pretrain", "smoke_llava_finetune"})
    EXPECT_TRUE(std::regex_search(
        report.output, std::regex(std::string(R"(\n\| )") + t +
                                  R"( \| benchmake-train \| cpu[^|]*\| TP1PP1DP1 \| )"
                                  R"([^|]*MPE=[0-9]+, LBS=4[^|]*\| [0-9,.]+ \| [0-9.]+ \|)")))
        << t << "\n"
        << report.output;
  EXPECT_TRUE(std::regex_search(
      report.output, std::regex(R"(\n\| smoke_llava_mmmu \| benchmake-train \|[^\n]*\| acc )"
                                R"([0-9.]+% \(mmmu\) \|)")))
      << report.output;

  // The finetune's lr: the finetune and MMMU rerun; the pretrain and the data are up to date.
  const std::string log_before = ReadText(ws_ / "out/smoke_llava_finetune/log.jsonl");
  const std::string benchfile = ReadText(ws_ / "BENCHFILE.toml");
  const std::string from = "lr = 2e-4\n";
  ASSERT_NE(benchfile.find(from), std::string::npos);
  ASSERT_EQ(benchfile.find(from), benchfile.rfind(from)) << "one lr = 2e-4: the finetune's";
  std::string edited = benchfile;
  edited.replace(edited.find(from), from.size(), "lr = 1e-4\n");
  std::ofstream(ws_ / "BENCHFILE.toml") << edited;
  Run explain = Benchmake("explain smoke_llava_finetune smoke_llava_mmmu");
  ASSERT_EQ(explain.exit_code, 0) << explain.output;
  EXPECT_NE(explain.output.find("smoke_llava_finetune: run\n  param lr: 0.0002 \u2192 0.0001"),
            std::string::npos)
      << explain.output;
  EXPECT_NE(explain.output.find("smoke_llava_mmmu: waits for upstream\n  input "
                                "smoke_llava_finetune: will be rebuilt"),
            std::string::npos)
      << explain.output;
  r = Benchmake("build smoke_llava_mmmu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(RanTargets(r.output),
            (std::vector<std::string>{"smoke_llava_finetune", "smoke_llava_mmmu"}))
      << r.output;
  // min_lr = 0: each step's lr halves with the peak (the first step's, in both logs).
  auto first_lr = [](const std::string& log) {
    std::smatch m;
    return std::regex_search(log, m, std::regex(R"("lr": ?([0-9.eE+-]+))")) ? std::stod(m[1])
                                                                            : -1.0;
  };
  const double lr_before = first_lr(log_before);
  EXPECT_GT(lr_before, 0) << log_before;
  EXPECT_DOUBLE_EQ(first_lr(ReadText(ws_ / "out/smoke_llava_finetune/log.jsonl")), lr_before / 2);
}

// The loss-alignment example (issue 34): its smoke target writes the model it starts from
// (save_init) beside the trained one, and on a 4-GPU machine every benchmake-train / PyTorch pair
// is planned, each PyTorch target after its partner.
TEST_F(ExampleWorkspace, PytorchPeerSmokeWritesItsStartingModelAndEveryPairPlans) {
  Prepare("pytorch_peer");
  Run r = Benchmake("build smoke");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"init/model.safetensors", "init/config.json", "model.safetensors"})
    EXPECT_TRUE(fs::exists(ws_ / "out/smoke" / f)) << f;
  EXPECT_NE(ReadText(ws_ / "out/smoke/init/model.safetensors"),
            ReadText(ws_ / "out/smoke/model.safetensors"));
  // Each PyTorch target takes its benchmake-train partner (init/ and metrics.json) and the
  // same tokens; and on a 4-GPU machine the whole file plans.
  r = Benchmake("graph");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (auto [bm, peer] : std::vector<std::pair<std::string, std::string>>{
           {"bm_llama_1gpu", "torch_llama_1gpu"},
           {"bm_llama_1gpu", "torch_llama_1gpu_lr4x_lower"},
           {"bm_gpt_1gpu", "torch_gpt_1gpu"},
           {"bm_llama_dp2_zero0", "torch_llama_ddp2"},
           {"bm_llama_dp2_zero3", "torch_llama_fsdp2"},
           {"bm_llama_dp4_zero0", "torch_llama_ddp4"},
           {"bm_llama_dp4_zero3", "torch_llama_fsdp4"}}) {
    EXPECT_NE(r.output.find("\"" + bm + "\" -> \"" + peer + "\""), std::string::npos) << peer;
    EXPECT_NE(r.output.find("\"kjv_tokens\" -> \"" + peer + "\""), std::string::npos) << peer;
  }
  ::setenv("BENCHMAKE_GPUS", "4", 1);
  r = Benchmake("build -n");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleTest, ::testing::ValuesIn(ExampleNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace bm
