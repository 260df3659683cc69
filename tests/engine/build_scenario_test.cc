// Whole build scenarios on an in-memory filesystem with a fake command runner:
// no disk, no ninja, no processes (STYLE §1).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>

#include "engine/build.h"
#include "engine/generate.h"
#include "engine/inspect.h"
#include "engine/platform_cache.h"
#include "engine/results.h"
#include "rules/registry.h"
#include "tests/engine/test_rules.h"
#include "tests/support/fake_command_runner.h"
#include "tests/support/memory_filesystem.h"
#include "tests/support/test_data.h"

namespace bm::engine {
namespace {

using testing::FakeCommandRunner;
using testing::MemoryFilesystem;

constexpr char kPipeline[] = R"(
[target.data]
rule = "exec"
inputs = ["src/raw.txt"]
command = ["copy", "{in.src/raw.txt}", "{out}/data.txt"]
outputs = ["data.txt"]

[target.train]
rule = "exec"
inputs = ["data"]
command = ["write", "{out}/model.bin", "model-lbs-4"]
outputs = ["model.bin"]
description = "the model"

[target.eval]
rule = "exec"
inputs = ["train"]
command = ["copy", "{in.train}/model.bin", "{out}/eval.txt"]
outputs = ["eval.txt"]
)";

class BuildScenarioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("BENCHMAKE_CACHE_DIR", "/cache", 1);
    ::unsetenv("BENCHMAKE_PLATFORM");
    rules::RegisterBuiltinRules(rules_);
    auto count = std::make_unique<testing::CountRule>(false);
    auto measure = std::make_unique<testing::CountRule>(true);
    count_ = count.get();
    measure_ = measure.get();
    rules_.Register(std::move(count));
    rules_.Register(std::move(measure));
    ws_.fs = &fs_;
    ws_.runner = &runner_;
    ws_.rules = &rules_;
    ws_.root = "/ws";
    ws_.benchfile = "/ws/BENCHFILE.toml";
    ws_.tools_dir = "/tools";
    ws_.self_exe = "/tools/benchmake";
    fs_.Write("/ws/src/raw.txt", "raw bytes");
  }
  void TearDown() override { ::unsetenv("BENCHMAKE_PLATFORM"); }

  void SetBenchfile(const std::string& text) { fs_.Write(ws_.benchfile, text); }
  void Edit(const std::string& from, const std::string& to) {
    std::string text = fs_.Read(ws_.benchfile);
    size_t pos = text.find(from);
    ASSERT_NE(pos, std::string::npos) << from;
    text.replace(pos, from.size(), to);
    SetBenchfile(text);
  }

  // Runs a build; returns the number of commands the fake runner ran.
  InProcessSummary Build() {
    runner_.ClearRecord();
    console_.str("");
    StepOptions options;
    options.console = &console_;
    Result<InProcessSummary> r = BuildInProcess(ws_, options);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : InProcessSummary{};
  }
  int ran() { return runner_.run_count(); }
  std::vector<std::string> Reasons(const std::string& target) {
    Result<GenerateResult> gen = Generate(ws_);
    EXPECT_TRUE(gen.ok()) << gen.status().message();
    Result<std::vector<TargetInspection>> all = InspectWorkspace(ws_, gen->targets);
    EXPECT_TRUE(all.ok()) << all.status().message();
    for (const TargetInspection& t : *all)
      if (t.name == target) return t.staleness.reasons;
    return {"no such target"};
  }
  bool HasReason(const std::string& target, const std::string& reason) {
    for (const std::string& r : Reasons(target))
      if (r == reason) return true;
    return false;
  }

  MemoryFilesystem fs_;
  FakeCommandRunner runner_{&fs_};
  RuleRegistry rules_;
  testing::CountRule* count_ = nullptr;
  testing::CountRule* measure_ = nullptr;
  Workspace ws_;
  std::ostringstream console_;
};

TEST_F(BuildScenarioTest, CacheGcBesideTheBuildDoesNotFailAStepThatRan) {
  // `cache gc` in another process removes each blob as soon as a step stores
  // it (maintenance.h: "safe to run beside builds"): the step's own outputs
  // still land in out/, and the build succeeds.
  SetBenchfile(kPipeline);
  fs_.VanishAfterRenameTo("/cache/cas/");
  InProcessSummary first = Build();
  EXPECT_EQ(first.ran, 3);
  EXPECT_EQ(fs_.Read("/ws/out/data/data.txt"), "raw bytes");
  EXPECT_EQ(fs_.Read("/ws/out/eval/eval.txt"), "model-lbs-4");
}

TEST_F(BuildScenarioTest, CacheGcTakingTheRecordOfAMeasuredStepDoesNotFailTheBuild) {
  // A measured step reads its record back after running (rounds, remeasure).
  ::setenv("BENCHMAKE_PLATFORM", R"({"gpu_name":"H100","gpu_count":8})", 1);
  SetBenchfile("[target.speed]\nrule = \"measure\"\n");
  fs_.VanishAfterRenameTo("/cache/ac/");
  InProcessSummary first = Build();
  EXPECT_EQ(first.ran, 1);
  EXPECT_EQ(measure_->runs, 1);
  EXPECT_TRUE(fs_.Exists("/ws/out/speed/result.txt"));
}

