// End to end: the real `benchmake` binary and real ninja in a temporary
// workspace whose measured targets run tests/data/report/fake_trainer.py (the
// `measure` rule: exec whose results depend on the platform). Covers
// `build --remeasure` (reruns only the measured step, leaves every artifact
// digest unchanged, records a fresh measurement), `rounds = N`, restored
// measurements labelled as cache, `report` in every format and `compare`'s
// exit code.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/digest.h"
#include "base/real_filesystem.h"
#include "engine/report/run_files.h"
#include "tests/engine/report/fixtures.h"

namespace bm::report {
namespace {

namespace fs = std::filesystem;

class ReportE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("BENCHMAKE_BINARY_DIR");
    benchmake_ = std::string(bin ? bin : BENCHMAKE_TEST_BINARY_DIR) + "/benchmake";
    if (!fs::exists(benchmake_)) GTEST_SKIP() << benchmake_ << " not built";
    if (std::system("command -v ninja >/dev/null && command -v python3 >/dev/null") != 0) {
      GTEST_SKIP() << "ninja or python3 missing: end-to-end report tests NOT run";
    }
    root_ = fs::temp_directory_path() / ("bm_report_e2e_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "ws");
    fs::copy_file(testing::DataDir() + "/fake_trainer.py", root_ / "ws" / "fake_trainer.py");
    cache_ = (root_ / "cache").string();
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }

  void WriteBenchfile(const std::string& extra_m = "") {
    std::ofstream(root_ / "ws" / "BENCHFILE.toml") << R"(
[target.prep]
rule = "exec"
command = ["sh", "-c", "echo run >> {workspace}/prep.count; echo data > {out}/data.txt"]
outputs = ["data.txt"]

[target.m]
rule = "measure"
command = ["python3", "{workspace}/fake_trainer.py", "--out", "{out}", "--count", "{workspace}/m.count"]
inputs = ["prep"]
outputs = ["model.bin", "log.jsonl", "metrics.json"]
metrics = "metrics.json"
)" + extra_m + R"(

[target.same]
rule = "measure"
command = ["python3", "{workspace}/fake_trainer.py", "--out", "{out}", "--count", "{workspace}/same.count", "--steps", "60"]
outputs = ["model.bin", "log.jsonl", "metrics.json"]
metrics = "metrics.json"

[target.lr2x]
rule = "measure"
command = ["python3", "{workspace}/fake_trainer.py", "--out", "{out}", "--count", "{workspace}/lr2x.count", "--lr", "0.0006"]
outputs = ["model.bin", "log.jsonl", "metrics.json"]
metrics = "metrics.json"
)";
  }

  // Runs benchmake in the workspace; returns the exit code, stdout in *out.
  int Run(const std::string& args, std::string* out = nullptr) {
    std::string o = (root_ / "stdout").string(), e = (root_ / "stderr").string();
    std::string cmd = "cd " + (root_ / "ws").string() + " && BENCHMAKE_CACHE_DIR=" + cache_ +
                      " BENCHMAKE_PLATFORM='{\"gpus\":[],\"cpu\":{\"model\":\"test\"}}' " +
                      benchmake_ + " " + args + " > " + o + " 2> " + e;
    int rc = std::system(cmd.c_str());
    rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    std::string so = Read(o);
    last_stderr_ = Read(e);
    if (out) *out = so;
    return rc;
  }

  std::string Read(const fs::path& p) {
    Result<std::string> s = ReadWholeFile(p.string());
    return s.ok() ? *s : "";
  }
  int Lines(const std::string& name) {
    std::string s = Read(root_ / "ws" / name);
    return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
  }
  std::map<std::string, std::string> OutDigests() {
    std::map<std::string, std::string> d;
    for (const auto& e : fs::recursive_directory_iterator(root_ / "ws" / "out")) {
      if (!e.is_regular_file()) continue;
      Result<Digest> h = DiskFilesystem().HashFile(e.path().string());
      d[fs::relative(e.path(), root_ / "ws").string()] = h.ok() ? h->Hex() : "?";
    }
    return d;
  }
  nlohmann::json ReportJson(const std::string& targets) {
    std::string out;
    EXPECT_EQ(Run("report --format json " + targets, &out), 0) << last_stderr_;
    return nlohmann::json::parse(out, nullptr, false);
  }

  std::string benchmake_;
  fs::path root_;
  std::string cache_;
  std::string last_stderr_;
};

