// The command line as a user meets it, through the real binary: --help of
// every command, exit codes, did-you-mean, color, the completion scripts in
// real shells, the man page through `man -l`, `cmake --install`.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.h"

namespace bm::cli {
namespace {

namespace fs = std::filesystem;

constexpr char kBenchfile[] = R"([target.pretrain]
rule = "exec"
command = ["sh", "-c", "echo ok > {out}/m.txt"]
outputs = ["m.txt"]

[target.finetune]
rule = "exec"
inputs = ["pretrain"]
command = ["sh", "-c", "cp {in.pretrain}/m.txt {out}/f.txt"]
outputs = ["f.txt"]
)";

bool OnPath(const std::string& program) {
  return std::system(("command -v " + program + " > /dev/null 2>&1").c_str()) == 0;
}

class CliE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("BENCHMAKE_BINARY_DIR");
    ASSERT_NE(bin, nullptr) << "set BENCHMAKE_BINARY_DIR";
    build_dir_ = bin;
    binary_ = (build_dir_ / "benchmake").string();
    ASSERT_TRUE(fs::exists(binary_)) << binary_;
    char templ[] = "/tmp/benchmake-cli-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    root_ = templ;
    fs::create_directories(root_ / "ws");
    std::ofstream(root_ / "ws/BENCHFILE.toml") << kBenchfile;
    ::setenv("BENCHMAKE_CACHE_DIR", (root_ / "cache").c_str(), 1);
    ::unsetenv("NO_COLOR");
    ::unsetenv(kColorEnv);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  struct Run {
    int exit_code;
    std::string output;  // stdout and stderr
  };
  // `command` through sh in the workspace, with $BM the binary.
  Run Shell(const std::string& command) {
    std::string out = (root_ / "out.txt").string();
    std::string script = "cd '" + (root_ / "ws").string() + "' && export BM='" + binary_ + "' && " +
                         command + " > '" + out + "' 2>&1";
    int status = std::system(script.c_str());
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    return Run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ss.str()};
  }
  Run Benchmake(const std::string& args) { return Shell("\"$BM\" " + args); }

  fs::path build_dir_, root_;
  std::string binary_;
};

TEST_F(CliE2e, EveryCommandsHelpExitsZeroAndNamesEveryFlag) {
  for (const CommandSpec* spec : CommandSpecs(false)) {
    std::string name(spec->name);
    for (const std::string& how : {name + " --help", name + " -h", "help " + name}) {
      if (spec->hidden && how.starts_with("help ")) continue;
      Run r = Benchmake(how);
      EXPECT_EQ(r.exit_code, 0) << how << "\n" << r.output;
      EXPECT_EQ(r.output.rfind("usage: benchmake " + name, 0), 0u) << how << "\n" << r.output;
      std::vector<FlagSpec> flags = spec->flags;
      flags.insert(flags.end(), CommonFlags().begin(), CommonFlags().end());
      for (const FlagSpec& f : flags) {
        EXPECT_NE(r.output.find(std::string(f.name)), std::string::npos) << how << ": " << f.name;
      }
    }
  }
  // --help wins over missing operands.
  EXPECT_EQ(Benchmake("explain --help").exit_code, 0);
  Run top = Benchmake("--help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.output.find("--version"), std::string::npos);
  Run group = Benchmake("cache --help");
  EXPECT_EQ(group.exit_code, 0) << group.output;
  EXPECT_NE(group.output.find("cache gc"), std::string::npos);
}

TEST_F(CliE2e, MistakesExitTwoWithASuggestion) {
  Run r = Benchmake("bild");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "benchmake: error: unknown command 'bild' (did you mean 'build'?)\n");
  r = Benchmake("build --jbos 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown flag '--jbos' for build (did you mean '--jobs'?)"),
            std::string::npos)
      << r.output;
  r = Benchmake("build pretrian");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("no target 'pretrian'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(did you mean 'pretrain'?)"), std::string::npos) << r.output;
  // explain and cache push/pull name the BENCHFILE too, as build does (they did not).
  for (const char* command : {"explain pretrian", "cache push pretrian", "cache pull pretrian"}) {
    r = Benchmake(command);
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_NE(r.output.find("no target 'pretrian' in " + (root_ / "ws/BENCHFILE.toml").string() +
                            " (did you mean 'pretrain'?)"),
              std::string::npos)
        << command << ": " << r.output;
  }
  for (const char* command : {"explain pretrian", "report pretrian", "compare pretrian finetune"}) {
    r = Benchmake(command);
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_NE(r.output.find("did you mean"), std::string::npos) << command << ": " << r.output;
  }
  r = Benchmake("cache stat");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown cache command 'stat' (did you mean 'stats'?)"),
            std::string::npos)
      << r.output;
  // -C to a missing directory or to a file: the flag is named, not a path below it.
  r = Benchmake("-C missing build");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "benchmake: error: -C missing: no such directory\n");
  for (const char* command : {"cache stats", "cache verify", "cache gc --max-size 1G"}) {
    r = Benchmake(std::string("-C missing ") + command);  // it reported the default cache
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_EQ(r.output, "benchmake: error: -C missing: no such directory\n") << command;
  }
  r = Benchmake("-f missing.toml cache stats");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("-f missing.toml: "), std::string::npos) << r.output;
  r = Benchmake("-C BENCHFILE.toml build");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "benchmake: error: -C BENCHFILE.toml: not a directory\n");
  // A directory without a BENCHFILE: refused, and left as it was (a .benchmake/ was made there).
  fs::create_directories(root_ / "ws/empty");
  r = Benchmake("-C empty build");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("cannot read " + (root_ / "ws/empty/BENCHFILE.toml").string()),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::is_empty(root_ / "ws/empty"));
  r = Benchmake("step");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("usage: benchmake step [OPTIONS] TARGET"), std::string::npos);
  EXPECT_EQ(Benchmake("--version").exit_code, 0);
}