TEST_F(BuildScenarioTest, FirstBuildRunsEveryStepOnceSecondRunsNone) {
  SetBenchfile(kPipeline);
  InProcessSummary first = Build();
  EXPECT_EQ(ran(), 3);
  EXPECT_EQ(first.ran, 3);
  EXPECT_EQ(fs_.Read("/ws/out/eval/eval.txt"), "model-lbs-4");
  EXPECT_EQ(fs_.Read("/ws/out/data/data.txt"), "raw bytes");
  InProcessSummary second = Build();
  EXPECT_EQ(ran(), 0);
  EXPECT_EQ(second.restored, 0);
}

TEST_F(BuildScenarioTest, EditingOneParamRerunsTargetAndDependentsRevertRestores) {
  SetBenchfile(kPipeline);
  Build();
  Edit("model-lbs-4", "model-lbs-8");
  EXPECT_TRUE(HasReason(
      "train",
      R"(param command: ["write","{out}/model.bin","model-lbs-4"] → ["write","{out}/model.bin","model-lbs-8"])"))
      << ::testing::PrintToString(Reasons("train"));
  EXPECT_TRUE(HasReason("eval", "input train: will be rebuilt"))
      << ::testing::PrintToString(Reasons("eval"));
  InProcessSummary edited = Build();
  EXPECT_EQ(ran(), 2);
  EXPECT_EQ(edited.outcomes["data"], StepOutcome::kUpToDate);
  EXPECT_EQ(edited.outcomes["train"], StepOutcome::kRan);
  EXPECT_EQ(edited.outcomes["eval"], StepOutcome::kRan);
  EXPECT_EQ(fs_.Read("/ws/out/eval/eval.txt"), "model-lbs-8");

  Edit("model-lbs-8", "model-lbs-4");
  InProcessSummary reverted = Build();
  EXPECT_EQ(ran(), 0);
  EXPECT_EQ(reverted.restored, 2);
  EXPECT_EQ(fs_.Read("/ws/out/eval/eval.txt"), "model-lbs-4");
}

TEST_F(BuildScenarioTest, NonKeyParamReorderAndCommentRerunNothing) {
  SetBenchfile(kPipeline);
  Build();
  Edit("description = \"the model\"", "description = \"a better description\"");
  Build();
  EXPECT_EQ(ran(), 0);
  // Reorder keys within a table, and add comments.
  Edit("command = [\"write\", \"{out}/model.bin\", \"model-lbs-4\"]\noutputs = [\"model.bin\"]",
       "# the model\noutputs = [\"model.bin\"]  # one file\ncommand = [\"write\", "
       "\"{out}/model.bin\", \"model-lbs-4\"]");
  InProcessSummary s = Build();
  EXPECT_EQ(ran(), 0);
  EXPECT_EQ(s.restored, 0);
}

TEST_F(BuildScenarioTest, IntegerSpellingsAndDefaultsGiveTheSameKey) {
  SetBenchfile("[target.a]\nrule = \"count\"\nsteps = 1000\nlr = 1\n");
  Build();
  EXPECT_EQ(count_->runs, 1);
  SetBenchfile(
      "[target.a]\nrule = \"count\"\n# same values, other spellings\nlr = 1.0\nsteps = 1_000\nlbs "
      "= 4\nlog_every = 50\n");
  Build();
  EXPECT_EQ(count_->runs, 1);
  SetBenchfile("[target.a]\nrule = \"count\"\nsteps = 1000\nlr = 1\nlbs = 8\n");
  EXPECT_TRUE(HasReason("a", "param lbs: 4 → 8")) << ::testing::PrintToString(Reasons("a"));
  Build();
  EXPECT_EQ(count_->runs, 2);
}

TEST_F(BuildScenarioTest, TouchWithoutByteChangeRerunsNothingNewBytesRerunDependents) {
  SetBenchfile(kPipeline);
  Build();
  int hashed = fs_.hash_count("/ws/src/raw.txt");
  Build();
  EXPECT_EQ(fs_.hash_count("/ws/src/raw.txt"), hashed) << "an untouched source must not be re-read";
  ASSERT_TRUE(fs_.Touch("/ws/src/raw.txt").ok());
  Build();
  EXPECT_EQ(ran(), 0);
  EXPECT_EQ(fs_.hash_count("/ws/src/raw.txt"), hashed + 1) << "a touched source is re-read once";
  fs_.Write("/ws/src/raw.txt", "new raw bytes");
  EXPECT_TRUE(HasReason("data", "source src/raw.txt: content changed"));
  InProcessSummary s = Build();
  EXPECT_EQ(s.outcomes["data"], StepOutcome::kRan);
  // train's command does not read data's bytes: its output is identical, so
  // eval is cut off even though train reran.
  EXPECT_EQ(s.outcomes["train"], StepOutcome::kRan);
  EXPECT_EQ(s.outcomes["eval"], StepOutcome::kUpToDate);
}

