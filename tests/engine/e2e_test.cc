// End-to-end: the real `benchmake` binary with real ninja in temporary
// directories. Each exec step appends its name to $RUNS_LOG, so a test sees
// exactly which steps ran.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/support/processes.h"
#include "tests/support/test_data.h"

namespace bm::engine {
namespace {

namespace fs = std::filesystem;
using bm::testing::ReadText;
using bm::testing::Running;
using bm::testing::WriteText;

// The first line `command` prints (through sh), or "".
std::string ReadCommandOutput(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return "";
  char line[4096] = {};
  std::string out = std::fgets(line, sizeof line, pipe) ? line : "";
  ::pclose(pipe);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

constexpr char kPipeline[] = R"(# an exec pipeline
[target.data]
rule = "exec"
inputs = ["src/raw.txt"]
command = ["sh", "-c", "echo data >> $RUNS_LOG; cp {in.src/raw.txt} {out}/data.txt"]
outputs = ["data.txt"]

[target.train]
rule = "exec"
inputs = ["data"]
command = ["sh", "-c", "echo train >> $RUNS_LOG; echo lbs-4 > {out}/model.bin; cat {in.data}/data.txt >> {out}/model.bin"]
outputs = ["model.bin"]
description = "trains"

[target.eval]
rule = "exec"
inputs = ["train"]
command = ["sh", "-c", "echo eval >> $RUNS_LOG; cp {in.train}/model.bin {out}/eval.txt; echo '{\"loss\": 1.5}' > {out}/metrics.json"]
outputs = ["eval.txt", "metrics.json"]
metrics = "metrics.json"
)";

class E2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path dir = bm::testing::BinaryDir();
    binary_ = (dir / "benchmake").string();
    ASSERT_TRUE(fs::exists(binary_)) << binary_ << " (set BENCHMAKE_BINARY_DIR)";
    char templ[] = "/tmp/benchmake-e2e-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    root_ = templ;
    ws_ = root_ / "ws";
    fs::create_directories(ws_);
    ::setenv("BENCHMAKE_CACHE_DIR", (root_ / "cache").c_str(), 1);
    ::setenv("RUNS_LOG", (root_ / "runs.log").c_str(), 1);
    ::unsetenv("BENCHMAKE_PLATFORM");
    WriteText(ws_ / "src/raw.txt", "raw\n");
    WriteText(ws_ / "BENCHFILE.toml", kPipeline);
  }
  void TearDown() override {
    for (const char* v : {"FAKE_TRAINER_0", "FAKE_TRAINER_1", "FAKE_TRAINER_2", "FAKE_TRAINER_3",
                          "FAKE_TRAINER_PID_DIR", "BENCHMAKE_PLATFORM"})
      ::unsetenv(v);
    std::error_code ec;
    for (auto& p : fs::recursive_directory_iterator(root_, ec))
      fs::permissions(p.path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(root_, ec);
  }

  struct Run {
    int exit_code;
    std::string output;
  };
  Run Benchmake(const std::string& args) {
    std::string out = (root_ / "output.txt").string();
    std::string cmd =
        "cd '" + ws_.string() + "' && '" + binary_ + "' " + args + " > '" + out + "' 2>&1";
    int status = std::system(cmd.c_str());
    return Run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadText(out)};
  }
  // The steps that ran since the last call, in order, space-separated.
  std::string Runs() {
    std::string text = ReadText(root_ / "runs.log");
    fs::remove(root_ / "runs.log");
    std::string out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out += (out.empty() ? "" : " ") + line;
    return out;
  }
  void Edit(const std::string& from, const std::string& to) {
    std::string text = ReadText(ws_ / "BENCHFILE.toml");
    size_t pos = text.find(from);
    ASSERT_NE(pos, std::string::npos) << from;
    text.replace(pos, from.size(), to);
    WriteText(ws_ / "BENCHFILE.toml", text);
  }
  void BuildOk(const std::string& args = "build") {
    Run r = Benchmake(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  // `benchmake ARGS` in the workspace, in the background (its output to
  // `output`); the caller waits for the returned pid.
  pid_t StartInBackground(const std::string& args, const fs::path& output) {
    std::string cmd = "cd '" + ws_.string() + "' && exec '" + binary_ + "' " + args + " > '" +
                      output.string() + "' 2>&1";
    pid_t pid = ::fork();
    if (pid == 0) {
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
      ::_exit(127);
    }
    return pid;
  }
  // Polls `done` for up to 10 s; its last answer.
  static bool WaitFor(const std::function<bool()>& done) {
    for (int i = 0; i < 400 && !done(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    return done();
  }

  std::string binary_;
  fs::path root_, ws_;
};

TEST_F(E2eTest, FirstBuildRunsEveryStepOnceSecondNone) {
  BuildOk();
  EXPECT_EQ(Runs(), "data train eval");
  EXPECT_EQ(ReadText(ws_ / "out/eval/eval.txt"), "lbs-4\nraw\n");
  Run second = Benchmake("build");
  EXPECT_EQ(second.exit_code, 0);
  EXPECT_EQ(Runs(), "");
  EXPECT_NE(second.output.find("no work to do"), std::string::npos) << second.output;
}

// A no-op build starts no process: neither ninja nor the platform probe. The
// steps' tools are those beside the binary, so benchmake is linked into a
// tools folder beside a benchmake-train whose --probe logs each call; ninja is
// found on PATH, so a ninja that logs each call comes first there.
TEST_F(E2eTest, ANoOpBuildStartsNoProcess) {
  fs::path tools = root_ / "tools", shims = root_ / "shims";
  fs::create_directories(tools);
  fs::create_directories(shims);
  std::error_code ec;
  fs::create_hard_link(binary_, tools / "benchmake", ec);
  if (ec) fs::copy_file(binary_, tools / "benchmake");
  const std::string calls = (root_ / "calls.log").string();
  WriteText(tools / "benchmake-train",
            "#!/bin/sh\necho probe >> '" + calls + "'\necho '{\"gpu_count\": 0}'\n");
  const std::string real_ninja = ReadCommandOutput("command -v ninja");
  ASSERT_FALSE(real_ninja.empty()) << "ninja is not on PATH";
  WriteText(shims / "ninja",
            "#!/bin/sh\necho ninja >> '" + calls + "'\nexec '" + real_ninja + "' \"$@\"\n");
  for (const fs::path& p : {tools / "benchmake-train", shims / "ninja"})
    fs::permissions(p, fs::perms::owner_exec, fs::perm_options::add);
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  ::setenv("PATH", (shims.string() + ":" + path).c_str(), 1);
  WriteText(ws_ / "BENCHFILE.toml", std::string(kPipeline) + R"(
[target.speed]
rule = "measure"
inputs = ["data"]
command = ["sh", "-c", "echo speed >> \"$RUNS_LOG\""]
)");
  binary_ = (tools / "benchmake").string();
  auto calls_since = [&] {
    std::string text = ReadText(calls);
    fs::remove(calls);
    for (char& c : text)
      if (c == '\n') c = ' ';
    return text;
  };
  BuildOk();
  std::string first = Runs();  // speed and train may run in either order
  EXPECT_TRUE(first == "data train eval speed" || first == "data speed train eval" ||
              first == "data train speed eval")
      << first;
  EXPECT_EQ(calls_since(), "probe ninja ");
  Run noop = Benchmake("build");
  EXPECT_EQ(noop.exit_code, 0) << noop.output;
  EXPECT_NE(noop.output.find("no work to do"), std::string::npos) << noop.output;
  EXPECT_EQ(calls_since(), "") << "a no-op build started a process";
  EXPECT_EQ(Benchmake("build eval").exit_code, 0);
  EXPECT_EQ(calls_since(), "") << "nor a no-op build of one target";
  fs::remove_all(ws_ / "out/train");
  BuildOk();
  EXPECT_EQ(Runs(), "") << "restored from the cache, not rerun";
  EXPECT_EQ(calls_since(), "ninja ") << "a removed output needs ninja, not the probe";
  Edit("lbs-4", "lbs-8");
  BuildOk();
  EXPECT_EQ(Runs(), "train eval");
  EXPECT_EQ(calls_since(), "ninja ") << "an edited BENCHFILE needs ninja, not the probe";
  EXPECT_EQ(Benchmake("build").exit_code, 0);
  EXPECT_EQ(calls_since(), "");
  ::setenv("PATH", path.c_str(), 1);
}

TEST_F(E2eTest, EditOneParamRerunsItAndDependentsRevertRestores) {
  BuildOk();
  Runs();
  Edit("lbs-4", "lbs-8");
  Run explain = Benchmake("explain train eval");
  EXPECT_NE(explain.output.find("param command: "), std::string::npos) << explain.output;
  EXPECT_NE(explain.output.find("not in cache"), std::string::npos) << explain.output;
  EXPECT_NE(explain.output.find("input train: will be rebuilt"), std::string::npos)
      << explain.output;
  BuildOk();
  EXPECT_EQ(Runs(), "train eval");
  EXPECT_EQ(ReadText(ws_ / "out/eval/eval.txt"), "lbs-8\nraw\n");
  Edit("lbs-8", "lbs-4");
  Run revert = Benchmake("build");
  EXPECT_EQ(revert.exit_code, 0);
  EXPECT_EQ(Runs(), "");
  EXPECT_NE(revert.output.find("train: restored from cache"), std::string::npos) << revert.output;
  EXPECT_EQ(ReadText(ws_ / "out/eval/eval.txt"), "lbs-4\nraw\n");
}

TEST_F(E2eTest, NonKeyParamReorderAndCommentRerunNothing) {
  BuildOk();
  Runs();
  Edit("description = \"trains\"", "description = \"trains well\"");
  BuildOk();
  Edit("[target.eval]\nrule = \"exec\"\ninputs = [\"train\"]",
       "[target.eval]\n# a comment\ninputs = [ \"train\" ]  # x\nrule = \"exec\"");
  BuildOk();
  EXPECT_EQ(Runs(), "");
  Run explain = Benchmake("explain eval");
  EXPECT_EQ(explain.output.rfind("eval: up to date\n", 0), 0u) << explain.output;
}

TEST_F(E2eTest, TouchRerunsNothingNewBytesRerunDependents) {
  BuildOk();
  Runs();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  fs::last_write_time(ws_ / "src/raw.txt", fs::file_time_type::clock::now());
  BuildOk();
  EXPECT_EQ(Runs(), "");
  WriteText(ws_ / "src/raw.txt", "new raw\n");
  Run explain = Benchmake("explain data");
  EXPECT_NE(explain.output.find("source src/raw.txt: content changed"), std::string::npos)
      << explain.output;
  BuildOk();
  EXPECT_EQ(Runs(), "data train eval");
}

TEST_F(E2eTest, EarlyCutoffWhenUpstreamWritesIdenticalBytes) {
  BuildOk();
  Runs();
  Edit("echo data >> $RUNS_LOG;", "echo data >> $RUNS_LOG; true;");
  BuildOk();
  EXPECT_EQ(Runs(), "data");
}

TEST_F(E2eTest, DeletingOutRestoresEverythingAndRunsNothing) {
  BuildOk();
  Runs();
  fs::remove_all(ws_ / "out");
  Run explain = Benchmake("explain eval");
  EXPECT_NE(explain.output.find("outputs missing from out/"), std::string::npos) << explain.output;
  Run r = Benchmake("build");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Runs(), "");
  EXPECT_EQ(ReadText(ws_ / "out/eval/eval.txt"), "lbs-4\nraw\n");
  EXPECT_NE(r.output.find("eval: restored from cache"), std::string::npos) << r.output;
  fs::remove_all(ws_ / "out/train");
  Run one = Benchmake("build");
  EXPECT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(Runs(), "");
  EXPECT_NE(one.output.find("train: restored from cache"), std::string::npos) << one.output;
  EXPECT_EQ(one.output.find("eval: restored"), std::string::npos) << one.output;
}

// A file removed from out/NAME, or written to (root ignores the read-only
// bit), is noticed by the build as `status` notices it, as ninja and Bazel
// notice a deleted output: restored from the cache, or, when the write went
// through the hard link into the cache's copy, found corrupt and rerun.
TEST_F(E2eTest, AnOutputFileRemovedOrResizedByHandIsRestored) {
  BuildOk();
  Runs();
  fs::remove(ws_ / "out/train/model.bin");
  Run status = Benchmake("status");
  EXPECT_NE(status.output.find("train   restore from cache"), std::string::npos) << status.output;
  Run r = Benchmake("build");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("train: restored from cache"), std::string::npos) << r.output;
  EXPECT_EQ(Runs(), "");
  EXPECT_EQ(ReadText(ws_ / "out/train/model.bin"), "lbs-4\nraw\n");

  // data.txt's bytes are data's alone (model.bin and eval.txt share theirs,
  // and so their inode, which an edit of either would change for both).
  fs::permissions(ws_ / "out/data/data.txt", fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(ws_ / "out/data/data.txt", std::ios::app) << "edited by hand\n";
  r = Benchmake("build");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("data: corrupt blob"), std::string::npos) << r.output;
  EXPECT_EQ(Runs(), "data") << r.output;
  EXPECT_EQ(ReadText(ws_ / "out/data/data.txt"), "raw\n");
  EXPECT_NE(Benchmake("build").output.find("no work to do"), std::string::npos);
}

bool Executable(const fs::path& p) {
  return (fs::status(p).permissions() & fs::perms::owner_exec) != fs::perms::none;
}

TEST_F(E2eTest, OutputsKeepTheirModeWhenAnotherOutputHasTheSameBytes) {
  // Two outputs with one blob, as `cp -p` and `chmod` leave them: the mode is
  // each output's own (ls -l after the step), ran or restored.
  WriteText(ws_ / "BENCHFILE.toml", R"([target.tool]
rule = "exec"
command = ["sh", "-c", "printf 'echo hi\\n' > {out}/run.sh; chmod 755 {out}/run.sh"]
outputs = ["run.sh"]

[target.text]
rule = "exec"
command = ["sh", "-c", "printf 'echo hi\\n' > {out}/run.sh"]
outputs = ["run.sh"]
)");
  BuildOk("build tool");
  BuildOk("build text");
  EXPECT_EQ(ReadText(ws_ / "out/tool/run.sh"), ReadText(ws_ / "out/text/run.sh"));
  EXPECT_TRUE(Executable(ws_ / "out/tool/run.sh"));
  EXPECT_FALSE(Executable(ws_ / "out/text/run.sh")) << "took the mode of tool's blob";
  fs::remove_all(ws_ / "out");
  BuildOk("build text");
  BuildOk("build tool");
  EXPECT_TRUE(Executable(ws_ / "out/tool/run.sh"));
  EXPECT_FALSE(Executable(ws_ / "out/text/run.sh")) << "restored with the blob's mode";
}

TEST_F(E2eTest, KilledStepIsRerunAndLeavesNoCacheEntry) {
  WriteText(ws_ / "BENCHFILE.toml", R"([target.slow]
rule = "exec"
command = ["sh", "-c", "echo slow >> $RUNS_LOG; if [ ! -e $GATE ]; then echo $$ > $PIDFILE; sleep 30; fi; echo done > {out}/x"]
outputs = ["x"]
)");
  ::setenv("GATE", (root_ / "gate").c_str(), 1);
  ::setenv("PIDFILE", (root_ / "step.pid").c_str(), 1);
  pid_t build = StartInBackground("build", "/dev/null");
  ASSERT_TRUE(WaitFor([&] { return fs::exists(root_ / "step.pid"); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // The step is the command's closest `benchmake` ancestor (its parent is
  // the step's guardian, base/guardian.h).
  const pid_t command = std::atoi(ReadText(root_ / "step.pid").c_str());
  const pid_t step = bm::testing::AncestorNamed(command, "benchmake");
  ASSERT_GT(step, 1);
  ASSERT_EQ(::kill(step, SIGKILL), 0);
  int status = 0;
  ::waitpid(build, &status, 0);
  EXPECT_NE(WEXITSTATUS(status), 0) << "the build whose step was killed fails";
  EXPECT_FALSE(fs::exists(root_ / "cache/ac") && !fs::is_empty(root_ / "cache/ac"))
      << "no cache entry";
  WriteText(root_ / "gate", "");
  Runs();
  BuildOk();
  EXPECT_EQ(Runs(), "slow");
  EXPECT_EQ(ReadText(ws_ / "out/slow/x"), "done\n");
}

// `benchmake build` killed with SIGKILL (kill -9, the OOM killer): no handler
// runs, but its ninja's guardian interrupts ninja, which stops its steps as
// on Ctrl-C. Nothing of the build is left running, and a build started at
// once waits for the steps to end (Bazel: "Another command is running")
// rather than run the same step beside them in the same scratch and out/
// directories. Before, ninja and the step ran on unseen, holding the
// workspace until the step had ended by itself. The step's command takes 2 s
// of its 5 s grace to stop, so the next build finds the lock still held.
TEST_F(E2eTest, AKilledBuildStopsItsStepsAndTheNextOneRunsThemAgain) {
  WriteText(ws_ / "BENCHFILE.toml", R"([target.slow]
rule = "exec"
command = ["sh", "-c", "echo slow >> $RUNS_LOG; trap 'sleep 2; echo term >> $RUNS_LOG; exit 1' TERM; touch $STARTED; while [ ! -e $GATE ]; do sleep 0.05; done; echo done > {out}/x"]
outputs = ["x"]

[target.after]
rule = "exec"
inputs = ["slow"]
command = ["sh", "-c", "echo after >> $RUNS_LOG; cp {in.slow}/x {out}/y"]
outputs = ["y"]
)");
  const fs::path started = root_ / "started", gate = root_ / "gate";
  ::setenv("STARTED", started.c_str(), 1);
  ::setenv("GATE", gate.c_str(), 1);
  pid_t first = StartInBackground("build", root_ / "first.txt");
  if (!WaitFor([&] { return fs::exists(started); })) {
    WriteText(gate, "");  // no step left waiting
    FAIL() << "the step did not start: " << ReadText(root_ / "first.txt");
  }
  const std::vector<pid_t> tree = bm::testing::Descendants(first);
  ASSERT_GE(tree.size(), 5u) << "a guardian, ninja, the step, its guardian, its command";
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  int status = 0;
  ::waitpid(first, &status, 0);
  pid_t second = StartInBackground("build", root_ / "second.txt");
  const bool waited = WaitFor([&] {
    return ReadText(root_ / "second.txt").find("another build of this workspace is running") !=
           std::string::npos;
  });
  const bool stopped = WaitFor(
      [&] { return std::none_of(tree.begin(), tree.end(), [](pid_t p) { return Running(p); }); });
  WriteText(gate, "");
  ::waitpid(second, &status, 0);
  for (pid_t p : tree)
    if (Running(p)) ::kill(p, SIGKILL);  // what a failed test left
  EXPECT_TRUE(stopped) << "the killed build's processes ran on";
  EXPECT_TRUE(waited) << ReadText(root_ / "second.txt");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadText(root_ / "second.txt");
  EXPECT_EQ(Runs(), "slow term slow after")
      << "the step was interrupted, not cached, and ran again";
  EXPECT_EQ(ReadText(ws_ / "out/after/y"), "done\n");
}

// `status` takes no lock and regenerates the workspace's state. Run during a
// build after an edit, it rewrote the .spec of a target the build had already
// built with the old parameters; the build's stamp of a clean workspace then
// covered the new .spec and the next build said "no work to do", while
// `status` said the target must run.
TEST_F(E2eTest, AnEditSeenByStatusDuringABuildIsBuiltByTheNextBuild) {
  WriteText(ws_ / "BENCHFILE.toml", R"([target.d]
rule = "exec"
command = ["sh", "-c", "echo d >> $RUNS_LOG; echo P=1 > {out}/d"]

[target.e]
rule = "exec"
command = ["sh", "-c", "while [ ! -e $GATE ]; do sleep 0.05; done; echo E > {out}/e"]
)");
  const fs::path gate = root_ / "gate";
  ::setenv("GATE", gate.c_str(), 1);
  pid_t first = StartInBackground("build -j 2", root_ / "first.txt");
  WaitFor([&] { return fs::exists(ws_ / ".benchmake/t/d.out"); });
  Edit("P=1", "P=2");
  Run status = Benchmake("status");
  WriteText(gate, "");
  int wstatus = 0;
  ::waitpid(first, &wstatus, 0);
  ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << ReadText(root_ / "first.txt");
  EXPECT_NE(status.output.find("P=2"), std::string::npos) << status.output;
  Runs();
  Run second = Benchmake("build");
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(Runs(), "d") << second.output;
  EXPECT_EQ(ReadText(ws_ / "out/d/d"), "P=2\n");
}

// The same edit and `status` while the target's own step runs: the step read
// the old .spec, and the .out it wrote after the new one made ninja take the
// target as up to date ("ninja: no work to do", `status`: "run"). The step
// now fails, and the next build runs it for the new definition.
TEST_F(E2eTest, AnEditSeenByStatusWhileItsStepRunsFailsTheStep) {
  WriteText(ws_ / "BENCHFILE.toml", R"([target.d]
rule = "exec"
command = ["sh", "-c", "echo d >> $RUNS_LOG; touch $STARTED; while [ ! -e $GATE ]; do sleep 0.05; done; echo P=1 > {out}/d"]
)");
  const fs::path started = root_ / "started", gate = root_ / "gate";
  ::setenv("STARTED", started.c_str(), 1);
  ::setenv("GATE", gate.c_str(), 1);
  pid_t first = StartInBackground("build", root_ / "first.txt");
  WaitFor([&] { return fs::exists(started); });
  Edit("P=1", "P=2");
  Run status = Benchmake("status");
  WriteText(gate, "");
  int wstatus = 0;
  ::waitpid(first, &wstatus, 0);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 1) << ReadText(root_ / "first.txt");
  EXPECT_NE(ReadText(root_ / "first.txt").find("d: its definition changed while it ran"),
            std::string::npos)
      << ReadText(root_ / "first.txt");
  Runs();
  Run second = Benchmake("build");
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(Runs(), "d") << second.output;
  EXPECT_EQ(ReadText(ws_ / "out/d/d"), "P=2\n");
}

// The lock ninja and the steps inherit stays out of the steps' commands: a
// process a step leaves running (a server it started) must not hold the
// workspace, nor see a variable naming a descriptor it does not have.
TEST_F(E2eTest, AStepsCommandHoldsNoWorkspaceLock) {
  WriteText(ws_ / "BENCHFILE.toml", R"([target.fds]
rule = "exec"
command = ["sh", "-c", "for f in /proc/$$/fd/*; do readlink $f; done > {out}/fds; env > {out}/env"]
)");
  BuildOk();
  std::string fds = ReadText(ws_ / "out/fds/fds");
  EXPECT_NE(fds.find("/dev/"), std::string::npos) << fds;  // read at all: its stdio
  EXPECT_EQ(fds.find(".benchmake/lock"), std::string::npos) << fds;
  EXPECT_EQ(ReadText(ws_ / "out/fds/env").find("BENCHMAKE_LOCK_FD"), std::string::npos);
}

// ninja killed from outside (the OOM killer, kill -9): the build fails
// naming the signal, where it said "build failed (ninja exit 0)", and the
// step ninja left running is stopped by ninja's guardian (once, the first
// time it runs), not left holding the workspace; the next build runs it.
TEST_F(E2eTest, NinjaKilledByASignalIsNamed) {
  WriteText(ws_ / "BENCHFILE.toml", R"([target.k]
rule = "exec"
command = ["sh", "-c", "echo k >> $RUNS_LOG; if [ ! -e $KILLED ]; then touch $KILLED; p=$PPID; while [ \"$p\" -gt 1 ] && [ \"$(cat /proc/$p/comm)\" != ninja ]; do p=$(cut -d' ' -f4 /proc/$p/stat); done; [ \"$p\" -gt 1 ] && kill -9 $p; sleep 30; fi; echo x > {out}/x"]
)");
  ::setenv("KILLED", (root_ / "killed").c_str(), 1);
  Run r = Benchmake("build");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("build failed: ninja was killed by signal 9 (SIGKILL)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("ninja' left"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(ws_ / "out/k/x"));
  BuildOk();
  EXPECT_EQ(Runs(), "k k");
  EXPECT_EQ(ReadText(ws_ / "out/k/x"), "x\n");
}

TEST_F(E2eTest, CorruptBlobIsDetectedReportedAndRebuilt) {
  BuildOk();
  Runs();
  // Corrupt every blob holding the model, then force a restore.
  int corrupted = 0;
  for (auto& p : fs::recursive_directory_iterator(root_ / "cache/cas")) {
    if (p.is_regular_file() && ReadText(p.path()) == "lbs-4\nraw\n") {
      fs::permissions(p.path(), fs::perms::owner_write, fs::perm_options::add);
      std::ofstream(p.path(), std::ios::trunc) << "garbage";
      ++corrupted;
    }
  }
  ASSERT_GT(corrupted, 0);
  fs::remove_all(ws_ / "out");
  Run r = Benchmake("build");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("corrupt blob"), std::string::npos) << r.output;
  EXPECT_EQ(Runs(), "train");
  EXPECT_EQ(ReadText(ws_ / "out/eval/eval.txt"), "lbs-4\nraw\n");
  Run verify = Benchmake("cache verify");
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
}

// A directory where a cache entry belongs (damage: the store renames only files into place) is
// a miss: removed with a warning, and the step runs again. It used to fail every build (EISDIR).
TEST_F(E2eTest, ADirectoryWhereACacheEntryBelongsIsAMissAndTheStepRunsAgain) {
  BuildOk();
  Runs();
  std::vector<fs::path> entries;
  for (auto& p : fs::recursive_directory_iterator(root_ / "cache/cas"))
    if (p.is_regular_file() && ReadText(p.path()) == "lbs-4\nraw\n") entries.push_back(p.path());
  ASSERT_EQ(entries.size(), 1u);
  for (const fs::path& entry : entries) {
    fs::remove(entry);
    fs::create_directories(entry / "inside");
  }
  fs::remove_all(ws_ / "out");
  Run r = Benchmake("build");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("cache entry " + entries[0].string() + " was a directory, not a file; removed"),
      std::string::npos)
      << r.output;
  EXPECT_EQ(Runs(), "train");
  EXPECT_EQ(ReadText(ws_ / "out/eval/eval.txt"), "lbs-4\nraw\n");
  EXPECT_TRUE(fs::is_regular_file(entries[0]));

  // An action record's place: `cache verify` names it and removes it; the build after runs
  // the step again.
  fs::path record;
  for (auto& p : fs::recursive_directory_iterator(root_ / "cache/ac"))
    if (p.is_regular_file() && ReadText(p.path()).find("\"model.bin\"") != std::string::npos)
      record = p.path();
  ASSERT_FALSE(record.empty());
  fs::remove(record);
  fs::create_directories(record / "inside");
  Run verify = Benchmake("cache verify");
  EXPECT_NE(verify.output.find(record.string() + ": a directory, not a file"), std::string::npos)
      << verify.output;
  EXPECT_FALSE(fs::exists(record));
  fs::remove_all(ws_ / "out");
  BuildOk();
  EXPECT_EQ(Runs(), "train");
}

// A directory where a file of .benchmake/ belongs stopped every build at EISDIR: ninja's
// "Error writing to build log: Is a directory" (naming no path), "loading 'build.ninja': Is a
// directory", "renaming to .../generated: Is a directory". It is removed, with a warning naming
// it, and the file written again.
TEST_F(E2eTest, ADirectoryWhereAStateFileBelongsIsRemoved) {
  BuildOk();
  Runs();
  for (const char* name : {".ninja_log", "build.ninja", "generated"}) {
    const fs::path file = ws_ / ".benchmake" / name;
    ASSERT_TRUE(fs::is_regular_file(file)) << name;
    fs::remove(file);
    fs::create_directories(file / "inside");
    fs::remove_all(ws_ / "out/eval");
    Run r = Benchmake("build");
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.output;
    EXPECT_NE(r.output.find(file.string() + " was a directory, not "), std::string::npos)
        << r.output;
    EXPECT_TRUE(fs::is_regular_file(file)) << name;
    EXPECT_EQ(ReadText(ws_ / "out/eval/eval.txt"), "lbs-4\nraw\n") << name;
  }
  EXPECT_EQ(Runs(), "") << "restored from the cache, never run again";
}

// A target's t/NAME.spec or .params removed by hand (or replaced by a dangling link or a
// directory), build.ninja cut short, or config.json removed or garbled, is written again by the
// next build, and nothing runs again. The generator's fast path trusts its stamp, and ninja, which
// has no rule to make a spec, failed every build with "'t/train.spec', needed by 't/train.out',
// missing and no known rule to make it" (or "build.ninja:5: unexpected EOF") until the file was
// removed by hand.
TEST_F(E2eTest, AGeneratedFileRemovedByHandIsWrittenAgain) {
  BuildOk();
  Runs();
  const fs::path t = ws_ / ".benchmake/t";
  const std::string spec = ReadText(t / "train.spec"), params = ReadText(t / "train.params"),
                    ninja = ReadText(ws_ / ".benchmake/build.ninja"),
                    config = ReadText(ws_ / ".benchmake/config.json");
  std::vector<std::pair<std::string, std::function<void()>>> damages = {
      {"spec removed", [&] { fs::remove(t / "train.spec"); }},
      {"params removed", [&] { fs::remove(t / "train.params"); }},
      {"spec a dangling link",
       [&] {
         fs::remove(t / "train.spec");
         fs::create_symlink(ws_ / "nowhere", t / "train.spec");
       }},
      {"params a directory",
       [&] {
         fs::remove(t / "train.params");
         fs::create_directories(t / "train.params/inside");
       }},
      {"t/ removed", [&] { fs::remove_all(t); }},
      // Without its record `status` called train never built while `build` said no work to do.
      {"train.last removed", [&] { fs::remove(t / "train.last"); }},
      {"build.ninja cut short",
       [&] { fs::resize_file(ws_ / ".benchmake/build.ninja", ninja.size() / 2); }},
      {"config.json removed", [&] { fs::remove(ws_ / ".benchmake/config.json"); }},
      {"config.json garbled",
       [&] { fs::resize_file(ws_ / ".benchmake/config.json", config.size() / 2); }},
  };
  // A directory where a file of .benchmake/ belongs failed every build at EISDIR ("renaming to
  // .../config.json: Is a directory", "removing .../t/train.out: Is a directory").
  for (const char* name : {"config.json", "clean", "lock", "t/train.out", "t/train.last"})
    damages.emplace_back(std::string(name) + " a directory", [this, name] {
      const fs::path file = ws_ / ".benchmake" / name;
      fs::remove(file);
      fs::create_directories(file / "inside");
    });
  for (const auto& [what, damage] : damages) {
    damage();
    fs::remove_all(ws_ / "out/eval");  // a build with something to do (a no-op reads no params)
    Run r = Benchmake("build");
    EXPECT_EQ(r.exit_code, 0) << what << ": " << r.output;
    EXPECT_EQ(ReadText(t / "train.spec"), spec) << what;
    EXPECT_EQ(ReadText(t / "train.params"), params) << what;
    EXPECT_EQ(ReadText(ws_ / ".benchmake/build.ninja"), ninja) << what;
    EXPECT_EQ(ReadText(ws_ / ".benchmake/config.json"), config) << what;
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(t / "train.spec"))) << what;
    EXPECT_EQ(ReadText(ws_ / "out/eval/eval.txt"), "lbs-4\nraw\n") << what;
    EXPECT_EQ(Runs(), "") << what << ": restored from the cache, nothing ran again";
    EXPECT_NE(Benchmake("build").output.find("no work to do"), std::string::npos) << what;
    EXPECT_NE(Benchmake("status").output.find(", 0 not up to date"), std::string::npos) << what;
  }
  for (const char* name : {"config.json", "clean", "lock", "t/train.out", "t/train.last"})
    EXPECT_TRUE(fs::is_regular_file(ws_ / ".benchmake" / name)) << name;

  // `status` (which reads the specs and config.json) names the missing one and forgets the
  // generator's stamp: the next command writes it again. Of config.json it said "has no build
  // state; run `benchmake build` first", and so did every build, whose fast path never wrote it.
  for (const fs::path& file : {t / "eval.spec", ws_ / ".benchmake/config.json"}) {
    const std::string text = ReadText(file);
    fs::remove(file);
    Run status = Benchmake("status");
    EXPECT_EQ(status.exit_code, 1) << status.output;
    EXPECT_NE(
        status.output.find(file.string() + ": missing; the next `benchmake build` writes it again"),
        std::string::npos)
        << status.output;
    status = Benchmake("status");
    EXPECT_EQ(status.exit_code, 0) << status.output;
    EXPECT_EQ(ReadText(file), text) << file;
  }
}

// A record damaged into other JSON (a bit of an output's name flipped) is no hit: evicted, and
// the step runs again, instead of restoring a file under the damaged name.
TEST_F(E2eTest, ADamagedActionRecordIsEvictedAndTheStepRunsAgain) {
  BuildOk();
  Runs();
  int damaged = 0;
  for (auto& p : fs::recursive_directory_iterator(root_ / "cache/ac")) {
    if (!p.is_regular_file()) continue;
    std::string text = ReadText(p.path());
    const size_t at = text.find("\"model.bin\"");
    if (at == std::string::npos) continue;
    text[at + 3] ^= 0x01;  // "model.bin" -> "mndel.bin"
    fs::permissions(p.path(), fs::perms::owner_write, fs::perm_options::add);
    std::ofstream(p.path(), std::ios::trunc) << text;
    ++damaged;
  }
  ASSERT_EQ(damaged, 1);
  fs::remove_all(ws_ / "out");
  Run r = Benchmake("build");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("corrupt action record"), std::string::npos) << r.output;
  EXPECT_EQ(Runs(), "train");
  EXPECT_EQ(ReadText(ws_ / "out/train/model.bin"), "lbs-4\nraw\n");
  EXPECT_FALSE(fs::exists(ws_ / "out/train/mndel.bin"));
}

