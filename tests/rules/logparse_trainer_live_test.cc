// Real transformers Trainer logs (tests/data/logs/trainer_live/, written by
// bench/trainer_log_matrix.py on the GPU machine, runs 143-146: transformers 5.17, torch 2.11) read
// against the Trainer's own record of what it logged, trainer.state.log_history, saved beside each
// log: the steps and values here come from the Trainer, not from the parser or a hand count. Each
// case ran twice, with stdout unbuffered (STEM.log: the dicts between tqdm's drawings, as a
// terminal or `python -u` shows them) and as a plain `python` under an exec target
// (STEM.buffered.log: stdout to a file is block-buffered, so the dicts come in bulk). Every dict
// the log prints must be read at the step the Trainer logged it, and none be said to be counted.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rules/logparse/log_parser.h"
#include "tests/support/test_data.h"

namespace bm::logparse {
namespace {

using nlohmann::json;

// The Trainer rounds what it prints to four significant digits (f"{v:.4g}" from 2025).
bool AsPrinted(double read, double logged) {
  return std::abs(read - logged) <= 5e-4 * std::abs(logged) + 1e-12;
}

struct Expected {
  std::vector<json> losses, evals;  // the log_history entries the log prints
  std::optional<double> runtime;
  json closing;  // the closing entry (train_runtime, train_samples_per_second, its step)
  int64_t resumed = 0;
};

// The entries the log shows: those after a resume's checkpoint (log_history starts with the run
// before it), up to the closing train_runtime entry (after train() the training bar is closed,
// and ProgressCallback prints nothing more: trainer.evaluate()'s dict is not in the log).
Expected FromHistory(const json& record) {
  const int64_t resumed =
      record["resumed_from"].is_number() ? record["resumed_from"].get<int64_t>() : 0;
  Expected e;
  e.resumed = resumed;
  for (const json& entry : record["log_history"]) {
    if (entry["step"].get<int64_t>() <= resumed) continue;
    if (entry.contains("train_runtime") && !entry.contains("loss")) {  // the closing one
      e.runtime = entry["train_runtime"].get<double>();
      e.closing = entry;
      break;
    }
    if (entry.contains("loss")) e.losses.push_back(entry);
    if (entry.contains("eval_loss")) e.evals.push_back(entry);
  }
  return e;
}

class TrainerLiveTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TrainerLiveTest, ReadsWhatTheTrainerLogged) {
  const std::string stem = GetParam();
  const std::string name = "trainer_live/" + stem + ".log";
  const std::string text = testing::ReadTestData("logs/" + name);
  const json record =
      json::parse(testing::ReadTestData("logs/trainer_live/" + stem + ".history.json"));
  const Expected want = FromHistory(record);
  ASSERT_FALSE(want.losses.empty());

  Result<ParsedLog> autod = FindLogParser("auto")->parse(text, name);
  ASSERT_TRUE(autod.ok()) << autod.status().message();
  EXPECT_EQ(autod->format, "trainer");
  Result<ParsedLog> r = FindLogParser("trainer")->parse(text, name);
  ASSERT_TRUE(r.ok()) << r.status().message();

  // One record per loss dict, in order, with the dict's printed values.
  ASSERT_EQ(r->iterations.size(), want.losses.size());
  bool counted_note = false;
  for (const std::string& n : r->notes)
    counted_note = counted_note || n.find("numbered as if it were 1") != std::string::npos;
  EXPECT_FALSE(counted_note) << "a note that the steps are counted guesses";
  for (size_t i = 0; i < want.losses.size(); ++i) {
    const Iteration& it = r->iterations[i];
    const json& w = want.losses[i];
    SCOPED_TRACE("dict " + std::to_string(i + 1) + ", the Trainer's step " +
                 std::to_string(w["step"].get<int64_t>()));
    EXPECT_EQ(it.step, w["step"].get<int64_t>());
    ASSERT_TRUE(it.loss);
    EXPECT_TRUE(AsPrinted(*it.loss, w["loss"].get<double>())) << *it.loss;
    ASSERT_TRUE(it.lr);
    EXPECT_TRUE(AsPrinted(*it.lr, w["learning_rate"].get<double>())) << *it.lr;
    ASSERT_TRUE(it.grad_norm);
    EXPECT_TRUE(AsPrinted(*it.grad_norm, w["grad_norm"].get<double>())) << *it.grad_norm;
  }
  ASSERT_EQ(r->evals.size(), want.evals.size());
  for (size_t i = 0; i < want.evals.size(); ++i) {
    EXPECT_EQ(r->evals[i].step, want.evals[i]["step"].get<int64_t>());
    EXPECT_TRUE(AsPrinted(r->evals[i].value, want.evals[i]["eval_loss"].get<double>()));
  }
  ASSERT_TRUE(want.runtime);
  ASSERT_TRUE(r->wall_s);
  EXPECT_TRUE(AsPrinted(*r->wall_s, *want.runtime)) << *r->wall_s;

  // The run's average: the last dict's train_tokens_per_second (include_num_input_tokens_seen),
  // else the closing train_samples_per_second, which speed_metrics takes over every step to
  // max_steps (num_train_samples), so after a resume the steps run since are a share of it.
  ASSERT_TRUE(r->trainer_average);
  if (r->trainer_average->tokens_per_s) {
    ASSERT_TRUE(want.losses.back().contains("train_tokens_per_second"));
    EXPECT_TRUE(AsPrinted(*r->trainer_average->tokens_per_s,
                          want.losses.back()["train_tokens_per_second"].get<double>()));
  } else {  // a resume scaled to the steps run, said (log_level info) or not (resumed*)
    ASSERT_TRUE(r->trainer_average->samples_per_s);
    const double all = want.closing["step"].get<double>();
    const double rate = want.closing["train_samples_per_second"].get<double>() *
                        (all - static_cast<double>(want.resumed)) / all;
    EXPECT_TRUE(AsPrinted(*r->trainer_average->samples_per_s, rate))
        << *r->trainer_average->samples_per_s << " against " << rate;
  }
}

std::vector<std::string> Stems() {
  std::vector<std::string> stems;
  for (const char* c :
       {"steps5", "first_step_gas4_eval", "epoch_strategy", "no_tqdm_steps3", "tokens_seen",
        "ratio_logging", "epochs_gas2", "info_level", "resumed", "ddp2", "every_step",
        "long_steps10", "slow_steps4", "evaluate_after", "tee_prefix", "eval_unaligned",
        "save_and_log", "tee_ddp2", "resumed_info"}) {
    stems.push_back(c);
    stems.push_back(std::string(c) + ".buffered");
  }
  return stems;
}

INSTANTIATE_TEST_SUITE_P(Matrix, TrainerLiveTest, ::testing::ValuesIn(Stems()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (c == '.') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace bm::logparse