// A directory input's digest covers its whole tree (as DVC hashes a tracked
// directory); a file added below a subdirectory changes only that
// subdirectory's mtime, which the no-op check must also watch.
TEST_F(BuildScenarioTest, DirectoryInputRerunsWhenAFileComesOrGoesAnywhereInItsTree) {
  fs_.Write("/ws/src/tree/top.txt", "top");
  fs_.Write("/ws/src/tree/sub/a.txt", "a");
  ASSERT_TRUE(fs_.MakeDirs("/ws/src/tree/sub/empty").ok());
  SetBenchfile(R"(
[target.tree]
rule = "exec"
inputs = ["src/tree"]
command = ["write", "{out}/n", "x"]
outputs = ["n"]
)");
  EXPECT_EQ(Build().outcomes["tree"], StepOutcome::kRan);
  EXPECT_EQ(Build().outcomes["tree"], StepOutcome::kUpToDate);
  fs_.Write("/ws/src/tree/sub/b.txt", "b");
  EXPECT_EQ(Build().outcomes["tree"], StepOutcome::kRan) << "a file added in a subdirectory";
  fs_.Write("/ws/src/tree/sub/empty/c.txt", "c");
  EXPECT_EQ(Build().outcomes["tree"], StepOutcome::kRan) << "a file added in an empty one";
  ASSERT_TRUE(fs_.Remove("/ws/src/tree/sub/a.txt").ok());
  EXPECT_EQ(Build().outcomes["tree"], StepOutcome::kRan) << "a file removed";
  fs_.Write("/ws/src/tree/sub/b.txt", "B");
  EXPECT_EQ(Build().outcomes["tree"], StepOutcome::kRan) << "a file changed";
  EXPECT_EQ(Build().outcomes["tree"], StepOutcome::kUpToDate);
}

// A source's executable bit is part of its key, as in Bazel's file digests:
// `chmod +x` changes no byte and no mtime, yet decides whether `./run.sh` runs.
// Found by an outside check: the bit was in neither the key nor the no-op stamp.
TEST_F(BuildScenarioTest, ExecutableBitOfASourceIsInItsKey) {
  fs_.Write("/ws/src/run.sh", "echo hi");
  fs_.Write("/ws/src/tree/tool.sh", "echo tool");
  SetBenchfile(R"(
[target.script]
rule = "exec"
inputs = ["src/run.sh"]
command = ["write", "{out}/n", "x"]
outputs = ["n"]

[target.tree]
rule = "exec"
inputs = ["src/tree"]
command = ["write", "{out}/n", "y"]
outputs = ["n"]
)");
  Build();
  EXPECT_EQ(ran(), 2);
  ASSERT_TRUE(fs_.SetExecutable("/ws/src/run.sh").ok());
  EXPECT_TRUE(HasReason("script", "source src/run.sh: now executable"));
  InProcessSummary s = Build();
  EXPECT_EQ(s.outcomes["script"], StepOutcome::kRan);
  EXPECT_EQ(s.outcomes["tree"], StepOutcome::kUpToDate);
  EXPECT_EQ(Build().outcomes["script"], StepOutcome::kUpToDate);
  ASSERT_TRUE(fs_.SetExecutable("/ws/src/tree/tool.sh").ok());
  EXPECT_EQ(Build().outcomes["tree"], StepOutcome::kRan) << "a file in a directory input";
  ASSERT_TRUE(fs_.Remove("/ws/src/run.sh").ok());
  fs_.Write("/ws/src/run.sh", "echo hi");
  EXPECT_TRUE(HasReason("script", "source src/run.sh: no longer executable"));
  EXPECT_EQ(Build().outcomes["script"], StepOutcome::kRestored) << "the first key again";
}

TEST_F(BuildScenarioTest, EarlyCutoffWhenUpstreamRerunsWithIdenticalBytes) {
  SetBenchfile(kPipeline);
  Build();
  // A key change of `data` that leaves its output bytes unchanged.
  Edit("outputs = [\"data.txt\"]", "outputs = [\"data.txt\"]\nenv = { UNUSED = \"1\" }");
  InProcessSummary s = Build();
  EXPECT_EQ(ran(), 1);
  EXPECT_EQ(s.outcomes["data"], StepOutcome::kRan);
  EXPECT_EQ(s.outcomes["train"], StepOutcome::kUpToDate);
  EXPECT_EQ(s.outcomes["eval"], StepOutcome::kUpToDate);
}