TEST_F(CliE2e, JobsZeroMeansNoLimitAsForNinja) {
  // `ninja -j 0` runs every ready edge at once ("0 means infinity", ninja -h):
  // two steps that each wait for the other to start only finish side by side,
  // even with `jobs = 1` in the BENCHFILE.
  auto meet = [&](const char* me, const char* other) {
    std::string dir = root_.string();
    return fmt::format(
        "[target.{0}]\nrule = \"exec\"\noutputs = [\"x\"]\ncommand = [\"sh\", \"-c\", "
        "\"touch {1}/{0}; i=0; while [ ! -e {1}/{2} ]; do i=$((i+1)); [ $i -gt 100 ] && exit 1; "
        "sleep 0.05; done; touch {{out}}/x\"]\n",
        me, dir, other);
  };
  std::ofstream(root_ / "ws/BENCHFILE.toml") << "[benchmake]\njobs = 1\n"
                                             << meet("left", "right") << meet("right", "left");
  Run r = Benchmake("build -j 0 --color never");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(CliE2e, ColorFollowsTheFlagNoColorAndTheTerminal) {
  // Into a file: plain, unless --color=always (which beats NO_COLOR).
  EXPECT_EQ(Benchmake("bild").output.find('\x1b'), std::string::npos);
  Run forced = Shell("NO_COLOR=1 \"$BM\" --color=always bild");
  EXPECT_NE(forced.output.find("\x1b[1;31merror:\x1b[0m"), std::string::npos) << forced.output;
  EXPECT_EQ(Shell("BENCHMAKE_COLOR=never \"$BM\" bild").output.find('\x1b'), std::string::npos);
  EXPECT_NE(Shell("BENCHMAKE_COLOR=always \"$BM\" bild").output.find('\x1b'), std::string::npos);
  // On a terminal (script(1) gives the command a pty): colored unless NO_COLOR or TERM=dumb.
  if (OnPath("script")) {
    const std::string kOnTty = "script -qec '\"$BM\" bild' /dev/null";
    EXPECT_NE(Shell("TERM=xterm " + kOnTty).output.find("\x1b[1;31merror:"), std::string::npos);
    EXPECT_EQ(Shell("NO_COLOR=1 TERM=xterm " + kOnTty).output.find('\x1b'), std::string::npos);
    EXPECT_EQ(Shell("TERM=dumb " + kOnTty).output.find('\x1b'), std::string::npos);
  }
  // The steps' notices, through ninja's pipe.
  if (!OnPath("ninja")) GTEST_SKIP() << "ninja is not on PATH";
  Run plain = Benchmake("build");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(plain.output.find('\x1b'), std::string::npos) << plain.output;
  ASSERT_EQ(Benchmake("clean").exit_code, 0);
  Run color = Benchmake("build --color=always");
  ASSERT_EQ(color.exit_code, 0) << color.output;
  EXPECT_NE(color.output.find("\x1b[1;32mpretrain:\x1b[0m restored from cache"), std::string::npos)
      << color.output;
}

TEST_F(CliE2e, BashCompletesATargetNameAFlagAndAValue) {
  if (!OnPath("bash")) GTEST_SKIP() << "bash is not installed";
  // What bash sets before it calls the function for <TAB> at the end of $1.
  std::ofstream(root_ / "complete.sh") << R"(source <("$BM" completion bash)
COMP_LINE=$1
COMP_POINT=${#COMP_LINE}
read -ra COMP_WORDS <<< "$COMP_LINE"
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_benchmake
printf '%s\n' "${COMPREPLY[@]}"
)";
  auto complete = [&](const std::string& line) {
    return Shell("PATH=\"$(dirname \"$BM\"):$PATH\" bash '" + (root_ / "complete.sh").string() +
                 "' '" + line + "'");
  };
  Run r = complete("benchmake build pre");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "pretrain\n");
  EXPECT_EQ(complete("benchmake -C . explain pretrain fin").output, "finetune\n");
  EXPECT_EQ(complete("benchmake build --remea").output, "--remeasure\n");
  EXPECT_EQ(complete("benchmake cache pu").output, "push\npull\n");
  // bash splits at '=' and replaces only what follows it.
  EXPECT_EQ(complete("benchmake build --color=al").output, "always\n");
  EXPECT_EQ(complete("benchmake report -o BENCH").output, "BENCHFILE.toml\n");
}