TEST_F(ReportE2e, RemeasureRerunsOnlyTheMeasuredStepAndKeepsEveryDigest) {
  WriteBenchfile();
  ASSERT_EQ(Run("build m"), 0) << last_stderr_;
  EXPECT_EQ(Lines("prep.count"), 1);
  EXPECT_EQ(Lines("m.count"), 1);
  std::map<std::string, std::string> before = OutDigests();
  ASSERT_EQ(before.size(), 4u);  // data.txt, model.bin, log.jsonl, metrics.json

  std::string out;
  ASSERT_EQ(Run("build --remeasure m", &out), 0) << last_stderr_;
  EXPECT_EQ(Lines("prep.count"), 1) << "the unmeasured upstream step must not rerun";
  EXPECT_EQ(Lines("m.count"), 2) << "the measured step reruns once";
  EXPECT_EQ(OutDigests(), before) << "artifacts must keep their digests";
  EXPECT_NE(out.find("m: measured again"), std::string::npos) << out;

  nlohmann::json j = ReportJson("m");
  ASSERT_TRUE(j.is_object());
  const nlohmann::json& row = j["rows"][0];
  EXPECT_EQ(row["rounds"], 2);
  EXPECT_EQ(row["origins"]["fresh"], 2);
  const nlohmann::json& tps = row["metrics"]["tokens_per_device_per_s"];
  EXPECT_EQ(tps["n"], 2);
  EXPECT_LT(tps["min"].get<double>(), tps["max"].get<double>()) << "two different measurements";

  // Nothing stale: building again reruns nothing.
  ASSERT_EQ(Run("build m"), 0) << last_stderr_;
  EXPECT_EQ(Lines("m.count"), 2);

  // `step --remeasure` (what build --remeasure does per target) adds one more;
  // on a rule that does not depend on the platform it measures nothing.
  ASSERT_EQ(Run("step m --remeasure"), 0) << last_stderr_;
  EXPECT_EQ(Lines("m.count"), 3);
  ASSERT_EQ(Run("build --remeasure prep", &out), 0) << last_stderr_;
  EXPECT_EQ(Lines("prep.count"), 1);
  EXPECT_NE(out.find("nothing to remeasure"), std::string::npos) << out;
  EXPECT_EQ(OutDigests(), before);
  EXPECT_EQ(ReportJson("m")["rows"][0]["rounds"], 3);
  EXPECT_EQ(Run("build --remeasure"), 2) << "--remeasure needs targets";
}

TEST_F(ReportE2e, RoundsTopUpMeasurementsWithoutChangingTheKey) {
  WriteBenchfile();
  ASSERT_EQ(Run("build m"), 0) << last_stderr_;
  std::map<std::string, std::string> before = OutDigests();
  WriteBenchfile("rounds = 3\n");
  ASSERT_EQ(Run("build m"), 0) << last_stderr_;
  EXPECT_EQ(Lines("m.count"), 3) << "two more runs to reach three measurements";
  EXPECT_EQ(Lines("prep.count"), 1);
  EXPECT_EQ(OutDigests(), before);
  ASSERT_EQ(Run("build m"), 0) << last_stderr_;
  EXPECT_EQ(Lines("m.count"), 3) << "three measurements are enough";

  std::string md;
  ASSERT_EQ(Run("report m", &md), 0) << last_stderr_;
  EXPECT_NE(md.find("| 3 | fresh |"), std::string::npos) << md;
  EXPECT_NE(md.find("\u2013"), std::string::npos) << "min–max shown: " << md;
}

TEST_F(ReportE2e, RestoredMeasurementsAreLabelledCache) {
  WriteBenchfile();
  ASSERT_EQ(Run("build m"), 0) << last_stderr_;
  ASSERT_EQ(Run("clean"), 0) << last_stderr_;
  ASSERT_EQ(Run("build m"), 0) << last_stderr_;
  EXPECT_EQ(Lines("m.count"), 1) << "restored, not rerun";
  nlohmann::json j = ReportJson("m");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["rows"][0]["origins"]["fresh"], 0);
  EXPECT_EQ(j["rows"][0]["origins"]["cache"], 1);
  std::string md;
  ASSERT_EQ(Run("report", &md), 0) << last_stderr_;
  EXPECT_NE(md.find("| 1 | cache |"), std::string::npos) << md;
}