// benchmake writes its state atomically; a file of it damaged by something else is named, and
// the build after it mends it without running a step again. `echo lbs-4` -> `echo lbs-5` still
// parses: in the spec as another key, in the params as another command the step would run under
// the spec's key.
TEST_F(E2eTest, ADamagedSpecOrParamsIsNamedAndTheNextBuildWritesItAgain) {
  BuildOk();
  Runs();
  for (const char* ext : {"spec", "params"}) {
    const fs::path file = ws_ / ".benchmake/t" / (std::string("train.") + ext);
    const std::string good = ReadText(file);
    std::string damaged = good;
    damaged[damaged.find("lbs-4") + 4] ^= 0x01;
    WriteText(file, damaged);
    // The params are no ninja input (a no-op build reads none): a step to run reads them.
    fs::remove_all(ws_ / "out/train");
    Run r = Benchmake("build");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find(file.string() +
                            ": damaged: its bytes do not match its digest; the next `benchmake "
                            "build` writes it again"),
              std::string::npos)
        << r.output;
    BuildOk();
    EXPECT_EQ(ReadText(file), good);
    EXPECT_EQ(Runs(), "") << ext;
    EXPECT_EQ(ReadText(ws_ / "out/eval/eval.txt"), "lbs-4\nraw\n");
  }
}

