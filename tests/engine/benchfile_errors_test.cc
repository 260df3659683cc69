// Every BENCHFILE error names FILE:LINE:COL and says what is wrong
// (table-driven; ninja's AssertParse style: inputs inline).
#include <gtest/gtest.h>

#include "engine/target_graph.h"
#include "rules/registry.h"
#include "tests/support/memory_filesystem.h"

namespace bm::engine {
namespace {

struct ErrorCase {
  const char* name;
  const char* text;
  const char* location;  // "LINE:COL"
  const char* message;   // a substring of the message
};

const ErrorCase kCases[] = {
    {"TomlSyntax", "[target.a]\nrule = \"exec\"\ncommand = [\"x\"\n", "3:16",
     "TOML syntax error: Error while parsing array"},
    {"TomlSyntaxBadValue", "[target.a]\nrule = exec\n", "2:8", "TOML syntax error"},
    {"UnknownRule", "[target.a]\nrule = \"exce\"\ncommand = [\"x\"]\n", "2:8",
     "unknown rule 'exce' (did you mean 'exec'?)"},
    {"UnknownParam", "[target.a]\nrule = \"exec\"\ncomand = [\"x\"]\n", "3:1",
     "unknown parameter 'comand' for rule 'exec' (did you mean 'command'?)"},
    {"MistypedParam", "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\noutputs = 3\n", "4:11",
     "parameter 'outputs' must be a list of strings, not an integer"},
    {"MistypedListElement", "[target.a]\nrule = \"exec\"\ncommand = [\"x\", 2]\n", "3:17",
     "parameter 'command' must be a list of strings, but element 2 is an integer"},
    {"NulInAString", "[target.a]\nrule = \"exec\"\ncommand = [\"echo\", \"a\\u0000b\"]\n", "3:11",
     "parameter 'command' holds a NUL character (\\u0000)"},
    {"NanFloat", "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\ntimeout = nan\n", "4:11",
     "parameter 'timeout' must be a number, not nan"},
    // An {in.NAME} naming no input failed the step when it ran, after its inputs had been built,
    // and named no place in the BENCHFILE. Other braces (a shell's ${VAR}) are no placeholder.
    {"PlaceholderNamesNoInput",
     "[target.a]\nrule = \"exec\"\ninputs = [\"src/a.txt\"]\n"
     "command = [\"sh\", \"-c\", \"cat {in.src/a.txt} ${HOME} {in.b}\"]\n",
     "4:24", "{in.b}: no input named 'b' (inputs: [\"src/a.txt\"])"},
    {"EnvPlaceholderNamesNoInput",
     "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\nenv = { DATA = \"{in.corpus}\" }\n", "4:7",
     "DATA: {in.corpus}: no input named 'corpus' (inputs: none)"},
    {"NegativeTimeout", "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\ntimeout = -1.0\n", "4:11",
     "timeout must be >= 0 (0: none)"},
    // A count past an int would wrap (2^63 - 1 GPUs: -1, which no machine lacks).
    {"HugeGpus", "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\ngpus = 9223372036854775807\n",
     "4:8", "parameter 'gpus' must be an integer from 0 to 2147483647, not 9223372036854775807"},
    // Every integer parameter is range-checked where it is written: the trainer read
    // lbs = 2^32 + 1 as an int64 and aborted on std::bad_alloc, threads = 2^32 + 1 became 1.
    {"HugeLbs",
     "[target.t]\nrule = \"tokenize\"\ninput = [\"src/a.txt\"]\n\n"
     "[target.p]\nrule = \"pretrain\"\ndata = \"t\"\nlbs = 4294967297\n",
     "8:7", "parameter 'lbs' must be an integer from 1 to 2147483647, not 4294967297"},
    {"ZeroLbs",
     "[target.t]\nrule = \"tokenize\"\ninput = [\"src/a.txt\"]\n\n"
     "[target.p]\nrule = \"pretrain\"\ndata = \"t\"\nlbs = 0\n",
     "8:7", "parameter 'lbs' must be an integer from 1 to 2147483647, not 0"},
    {"ZeroStageFour",
     "[target.t]\nrule = \"tokenize\"\ninput = [\"src/a.txt\"]\n\n"
     "[target.p]\nrule = \"pretrain\"\ndata = \"t\"\nzero = 4\n",
     "8:8", "parameter 'zero' must be an integer from 0 to 3, not 4"},
    {"HugeTokenizeThreads",
     "[target.t]\nrule = \"tokenize\"\ninput = [\"src/a.txt\"]\nthreads = 4294967297\n", "4:11",
     "parameter 'threads' must be an integer from 0 to 2147483647, not 4294967297"},
    {"HugeImageSize",
     "[target.i]\nrule = \"llava_images\"\ninput = [\"src/a.txt\"]\nimage_folder = \"src\"\n"
     "image_size = 4294967632\n",
     "5:14", "parameter 'image_size' must be an integer from 1 to 2147483647, not 4294967632"},
    {"NegativeRetries", "[target.k]\nrule = \"download\"\nurl = \"file:src/a.txt\"\nretries = -1\n",
     "4:11", "parameter 'retries' must be an integer from 0 to 2147483647, not -1"},
    {"NegativeMaxTokens",
     "[target.t]\nrule = \"tokenize\"\ninput = [\"src/a.txt\"]\nmax_tokens = -1\n", "4:14",
     "parameter 'max_tokens' must be an integer of at least 0, not -1"},
    {"WarmupBelowMinusOne",
     "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\nlog_format = \"megatron\"\n"
     "excluded_warmup_steps = -2\n",
     "5:25", "parameter 'excluded_warmup_steps' must be an integer from -1 to 2147483647, not -2"},
    {"RoundsZero",
     "[target.t]\nrule = \"tokenize\"\ninput = [\"src/a.txt\"]\n\n"
     "[target.p]\nrule = \"pretrain\"\ndata = \"t\"\nrounds = 0\n",
     "8:10", "parameter 'rounds' must be an integer from 1 to 2147483647, not 0"},
    {"NegativeJobs", "[benchmake]\njobs = -4\n", "2:8",
     "[benchmake] jobs must be between 0 and 2147483647, not -4"},
    {"HugeWorkspaceGpus", "[benchmake]\ngpus = 4294967297\n", "2:8",
     "[benchmake] gpus must be between 0 and 2147483647, not 4294967297"},
    {"MissingRequired", "[target.a]\nrule = \"exec\"\n", "1:9",
     "lacks required parameter 'command'"},
    {"MissingRule", "[target.a]\ncommand = [\"x\"]\n", "1:9", "target 'a' has no rule"},
    {"MissingInputTarget",
     "[target.tokens]\nrule = \"exec\"\ncommand = [\"x\"]\n\n[target.b]\nrule = \"exec\"\ncommand "
     "= [\"x\"]\n"
     "inputs = [\"tokenz\"]\n",
     "8:11", "unknown target 'tokenz' in inputs (did you mean 'tokens'?)"},
    {"MissingSourceFile",
     "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\ninputs = [\"src/a.txt\", "
     "\"data/missing.txt\"]\n",
     "4:24", "source file 'data/missing.txt' not found"},
    // An input that holds the workspace would hash out/ and .benchmake/, which every build
    // changes; an empty name named the workspace's directory.
    {"EmptyInputName",
     "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\ninputs = [\"src/a.txt\", \"\"]\n", "4:24",
     "empty name in inputs: a target or a source path"},
    {"InputOfTheWorkspaceItself",
     "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\ninputs = [\"./\"]\n", "4:11",
     "source './' in inputs holds this workspace, whose out/ and .benchmake/ change with every "
     "build"},
    {"InputAboveTheWorkspace",
     "[target.t]\nrule = \"tokenize\"\ninput = [\"src/a.txt\"]\nvocab = \"src/..//..\"\n", "4:9",
     "source 'src/..//..' in vocab holds this workspace"},
    {"InputOfTheRoot", "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\ninputs = [\"/\"]\n", "4:11",
     "source '/' in inputs holds this workspace"},
    // An unquoted date is a TOML date-time, which no parameter or setting takes.
    {"DateForAString",
     "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\nlog = 2024-01-01T00:00:00Z\n", "4:7",
     "parameter 'log' holds a TOML date or time (2024-01-01T00:00:00Z); benchmake takes none: "
     "quote it for a string (\"2024-01-01T00:00:00Z\")"},
    {"TimeInAList", "[target.a]\nrule = \"exec\"\ncommand = [\"sleep\", 07:32:00]\n", "3:21",
     "parameter 'command' holds a TOML date or time (07:32:00)"},
    {"DateInASetting", "[benchmake.slurm]\ntime = 1979-05-27\n", "2:8",
     "[benchmake.slurm] time holds a TOML date or time (1979-05-27)"},
    {"DuplicateName",
     "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\n\n[target.a]\nrule = \"exec\"\n", "5:1",
     "duplicate target 'a'"},
    {"Cycle",
     "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\ninputs = [\"b\"]\n\n[target.b]\nrule = "
     "\"exec\"\n"
     "command = [\"x\"]\ninputs = [\"a\"]\n",
     "9:11", "dependency cycle: a -> b -> a"},
    {"BadTargetName", "[target.Train]\nrule = \"exec\"\ncommand = [\"x\"]\n", "1:9",
     "bad target name 'Train': names use only a-z 0-9 _ . -"},
    {"BadQuotedTargetName", "[target.\"a b\"]\nrule = \"exec\"\ncommand = [\"x\"]\n", "1:9",
     "bad target name 'a b'"},
    // Its characters are allowed; what it names is not a target's own directory.
    {"DotDotTargetName", "[target.\"..\"]\nrule = \"exec\"\ncommand = [\"x\"]\n", "1:9",
     "bad target name '..': its outputs would go to out/.., which is not a directory of its own"},
    {"UnknownSetting", "[benchmake]\njobz = 2\n", "2:1",
     "unknown setting 'jobz' in [benchmake] (did you mean 'jobs'?)"},
    // A typo of [target.a] declared no target at all, and the build did nothing, silently.
    {"UnknownTopLevelTable", "[targets.a]\nrule = \"exec\"\ncommand = [\"x\"]\n", "1:2",
     "unknown top-level table 'targets' (did you mean 'target'?) (a BENCHFILE holds the tables "
     "[benchmake] and [target.NAME] only)"},
    {"UnknownTopLevelTableAfterTargets",
     "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\n\n[report]\nformat = \"md\"\n", "5:2",
     "unknown top-level table 'report' (a BENCHFILE"},
    // A setting of [benchmake] written before any table.
    {"UnknownTopLevelKey", "jobs = 2\n\n[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\n", "1:1",
     "unknown top-level key 'jobs'"},
    // Where steps run (engine/placement.h).
    {"UnknownExecutor", "[benchmake]\nexecutor = \"pbs\"\n", "2:12",
     "[benchmake] executor must be \"local\" or \"slurm\", not \"pbs\""},
    {"SlurmIsNoLauncherToAskFor", "[benchmake]\nlauncher = \"slurm\"\n", "2:12",
     "launcher must be \"local\" or \"mpirun\" (Slurm steps start their ranks with srun)"},
    {"UnknownSlurmSetting", "[benchmake.slurm]\npartiton = \"gpu\"\n", "2:1",
     "[benchmake.slurm] unknown setting 'partiton' (did you mean 'partition'?)"},
    {"BadSlurmTime", "[benchmake.slurm]\ntime = \"2h\"\n", "2:1",
     "[benchmake.slurm] time must be a Slurm time limit (minutes, MM:SS, HH:MM:SS, "
     "D-HH[:MM[:SS]]), not '2h'"},
    {"BadSlurmSteps", "[benchmake.slurm]\nsteps = \"some\"\n", "2:1",
     "steps must be \"gpu\" (steps that need GPUs) or \"all\""},
    {"SrunArgsNotAList", "[benchmake.slurm]\nsrun_args = \"--qos=hi\"\n", "2:1",
     "srun_args must be a list of strings"},
    {"UnknownMpirunSetting", "[benchmake.mpirun]\nhosts = \"h\"\n", "2:1",
     "[benchmake.mpirun] unknown setting 'hosts'"},
    {"ExecutorOfARuleThatWorksInside",
     "[target.t]\nrule = \"tokenize\"\ninput = [\"src/a.txt\"]\nexecutor = \"slurm\"\n", "4:12",
     "rule 'tokenize' works inside benchmake, so its steps run where benchmake runs"},
    {"TargetExecutor", "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\nexecutor = \"pbs\"\n",
     "4:12", "executor must be \"local\" or \"slurm\", not 'pbs'"},
    {"TargetSlurmWorkspaceSetting",
     "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\nslurm = { steps = \"all\" }\n", "4:9",
     "slurm: unknown setting 'steps' (a workspace setting: [benchmake.slurm])"},
    {"RuleCheck", "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\noutputs = [\"../escape\"]\n",
     "4:12", "output '../escape' must be a relative path inside {out}"},
    {"RuleCheckAtTheElement",
     "[target.a]\nrule = \"exec\"\ncommand = [\"x\"]\noutputs = [\"ok\", \"../escape\"]\n", "4:18",
     "output '../escape' must be a relative path inside {out}"},
    {"TokenizerKind",
     "[target.t]\nrule = \"tokenize\"\ninput = [\"src/a.txt\"]\ntokenizer = \"llama\"\n", "4:13",
     "unknown tokenizer 'llama'"},
    {"TokenizerFileOfAnotherKind",
     "[target.t]\nrule = \"tokenize\"\ninput = [\"src/a.txt\"]\ntokenizer = \"gpt2\"\n"
     "vocab = \"data/x.model\"\n",
     "5:9",
     "tokenizer 'gpt2' reads a tiktoken rank file (.tiktoken), but data/x.model is a "
     "SentencePiece model"},
    // The model against the data (Rule::CheckInputs): images need a LLaVA model, and a LLaVA
    // model needs images; a finetune's model is its init's.
    {"TextModelOnLlavaData",
     "[target.d]\nrule = \"llava_data\"\ninput = [\"src/a.txt\"]\nvocab = \"data/x.model\"\n\n"
     "[target.p]\nrule = \"pretrain\"\ndata = \"d\"\nmodel = \"llama-small\"\n",
     "8:8",
     "data 'd' is a llava_data target (text with images), but model 'llama-small' is a text-only "
     "model; train a LLaVA model on it (model = llava-1.5-13b"},
    {"LlavaModelOnTextTokens",
     "[target.t]\nrule = \"tokenize\"\ninput = [\"src/a.txt\"]\nvocab = \"data/x.model\"\n"
     "tokenizer = \"sentencepiece\"\n\n"
     "[target.p]\nrule = \"pretrain\"\nmodel = \"llava-tiny\"\ndata = \"t\"\n"
     "checkpoint_every = 0\nmpe = 64\n",
     "10:8",
     "model 'llava-tiny' is a LLaVA model: its data must be a llava_data target (text with "
     "images), not the tokenize target 't'"},
    {"FinetuneOfATextModelOnLlavaData",
     "[target.d]\nrule = \"llava_data\"\ninput = [\"src/a.txt\"]\nvocab = \"data/x.model\"\n\n"
     "[target.t]\nrule = \"tokenize\"\ninput = [\"src/a.txt\"]\nvocab = \"data/x.model\"\n"
     "tokenizer = \"sentencepiece\"\n\n"
     "[target.p]\nrule = \"pretrain\"\ndata = \"t\"\nmodel = \"llama-small\"\n\n"
     "[target.f]\nrule = \"finetune\"\ninit = \"p\"\ndata = \"d\"\n",
     "20:8", "data 'd' is a llava_data target (text with images), but init 'p' is a text-only"},
    {"FinetuneOfALlavaModelOnTextTokens",
     "[target.d]\nrule = \"llava_data\"\ninput = [\"src/a.txt\"]\nvocab = \"data/x.model\"\n\n"
     "[target.t]\nrule = \"tokenize\"\ninput = [\"src/a.txt\"]\nvocab = \"data/x.model\"\n"
     "tokenizer = \"sentencepiece\"\n\n"
     "[target.p]\nrule = \"pretrain\"\ndata = \"d\"\nmodel = \"llava-tiny\"\n"
     "checkpoint_every = 0\nmpe = 64\n\n"
     "[target.f]\nrule = \"finetune\"\ninit = \"p\"\ndata = \"t\"\n",
     "22:8", "init 'p' is a LLaVA model: its data must be a llava_data target"},
    // Evaluate: a LLaVA checkpoint runs on MMMU (mmmu_data), on the cpu; a text one does not.
    {"TextCheckpointOnMmmuData",
     "[target.m]\nrule = \"mmmu_data\"\ninput = \"src/a.txt\"\nvocab = \"data/x.model\"\n\n"
     "[target.t]\nrule = \"tokenize\"\ninput = [\"src/a.txt\"]\nvocab = \"data/x.model\"\n"
     "tokenizer = \"sentencepiece\"\n\n"
     "[target.p]\nrule = \"pretrain\"\ndata = \"t\"\nmodel = \"llama-small\"\n\n"
     "[target.e]\nrule = \"evaluate\"\ncheckpoint = \"p\"\ndata = \"m\"\n",
     "19:14",
     "checkpoint 'p' is a text model; MMMU data (the mmmu_data target 'm') needs a LLaVA "
     "checkpoint"},
    {"LlavaCheckpointOnTextTokens",
     "[target.d]\nrule = \"llava_data\"\ninput = [\"src/a.txt\"]\nvocab = \"data/x.model\"\n\n"
     "[target.t]\nrule = \"tokenize\"\ninput = [\"src/a.txt\"]\nvocab = \"data/x.model\"\n"
     "tokenizer = \"sentencepiece\"\n\n"
     "[target.p]\nrule = \"pretrain\"\ndata = \"d\"\nmodel = \"llava-tiny\"\n"
     "checkpoint_every = 0\nmpe = 64\n\n"
     "[target.e]\nrule = \"evaluate\"\ncheckpoint = \"p\"\ndata = \"t\"\n",
     "22:8",
     "checkpoint 'p' is a LLaVA model: evaluate runs it on MMMU (an mmmu_data target), not on "
     "the tokenize target 't'"},
    {"EvaluateOnLlavaData",
     "[target.d]\nrule = \"llava_data\"\ninput = [\"src/a.txt\"]\nvocab = \"data/x.model\"\n\n"
     "[target.p]\nrule = \"pretrain\"\ndata = \"d\"\nmodel = \"llava-tiny\"\n"
     "checkpoint_every = 0\nmpe = 64\n\n"
     "[target.e]\nrule = \"evaluate\"\ncheckpoint = \"p\"\ndata = \"d\"\n",
     "16:8",
     "data 'd' is a llava_data target (training data): evaluate runs a LLaVA model on MMMU"},
    {"MmmuInFp16",
     "[target.d]\nrule = \"llava_data\"\ninput = [\"src/a.txt\"]\nvocab = \"data/x.model\"\n\n"
     "[target.m]\nrule = \"mmmu_data\"\ninput = \"src/a.txt\"\nvocab = \"data/x.model\"\n\n"
     "[target.p]\nrule = \"pretrain\"\ndata = \"d\"\nmodel = \"llava-tiny\"\n"
     "checkpoint_every = 0\nmpe = 64\n\n"
     "[target.e]\nrule = \"evaluate\"\ncheckpoint = \"p\"\ndata = \"m\"\ndevice = \"cuda\"\n"
     "precision = \"fp16\"\n",
     "23:13", "precision 'fp16': MMMU's greedy decoding of a LLaVA model runs in fp32"},
    {"LlavaModelsMpe",
     "[target.d]\nrule = \"llava_data\"\ninput = [\"src/a.txt\"]\nvocab = \"data/x.model\"\n\n"
     "[target.p]\nrule = \"pretrain\"\ndata = \"d\"\nmodel = \"llava-tiny\"\nmpe = 100000\n",
     "10:7", "mpe (100000) exceeds the model's max_seq"},
};

void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class BenchfileErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(BenchfileErrorTest, NamesFileLineColumnAndWhatIsWrong) {
  const ErrorCase& c = GetParam();
  testing::MemoryFilesystem fs;
  fs.Write("/ws/src/a.txt", "present");
  fs.Write("/ws/data/gpt2.tiktoken", "present");  // the tokenize rule's default vocab
  fs.Write("/ws/data/x.model", "present");
  fs.Write("/ws/BENCHFILE.toml", c.text);
  RuleRegistry rules;
  rules::RegisterBuiltinRules(rules);
  Result<TargetGraph> graph = LoadGraph(fs, rules, "/ws/BENCHFILE.toml");
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(graph.status().ExitCode(), 2);
  const std::string& m = graph.status().message();
  EXPECT_EQ(m.rfind(std::string("/ws/BENCHFILE.toml:") + c.location + ": ", 0), 0u) << m;
  EXPECT_NE(m.find(c.message), std::string::npos) << m;
}

INSTANTIATE_TEST_SUITE_P(AllErrors, BenchfileErrorTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// A parameter that is missing or mistyped is reported once: not also as "lacking", nor
// through the rule's checks of a value the BENCHFILE does not hold.
TEST(BenchfileTest, AWrongParameterIsReportedOnce) {
  const char* kTexts[] = {
      "[target.a]\nrule = \"exec\"\ncommand = [\"x\", 2]\n",
      "[target.a]\nrule = \"exec\"\ncommand = { x = \"true\" }\n",
      "[target.a]\nrule = \"exec\"\ncomand = [\"x\"]\n",
  };
  for (const char* text : kTexts) {
    testing::MemoryFilesystem fs;
    fs.Write("/ws/BENCHFILE.toml", text);
    RuleRegistry rules;
    rules::RegisterBuiltinRules(rules);
    Result<TargetGraph> graph = LoadGraph(fs, rules, "/ws/BENCHFILE.toml");
    ASSERT_FALSE(graph.ok()) << text;
    const std::string& m = graph.status().message();
    EXPECT_EQ(m.find("must not be empty"), std::string::npos) << m;
    if (std::string(text).find("comand") == std::string::npos) {
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;  // one error, not "lacks" as well
    }
  }
}

TEST(BenchfileTest, ValidFileLoadsInDependencyOrder) {
  testing::MemoryFilesystem fs;
  fs.Write("/ws/src/a.txt", "present");
  fs.Write("/ws/BENCHFILE.toml", R"(
[benchmake]
jobs = 3
cache_dir = "cache"

[target.z]
rule = "exec"
command = ["x"]
inputs = ["y", "src/a.txt"]

[target.y]
rule = "exec"
command = ["x"]
)");
  RuleRegistry rules;
  rules::RegisterBuiltinRules(rules);
  Result<TargetGraph> graph = LoadGraph(fs, rules, "/ws/BENCHFILE.toml");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  EXPECT_EQ(graph->settings.jobs, 3);
  EXPECT_EQ(graph->settings.cache_dir, "cache");
  ASSERT_EQ(graph->order.size(), 2u);
  EXPECT_EQ(graph->targets[static_cast<size_t>(graph->order[0])].name, "y");
  const Target* z = graph->Find("z");
  ASSERT_NE(z, nullptr);
  ASSERT_EQ(z->inputs.size(), 2u);
  EXPECT_TRUE(z->inputs[0].is_target);
  EXPECT_EQ(z->inputs[1].path, "/ws/src/a.txt");
  EXPECT_EQ(z->params["shell"], false) << "defaults are filled";
}

// The LLaVA chain loads: a LLaVA pretrain on a llava_data target, a finetune from it on another,
// and a finetune of a checkpoint file (its model unknown at load time) on either.
TEST(BenchfileTest, LlavaTrainingOnLlavaDataLoads) {
  testing::MemoryFilesystem fs;
  fs.Write("/ws/src/a.txt", "present");
  fs.Write("/ws/data/x.model", "present");
  fs.Write("/ws/data/m.safetensors", "present");
  fs.Write("/ws/BENCHFILE.toml", R"(
[target.d]
rule = "llava_data"
input = ["src/a.txt"]
vocab = "data/x.model"

[target.p]
rule = "pretrain"
data = "d"
model = "llava-tiny"
checkpoint_every = 0
mpe = 64

[target.f]
rule = "finetune"
init = "p"
data = "d"

[target.g]
rule = "finetune"
init = "data/m.safetensors"
data = "d"
)");
  RuleRegistry rules;
  rules::RegisterBuiltinRules(rules);
  Result<TargetGraph> graph = LoadGraph(fs, rules, "/ws/BENCHFILE.toml");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  EXPECT_EQ(graph->order.size(), 4u);
}

}  // namespace
}  // namespace bm::engine