TEST_F(ReportE2e, ReportFormatsAndOutputFile) {
  WriteBenchfile();
  ASSERT_EQ(Run("build"), 0) << last_stderr_;
  ASSERT_EQ(Run("report -o report.html"), 0) << last_stderr_;
  std::string html = Read(root_ / "ws" / "report.html");
  EXPECT_NE(html.find("id=\"loss-chart\""), std::string::npos);
  ASSERT_EQ(Run("report --format csv m same"), 0) << last_stderr_;
  std::string csv;
  ASSERT_EQ(Run("report m same --format csv", &csv), 0);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_EQ(Run("report nope"), 2);
  EXPECT_NE(last_stderr_.find("unknown target 'nope'"), std::string::npos) << last_stderr_;
  EXPECT_EQ(Run("report m --format pdf"), 2);
  // A run directory named by path needs no target.
  std::string md;
  ASSERT_EQ(Run("report out/m", &md), 0) << last_stderr_;
  EXPECT_NE(md.find("| out/m |"), std::string::npos) << md;
  EXPECT_NE(md.find("| file |"), std::string::npos) << md;
}

TEST_F(ReportE2e, CompareExitCodeIsTheAlignmentVerdict) {
  WriteBenchfile();
  ASSERT_EQ(Run("build"), 0) << last_stderr_;
  std::string out;
  EXPECT_EQ(Run("compare m same", &out), 0) << out << last_stderr_;
  EXPECT_NE(out.find("ALIGNED: mean relative loss difference 0.00%"), std::string::npos) << out;
  EXPECT_EQ(Run("compare m lr2x", &out), 1) << out;
  EXPECT_NE(out.find("config.lr: 0.0003 \u2192 0.0006"), std::string::npos) << out;
  EXPECT_NE(last_stderr_.find("NOT ALIGNED"), std::string::npos) << last_stderr_;
  EXPECT_EQ(Run("compare m lr2x --no-alignment"), 0);
  EXPECT_EQ(Run("compare m lr2x --tolerance 50%"), 0) << "a looser tolerance passes";
  EXPECT_EQ(Run("compare m lr2x --from-step 1000"), 1) << "no common steps: not aligned";
  EXPECT_EQ(Run("compare m m@cpu", &out), 0) << last_stderr_;  // by device name
  EXPECT_EQ(Run("compare m m@h200"), 1);
  EXPECT_NE(last_stderr_.find("no cached measurement of m matches 'h200'"), std::string::npos)
      << last_stderr_;
}

// The same with the real trainer (benchmake-train, CPU): a short pretrain of
// the embedded corpus, remeasured; a 10x smaller learning rate is not aligned.
TEST_F(ReportE2e, RealTrainerRemeasureAndCompare) {
  std::string train = fs::path(benchmake_).parent_path() / "benchmake-train";
  if (!fs::exists(train)) GTEST_SKIP() << train << " not built: real-trainer report test NOT run";
  fs::create_directories(root_ / "ws" / "data");
  fs::copy_file(testing::DataDir() + "/../../../data/kjv.txt", root_ / "ws" / "data" / "kjv.txt");
  std::string pretrain = R"(
rule = "pretrain"
data = "kjv_bytes"
model = "llama-small"
device = "cpu"
lbs = 4
mpe = 64
steps = 40
warmup_steps = 5
seed = 1234
)";
  std::ofstream(root_ / "ws" / "BENCHFILE.toml")
      << "[target.kjv]\nrule = \"download\"\nurl = \"file:data/kjv.txt\"\n"
         "[target.kjv_bytes]\nrule = \"tokenize\"\ninput = [\"kjv\"]\ntokenizer = \"bytes\"\n"
         "valid_fraction = 0.05\n"
         "[target.p]"
      << pretrain << "lr = 3e-3\nmin_lr = 3e-4\n[target.p_low]" << pretrain
      << "lr = 3e-4\nmin_lr = 3e-5\n";
  ASSERT_EQ(Run("build p p_low"), 0) << last_stderr_;
  std::map<std::string, std::string> before = OutDigests();
  ASSERT_EQ(Run("build --remeasure p"), 0) << last_stderr_;
  EXPECT_EQ(OutDigests(), before);
  nlohmann::json j = ReportJson("p");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["rows"][0]["rounds"], 2);
  EXPECT_EQ(j["rows"][0]["origins"]["fresh"], 2);
  EXPECT_EQ(j["rows"][0]["parallel"], "TP1PP1DP1");
  std::string out;
  EXPECT_EQ(Run("compare p p", &out), 0) << out;
  EXPECT_EQ(Run("compare p p_low", &out), 1) << out;
  EXPECT_NE(out.find("config.lr: 0.003 \u2192 0.0003"), std::string::npos) << out;
}