TEST_F(BuildScenarioTest, DeletingOutRestoresEverythingFromCache) {
  SetBenchfile(kPipeline);
  Build();
  ASSERT_TRUE(fs_.RemoveAll("/ws/out").ok());
  EXPECT_TRUE(HasReason("eval", "outputs missing from out/"));
  InProcessSummary s = Build();
  EXPECT_EQ(ran(), 0);
  EXPECT_EQ(s.restored, 3);
  EXPECT_EQ(fs_.Read("/ws/out/eval/eval.txt"), "model-lbs-4");
}

TEST_F(BuildScenarioTest, DeletingOneOutputDirRestoresOnlyThatTarget) {
  SetBenchfile(kPipeline);
  Build();
  ASSERT_TRUE(fs_.RemoveAll("/ws/out/train").ok());
  InProcessSummary s = Build();
  EXPECT_EQ(ran(), 0);
  EXPECT_EQ(s.outcomes["train"], StepOutcome::kRestored);
  EXPECT_EQ(s.outcomes["data"], StepOutcome::kUpToDate);
  EXPECT_EQ(s.outcomes["eval"], StepOutcome::kUpToDate);
}

// `status` and `explain` say a target with a file gone from out/NAME will be
// restored, but change no stamp: run beside a build (which holds the lock they
// do not take), removing t/NAME.out just after its step wrote it would fail
// the next step ("input train has not been built"). The build itself acts.
TEST_F(BuildScenarioTest, InspectingAMissingOutputChangesNoStampTheBuildRestoresIt) {
  SetBenchfile(kPipeline);
  Build();
  ASSERT_TRUE(fs_.Remove("/ws/out/train/model.bin").ok());
  EXPECT_TRUE(HasReason("train", "outputs missing from out/"));
  EXPECT_TRUE(fs_.Exists("/ws/.benchmake/t/train.out"));
  InProcessSummary s = Build();
  EXPECT_EQ(ran(), 0);
  EXPECT_EQ(s.outcomes["train"], StepOutcome::kRestored);
  EXPECT_TRUE(fs_.Exists("/ws/out/train/model.bin"));
}

TEST_F(BuildScenarioTest, CorruptBlobIsReportedEvictedAndRebuilt) {
  SetBenchfile(kPipeline);
  Build();
  std::string blob = "/cache/cas/" + DigestOf("model-lbs-4").Hex().substr(0, 2) + "/" +
                     DigestOf("model-lbs-4").Hex();
  ASSERT_TRUE(fs_.Exists(blob));
  ASSERT_TRUE(fs_.RemoveAll("/ws/out").ok());
  fs_.CorruptInPlace(blob, "garbage");
  InProcessSummary s = Build();
  EXPECT_EQ(s.outcomes["train"], StepOutcome::kRan);
  EXPECT_NE(console_.str().find("corrupt blob"), std::string::npos) << console_.str();
  EXPECT_EQ(fs_.Read(blob), "model-lbs-4") << "rebuilt blob replaces the evicted one";
  EXPECT_EQ(fs_.Read("/ws/out/eval/eval.txt"), "model-lbs-4");
}

