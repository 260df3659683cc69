// Shell completion through the tables (cli/completion.h), with a fake
// target lister; the scripts in real shells: cli_e2e_test.cc.
#include <gtest/gtest.h>

#include "cli/commands.h"
#include "cli/completion.h"

namespace bm::cli {
namespace {

using Words = std::vector<std::string>;

class CliCompletion : public ::testing::Test {
 protected:
  Words Candidates(const Words& words) {
    return Complete(words, CommandSpecs(true), TopLevelSpec(), [this](const ParsedArgs& a) {
      listed_dir_ = a.dir();
      return Words{"pretrain", "pretokenize", "finetune"};
    });
  }
  std::string listed_dir_ = "(not listed)";
};

TEST_F(CliCompletion, CommandsThenAGroupsCommands) {
  Words all = Candidates({""});
  EXPECT_EQ(all.front(), "build");
  EXPECT_EQ(std::count(all.begin(), all.end(), "cache"), 1);
  EXPECT_EQ(std::count(all.begin(), all.end(), "__man"), 0);  // hidden
  EXPECT_EQ(Candidates({"bu"}), Words{"build"});
  EXPECT_EQ(Candidates({"c"}), (Words{"compare", "clean", "cache", "completion"}));
  EXPECT_EQ(Candidates({"cache", ""}), (Words{"stats", "verify", "gc", "push", "pull"}));
  EXPECT_EQ(Candidates({"-C", "ws", "cache", "p"}), (Words{"push", "pull"}));
  EXPECT_EQ(Candidates({"help", "ca"}), Words{"cache"});
  // `benchmake help cache gc` is the help of `cache gc`.
  EXPECT_EQ(Candidates({"help", "cache", "g"}), Words{"gc"});
  EXPECT_EQ(Candidates({"help", "build", ""}), Words{});
  EXPECT_EQ(Candidates({"completion", ""}), (Words{"bash", "zsh"}));
}

TEST_F(CliCompletion, TargetNamesFromTheWorkspaceTheFlagsName) {
  EXPECT_EQ(Candidates({"build", "pre"}), (Words{"pretrain", "pretokenize"}));
  EXPECT_EQ(listed_dir_, "");
  EXPECT_EQ(Candidates({"-C", "/ws", "build", "-j", "2", "fine"}), Words{"finetune"});
  EXPECT_EQ(listed_dir_, "/ws");
  EXPECT_EQ(Candidates({"build", "--directory=/other", "f"}), Words{"finetune"});
  EXPECT_EQ(listed_dir_, "/other");
  EXPECT_EQ(Candidates({"cache", "push", "p"}), (Words{"pretrain", "pretokenize"}));
  EXPECT_EQ(Candidates({"--debug-key", "f"}), Words{"finetune"});
  // One TARGET only: nothing after it.
  EXPECT_EQ(Candidates({"step", "pretrain", ""}), Words{});
}

TEST_F(CliCompletion, FlagsAndTheirValues) {
  EXPECT_EQ(Candidates({"build", "--j"}), Words{"--jobs"});
  EXPECT_EQ(Candidates({"build", "--re"}), Words{"--remeasure"});
  EXPECT_EQ(Candidates({"build", "--co"}), Words{"--color"});  // a common flag
  EXPECT_EQ(Candidates({"build", "-j", ""}), Words{});         // a number: nothing to offer
  EXPECT_EQ(Candidates({"build", "--color", ""}), (Words{"auto", "always", "never"}));
  EXPECT_EQ(Candidates({"build", "--color=al"}), Words{"--color=always"});
  EXPECT_EQ(Candidates({"report", "--format", "h"}), Words{"html"});
  EXPECT_EQ(Candidates({"compare", "--format", ""}), (Words{"md", "json"}));
  EXPECT_EQ(Candidates({"report", "-o", "r"}), Words{std::string(kCompleteFiles)});
  EXPECT_EQ(Candidates({"-C", ""}), Words{std::string(kCompleteDirs)});
  EXPECT_EQ(Candidates({"tokenize", ""}), Words{std::string(kCompleteFiles)});
  EXPECT_EQ(Candidates({"--v"}), Words{"--version"});
  EXPECT_EQ(Candidates({"bogus", ""}), Words{});
  EXPECT_EQ(Candidates({}), Words{});
}

TEST_F(CliCompletion, AfterDoubleDashEveryWordIsAnOperand) {
  // As for the parser (and getopt): "--" ends the flags, "-x" after it is a TARGET.
  EXPECT_EQ(Candidates({"build", "--", "-"}), Words{});
  EXPECT_EQ(Candidates({"build", "--", "-x", "pre"}), (Words{"pretrain", "pretokenize"}));
  EXPECT_EQ(Candidates({"step", "--", "-x", ""}), Words{});  // its one TARGET is given
}

TEST(CliCompletionScripts, CallTheBinaryWithTheWordsUpToTheCursor) {
  EXPECT_NE(BashCompletionScript().find("__complete"), std::string::npos);
  EXPECT_NE(BashCompletionScript().find("complete -F _benchmake benchmake"), std::string::npos);
  EXPECT_EQ(ZshCompletionScript().rfind("#compdef benchmake\n", 0), 0u);
}

}  // namespace
}  // namespace bm::cli