// An external trainer beside benchmake-train, as the suites' tables put them:
// a tiny CPU pretrain, and an exec target whose command prints a Megatron-style
// log (`cat` of a workspace file) parsed with log_format. The log repeats the
// pretrain's losses, so compare finds the curves aligned across trainers.
TEST_F(ReportE2e, ExternalMegatronRunBesideBenchmakeTrain) {
  std::string train = fs::path(benchmake_).parent_path() / "benchmake-train";
  if (!fs::exists(train)) GTEST_SKIP() << train << " not built: external-run report test NOT run";
  fs::create_directories(root_ / "ws" / "data");
  fs::copy_file(testing::DataDir() + "/../../../data/kjv.txt", root_ / "ws" / "data" / "kjv.txt");
  std::string benchfile = R"(
[target.kjv]
rule = "download"
url = "file:data/kjv.txt"

[target.kjv_bytes]
rule = "tokenize"
input = ["kjv"]
tokenizer = "bytes"
valid_fraction = 0.05

[target.p]
rule = "pretrain"
data = "kjv_bytes"
model = "llama-small"
lbs = 4
mpe = 64
steps = 30
warmup_steps = 5
lr = 3e-3
)";
  std::ofstream(root_ / "ws" / "BENCHFILE.toml") << benchfile;
  ASSERT_EQ(Run("build p"), 0) << last_stderr_;

  // The Megatron log: its argument block, then one iteration line per step
  // with the pretrain's loss; 100 ms a step on 2 devices.
  std::ostringstream log;
  log << "------------------------ arguments ------------------------\n"
      << "  bf16 ............................................ True\n"
      << "  data_parallel_size .............................. 2\n"
      << "  global_batch_size ............................... 8\n"
      << "  micro_batch_size ................................ 4\n"
      << "  seq_length ...................................... 64\n"
      << "  world_size ...................................... 2\n"
      << "-------------------- end of arguments ---------------------\n"
      << "[W init.cpp:767] Warning: nvfuser is no longer supported in torch script\n";
  std::istringstream curve(Read(root_ / "ws" / "out" / "p" / "log.jsonl"));
  int steps = 0;
  for (std::string line; std::getline(curve, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (!j.contains("step")) continue;
    ++steps;
    log << fmt::format(
        " [2024-06-01 10:00:00] iteration {:8d}/{:8d} | consumed samples: {:12d} | elapsed time "
        "per iteration (ms): 100.0 | learning rate: 3.000000E-03 | global batch size:     8 | "
        "lm loss: {:.6E} | loss scale: 1.0 | grad norm: 1.000 | number of skipped iterations:   "
        "0 | number of nan iterations:   0 |\n",
        j["step"].get<int>(), 30, 8 * j["step"].get<int>(), j["loss"].get<double>());
  }
  ASSERT_EQ(steps, 30);
  std::ofstream(root_ / "ws" / "megatron.log") << log.str();
  std::ofstream(root_ / "ws" / "BENCHFILE.toml", std::ios::app) << R"(
[target.megatron]
rule = "exec"
command = ["cat", "{in.megatron.log}"]
inputs = ["megatron.log"]
log_format = "megatron"
device = "H100"
model = "llama-small"
)";
  ASSERT_EQ(Run("build megatron"), 0) << last_stderr_;

  std::string md;
  ASSERT_EQ(Run("report", &md), 0) << last_stderr_;
  EXPECT_NE(md.find("| case | trainer | config | layout | fix_hp | token/p/s | loss | mem (GiB) | "
                    "MFU (6N) | MFU (PaLM) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| p | benchmake-train | cpu\u00d71 | TP1PP1DP1 | MPE=64, LBS=4, fp32 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| megatron | megatron | H100\u00d72 | TP1PP1DP2 | MPE=64, LBS=4, bf16 |"),
            std::string::npos)
      << md;
  nlohmann::json j = ReportJson("");
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j["rows"].size(), 2u);
  const nlohmann::json& ext = j["rows"][1];
  EXPECT_EQ(ext["trainer"], "megatron");
  // Steps 2-30: 8 x 64 tokens per 100 ms, over 2 devices.
  EXPECT_DOUBLE_EQ(ext["metrics"]["tokens_per_device_per_s"]["median"].get<double>(), 2560.0);
  EXPECT_TRUE(ext["metrics"].contains("mfu_palm"));

  std::string out;
  EXPECT_EQ(Run("compare p megatron", &out), 0) << out << last_stderr_;
  EXPECT_NE(out.find("ALIGNED"), std::string::npos) << out;
  EXPECT_NE(out.find("benchmake-train"), std::string::npos) << "the trainers differ: " << out;
  ASSERT_EQ(Run("report --format csv", &out), 0);
  EXPECT_NE(out.find("megatron,exec,megatron,H100,2,TP1PP1DP2,"), std::string::npos) << out;
}

}  // namespace
}  // namespace bm::report
