// TRL's num_tokens in the Trainer's dicts (rules/logparse/trainer_num_tokens.cc) on real logs
// pasted upstream (tests/data/logs/SOURCES.md), through the parser and BuildExternalMetrics,
// against values read off each log by hand; and counts that do not parse or go back.
#include <gtest/gtest.h>

#include "rules/logparse/log_parser.h"
#include "tests/rules/read_log.h"

namespace bm::rules {
namespace {

using logparse::ParsedLog;
using testing_logs::Read;
using testing_logs::ReadLog;

TEST(TrlTokens, ClosingDictsCountOverTrainRuntimeIsTheRunsRate) {
  // SFTTrainer on a CPU, gemma-3-270m LoRA, 40 examples x 3 epochs in 15 steps (train_samples_per
  // _second 0.182 x 661.0751 s = 120 samples; 0.023 steps/s allows 14.9-15.5 steps: 15). The one
  // loss dict (line 12, epoch 2.0: step 10 at 5 steps an epoch) counts 11072 tokens, the closing
  // dict (line 13) 16608, the steps after step 10 included: 5536 an epoch both times (11072 =
  // 2 x 5536, 16608 = 3 x 5536). The run's rate is 16608 tokens / 661.0751 s; before, the closing
  // dict's samples/s needed a sequence length (and counted the padding).
  Result<Read> r = ReadLog("trainer_trl_sft_cpu_closing_num_tokens.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10}));
  EXPECT_EQ(r->At(10)->tokens_seen, 11072.0);
  EXPECT_EQ(r->At(10)->tokens, 11072.0);  // the first record reaches back to step 1
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_FALSE(r->log.trainer_average->samples_per_s);
  EXPECT_DOUBLE_EQ(*r->log.trainer_average->tokens_per_s, 16608.0 / 661.0751);
  EXPECT_EQ(r->log.trainer_average->through_step, 15);
  EXPECT_EQ(r->log.trainer_average->line, 13);
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["tokens_per_s"].get<double>(), 16608.0 / 661.0751);
  EXPECT_FALSE(r->Note("set mpe"));
  EXPECT_EQ(r->m()["tokens"], 11072);  // the logged steps' tokens
}

TEST(TrlTokens, QuotedCountsGrowthSumsToTheLastCount) {
  // transformers 5 (values as f"{v:.4g}" strings), SFTTrainer, gemma-2-2b LoRA on one GPU: 13 loss
  // dicts at steps 10-130 (TRL's logging_steps 10; epochs '0.2286' .. '2.96' at 43.75 steps an
  // epoch), the closing dict (line 27: '0.445' steps/s x '296.9' s = 131.9-132.3 steps: 132, the
  // bar's 132/132) with num_tokens '2.386e+05'. The rate: 238600 tokens / 296.9 s. Each record's
  // tokens are the growth of the count (step 20: 36460 - 18220), and they sum to the last loss
  // dict's count, 235300, however each growth was rounded.
  Result<Read> r = ReadLog("trainer_trl_sft_4g_closing_num_tokens.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(),
            (std::vector<int64_t>{10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130}));
  EXPECT_EQ(*r->At(10)->tokens, 18220.0);
  EXPECT_EQ(*r->At(20)->tokens, 36460.0 - 18220.0);
  EXPECT_EQ(*r->At(130)->tokens, 235300.0 - 216800.0);
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_DOUBLE_EQ(*r->log.trainer_average->tokens_per_s, 238600.0 / 296.9);
  EXPECT_EQ(r->log.trainer_average->through_step, 132);
  EXPECT_EQ(r->m()["tokens"], 235300);
}

TEST(TrlTokens, LastLossDictsCountWhenTheClosingDictHasNone) {
  // SFTTrainer QLoRA on Dolly (400 examples, 3 epochs, eval each epoch; transformers 5 strings):
  // loss dicts at steps 10-150 (epochs 0.2-3, 50 steps an epoch), eval dicts after steps 50, 100
  // and 150 with eval_num_tokens (the training count again: not read), then the closing dict
  // (line 27) without num_tokens: the evaluation at the last step left the model in eval mode, so
  // TRL's log() added no training metrics. '0.197' steps/s x '759.8' s allows 149.3-150.1 steps:
  // 150, the last loss dict's step, whose count (line 24, '1.781e+05') is then the run's: 178100
  // tokens / 759.8 s.
  Result<Read> r = ReadLog("trainer_trl_sft_qlora_eval_num_tokens_last_dict.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps().back(), 150);
  EXPECT_EQ(r->Steps().size(), 15u);
  EXPECT_EQ(r->log.evals.size(), 3u);
  EXPECT_EQ(*r->At(60)->tokens, 71510.0 - 59360.0);  // lines 13 and 14: the eval dict between
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(r->log.trainer_average->through_step, 150);
  EXPECT_DOUBLE_EQ(*r->log.trainer_average->tokens_per_s, 178100.0 / 759.8);
  EXPECT_TRUE(r->log.trainer_average->what.find("line 24") != std::string::npos)
      << r->log.trainer_average->what;
}

TEST(TrlTokens, RecordsTimedByTheirBarsGetTheirTokenRate) {
  // TRL SFTTrainer, gpt-oss-20b on 8 GPUs (skypilot's README): bars 1/16 [01:18], 2/16 [01:23],
  // 4/16 [01:34], 8/16 [01:56], 12/16 [02:15] number and time the dicts of steps 1-12; num_tokens
  // 51486 at step 1 .. 641021 at step 12 (gathered over the 8 ranks). With step 1 left out, steps
  // 2-12 trained 641021 - 51486 tokens in 135 - 78 s; step 16 (the closing bar numbers nothing)
  // is not timed. Before, no token rate: the log gives no batch size or sequence length.
  Result<Read> r =
      ReadLog("trainer_trl_gptoss_bars_epoch.log", "trainer", {{"excluded_warmup_steps", 1}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r->At(4)->tokens, 214557.0 - 105023.0);
  EXPECT_EQ(r->m()["throughput"]["measured_steps"], 11);
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["tokens_per_s"].get<double>(),
                   (641021.0 - 51486.0) / (135 - 78));
}

TEST(TrlTokens, GrpoClosingCountOverTrainRuntime) {
  // GRPOTrainer (its count is the prompt and completion tokens of every generation, all ranks):
  // the closing dict (line 133) after the 43/43 bar says num_tokens 2079223.0 over train_runtime
  // 3462.7809 s; before, train_samples_per_second 0.404.
  Result<Read> r = ReadLog("trainer_trl_grpo_closing_steps_per_second_3dp.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(r->log.trainer_average->through_step, 43);
  EXPECT_DOUBLE_EQ(*r->log.trainer_average->tokens_per_s, 2079223.0 / 3462.7809);
  EXPECT_EQ(*r->At(20)->tokens, 930365.0 - 430669.0);
}

TEST(TrlTokens, ACountThatDoesNotParseOrGoesBackGivesNoGrowth) {
  // A mangled copy of trainer_trl_sft_4g_closing_num_tokens.log's first dicts: a count that is no
  // number is left out (the dict reader's policy for values), so neither its record nor the next
  // gets tokens; a count below the one before (a resumed SFTTrainer counts again from 0) gives
  // that record none, with a note.
  const char* text =
      "{'loss': '3.15', 'num_tokens': '1.822e+04', 'epoch': '0.2286'}\n"
      "{'loss': '1.084', 'num_tokens': 'n/a', 'epoch': '0.4571'}\n"
      "{'loss': '0.4976', 'num_tokens': '5.477e+04', 'epoch': '0.6857'}\n"
      "{'loss': '0.2939', 'num_tokens': '7.276e+04', 'epoch': '0.9143'}\n"
      "{'loss': '0.2401', 'num_tokens': '1.743e+04', 'epoch': '1.137'}\n"
      "{'loss': '0.2125', 'num_tokens': '3.55e+04', 'epoch': '1.366'}\n";
  Result<ParsedLog> log = logparse::ParseTrainerLog(text, "mangled.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_EQ(log->iterations.size(), 6u);
  const auto& its = log->iterations;
  EXPECT_EQ(its[0].tokens, 18220.0);
  EXPECT_FALSE(its[1].tokens);
  EXPECT_FALSE(its[2].tokens);
  EXPECT_EQ(its[3].tokens, 72760.0 - 54770.0);
  EXPECT_FALSE(its[4].tokens);
  EXPECT_EQ(its[5].tokens, 35500.0 - 17430.0);
  bool noted = false;
  for (const std::string& n : log->notes)
    noted = noted || n.find("mangled.log:5: num_tokens goes back") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace bm::rules
