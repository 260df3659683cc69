// The command tables (base/cli/flag_table.h) and what they feed: the
// parser, --help, the man page. Every flag the parser accepts comes from a
// table, so a flag cannot exist without its help text.
#include <gtest/gtest.h>

#include <set>

#include "cli/commands.h"
#include "cli/help.h"
#include "cli/man_page.h"

namespace bm::cli {
namespace {

const CommandSpec& TestSpec() {
  static const CommandSpec kSpec{
      .name = "demo",
      .operands = "TARGET...",
      .operand_kind = ValueKind::kTarget,
      .min_operands = 1,
      .max_operands = 2,
      .summary = "a command for tests",
      .flags = {{.name = "--jobs",
                 .short_name = "-j",
                 .value_name = "N",
                 .kind = ValueKind::kNumber,
                 .help = "steps at once",
                 .default_text = "4"},
                {.name = "--dry-run", .short_name = "-n", .help = "run nothing"},
                {.name = "--format",
                 .value_name = "FORMAT",
                 .kind = ValueKind::kChoice,
                 .help = "the format",
                 .choices = {"md", "json"}}}};
  return kSpec;
}

Result<ParsedArgs> Parse(std::vector<std::string> args) { return ParseArgs(TestSpec(), args); }

std::string ErrorOf(std::vector<std::string> args) {
  Result<ParsedArgs> r = Parse(args);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  return r.status().message();
}

TEST(CliFlagTable, ReadsEverySpellingOfAFlag) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--jobs", "3"}, {"--jobs=3"}, {"-j", "3"}, {"-j3"}}) {
    Result<ParsedArgs> r = Parse(args);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->Value("--jobs"), "3") << args[0];
    EXPECT_TRUE(r->operands().empty());
  }
  Result<ParsedArgs> r = Parse({"a", "-n", "--jobs", "1", "b", "--jobs", "2", "-C", "dir"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->Has("--dry-run"));
  EXPECT_EQ(r->Value("--jobs"), "2");  // the last one wins
  EXPECT_EQ(r->dir(), "dir");
  EXPECT_EQ(r->operands(), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(r->Has("--format"));
  EXPECT_EQ(r->ValueOr("--format", "md"), "md");
}

TEST(CliFlagTable, DashDashEndsTheFlagsAndADashIsAnOperand) {
  Result<ParsedArgs> r = Parse({"-", "--", "-n", "--jobs"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->operands(), (std::vector<std::string>{"-", "-n", "--jobs"}));
  EXPECT_FALSE(r->Has("--dry-run"));
}

TEST(CliFlagTable, BadFlagsSayWhatIsWrongAndSuggest) {
  EXPECT_EQ(ErrorOf({"--jbos", "2"}), "unknown flag '--jbos' for demo (did you mean '--jobs'?)");
  EXPECT_EQ(ErrorOf({"--dryrun"}), "unknown flag '--dryrun' for demo (did you mean '--dry-run'?)");
  EXPECT_EQ(ErrorOf({"--frobnicate"}),
            "unknown flag '--frobnicate' for demo (see `benchmake demo --help`)");
  EXPECT_EQ(ErrorOf({"-nx"}), "unknown flag '-nx' for demo (did you mean '-n'?)");
  EXPECT_EQ(ErrorOf({"--jobs"}), "--jobs needs a value: --jobs N (see `benchmake demo --help`)");
  EXPECT_EQ(ErrorOf({"--dry-run=yes"}), "--dry-run takes no value (see `benchmake demo --help`)");
  EXPECT_EQ(ErrorOf({"--format", "jsno"}),
            "--format wants one of md, json, not 'jsno' (did you mean 'json'?) (see `benchmake "
            "demo --help`)");
  EXPECT_EQ(ErrorOf({"--color=sometimes"}).rfind("--color wants one of auto, always, never", 0),
            0u);
}

TEST(CliFlagTable, OperandCountsAreCheckedWithTheUsageLine) {
  ParsedArgs none;
  Status s = CheckOperands(TestSpec(), none);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "demo needs TARGET...\nusage: benchmake demo [OPTIONS] TARGET...");
  ParsedArgs three = *Parse({"a", "b", "c"});
  EXPECT_EQ(CheckOperands(TestSpec(), three).message(),
            "demo takes at most 2 operands, got 3\nusage: benchmake demo [OPTIONS] TARGET...");
  EXPECT_TRUE(CheckOperands(TestSpec(), *Parse({"a"})).ok());
  EXPECT_EQ(CheckOperands(StatusSpec(), three).message(),
            "status takes no operands, got 'a'\nusage: benchmake status [OPTIONS]");
  // --help comes before the count: `benchmake explain --help` needs no TARGET.
  EXPECT_TRUE(Parse({"--help"})->help());
}

TEST(CliFlagTable, ColorComesFromTheFlagElseTheEnvironment) {
  ::setenv(kColorEnv, "always", 1);
  EXPECT_EQ(Parse({})->color(), ColorMode::kAlways);
  EXPECT_EQ(Parse({"--color", "never"})->color(), ColorMode::kNever);
  ::unsetenv(kColorEnv);
  EXPECT_EQ(Parse({})->color(), ColorMode::kAuto);
}

// A sample value a flag accepts.
std::string SampleValue(const FlagSpec& f) {
  if (!f.choices.empty()) return std::string(f.choices.back());
  return f.kind == ValueKind::kNumber ? "3" : "some-value";
}

// The acceptance test of the tables: every command's every flag is documented
// (help text, value name, default shown), accepted by the parser under each of
// its names, and named by --help and the man page.
TEST(CliFlagTable, EveryFlagOfEveryCommandIsParsedAndDocumented) {
  std::string man = ManPage(CommandSpecs(true), TopLevelSpec(), "test");
  for (const Command& c : Commands()) {
    const CommandSpec& spec = *c.spec;
    SCOPED_TRACE(std::string(spec.name));
    ASSERT_NE(c.run, nullptr);
    EXPECT_FALSE(spec.summary.empty());
    EXPECT_TRUE(spec.min_operands <= spec.max_operands || spec.max_operands < 0);
    EXPECT_EQ(spec.operands.empty(), spec.max_operands == 0) << "synopsis and operand count";
    if (!spec.hidden) {
      EXPECT_FALSE(spec.description.empty());
      EXPECT_FALSE(spec.examples.empty());
      EXPECT_NE(man.find(".SS \"" + RoffEscape(spec.name) + "\""), std::string::npos);
    }
    std::string help = CommandHelp(spec);
    EXPECT_EQ(help.rfind(UsageLine(spec), 0), 0u);
    std::set<std::string_view> names;
    std::vector<FlagSpec> all = spec.flags;
    all.insert(all.end(), CommonFlags().begin(), CommonFlags().end());
    for (const FlagSpec& f : all) {
      SCOPED_TRACE(std::string(f.name));
      EXPECT_FALSE(f.help.empty());
      EXPECT_TRUE(f.name.starts_with("-"));
      EXPECT_TRUE(names.insert(f.name).second) << "a flag named twice";
      if (!f.short_name.empty()) {
        EXPECT_TRUE(names.insert(f.short_name).second);
      }
      EXPECT_EQ(f.takes_value(), f.kind != ValueKind::kNone);
      EXPECT_EQ(f.kind == ValueKind::kChoice, !f.choices.empty());
      EXPECT_NE(help.find(FlagSynopsis(f)), std::string::npos);
      if (!f.default_text.empty()) {
        EXPECT_NE(help.find("[default: "), std::string::npos);
      }
      if (!spec.hidden) {
        EXPECT_NE(man.find("\\fB" + RoffEscape(f.name) + "\\fR"), std::string::npos);
      }
      for (std::string_view spelling : {f.name, f.short_name}) {
        if (spelling.empty()) continue;
        std::vector<std::string> args = {std::string(spelling)};
        if (f.takes_value()) args.push_back(SampleValue(f));
        Result<ParsedArgs> r = ParseArgs(spec, args);
        ASSERT_TRUE(r.ok()) << spelling << ": " << r.status().message();
        EXPECT_TRUE(r->Has(f.name));
        EXPECT_EQ(r->ValueOr(f.name, "?"), f.takes_value() ? args[1] : "");
      }
    }
  }
}

TEST(CliFlagTable, GeneralHelpListsEveryVisibleCommandOnce) {
  std::string help = GeneralHelp(CommandSpecs(true), TopLevelSpec());
  for (const CommandSpec* s : CommandSpecs(false)) {
    bool listed = help.find("\n  " + std::string(s->name) + " ") != std::string::npos;
    EXPECT_EQ(listed, !s->hidden) << s->name;
  }
  EXPECT_NE(help.find("--version"), std::string::npos);
  EXPECT_EQ(FirstWords(CommandSpecs(true))[0], "build");
  EXPECT_TRUE(IsGroup("cache", CommandSpecs(true)));
  EXPECT_FALSE(IsGroup("build", CommandSpecs(true)));
  EXPECT_NE(GroupHelp("cache", CommandSpecs(true)).find("cache gc"), std::string::npos);
}

TEST(CliFlagTable, WrapKeepsLinesShortAndParagraphsApart) {
  EXPECT_EQ(Wrap("one two three four", 10, 2), "  one two\n  three\n  four\n");
  EXPECT_EQ(Wrap("a\n\nb", 80, 0), "a\n\nb\n");
}

TEST(CliManPage, EscapesRoff) {
  EXPECT_EQ(RoffEscape("--jobs"), "\\-\\-jobs");
  EXPECT_EQ(RoffEscape(".benchmake/"), "\\&.benchmake/");
  EXPECT_EQ(RoffEscape("a\\b"), "a\\eb");
  // groff_char(7): a Unicode character is \[uXXXX], 4 to 6 upper-case hex digits.
  EXPECT_EQ(RoffEscape("4 \u2192 8"), "4 \\[u2192] 8");
  EXPECT_EQ(RoffEscape("caf\u00e9 \U0001F600"), "caf\\[u00E9] \\[u1F600]");
  EXPECT_EQ(RoffEscape("\xff\xe2"), "\xff\xe2");  // no UTF-8: left as it is
}

}  // namespace
}  // namespace bm::cli