TEST_F(BuildScenarioTest, FailedStepRecordsNothing) {
  SetBenchfile("[target.bad]\nrule = \"exec\"\ncommand = [\"fail\", \"3\"]\n");
  Result<InProcessSummary> r = BuildInProcess(ws_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exited with status 3"), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(fs_.Exists("/ws/.benchmake/t/bad.out"));
  Result<std::vector<std::string>> ac = fs_.ListDir("/cache/ac");
  ASSERT_TRUE(ac.ok());
  EXPECT_TRUE(ac->empty());
}

// A step whose outputs the cache cannot store (its directory full: here the
// log's blob cannot be written) fails naming the cache directory and leaves
// no copy of the outputs behind in .benchmake/tmp, as a failed command does
// not; the next build, room made, runs it and stores it.
TEST_F(BuildScenarioTest, AFullCacheFailsTheStepAndLeavesNoScratch) {
  SetBenchfile("[target.data]\nrule = \"exec\"\ncommand = [\"write\", \"{out}/x\", \"1\"]\n");
  fs_.FailWritesMatching("/cache/tmp/");
  Result<InProcessSummary> r = BuildInProcess(ws_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cache directory /cache"), std::string::npos)
      << r.status().message();
  Result<std::vector<std::string>> scratch = fs_.ListDir("/ws/.benchmake/tmp");
  ASSERT_TRUE(scratch.ok());
  EXPECT_TRUE(scratch->empty()) << scratch->front();
  EXPECT_FALSE(fs_.Exists("/ws/.benchmake/t/data.out"));
  EXPECT_TRUE(fs_.ListDir("/cache/ac")->empty());
  fs_.FailWritesMatching("");
  EXPECT_EQ(Build().ran, 1);
  EXPECT_EQ(fs_.Read("/ws/out/data/x"), "1");
}

// Fails the first time after leaving a checkpoint in resume_dir; succeeds
// when it finds one.
class ResumableRule : public Rule {
 public:
  std::string_view name() const override { return "resumable"; }
  int version() const override { return 1; }
  const std::vector<ParamSpec>& params() const override { return params_; }
  Result<StepResult> Run(StepContext& ctx) const override {
    std::string ckpt = ctx.resume_dir + "/ckpt";
    if (!ctx.fs->Stat(ckpt)->exists) {
      BM_TRY(ctx.fs->WriteFileAtomic(ckpt, "step 50"));
      return Errorf(ErrorCode::kFailed, "killed at step 50");
    }
    BM_ASSIGN_OR_RETURN(std::string state, ctx.fs->ReadFile(ckpt));
    BM_TRY(ctx.fs->WriteFileAtomic(ctx.out_dir + "/model", "resumed from " + state));
    return StepResult{};
  }

 private:
  std::vector<ParamSpec> params_;
};

TEST_F(BuildScenarioTest, ResumeDirSurvivesAFailedRunOfTheSameKey) {
  rules_.Register(std::make_unique<ResumableRule>());
  SetBenchfile("[target.train]\nrule = \"resumable\"\n");
  ASSERT_FALSE(BuildInProcess(ws_).ok());
  Result<InProcessSummary> second = BuildInProcess(ws_);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(fs_.Read("/ws/out/train/model"), "resumed from step 50");
  Result<std::vector<std::string>> left = fs_.ListDir("/ws/.benchmake/resume");
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty()) << "removed after success";
}

// A trainer-like rule: `layout` with TP > 1 is refused at plan time, as the
// train rules refuse tensor parallelism (rules/train_common.h,
// TrainUnsupported); it needs `gpus` GPUs (the engine's own check).
class LayoutRule : public Rule {
 public:
  LayoutRule() {
    params_ = {{"layout", ParamType::kString, nlohmann::json("TP1PP1DP1"), "layout", true},
               {"gpus", ParamType::kInt, nlohmann::json(0), "GPUs", true},
               {"data", ParamType::kInputList, nlohmann::json::array(), "inputs", true}};
  }
  std::string_view name() const override { return "layout"; }
  int version() const override { return 1; }
  const std::vector<ParamSpec>& params() const override { return params_; }
  int gpus(const nlohmann::json& p) const override { return p["gpus"].get<int>(); }
  std::vector<std::string> Unsupported(const nlohmann::json& p) const override {
    const std::string layout = p["layout"].get<std::string>();
    if (layout.rfind("TP1", 0) == 0) return {};
    return {"layout " + layout + ": tensor parallelism is not implemented"};
  }
  Result<StepResult> Run(StepContext& ctx) const override {
    ++runs;
    BM_TRY(ctx.fs->WriteFileAtomic(ctx.out_dir + "/result.txt", ctx.params["layout"].dump()));
    return StepResult{};
  }
  mutable int runs = 0;

 private:
  std::vector<ParamSpec> params_;
};

TEST_F(BuildScenarioTest, UnsupportedTargetLoadsAndFailsOnlyWhenPlannedBeforeAnythingRuns) {
  auto owned = std::make_unique<LayoutRule>();
  const LayoutRule* rule = owned.get();
  rules_.Register(std::move(owned));
  SetBenchfile(R"(
[target.data]
rule = "exec"
inputs = ["src/raw.txt"]
command = ["copy", "{in.src/raw.txt}", "{out}/data.txt"]
outputs = ["data.txt"]

[target.smoke]
rule = "layout"
data = ["data"]
layout = "TP1PP1DP1"

[target.full_tp2]
rule = "layout"
data = ["data"]
layout = "TP2PP1DP4"

[target.report_full]
rule = "layout"
data = ["full_tp2"]
layout = "TP1PP1DP1"

[target.eight_gpus]
rule = "layout"
layout = "TP1PP1DP8"
gpus = 8
)");
  // The unsupported target alone, or through a dependent: refused, nothing ran.
  Result<InProcessSummary> r = BuildInProcess(ws_, {}, {"report_full"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  // At the target's [target.NAME], as the BENCHFILE's own errors are.
  EXPECT_EQ(r.status().message(),
            "/ws/BENCHFILE.toml:13:9: target 'full_tp2' (needed by 'report_full') cannot run "
            "here: layout TP2PP1DP4: tensor parallelism is not implemented; nothing was run");
  EXPECT_EQ(rule->runs, 0);
  EXPECT_FALSE(fs_.Exists("/ws/out/data")) << "the exec dependency did not run either";
  // Building everything names every such target (the GPU count: the engine's
  // own check, [benchmake] gpus unset, none detected) and says how to build others.
  r = BuildInProcess(ws_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/ws/BENCHFILE.toml:13:9: target 'full_tp2' cannot run here"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("/ws/BENCHFILE.toml:23:9: target 'eight_gpus' needs 8 GPU(s) "
                                      "for layout TP1PP1DP8 but this machine has 0"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("name the targets to build"), std::string::npos);
  EXPECT_EQ(rule->runs, 0);
  // The supported target beside them builds, with its dependency only.
  r = BuildInProcess(ws_, {}, {"smoke"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->ran, 2);
  EXPECT_EQ(rule->runs, 1);
  EXPECT_TRUE(fs_.Exists("/ws/out/smoke/result.txt"));
  // Two lines above the target move it: the next refusal names its new line, and the
  // target built before stays built (the locations are no step's input).
  SetBenchfile("# the layouts\n#\n" + fs_.Read(ws_.benchfile));
  r = BuildInProcess(ws_, {}, {"full_tp2"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("/ws/BENCHFILE.toml:15:9: target 'full_tp2' cannot run", 0),
            0u)
      << r.status().message();
  r = BuildInProcess(ws_, {}, {"smoke"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->ran, 0);
  // An unknown name is bad input, with the nearest name.
  r = BuildInProcess(ws_, {}, {"smokes"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "no target 'smokes' in /ws/BENCHFILE.toml (did you mean 'smoke'?)");
}

TEST_F(BuildScenarioTest, MissingDeclaredOutputFailsTheStep) {
  SetBenchfile(
      "[target.a]\nrule = \"exec\"\ncommand = [\"write\", \"{out}/x\", \"1\"]\noutputs = "
      "[\"y\"]\n");
  Result<InProcessSummary> r = BuildInProcess(ws_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("declared output 'y' was not produced"), std::string::npos);
}

TEST_F(BuildScenarioTest, PlatformChangeRerunsOnlyPlatformDependentTargets) {
  ::setenv("BENCHMAKE_PLATFORM", R"({"gpu_name":"H100","gpu_count":8})", 1);
  SetBenchfile(
      "[target.ckpt]\nrule = \"count\"\n[target.speed]\nrule = \"measure\"\ndata = [\"ckpt\"]\n");
  Build();
  EXPECT_EQ(count_->runs, 1);
  EXPECT_EQ(measure_->runs, 1);
  ::setenv("BENCHMAKE_PLATFORM", R"({"gpu_name":"H200","gpu_count":8})", 1);
  EXPECT_TRUE(HasReason("speed", "platform: H100 → H200"))
      << ::testing::PrintToString(Reasons("speed"));
  Build();
  EXPECT_EQ(count_->runs, 1);
  EXPECT_EQ(measure_->runs, 2);
  Result<std::vector<TargetResult>> results = LoadResults(ws_);
  ASSERT_TRUE(results.ok()) << results.status().message();
  ASSERT_EQ(results->size(), 2u);
  const TargetResult& speed = (*results)[1];
  EXPECT_EQ(speed.name, "speed");
  EXPECT_TRUE(speed.built && speed.fresh && speed.up_to_date);
  EXPECT_EQ(speed.record.metrics["platform"]["gpu_name"], "H200");
  EXPECT_EQ(speed.record.provenance.platform["gpu_name"], "H200");
  // Back to H100: restored from the cache, and reported as not fresh.
  ::setenv("BENCHMAKE_PLATFORM", R"({"gpu_name":"H100","gpu_count":8})", 1);
  Build();
  EXPECT_EQ(measure_->runs, 2);
  results = LoadResults(ws_);
  ASSERT_TRUE(results.ok());
  EXPECT_FALSE((*results)[1].fresh);
  EXPECT_EQ((*results)[1].record.metrics["platform"]["gpu_name"], "H100");
}

TEST_F(BuildScenarioTest, RemeasureRerunsOnlyPlatformDependentTargets) {
  ::setenv("BENCHMAKE_PLATFORM", R"({"gpu_name":"H100"})", 1);
  SetBenchfile(
      "[target.ckpt]\nrule = \"count\"\n[target.speed]\nrule = \"measure\"\ndata = [\"ckpt\"]\n");
  Build();
  StepOptions options;
  options.remeasure = true;
  Result<InProcessSummary> r = BuildInProcess(ws_, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The artifact stays as it was; the measured step ran once more and its
  // measurement is recorded beside the first one.
  EXPECT_EQ(r->outcomes["ckpt"], StepOutcome::kUpToDate);
  EXPECT_EQ(r->outcomes["speed"], StepOutcome::kUpToDate);
  EXPECT_EQ(r->remeasured.count("ckpt"), 0u);
  EXPECT_EQ(r->remeasured["speed"], 1);
  EXPECT_EQ(measure_->runs, 2);
  EXPECT_EQ(count_->runs, 1);
  Result<std::vector<TargetResult>> results = LoadResults(ws_);
  ASSERT_TRUE(results.ok());
  EXPECT_EQ((*results)[1].record.remeasurements.size(), 1u);
}

TEST_F(BuildScenarioTest, MissingTrainerIsAnErrorOnlyForPlatformDependentTargets) {
  SetBenchfile("[target.a]\nrule = \"count\"\n");
  Build();
  EXPECT_EQ(count_->runs, 1);
  SetBenchfile("[target.a]\nrule = \"count\"\n[target.b]\nrule = \"measure\"\n");
  Result<GenerateResult> gen = Generate(ws_);
  ASSERT_FALSE(gen.ok());
  EXPECT_NE(
      gen.status().message().find("platform-dependent targets (b) need /tools/benchmake-train"),
      std::string::npos)
      << gen.status().message();
}

// The platform's facts are cached (engine/platform_cache.h): probed when a
// platform-dependent target first needs them, then again only when something
// that can change them changed (here: the trainer binary, the NVIDIA driver,
// OPENBLAS_CORETYPE), or when a measured run saw other facts than its key's.
TEST_F(BuildScenarioTest, PlatformIsProbedOnlyWhenWhatCanChangeItChanged) {
  // The test's own OPENBLAS_CORETYPE changes below: a machine that sets one (some images set
  // Haswell for every process) starts without it here, and gets it back at the end.
  const char* outer = std::getenv("OPENBLAS_CORETYPE");
  const std::optional<std::string> coretype =
      outer ? std::optional<std::string>(outer) : std::nullopt;
  ::unsetenv("OPENBLAS_CORETYPE");
  struct Restore {
    const std::optional<std::string>& value;
    ~Restore() {
      if (value) ::setenv("OPENBLAS_CORETYPE", value->c_str(), 1);
    }
  } restore{coretype};
  fs_.Write("/tools/benchmake-train", "binary");
  fs_.Write("/proc/driver/nvidia/version", "NVRM version: 580.65\n");
  std::string gpu = "H100";
  int probes = 0;
  runner_.SetHandler([&](const Command& c) -> Result<CommandResult> {
    if (c.argv.size() == 6 &&
        c.argv[4] == "/tools/benchmake-train") {  // sh -c '...' OUT trainer --probe
      ++probes;
      fs_.Write(c.argv[3], R"({"gpu_name":")" + gpu + R"(","gpu_count":1,"driver":"580.65"})");
    }
    return CommandResult{};
  });
  SetBenchfile("[target.a]\nrule = \"count\"\n");
  Build();
  EXPECT_EQ(probes, 0) << "nothing platform-dependent: no probe";
  SetBenchfile("[target.a]\nrule = \"count\"\n[target.b]\nrule = \"measure\"\n");
  Build();
  EXPECT_EQ(probes, 1);
  EXPECT_EQ(measure_->runs, 1);
  Build();
  EXPECT_EQ(probes, 1) << "a no-op build probes nothing";
  SetBenchfile("[target.a]\nrule = \"count\"\n[target.b]\nrule = \"measure\"\nsteps = 3\n");
  Build();
  EXPECT_EQ(probes, 1) << "an edited BENCHFILE does not change the platform";
  EXPECT_EQ(measure_->runs, 2);

  gpu = "H200";
  fs_.Write("/proc/driver/nvidia/version", "NVRM version: 590.10\n");
  Build();
  EXPECT_EQ(probes, 2) << "a new driver: probed again";
  EXPECT_EQ(measure_->runs, 3) << "and the measured target reruns on the new facts";
  fs_.Write("/tools/benchmake-train", "rebuilt binary");
  Build();
  EXPECT_EQ(probes, 3) << "a rebuilt trainer: probed again";
  ::setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  Build();
  ::unsetenv("OPENBLAS_CORETYPE");
  EXPECT_EQ(probes, 4) << "the BLAS kernels named by the user: probed again";
  Build();
  EXPECT_EQ(probes, 5) << "and again when the variable goes";
  EXPECT_EQ(measure_->runs, 3) << "facts that did not change keep the key";
  EXPECT_EQ(count_->runs, 1);
}

TEST_F(BuildScenarioTest, AMeasuredRunThatSawAnotherPlatformMakesTheNextBuildProbe) {
  fs_.Write("/tools/benchmake-train", "binary");
  int probes = 0;
  std::string driver = "580.65";
  runner_.SetHandler([&](const Command& c) -> Result<CommandResult> {
    if (c.argv.size() == 6 && c.argv[4] == "/tools/benchmake-train") {
      ++probes;
      fs_.Write(c.argv[3], R"({"gpu_count":1,"driver":")" + driver + R"("})");
    }
    return CommandResult{};
  });
  SetBenchfile("[target.b]\nrule = \"measure\"\n");
  // A Slurm node's driver changed after the probe: the run reports it.
  measure_->measured_platform = {{"gpu_count", 1}, {"driver", "590.10"}};
  Build();
  EXPECT_EQ(probes, 1);
  EXPECT_EQ(measure_->runs, 1);
  measure_->measured_platform = nullptr;
  driver = "590.10";
  Build();
  EXPECT_EQ(probes, 2) << "the drift the run saw dropped the cached facts";
  EXPECT_EQ(measure_->runs, 2) << "re-keyed on the new driver";
  Build();
  EXPECT_EQ(probes, 2);
  EXPECT_EQ(measure_->runs, 2);
}

TEST(PlatformDriftTest, NamesWhatDiffersAndIgnoresWhatARunDoesNotLoad) {
  const nlohmann::json keyed = {{"trainer_build", "benchmake-train 0.1.0"},
                                {"driver", "580.65"},
                                {"cublaslt", "13.1.0"},
                                {"gpus", {{{"name", "H100"}}, {{"name", "H100"}}}},
                                {"cpu", {{"model", "Xeon"}}},
                                {"blas", {{"core", "SkylakeX"}}}};
  nlohmann::json same = keyed;
  same["cublaslt"] = nullptr;           // a CPU run loads no cuBLASLt
  same["gpus"] = {{{"name", "H100"}}};  // the step's own GPU
  EXPECT_EQ(PlatformDrift(keyed, same), "");
  nlohmann::json moved = keyed;
  moved["driver"] = "590.10";
  moved["blas"]["core"] = "Prescott";
  EXPECT_EQ(PlatformDrift(keyed, moved), "driver 580.65 → 590.10, BLAS core SkylakeX → Prescott");
  EXPECT_EQ(PlatformDrift(keyed, nlohmann::json()), "") << "an external trainer reports none";
}

TEST_F(BuildScenarioTest, NoOpGenerateTakesTheFastPathAndWritesNothing) {
  SetBenchfile(kPipeline);
  Build();
  Result<GenerateResult> gen = Generate(ws_);
  ASSERT_TRUE(gen.ok());
  EXPECT_TRUE(gen->fast_path);
  Edit("model-lbs-4", "model-lbs-5");
  gen = Generate(ws_);
  ASSERT_TRUE(gen.ok());
  EXPECT_FALSE(gen->fast_path);
  EXPECT_EQ(gen->specs_written, 1);
}

// A target needing more GPUs than the machine has fails the build before
// anything runs, naming the target and the counts.
TEST_F(BuildScenarioTest, TooManyGpusFailsBeforeAnythingRuns) {
  SetBenchfile(std::string(kPipeline) + R"(
[target.big]
rule = "exec"
inputs = ["train"]
command = ["write", "{out}/x", "x"]
outputs = ["x"]
gpus = 8

[benchmake]
gpus = 4
)");
  StepOptions options;
  Result<InProcessSummary> r = BuildInProcess(ws_, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.status().message().rfind(
                "/ws/BENCHFILE.toml:21:9: target 'big' needs 8 GPU(s) but this machine has 4", 0),
            0u)
      << r.status().message();
  EXPECT_EQ(ran(), 0) << "not even the data step";
  Edit("gpus = 8", "gpus = 4");
  ::setenv("BENCHMAKE_GPU_LOCK_DIR", (::testing::TempDir() + "/scenario_gpu_locks").c_str(), 1);
  Build();
  ::unsetenv("BENCHMAKE_GPU_LOCK_DIR");
  EXPECT_EQ(ran(), 4);
}

// exec's log_format parameters are key parameters (they change metrics.json),
// so the cheap way to reinterpret an expensive run is two targets: one runs the
// trainer and keeps its log, one parses it. Editing how the log is read reruns
// only the parsing target.
TEST_F(BuildScenarioTest, ReinterpretingALogRerunsOnlyTheParsingTarget) {
  fs_.Write("/ws/src/megatron.log", testing::ReadTestData("logs/megatron_tp2dp4.log"));
  SetBenchfile(R"(
[target.run]
rule = "exec"
inputs = ["src/megatron.log"]
command = ["copy", "{in.src/megatron.log}", "{out}/train.log"]
outputs = ["train.log"]

[target.parse]
rule = "exec"
inputs = ["run"]
command = ["copy", "{in.run}/train.log", "train.log"]
log_format = "megatron"
log = "train.log"
device = "A100"
)");
  Build();
  EXPECT_EQ(ran(), 2);
  Result<std::vector<TargetResult>> results = LoadResults(ws_);
  ASSERT_TRUE(results.ok()) << results.status().message();
  EXPECT_EQ((*results)[1].record.metrics["provenance"]["trainer"], "megatron");
  EXPECT_TRUE(fs_.Exists("/ws/out/parse/log.jsonl"));

  Edit("device = \"A100\"", "device = \"H100\"");
  EXPECT_TRUE(HasReason("parse", R"(param device: "A100" → "H100")"))
      << ::testing::PrintToString(Reasons("parse"));
  InProcessSummary s = Build();
  EXPECT_EQ(ran(), 1);
  EXPECT_EQ(s.outcomes["run"], StepOutcome::kUpToDate);
  EXPECT_EQ(s.outcomes["parse"], StepOutcome::kRan);
  results = LoadResults(ws_);
  ASSERT_TRUE(results.ok());
  EXPECT_EQ((*results)[1].record.metrics["config"]["device"], "H100");
}

}  // namespace
}  // namespace bm::engine