TEST_F(E2eTest, ADamagedStampOfAnInputIsRemovedAndTheNextBuildRestoresIt) {
  BuildOk();
  Runs();
  const fs::path stamp = ws_ / ".benchmake/t/data.out";
  WriteText(stamp, "benchmake-out 1\nnot a digest\n");
  Run r = Benchmake("build");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("train: input data's stamp " + stamp.string() +
                          " is damaged; removed, so that the next `benchmake build` restores data"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(stamp));
  BuildOk();
  EXPECT_EQ(Runs(), "");
  EXPECT_TRUE(fs::exists(stamp));
  EXPECT_EQ(ReadText(ws_ / "out/eval/eval.txt"), "lbs-4\nraw\n");
}

TEST_F(E2eTest, ConcurrentBuildsInOneWorkspaceFinishCorrectly) {
  Edit("echo data >> $RUNS_LOG;", "echo data >> $RUNS_LOG; sleep 1;");
  std::string cmd = "cd '" + ws_.string() + "' && '" + binary_ + "' build";
  std::string a = cmd + " > '" + (root_ / "a.txt").string() + "' 2>&1";
  std::string b = cmd + " > '" + (root_ / "b.txt").string() + "' 2>&1";
  std::thread first([&] { EXPECT_EQ(std::system(a.c_str()), 0); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::thread second([&] { EXPECT_EQ(std::system(b.c_str()), 0); });
  first.join();
  second.join();
  EXPECT_EQ(Runs(), "data train eval") << "each step ran once";
  std::string waited = ReadText(root_ / "a.txt") + ReadText(root_ / "b.txt");
  EXPECT_NE(waited.find("another build of this workspace is running"), std::string::npos) << waited;
  EXPECT_EQ(ReadText(ws_ / "out/eval/eval.txt"), "lbs-4\nraw\n");
}

TEST_F(E2eTest, BenchfileErrorsExitTwoWithLocation) {
  Edit("rule = \"exec\"\ninputs = [\"train\"]", "rule = \"exec\"\ninputs = [\"trian\"]");
  Run r = Benchmake("build");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find(
                "BENCHFILE.toml:17:11: unknown target 'trian' in inputs (did you mean 'train'?)"),
            std::string::npos)
      << r.output;
}

// A source that cannot be hashed (here a directory holding a link back to itself) is named
// at its place in the BENCHFILE, and the state of the last build stays as it was, also
// that of a target before it whose key changed in the same edit.
TEST_F(E2eTest, ASourceThatCannotBeHashedIsNamedWhereTheBenchfileNamesIt) {
  BuildOk();
  auto state = [&] {
    std::string all;
    for (const char* f : {"config.json", "t/data.spec", "t/data.params", "generated"})
      all += ReadText(ws_ / ".benchmake" / f) + "\n";
    return all;
  };
  const std::string before = state();
  fs::create_directories(ws_ / "src/loop/sub");
  fs::create_directory_symlink("..", ws_ / "src/loop/sub/back");
  Edit("cp {in.src/raw.txt}", "cp -f {in.src/raw.txt}");
  Edit("inputs = [\"train\"]", "inputs = [\"train\", \"src/loop\"]");
  Run r = Benchmake("build");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("BENCHFILE.toml:17:20: source 'src/loop': " +
                          (ws_ / "src/loop").string() + "/sub/back: a directory link loop"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(state(), before);
  EXPECT_EQ(Runs(), "data train eval") << "only the first build's";
}

TEST_F(E2eTest, FailingStepShowsItsLogAndFails) {
  WriteText(ws_ / "BENCHFILE.toml",
            "[target.bad]\nrule = \"exec\"\ncommand = [\"sh\", \"-c\", \"echo oops-from-step; exit "
            "4\"]\n");
  Run r = Benchmake("build");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("oops-from-step"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("exited with status 4"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(root_ / "cache/ac") && !fs::is_empty(root_ / "cache/ac"));
}

// A step's output that is a symbolic link is stored as the bytes it points
// to (as `cp -L` would), like Bazel resolving a tree artifact's links: the
// cache holds no link, a relative one still reads after the move into out/,
// and the files an absolute one names, outside the workspace, directly or
// below a linked directory, are left alone (linking them made them read-only
// and shared their inode with the cache). So is a file the step hard-linked
// into {out} (`ln /data/x {out}/x`).
TEST_F(E2eTest, SymlinkOutputsAreStoredAsTheirTargetsBytes) {
  fs::path outside = root_ / "outside.txt", dataset = root_ / "dataset";
  fs::path hard = root_ / "hard.txt";
  WriteText(outside, "outside\n");
  WriteText(dataset / "part/shard.bin", "shard\n");
  WriteText(hard, "hard\n");
  const fs::perms rw = fs::perms::owner_read | fs::perms::owner_write;
  for (const fs::path& p : {outside, dataset / "part/shard.bin", hard}) fs::permissions(p, rw);
  WriteText(ws_ / "BENCHFILE.toml",
            "[target.links]\nrule = \"exec\"\ncommand = [\"sh\", \"-c\", \"echo model > "
            "{out}/model.bin; ln -s model.bin {out}/latest.bin; ln -s " +
                outside.string() + " {out}/abs.txt; ln -s " + dataset.string() +
                " {out}/data; ln " + hard.string() +
                " {out}/hard.txt\"]\noutputs = [\"model.bin\", \"latest.bin\", \"abs.txt\"]\n");
  BuildOk();
  EXPECT_EQ(ReadText(ws_ / "out/links/latest.bin"), "model\n");
  EXPECT_EQ(ReadText(ws_ / "out/links/abs.txt"), "outside\n");
  EXPECT_EQ(ReadText(ws_ / "out/links/data/part/shard.bin"), "shard\n");
  EXPECT_FALSE(fs::is_symlink(ws_ / "out/links/latest.bin"));
  EXPECT_FALSE(fs::is_symlink(ws_ / "out/links/abs.txt"));
  EXPECT_FALSE(fs::is_symlink(ws_ / "out/links/data"));
  EXPECT_EQ(ReadText(ws_ / "out/links/hard.txt"), "hard\n");
  for (const fs::path& p : {outside, dataset / "part/shard.bin", hard}) {
    EXPECT_EQ(fs::status(p).permissions(), rw) << p << " must not be made read-only";
    EXPECT_EQ(fs::hard_link_count(p), 1u) << p << " must not be linked into the cache";
  }
  for (auto& p : fs::recursive_directory_iterator(root_ / "cache"))
    EXPECT_FALSE(fs::is_symlink(p.symlink_status())) << p.path();
}

// Names may start with '-' (a-z 0-9 _ . -): the step ninja runs must take it
// as the target, not as a flag (`benchmake step -f FILE -x` said "unknown flag
// '-x' for step"); on the command line, after `--`, as in every getopt tool.
TEST_F(E2eTest, ATargetNamedLikeAFlagBuildsAfterDoubleDash) {
  WriteText(ws_ / "BENCHFILE.toml",
            "[target.\"-x\"]\nrule = \"exec\"\ncommand = [\"sh\", \"-c\", \"echo x > "
            "{out}/x\"]\noutputs = [\"x\"]\n");
  BuildOk("build -- -x");
  EXPECT_EQ(ReadText(ws_ / "out/-x/x"), "x\n");
  Run explain = Benchmake("explain -- -x");
  EXPECT_EQ(explain.exit_code, 0) << explain.output;
  EXPECT_NE(explain.output.find("-x: up to date"), std::string::npos) << explain.output;
}

TEST_F(E2eTest, StatusGraphDebugKeyCleanAndCacheCommands) {
  Run status = Benchmake("status");
  EXPECT_NE(status.output.find("3 targets, 3 not up to date"), std::string::npos) << status.output;
  BuildOk("build -j 2 eval");
  Runs();
  EXPECT_NE(Benchmake("status").output.find("3 targets, 0 not up to date"), std::string::npos);
  Run graph = Benchmake("graph");
  EXPECT_NE(graph.output.find("\"train\" -> \"eval\";"), std::string::npos) << graph.output;
  Run key = Benchmake("--debug-key train");
  EXPECT_NE(key.output.find("input data = "), std::string::npos) << key.output;
  EXPECT_NE(key.output.find("param outputs = [\"model.bin\"]"), std::string::npos) << key.output;
  EXPECT_EQ(key.output.find("description"), std::string::npos) << "non-key params are not hashed";
  Run dry = Benchmake("build -n");
  EXPECT_EQ(dry.exit_code, 0) << dry.output;
  Run stats = Benchmake("cache stats");
  EXPECT_NE(stats.output.find("actions: 3"), std::string::npos) << stats.output;
  Run clean = Benchmake("clean");
  EXPECT_EQ(clean.exit_code, 0) << clean.output;
  EXPECT_FALSE(fs::exists(ws_ / "out"));
  EXPECT_FALSE(fs::exists(ws_ / ".benchmake"));
  EXPECT_TRUE(fs::exists(root_ / "cache/ac")) << "clean never touches the cache";
  BuildOk();
  EXPECT_EQ(Runs(), "") << "after clean everything comes from the cache";
  Run gc = Benchmake("cache gc --max-size 0");
  EXPECT_EQ(gc.exit_code, 0) << gc.output;
  EXPECT_NE(Benchmake("cache stats").output.find("actions: 0"), std::string::npos);
  fs::remove_all(ws_ / "out");
  BuildOk();
  EXPECT_EQ(Runs(), "data train eval") << "after gc everything reruns";
}

// `clean TARGET` (ninja's `-t clean TARGET`, without cleaning what TARGET was built from): only
// out/TARGET goes; the next build restores it from the cache, runs nothing, and leaves the
// targets after it alone (the restored bytes are the same). An unknown name is refused with the
// nearest one, removing nothing.
TEST_F(E2eTest, CleanOfATargetRemovesItsOutputsAndTheNextBuildRestoresIt) {
  BuildOk();
  Runs();
  Run bad = Benchmake("clean trian");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("no target 'trian'"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("did you mean 'train'?"), std::string::npos) << bad.output;
  EXPECT_TRUE(fs::exists(ws_ / "out/train"));
  Run clean = Benchmake("clean train");
  EXPECT_EQ(clean.exit_code, 0) << clean.output;
  EXPECT_FALSE(fs::exists(ws_ / "out/train"));
  EXPECT_TRUE(fs::exists(ws_ / "out/data"));
  EXPECT_TRUE(fs::exists(ws_ / "out/eval/eval.txt"));
  EXPECT_NE(Benchmake("status").output.find("3 targets, 1 not up to date"), std::string::npos);
  Run build = Benchmake("build");
  EXPECT_EQ(build.exit_code, 0) << build.output;
  EXPECT_NE(build.output.find("train: restored from cache"), std::string::npos) << build.output;
  EXPECT_EQ(build.output.find("eval:"), std::string::npos) << build.output;
  EXPECT_EQ(Runs(), "");
  EXPECT_TRUE(fs::exists(ws_ / "out/train/model.bin"));
  EXPECT_NE(Benchmake("build").output.find("no work to do"), std::string::npos);
}

TEST_F(E2eTest, CacheCommandsUseTheCacheTheEnvironmentNamesNotTheLastBuilds) {
  BuildOk();
  Runs();
  // The same workspace, another $BENCHMAKE_CACHE_DIR (docs: `cache gc --help`).
  fs::path other = root_ / "other cache";
  ::setenv("BENCHMAKE_CACHE_DIR", other.c_str(), 1);
  Run stats = Benchmake("cache stats");
  EXPECT_NE(stats.output.find("cache:   " + other.string() + "\n"), std::string::npos)
      << stats.output;
  EXPECT_NE(stats.output.find("actions: 0"), std::string::npos) << stats.output;
  Run gc = Benchmake("cache gc --max-size 0");
  EXPECT_EQ(gc.exit_code, 0) << gc.output;
  ::setenv("BENCHMAKE_CACHE_DIR", (root_ / "cache").c_str(), 1);
  EXPECT_NE(Benchmake("cache stats").output.find("actions: 3"), std::string::npos)
      << "gc trimmed the cache of the last build, not the one $BENCHMAKE_CACHE_DIR names";
}

TEST_F(E2eTest, DirectoryAndFileFlags) {
  fs::rename(ws_ / "BENCHFILE.toml", ws_ / "other.toml");
  std::string cmd = "cd / && '" + binary_ + "' -C '" + ws_.string() +
                    "' -f other.toml build -k 0 > '" + (root_ / "o.txt").string() + "' 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << ReadText(root_ / "o.txt");
  EXPECT_EQ(Runs(), "data train eval");
  EXPECT_TRUE(fs::exists(ws_ / "out/eval/eval.txt"));
}

TEST_F(E2eTest, GpuStepsGetDistinctDevices) {
  WriteText(ws_ / "BENCHFILE.toml", R"([target.g0]
rule = "exec"
gpus = 1
command = ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES > {out}/dev; sleep 0.5"]
outputs = ["dev"]

[target.g1]
rule = "exec"
gpus = 1
command = ["sh", "-c", "echo $CUDA_VISIBLE_DEVICES > {out}/dev; sleep 0.5"]
outputs = ["dev"]
)");
  ::setenv("BENCHMAKE_GPUS", "2", 1);
  ::setenv("BENCHMAKE_GPU_LOCK_DIR", (root_ / "gpu_locks").c_str(), 1);
  Run r = Benchmake("build -j 2");
  ::unsetenv("BENCHMAKE_GPUS");
  ::unsetenv("BENCHMAKE_GPU_LOCK_DIR");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string a = ReadText(ws_ / "out/g0/dev"), b = ReadText(ws_ / "out/g1/dev");
  EXPECT_TRUE((a == "0\n" && b == "1\n") || (a == "1\n" && b == "0\n") ||
              (a == "0\n" && b == "0\n"))
      << a << b;
  EXPECT_NE(ReadText(ws_ / ".benchmake/build.ninja").find("pool gpu\n  depth = 2"),
            std::string::npos);
}

// Several ranks, one SIGKILLed mid-run while the others wait for it forever:
// the build fails at once naming the rank and the signal, caches nothing,
// leaves no out/ for the target and no rank running. benchmake is linked next
// to tests/rules/testdata/fake_benchmake_train.sh as benchmake-train (a
// step's tools are the ones beside the binary).
TEST_F(E2eTest, AKilledRankFailsTheStepAndCachesNothing) {
  fs::path tools = root_ / "tools";
  fs::create_directories(tools);
  std::error_code ec;
  fs::create_hard_link(binary_, tools / "benchmake", ec);
  if (ec) fs::copy_file(binary_, tools / "benchmake");
  fs::copy_file(
      fs::path(BENCHMAKE_TEST_SOURCE_DIR) / "tests/rules/testdata/fake_benchmake_train.sh",
      tools / "benchmake-train");
  WriteText(ws_ / "src/tokens/train.bin", "tokens");
  WriteText(ws_ / "BENCHFILE.toml", R"([target.dp]
rule = "pretrain"
data = "src/tokens"
model = "llama-tiny"
mpe = 32
layout = "TP1PP1DP4"
)");
  ::setenv("BENCHMAKE_PLATFORM", R"({"trainer_build": "fake", "gpu_count": 0})", 1);
  ::setenv("FAKE_TRAINER_PID_DIR", root_.c_str(), 1);
  for (const char* v : {"FAKE_TRAINER_0", "FAKE_TRAINER_1", "FAKE_TRAINER_3"})
    ::setenv(v, "hang", 1);
  ::setenv("FAKE_TRAINER_2", "kill", 1);
  binary_ = (tools / "benchmake").string();
  auto start = std::chrono::steady_clock::now();
  Run r = Benchmake("build");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (r.output.find("data parallelism is not implemented") != std::string::npos)
    GTEST_SKIP() << "the trainer's run config refuses DP > 1 (until it trains data parallel), "
                    "so no multi-rank target loads yet";
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_LT(seconds, 60) << r.output;
  EXPECT_NE(r.output.find("dp failed: rank 2 of 4 was killed by signal 9 (SIGKILL); ranks 0, 1, 3 "
                          "were stopped"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("rank 0 was stopped after rank 2 failed"), std::string::npos)
      << "the step log says which ranks were stopped: " << r.output;
  EXPECT_FALSE(fs::exists(root_ / "cache/ac") && !fs::is_empty(root_ / "cache/ac"))
      << "nothing cached";
  EXPECT_FALSE(fs::exists(ws_ / "out/dp"));
  for (int rank = 0; rank < 4; ++rank) {
    std::string pid = ReadText(root_ / ("rank-" + std::to_string(rank) + ".pid"));
    ASSERT_FALSE(pid.empty()) << "rank " << rank << " never started";
    std::string stat = ReadText("/proc/" + std::to_string(std::stoi(pid)) + "/stat");
    EXPECT_TRUE(stat.empty() || stat.find(") Z ") != std::string::npos)
        << "rank " << rank << " still runs: " << stat;
  }
  std::printf("a rank killed after 0.3 s failed `benchmake build` after %.2f s\n", seconds);

  // A layout wider than the machine fails before anything runs.
  Edit("layout = \"TP1PP1DP4\"", "layout = \"TP1PP1DP8\"\ndevice = \"cuda\"\nprecision = \"bf16\"");
  ::setenv("BENCHMAKE_GPUS", "4", 1);
  Run wide = Benchmake("build");
  ::unsetenv("BENCHMAKE_GPUS");
  EXPECT_EQ(wide.exit_code, 2) << wide.output;
  EXPECT_NE(wide.output.find("target 'dp' needs 8 GPU(s) for layout TP1PP1DP8 but this machine "
                             "has 4"),
            std::string::npos)
      << wide.output;
}

TEST_F(E2eTest, MissingNinjaIsAClearError) {
  std::string cmd = "cd '" + ws_.string() + "' && PATH=/nonexistent '" + binary_ + "' build > '" +
                    (root_ / "o.txt").string() + "' 2>&1";
  int status = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_NE(ReadText(root_ / "o.txt").find("'ninja' is not on PATH"), std::string::npos)
      << ReadText(root_ / "o.txt");
}

}  // namespace
}  // namespace bm::engine