TEST_F(CliE2e, ZshCompletesATargetName) {
  if (!OnPath("zsh")) GTEST_SKIP() << "zsh is not installed";
  // compadd only works inside a completion widget: stand-ins print what it gets.
  std::string script =
      "compdef() { :; }; compadd() { print -l -- \"$@\"; }; _files() { print _files; }; "
      "compset() { :; }; source <(\"$BM\" completion zsh); words=(benchmake build fin); "
      "CURRENT=3; _benchmake";
  Run r = Shell("PATH=\"$(dirname \"$BM\"):$PATH\" zsh -f -c '" + script + "'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "--\nfinetune\n");
}

TEST_F(CliE2e, CompletionIsQuietWithoutAWorkspace) {
  Run r = Shell("cd / && \"$BM\" __complete build ''");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "");
}

TEST_F(CliE2e, ManRendersThePageWithEveryCommandAndFlag) {
  if (!OnPath("man")) GTEST_SKIP() << "man is not installed (Debian: man-db)";
  fs::path page = build_dir_ / "benchmake.1";
  ASSERT_TRUE(fs::exists(page)) << page << " (built by the benchmake_man target)";
  Run r = Shell("MANWIDTH=100 man -l '" + page.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  for (const char* section : {"NAME", "SYNOPSIS", "COMMANDS", "FILES", "ENVIRONMENT", "EXIT STATUS",
                              "BENCHMAKE_CACHE_DIR", "NO_COLOR"}) {
    EXPECT_NE(r.output.find(section), std::string::npos) << section;
  }
  for (const CommandSpec* spec : CommandSpecs(true)) {
    EXPECT_NE(r.output.find("benchmake " + std::string(spec->name)), std::string::npos)
        << spec->name;
    for (const FlagSpec& f : spec->flags) {
      EXPECT_NE(r.output.find(std::string(f.name)), std::string::npos) << spec->name << f.name;
    }
  }
  for (const FlagSpec& f : CommonFlags()) {
    EXPECT_NE(r.output.find(std::string(f.name)), std::string::npos) << f.name;
  }
}

TEST_F(CliE2e, GroffReadsThePageWithoutWarnings) {
  if (!OnPath("groff")) GTEST_SKIP() << "groff is not installed (Debian: groff)";
  fs::path page = build_dir_ / "benchmake.1";
  ASSERT_TRUE(fs::exists(page)) << page << " (built by the benchmake_man target)";
  // Without preconv (which man runs first), as lint checks and other formatters read it.
  Run r = Shell("groff -man -Tutf8 -ww -z '" + page.string() + "'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "");
}

TEST_F(CliE2e, InstallPutsTheBinaryAndTheManPageInPlace) {
  if (!OnPath("cmake")) GTEST_SKIP() << "cmake is not on PATH";
  fs::path prefix = root_ / "prefix";
  Run r = Shell("cmake --install '" + build_dir_.string() + "' --prefix '" + prefix.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(prefix / "bin/benchmake"));
  EXPECT_TRUE(fs::exists(prefix / "share/man/man1/benchmake.1"));
  Run version = Shell("'" + (prefix / "bin/benchmake").string() + "' --version");
  EXPECT_EQ(version.exit_code, 0) << version.output;
}

}  // namespace
}  // namespace bm::cli
