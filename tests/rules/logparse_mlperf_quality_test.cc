// What an MLPerf log's evaluations measure: each benchmark's quality metric, its direction and the
// target a run trains to, in metrics.json's eval block (eval.quality), on real result files of
// mlcommons/training_results and the references (tests/data/logs/SOURCES.md). The expected metric
// names, directions and targets are MLPerf's own: the training rules' tables
// (mlcommons/training_policies training_rules.adoc: "0.80275 AUC", "34.0% mAP", "0.908 Mean DICE
// score", "FID<=90 and CLIP>=0.15", "0.925 Eval loss", "3.6 log perplexity", ...) and the
// compliance checker's eval_accuracy checks (mlperf_logging/compliance_checker/training_*/
// closed_*.yaml: `v['value'] >= 0.340`, `<= 0.925`, GRPO's `> 0.69`); the values are each log's
// eval_accuracy events as a separate script read them (json.loads of every :::MLLOG line), not
// benchmake.
#include <gtest/gtest.h>

#include <string>

#include "rules/logparse/log_parser.h"
#include "rules/logparse/mlperf_quality.h"
#include "tests/rules/read_log.h"

namespace bm::rules {
namespace {

using logparse::EvalMetric;
using logparse::MlperfQuality;
using nlohmann::json;
using testing_logs::Read;
using testing_logs::ReadLog;

Read MustRead(const std::string& file) {
  Result<Read> r = ReadLog(file, "mllog");
  EXPECT_TRUE(r.ok()) << file << ": " << r.status().message();
  return r.ok() ? std::move(*r) : Read{};
}

TEST(MlperfQuality, RetinanetIsMapNotALoss) {
  // Dell's v5.0 RetinaNet: four evaluations 0.2373, 0.2971, 0.3326, 0.34399 (line 138); the
  // rules' "34.0% mAP", checked as `v['value'] >= 0.340`.
  Read r = MustRead("mllog_dell_retinanet_train_samples_iterations.log");
  const json& e = r.m()["eval"];
  EXPECT_TRUE(e["val_loss"].is_null());
  EXPECT_TRUE(e["accuracy"].is_null());
  EXPECT_EQ(e["task"], "MLPerf eval_accuracy");
  const json& q = e["quality"];
  EXPECT_EQ(q["metric"], "mAP");
  EXPECT_DOUBLE_EQ(q["value"].get<double>(), 0.3439874455060702);
  EXPECT_EQ(q["higher_is_better"], true);
  EXPECT_DOUBLE_EQ(q["target"].get<double>(), 0.340);
  EXPECT_EQ(q["reached"], true);
}

TEST(MlperfQuality, Unet3dIsMeanDice) {
  // GigaComputing's U-Net3D: 23 evaluations, the last 0.90817 (line 360); "0.908 Mean DICE score".
  Read r = MustRead("mllog_gigacomputing_unet3d_blocks_no_epochs_crlf.log");
  const json& q = r.m()["eval"]["quality"];
  EXPECT_TRUE(r.m()["eval"]["val_loss"].is_null());
  EXPECT_EQ(q["metric"], "mean Dice");
  EXPECT_DOUBLE_EQ(q["value"].get<double>(), 0.9081700444221497);
  EXPECT_DOUBLE_EQ(q["target"].get<double>(), 0.908);
  EXPECT_EQ(q["reached"], true);
}

TEST(MlperfQuality, DlrmIsAucAndTheLoggedTargetAgrees) {
  // Dell's DLRM-DCNv2 logs no target: the rules' 0.80275 AUC; the last evaluation 0.80297.
  Read dell = MustRead("mllog_dell_dlrm_hugectr_epoch_fraction_evals.log");
  const json& q = dell.m()["eval"]["quality"];
  EXPECT_TRUE(dell.m()["eval"]["val_loss"].is_null());
  EXPECT_EQ(q["metric"], "AUC");
  EXPECT_DOUBLE_EQ(q["value"].get<double>(), 0.8029667139053345);
  EXPECT_DOUBLE_EQ(q["target"].get<double>(), 0.80275);
  EXPECT_EQ(q["reached"], true);
  // NVIDIA's logs target_accuracy 0.80275 (line 28): the same, so no note.
  Read nv = MustRead("mllog_nv_dlrm_hugectr_epoch_fraction_step.log");
  EXPECT_DOUBLE_EQ(nv.m()["eval"]["quality"]["target"].get<double>(), 0.80275);
  EXPECT_DOUBLE_EQ(nv.m()["eval"]["quality"]["value"].get<double>(), 0.8027938604354858);
  EXPECT_FALSE(nv.Note("target_accuracy"));
}

TEST(MlperfQuality, StableDiffusionKeepsFidLowerIsBetter) {
  // NVIDIA's v4.1 Stable Diffusion: FID 96.79 (line 136), then 88.51 (line 140) <= 90; the CLIP
  // evaluations are left out of the series (a note).
  Read r = MustRead("mllog_nv_sd_v41_run_stop_before_offline_evals.log");
  const json& q = r.m()["eval"]["quality"];
  EXPECT_TRUE(r.m()["eval"]["val_loss"].is_null());
  EXPECT_EQ(q["metric"], "FID");
  EXPECT_DOUBLE_EQ(q["value"].get<double>(), 88.51338542754172);
  EXPECT_EQ(q["higher_is_better"], false);
  EXPECT_DOUBLE_EQ(q["target"].get<double>(), 90.0);
  EXPECT_EQ(q["reached"], true);
  // Dell's aborted run: FID 646.08 at every evaluation, never <= 90.
  Read aborted = MustRead("mllog_dell_sd_run_stop_aborted.log");
  EXPECT_DOUBLE_EQ(aborted.m()["eval"]["quality"]["value"].get<double>(), 646.0821975894278);
  EXPECT_EQ(aborted.m()["eval"]["quality"]["reached"], false);
}

TEST(MlperfQuality, AnEvaluationPastTheStepRunStopNamesIsNotTheRuns) {
  // Google's v4.1 MaxDiffusion run (TPU v5p-16): checkpoints 6000, 8000, 10000 evaluated offline
  // after training, FID 107.39 (line 48), 79.66 (line 52), 92.19 (line 56); the closing summary
  // repeats step 8000's (lines 57-58) and run_stop (line 59) names step_num 8000, where FID first
  // met 90. The run's last evaluation is step 8000's, reached; step 10000's is past the run.
  Read r = MustRead("mllog_google_maxdiffusion_sd_offline_evals_past_run_stop.log");
  ASSERT_EQ(r.log.evals.size(), 2u);
  EXPECT_EQ(r.log.evals[0].step, 6000);
  EXPECT_DOUBLE_EQ(r.log.evals[0].value, 107.3924738956324);
  EXPECT_EQ(r.log.evals[1].step, 8000);
  EXPECT_DOUBLE_EQ(r.log.evals[1].value, 79.66178107713978);
  const json& q = r.m()["eval"]["quality"];
  EXPECT_DOUBLE_EQ(q["value"].get<double>(), 79.66178107713978);
  EXPECT_EQ(q["reached"], true);
  EXPECT_TRUE(r.Note(
      "log:56: 1 eval_accuracy event(s) at a step past the step 8000 that run_stop names (line "
      "59: the run stopped there; checkpoints evaluated after training) left out"))
      << r.ext.notes.size();
}

TEST(MlperfQuality, MaskRcnnIsBoxAndMaskMapOfOneEvaluation) {
  // NVIDIA's v3.0 Mask R-CNN logs each evaluation as {"BBOX": b, "SEGM": s}; the rules' "0.377 Box
  // min AP and 0.339 Mask min AP", checked together (`v['value']['BBOX'] >= 0.377 and
  // v['value']['SEGM'] >= 0.339`). 17 evaluations; line 526 has BBOX 0.37655 (short of 0.377),
  // line 551 BBOX 0.37815 and SEGM 0.34541: the first to meet both. run_start (line 113) to
  // run_stop (line 553): 1684009376527 - 1684009130378 ms.
  Read r = MustRead("mllog_nv_maskrcnn_bbox_segm_object.log");
  ASSERT_EQ(r.log.evals.size(), 17u);
  EXPECT_DOUBLE_EQ(r.log.evals.back().value, 0.37815377313295656);
  EXPECT_EQ(r.log.evals.back().line, 551);
  const json& e = r.m()["eval"];
  EXPECT_TRUE(e["val_loss"].is_null());
  EXPECT_EQ(e["quality"]["metric"], "box mAP");
  EXPECT_DOUBLE_EQ(e["quality"]["target"].get<double>(), 0.377);
  EXPECT_EQ(e["quality"]["reached"], true);
  EXPECT_TRUE(
      r.Note("MLPerf's target for maskrcnn asks BBOX >= 0.377 and SEGM >= 0.339 of one "
             "evaluation: eval.quality.reached checks them together (met)"));
  EXPECT_NEAR(r.m()["mlperf"]["time_to_train_s"].get<double>(), 246.149, 1e-9);
  EXPECT_EQ(r.m()["mlperf"]["evaluations"], 17);
}

TEST(MlperfQuality, ResnetIsTopOneAccuracy) {
  // NVIDIA's ResNet: 0.75936 >= 0.759 (success); the aborted run's best of nine is 0.75882.
  Read ok = MustRead("mllog_nv_resnet_mxnet_epoch_throughput.log");
  EXPECT_DOUBLE_EQ(ok.m()["eval"]["accuracy"].get<double>(), 0.75936);
  const json& q = ok.m()["eval"]["quality"];
  EXPECT_EQ(q["metric"], "top-1 accuracy");
  EXPECT_DOUBLE_EQ(q["value"].get<double>(), 0.75936);
  EXPECT_DOUBLE_EQ(q["target"].get<double>(), 0.759);
  EXPECT_EQ(q["reached"], true);
  Read aborted = MustRead("mllog_nv_resnet_run_stop_aborted.log");
  EXPECT_DOUBLE_EQ(aborted.m()["eval"]["accuracy"].get<double>(), 0.75882);
  EXPECT_EQ(aborted.m()["eval"]["quality"]["reached"], false);
}

TEST(MlperfQuality, LanguageModelsAreLossesBelowTheirTargets) {
  // Llama 2 70B LoRA: "0.925 Eval loss"; Primus logs target_accuracy 0.925 itself (line 8).
  Read lora = MustRead("mllog_amd_primus_sft_llama2_70b_lora_crlf.log");
  const json& e = lora.m()["eval"];
  EXPECT_DOUBLE_EQ(e["val_loss"].get<double>(), 0.9249749779701233);
  EXPECT_TRUE(e["accuracy"].is_null());
  EXPECT_EQ(e["quality"]["metric"], "eval loss");
  EXPECT_EQ(e["quality"]["higher_is_better"], false);
  EXPECT_DOUBLE_EQ(e["quality"]["target"].get<double>(), 0.925);
  EXPECT_EQ(e["quality"]["reached"], true);
  // GPT-3 (MaxText): "2.69 log perplexity", the last of 24 evaluations 2.68945.
  Read gpt3 = MustRead("mllog_google_maxtext_gpt3_eval_positions.log");
  EXPECT_EQ(gpt3.m()["eval"]["quality"]["metric"], "log perplexity");
  EXPECT_DOUBLE_EQ(gpt3.m()["eval"]["quality"]["target"].get<double>(), 2.69);
  EXPECT_EQ(gpt3.m()["eval"]["quality"]["reached"], true);
  // Llama 3.1 405B, aborted: 5.982 then 5.601, above 5.6 both.
  Read l405 = MustRead("mllog_llama31_405b_eval_only.log");
  EXPECT_DOUBLE_EQ(l405.m()["eval"]["val_loss"].get<double>(), 5.601);
  EXPECT_DOUBLE_EQ(l405.m()["eval"]["quality"]["target"].get<double>(), 5.6);
  EXPECT_EQ(l405.m()["eval"]["quality"]["reached"], false);
}

TEST(MlperfQuality, GrpoPassesItsTargetStrictly) {
  // The GRPO reference logs target_accuracy 0.69 (line 44) and one evaluation, 0.70703 (line 64);
  // its checker asks `v['value'] > s['target_accuracy']`.
  Read r = MustRead("mllog_grpo_train_step_time.log");
  const json& e = r.m()["eval"];
  EXPECT_DOUBLE_EQ(e["accuracy"].get<double>(), 0.70703125);
  EXPECT_TRUE(e["val_loss"].is_null());
  EXPECT_DOUBLE_EQ(e["quality"]["target"].get<double>(), 0.69);
  EXPECT_EQ(e["quality"]["reached"], true);
  std::optional<EvalMetric> m = MlperfQuality("qwen35_397b_grpo", "");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(logparse::MeetsTarget(*m, 0.69), false);  // at the target: not passed
  EXPECT_EQ(logparse::MeetsTarget(*m, 0.6901), true);
  // The others meet it: RetinaNet at exactly 0.34 has reached it.
  EXPECT_EQ(logparse::MeetsTarget(*MlperfQuality("retinanet", ""), 0.34), true);
  EXPECT_EQ(logparse::MeetsTarget(*MlperfQuality("flux1", ""), 0.586), true);
  EXPECT_EQ(logparse::MeetsTarget(*MlperfQuality("flux1", ""), 0.5861), false);
}

TEST(MlperfQuality, BenchmarkNamesAsLogged) {
  // Primus logs "gpt-oss-20b" where the rules name gpt_oss_20b.
  std::optional<EvalMetric> m = MlperfQuality("gpt-oss-20b", "");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->name, "log perplexity");
  EXPECT_DOUBLE_EQ(*m->target, 3.34);
  EXPECT_FALSE(MlperfQuality("maskrcnn", "").has_value());  // its eval_accuracy is no number
  EXPECT_FALSE(MlperfQuality("stable_diffusion", "").has_value());  // the metric decides
  EXPECT_EQ(MlperfQuality("stable_diffusion", "CLIP")->higher_is_better, true);
}

// A log written by hand: `benchmark`, a logged target_accuracy unless `target` is "", four
// training steps of 8 samples, then each of `evals` (an eval_accuracy's value as JSON and its
// metadata's members), one event a millisecond.
using Evals = std::vector<std::pair<std::string, std::string>>;
std::string HandLog(const std::string& benchmark, const std::string& target,
                    const Evals& evals = {{"0.61", "\"samples_count\": 16"},
                                          {"0.58", "\"samples_count\": 32"}}) {
  std::string t;
  int64_t ms = 1000;
  auto line = [&](const std::string& key, const std::string& value, const std::string& meta) {
    t += ":::MLLOG {\"namespace\": \"\", \"time_ms\": " + std::to_string(ms++) +
         ", \"event_type\": \"POINT_IN_TIME\", \"key\": \"" + key + "\", \"value\": " + value +
         ", \"metadata\": {" + meta + "}}\n";
  };
  line("submission_benchmark", "\"" + benchmark + "\"", "");
  if (!target.empty()) line("target_accuracy", target, "");
  line("global_batch_size", "8", "");
  line("run_start", "null", "");
  for (int step = 1; step <= 4; ++step)
    line("train_loss", "2.5", "\"samples_count\": " + std::to_string(step * 8));
  for (const auto& [value, meta] : evals) line("eval_accuracy", value, meta);
  line("run_stop", "null", "\"status\": \"success\"");
  return t;
}

Read ParseHand(const std::string& text) {
  Read r;
  Result<logparse::ParsedLog> log = logparse::ParseMllog(text, "hand.log");
  EXPECT_TRUE(log.ok()) << log.status().message();
  if (!log.ok()) return r;
  r.log = *log;
  json params = testing_logs::Params({{"log_format", "mllog"}});
  Result<ExternalMetrics> ext =
      BuildExternalMetrics(*logparse::FindLogParser("mllog"), r.log, "hand.log", params, {});
  EXPECT_TRUE(ext.ok()) << ext.status().message();
  if (ext.ok()) r.ext = *ext;
  return r;
}

TEST(MlperfQuality, UnknownBenchmarkKeepsItsLoggedTargetWithoutADirection) {
  Read r = ParseHand(HandLog("next_year_benchmark", "0.6"));
  const json& e = r.m()["eval"];
  EXPECT_DOUBLE_EQ(e["val_loss"].get<double>(), 0.58);  // as before: a loss, for want of a name
  EXPECT_TRUE(e["quality"]["metric"].is_null());
  EXPECT_TRUE(e["quality"]["higher_is_better"].is_null());
  EXPECT_DOUBLE_EQ(e["quality"]["target"].get<double>(), 0.6);
  EXPECT_TRUE(e["quality"]["reached"].is_null());  // which side of 0.6 is better is not known
  // Without a target either: no quality block.
  EXPECT_TRUE(ParseHand(HandLog("next_year_benchmark", "")).m()["eval"]["quality"].is_null());
}

TEST(MlperfQuality, LoggedTargetWinsOverTheRulesWithANote) {
  // A RetinaNet run whose code logs target 0.345: the run's own target, and a note naming both.
  Read r = ParseHand(HandLog("retinanet", "0.345"));
  const json& q = r.m()["eval"]["quality"];
  EXPECT_EQ(q["metric"], "mAP");
  EXPECT_DOUBLE_EQ(q["target"].get<double>(), 0.345);
  EXPECT_DOUBLE_EQ(q["value"].get<double>(), 0.58);
  EXPECT_EQ(q["reached"], true);
  EXPECT_TRUE(r.Note(
      "hand.log:2: target_accuracy 0.345 is the run's quality target, not MLPerf's rules' 0.34 "
      "for retinanet"));
}

TEST(MlperfQuality, BothMetricsAtOneEvaluationOrNotReached) {
  // Mask R-CNN: box mAP met at one evaluation, mask mAP at the other; never both.
  Read split = ParseHand(HandLog("maskrcnn", "",
                                 {{"{\"BBOX\": 0.38, \"SEGM\": 0.33}", "\"epoch_num\": 1"},
                                  {"{\"BBOX\": 0.37, \"SEGM\": 0.35}", "\"epoch_num\": 2"}}));
  EXPECT_EQ(split.m()["eval"]["quality"]["reached"], false);
  EXPECT_DOUBLE_EQ(split.m()["eval"]["quality"]["value"].get<double>(), 0.37);  // BBOX's series
  Read both = ParseHand(HandLog("maskrcnn", "", {{"{\"BBOX\": 0.38, \"SEGM\": 0.34}", ""}}));
  EXPECT_EQ(both.m()["eval"]["quality"]["reached"], true);
  // Stable Diffusion: FID 85 (<= 90) at 16 samples with CLIP 0.14 (< 0.15); CLIP 0.16 at 32 with
  // FID 95: no evaluation meets both, though each series alone would.
  Read sd = ParseHand(HandLog("stable_diffusion", "",
                              {{"85", "\"metric\": \"FID\", \"samples_count\": 16"},
                               {"0.14", "\"metric\": \"CLIP\", \"samples_count\": 16"},
                               {"95", "\"metric\": \"FID\", \"samples_count\": 32"},
                               {"0.16", "\"metric\": \"CLIP\", \"samples_count\": 32"}}));
  EXPECT_EQ(sd.m()["eval"]["quality"]["metric"], "FID");
  EXPECT_EQ(sd.m()["eval"]["quality"]["reached"], false);
  // A value that is neither a number nor that object: left out, with a note.
  Read odd = ParseHand(HandLog("retinanet", "", {{"\"0.35\"", ""}, {"0.36", ""}}));
  ASSERT_EQ(odd.log.evals.size(), 1u);
  EXPECT_TRUE(odd.Note("1 eval_accuracy event(s) whose value is no number"));
}

TEST(MlperfQuality, ARunThatCrashedBeforeRunStopSaysSo) {
  // HPE's v5.0 Stable Diffusion result_9: 60 training blocks, then every rank's Hydra error in the
  // first evaluation; no eval_accuracy, no run_stop. Nothing to report, and why.
  Result<Read> r = ReadLog("mllog_hpe_sd_crashed_before_run_stop.log", "mllog");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nothing to report: no loss and no timed step in its 60 "
                                      "records"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("; the MLPerf run has no run_stop: it did not finish"),
            std::string::npos)
      << r.status().message();
}

TEST(MlperfQuality, OtherFormatsHaveNoQualityBlock) {
  // A Megatron log's validation loss: a loss, no metric named.
  Result<Read> r = ReadLog("megatron_issue1152_fp8_validation.log", "megatron");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->m()["eval"].is_null());
  EXPECT_TRUE(r->m()["eval"]["quality"].is_null());
  EXPECT_FALSE(r->m()["eval"]["val_loss"].is_null());
}

}  // namespace
}  // namespace bm::rules
