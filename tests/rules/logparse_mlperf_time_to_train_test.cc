// MLPerf's epoch-timed benchmarks (ResNet, SSD/RetinaNet, U-Net3D, BERT, DLRM, GNN/R-GAT), whose
// logs place no training step, read by MLPerf's own measure: the time to train (run_start to
// run_stop of a run whose status is "success"), the epochs they time and their evaluations. Real
// result files of mlcommons/training_results (tests/data/logs/SOURCES.md), through the parser and
// BuildExternalMetrics; the expected values were read off each log's raw events by a separate
// script (time_ms differences, the epochs' durations and their median, the last eval_accuracy),
// not by benchmake.
#include <gtest/gtest.h>

#include <string>

#include "rules/logparse/log_parser.h"
#include "tests/rules/read_log.h"

namespace bm::rules {
namespace {

using logparse::MlperfRun;
using logparse::ParsedLog;
using logparse::ParseMllog;
using nlohmann::json;
using testing_logs::Read;
using testing_logs::ReadLog;

// What every epoch-timed reading shares: no step, no token rate, and the note that says why.
void ExpectReadByTimeToTrain(const Read& r) {
  EXPECT_TRUE(r.log.iterations.empty());
  ASSERT_TRUE(r.log.mlperf.has_value());
  EXPECT_TRUE(r.log.mlperf->by_time_to_train);
  EXPECT_TRUE(r.Note("the run is read by MLPerf's own measures instead"));
  const json& m = r.m();
  EXPECT_TRUE(m["throughput"]["tokens_per_device_per_s"].is_null());
  EXPECT_TRUE(m["loss"].is_null());
  EXPECT_TRUE(m["config"]["steps"].is_null());
  EXPECT_EQ(m["mlperf"]["read_by"], "time to train");
  EXPECT_EQ(m["provenance"]["trainer"], "mllog");
  // An MLPerf log names no device count or layout (submission_platform is a system's name): none
  // is claimed, where a default TP1PP1DP1 would read as one device.
  EXPECT_TRUE(m["config"]["devices"].is_null());
  EXPECT_TRUE(m["config"]["layout"].is_null());
  EXPECT_TRUE(m["config"]["dp"].is_null());
  EXPECT_TRUE(m["config"]["tp"].is_null());
  EXPECT_TRUE(m["config"]["pp"].is_null());
  // No advice that would not help: parameters or a peak give no MFU without a token rate.
  EXPECT_TRUE(r.Note("MFU: none for a run read by its time to train (no token rate)"));
  EXPECT_FALSE(r.Note("set model (a preset) or parameters"));
  EXPECT_FALSE(r.Note("set precision or peak_tflops"));
}

TEST(MlperfTimeToTrain, NvidiaResnetEpochs) {
  // v4.0 NVIDIA eos_ngc24.04_mxnet resnet result_0: run_start line 194 (1714042844981), run_stop
  // line 347 (1714043643353, success); 35 epochs (epoch_start/epoch_stop 1-35, lines 198-341), the
  // first 32.828 s, the others 22.29-22.43 s, median 22.368 s (epoch 13 and 28... sorted 18th);
  // 9 evaluations at epoch_num 3, 7, ..., 35, the last 0.75936 (line 345).
  Result<Read> r = ReadLog("mllog_nv_resnet_mxnet_epoch_throughput.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectReadByTimeToTrain(*r);
  const MlperfRun& run = *r->log.mlperf;
  EXPECT_EQ(run.benchmark, "resnet");
  EXPECT_EQ(run.submitter, "NVIDIA");
  EXPECT_EQ(run.division, "closed");
  EXPECT_EQ(run.platform, "1xNVIDIA DGX H100");
  EXPECT_EQ(run.status, "success");
  EXPECT_NEAR(*run.run_s, 798.372, 1e-9);
  EXPECT_NEAR(*run.time_to_train_s, 798.372, 1e-9);
  EXPECT_EQ(*run.epochs, 35);
  EXPECT_NEAR(*run.epoch_s_median, 22.368, 1e-9);
  EXPECT_EQ(*run.train_samples, 1281167);
  EXPECT_EQ(*run.eval_samples, 50000);
  ASSERT_EQ(r->log.evals.size(), 9u);
  EXPECT_DOUBLE_EQ(r->log.evals.back().value, 0.75936);
  EXPECT_EQ(r->log.evals.back().line, 345);
  EXPECT_EQ(*run.eval_epoch_num, 35);
  const json& m = r->m();
  EXPECT_NEAR(m["mlperf"]["time_to_train_s"].get<double>(), 798.372, 1e-9);
  EXPECT_EQ(m["mlperf"]["evaluations"], 9);
  EXPECT_EQ(m["mlperf"]["epochs"], 35);
  // ResNet's quality is top-1 accuracy: the eval block's accuracy, not a loss.
  EXPECT_DOUBLE_EQ(m["eval"]["accuracy"].get<double>(), 0.75936);
  EXPECT_TRUE(m["eval"]["val_loss"].is_null());
  EXPECT_NEAR(m["wall_s"].get<double>(), 798.372, 1e-9);
  EXPECT_EQ(m["config"]["gbs"], 3200);
  // Why no step, as the error said before: the evaluations' epoch_num counts epochs.
  EXPECT_TRUE(r->Note("log:197: no training step: no train_loss events"));
  EXPECT_TRUE(
      r->Note("epoch_num (3 at line 209) is not a multiple of global_batch_size 3200 (an "
              "epoch, or packed or variable-size samples)"));
}

TEST(MlperfTimeToTrain, AbortedRunHasNoTimeToTrain) {
  // v4.0 NVIDIA eos_n8 resnet result_4: run_stop line 354 with status "aborted" (the quality
  // target not reached) after 158.453 s; 37 epochs timed, median 4.080 s.
  Result<Read> r = ReadLog("mllog_nv_resnet_run_stop_aborted.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectReadByTimeToTrain(*r);
  const MlperfRun& run = *r->log.mlperf;
  EXPECT_EQ(run.status, "aborted");
  EXPECT_NEAR(*run.run_s, 158.453, 1e-9);
  EXPECT_FALSE(run.time_to_train_s.has_value());
  EXPECT_TRUE(r->m()["mlperf"]["time_to_train_s"].is_null());
  EXPECT_EQ(*run.epochs, 37);
  EXPECT_NEAR(*run.epoch_s_median, 4.080, 1e-9);
  EXPECT_TRUE(r->Note("run_stop's status is \"aborted\""));
}

TEST(MlperfTimeToTrain, DellRetinanetTrainSamplesAsLogged) {
  // v5.0 Dell XE9712x4GB200 retinanet: run_s (1745547744227 - 1745544865824) / 1000 = 2878.403;
  // epochs 0-4 timed, 635.105, 631.201, 630.298, 629.458 and 5.610 s (the last cut by run_stop,
  // which comes before its epoch_stop): median 630.298. train_samples 4572 is iterations (1170301
  // images / 256), kept as logged. max_memory_usage 40.047 GiB (line 117).
  Result<Read> r = ReadLog("mllog_dell_retinanet_train_samples_iterations.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectReadByTimeToTrain(*r);
  const MlperfRun& run = *r->log.mlperf;
  EXPECT_EQ(run.benchmark, "retinanet");
  EXPECT_NEAR(*run.time_to_train_s, 2878.403, 1e-9);
  EXPECT_EQ(*run.epochs, 5);
  EXPECT_NEAR(*run.epoch_s_median, 630.298, 1e-9);
  EXPECT_EQ(*run.train_samples, 4572);
  EXPECT_EQ(*run.eval_samples, 194);
  ASSERT_EQ(r->log.evals.size(), 4u);
  EXPECT_DOUBLE_EQ(r->log.evals.back().value, 0.3439874455060702);
  EXPECT_EQ(*run.eval_epoch_num, 4);
  // mAP is neither a loss nor an accuracy: the quality block's value.
  EXPECT_DOUBLE_EQ(r->m()["eval"]["quality"]["value"].get<double>(), 0.3439874455060702);
  EXPECT_TRUE(r->m()["eval"]["val_loss"].is_null());
  EXPECT_TRUE(r->m()["eval"]["accuracy"].is_null());
  EXPECT_DOUBLE_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 40.047 * 1024 * 1024 * 1024);
}

TEST(MlperfTimeToTrain, GigaComputingUnet3dBlocksWithoutEpochs) {
  // v4.0 GigaComputing G593-SD1 unet3d (CRLF): 475.410 s; blocks by first_epoch_num/epoch_count,
  // no epoch_start/epoch_stop (no epoch timed); 23 evaluations, the last 0.9081700444221497 at
  // epoch_num 241920 (line 360).
  Result<Read> r = ReadLog("mllog_gigacomputing_unet3d_blocks_no_epochs_crlf.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectReadByTimeToTrain(*r);
  const MlperfRun& run = *r->log.mlperf;
  EXPECT_EQ(run.benchmark, "unet3d");
  EXPECT_EQ(run.submitter, "GigaComputing");
  EXPECT_NEAR(*run.time_to_train_s, 475.410, 1e-9);
  EXPECT_FALSE(run.epochs.has_value());
  EXPECT_FALSE(run.epoch_s_median.has_value());
  EXPECT_TRUE(r->m()["mlperf"]["epochs"].is_null());
  ASSERT_EQ(r->log.evals.size(), 23u);
  EXPECT_DOUBLE_EQ(r->log.evals.back().value, 0.9081700444221497);
  EXPECT_EQ(r->log.evals.back().line, 360);
  EXPECT_EQ(*run.eval_epoch_num, 241920);
}

TEST(MlperfTimeToTrain, ABlockEndOfAnotherLogsKindChangesNothing) {
  // NVIDIA's DLRM block_stop (samples_count and step; line 37 of its log) after one of the
  // U-Net3D blocks above, which place themselves by epochs alone (logparse_mutation_test): that
  // block, placed at one end only, was read from an empty position, as step -2^63. Left out, the
  // log reads as without the line.
  const std::string unet =
      testing::ReadTestData("logs/mllog_gigacomputing_unet3d_blocks_no_epochs_crlf.log");
  const std::string dlrm =
      testing::ReadTestData("logs/mllog_nv_dlrm_hugectr_epoch_fraction_step.log");
  size_t at = 0;
  for (int line = 1; line < 274; ++line) at = unet.find('\n', at) + 1;
  size_t from = 0;
  for (int line = 1; line < 37; ++line) from = dlrm.find('\n', from) + 1;
  const std::string block_stop = dlrm.substr(from, dlrm.find('\n', from) + 1 - from);
  ASSERT_NE(block_stop.find("\"key\": \"block_stop\""), std::string::npos) << block_stop;
  Result<ParsedLog> mixed = ParseMllog(unet.substr(0, at) + block_stop + unet.substr(at), "u.log");
  Result<ParsedLog> plain = ParseMllog(unet, "u.log");
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  ASSERT_EQ(mixed->iterations.size(), plain->iterations.size());
  for (size_t i = 0; i < plain->iterations.size(); ++i) {
    EXPECT_EQ(mixed->iterations[i].step, plain->iterations[i].step);
    EXPECT_EQ(mixed->iterations[i].span, plain->iterations[i].span);
    EXPECT_GE(mixed->iterations[i].span, 1);
  }
  EXPECT_EQ(*mixed->mlperf->time_to_train_s, *plain->mlperf->time_to_train_s);
}

TEST(MlperfTimeToTrain, NvidiaBertEvaluationsAtSamples) {
  // v4.1 NVIDIA eos_ngc23.04_pytorch bert: 347.703 s; one epoch_start at epoch_num 0 and one
  // epoch_stop at 2698169 (samples: no epoch timed); 18 evaluations, the last 0.7203474640846252
  // at epoch_num 2698169 (line 451); train_samples 2698169 (line 454, after run_stop).
  Result<Read> r = ReadLog("mllog_nv_bert_one_block_evals_at_samples.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectReadByTimeToTrain(*r);
  const MlperfRun& run = *r->log.mlperf;
  EXPECT_EQ(run.benchmark, "bert");
  EXPECT_NEAR(*run.time_to_train_s, 347.703, 1e-9);
  EXPECT_FALSE(run.epochs.has_value());
  ASSERT_EQ(r->log.evals.size(), 18u);
  EXPECT_DOUBLE_EQ(r->log.evals.back().value, 0.7203474640846252);
  EXPECT_EQ(*run.eval_epoch_num, 2698169);
  EXPECT_EQ(*run.train_samples, 2698169);
  EXPECT_DOUBLE_EQ(r->m()["eval"]["accuracy"].get<double>(), 0.7203474640846252);  // masked-LM
}

TEST(MlperfTimeToTrain, DellDlrmEvaluationsAtEpochFractions) {
  // v4.1 Dell XE9680x8H200 dlrm_dcnv2 (HugeCTR): 220.035 s; 15 evaluations at epoch fractions,
  // the last 0.8029667139053345 at 0.7498978502418643 (line 68); the closing train_step_time mean
  // after run_stop is no step (a note).
  Result<Read> r = ReadLog("mllog_dell_dlrm_hugectr_epoch_fraction_evals.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectReadByTimeToTrain(*r);
  const MlperfRun& run = *r->log.mlperf;
  EXPECT_EQ(run.benchmark, "dlrm_dcnv2");
  EXPECT_NEAR(*run.time_to_train_s, 220.035, 1e-9);
  EXPECT_EQ(*run.train_samples, 4195197692);
  ASSERT_EQ(r->log.evals.size(), 15u);
  EXPECT_DOUBLE_EQ(r->log.evals.back().value, 0.8029667139053345);
  EXPECT_DOUBLE_EQ(*run.eval_epoch_num, 0.7498978502418643);
  EXPECT_TRUE(r->Note("its evaluations are at epoch fractions (epoch_num 0.0499809 at line 26)"));
}

TEST(MlperfTimeToTrain, AsustekGnnAndNvidiaRgat) {
  // v4.0 ASUSTeK ESC_N8A-E12 gnn (CRLF): 682.865 s, 17 evaluations, the last 0.720763950196353
  // at epoch_num 0.85 (line 74).
  Result<Read> r = ReadLog("mllog_asustek_gnn_epoch_fraction_evals_crlf.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectReadByTimeToTrain(*r);
  EXPECT_EQ(r->log.mlperf->benchmark, "gnn");
  EXPECT_NEAR(*r->log.mlperf->time_to_train_s, 682.865, 1e-9);
  ASSERT_EQ(r->log.evals.size(), 17u);
  EXPECT_DOUBLE_EQ(r->log.evals.back().value, 0.720763950196353);
  EXPECT_DOUBLE_EQ(*r->log.mlperf->eval_epoch_num, 0.85);
  // v5.1 NVIDIA tyche rgat: run_start line 22 (1745219545835) to run_stop line 89
  // (1745219853969): 308.134 s; its one epoch (line 25 to 87) 294.856 s; 20 evaluations at 0.05
  // ... 1.0, the last 0.7204341292381287 (line 84); max_memory_usage 33.21 GiB (line 86).
  r = ReadLog("mllog_nv_rgat_epoch_fraction_evals.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectReadByTimeToTrain(*r);
  const MlperfRun& run = *r->log.mlperf;
  EXPECT_EQ(run.benchmark, "rgat");
  EXPECT_EQ(run.platform, "2xNVIDIA GB200");
  EXPECT_NEAR(*run.time_to_train_s, 308.134, 1e-9);
  EXPECT_EQ(*run.epochs, 1);
  EXPECT_NEAR(*run.epoch_s_median, 294.856, 1e-9);
  ASSERT_EQ(r->log.evals.size(), 20u);
  EXPECT_DOUBLE_EQ(r->log.evals.back().value, 0.7204341292381287);
  EXPECT_EQ(r->log.evals.back().line, 84);
  EXPECT_DOUBLE_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 33.21 * 1024 * 1024 * 1024);
}

TEST(MlperfTimeToTrain, LlmLogKeepsItsStepsAndGainsItsTimeToTrain) {
  // An LLM benchmark's log is read by its steps as before; its mlperf block adds the time to
  // train. Dell's v5.1 llama2_70b_lora excerpt (mllog_dell_llama2_70b_lora_mlperf_common.log):
  // run_start line 4 (1760058747779) to run_stop line 88 (1760060110236, "success"): 1362.457 s;
  // the excerpt holds no submission_* event.
  Result<Read> r = ReadLog("mllog_dell_llama2_70b_lora_mlperf_common.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->log.iterations.empty());
  ASSERT_TRUE(r->log.mlperf.has_value());
  EXPECT_FALSE(r->log.mlperf->by_time_to_train);
  EXPECT_FALSE(r->Note("the run is read by MLPerf's own measures instead"));
  const json& m = r->m();
  EXPECT_EQ(m["mlperf"]["read_by"], "training steps");
  EXPECT_TRUE(m["mlperf"]["benchmark"].is_null());
  EXPECT_EQ(m["mlperf"]["status"], "success");
  EXPECT_NEAR(m["mlperf"]["time_to_train_s"].get<double>(), 1362.457, 1e-9);
  EXPECT_EQ(m["config"]["steps"], 380);
}

// ---- what stays an error -------------------------------------------------

std::string Event(int64_t time_ms, const std::string& key, const std::string& value,
                  const std::string& metadata) {
  return ":::MLLOG {\"namespace\": \"\", \"time_ms\": " + std::to_string(time_ms) +
         ", \"event_type\": \"POINT_IN_TIME\", \"key\": \"" + key + "\", \"value\": " + value +
         ", \"metadata\": {" + metadata + "}}\n";
}

TEST(MlperfTimeToTrain, NoRunStartIsStillAnError) {
  // Epochs and an evaluation but no run_start: no time to train, no step: the error says why.
  const std::string text = Event(10, "epoch_start", "1", "\"epoch_num\": 1") +
                           Event(20, "epoch_stop", "1", "\"epoch_num\": 1") +
                           Event(30, "eval_accuracy", "0.5", "\"epoch_num\": 1");
  Result<ParsedLog> r = ParseMllog(text, "epochs.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("epochs.txt: 1 eval_accuracy events but no train_loss"),
            std::string::npos)
      << r.status().message();
}

TEST(MlperfTimeToTrain, RunStartAloneIsStillAnError) {
  // run_start and nothing after it (a run killed at once): nothing to read.
  Result<ParsedLog> r = ParseMllog(Event(10, "run_start", "null", ""), "started.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("started.txt: no MLPerf train_loss"), std::string::npos);
}

TEST(MlperfTimeToTrain, RunStopWithoutStatusIsNoTimeToTrain) {
  // A hand-made run: run_start at 1,000 ms, one epoch 1,000-61,000 ms, run_stop at 61,500 naming
  // no status: 60.5 s run, no time to train (a note), one epoch of 60 s.
  const std::string text =
      Event(1000, "run_start", "null", "") + Event(1000, "epoch_start", "1", "\"epoch_num\": 1") +
      Event(61000, "epoch_stop", "1", "\"epoch_num\": 1") + Event(61500, "run_stop", "null", "");
  Result<ParsedLog> r = ParseMllog(text, "nostatus.txt");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->mlperf.has_value());
  EXPECT_DOUBLE_EQ(*r->mlperf->run_s, 60.5);
  EXPECT_FALSE(r->mlperf->time_to_train_s.has_value());
  EXPECT_EQ(*r->mlperf->epochs, 1);
  EXPECT_DOUBLE_EQ(*r->mlperf->epoch_s_median, 60.0);
  EXPECT_TRUE(testing_logs::HasNote(r->notes, "nostatus.txt:4: run_stop names no status"));
}

TEST(MlperfTimeToTrain, TheBenchfileGivesTheDeviceCount) {
  // "1xNVIDIA DGX H100" is one node of 8 GPUs; the log says so nowhere else: `gpus` does.
  Result<Read> r = ReadLog("mllog_nv_resnet_mxnet_epoch_throughput.log", "mllog", {{"gpus", 8}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->m()["config"]["devices"], 8);
  EXPECT_EQ(r->m()["config"]["layout"], "TP1PP1DP8");
}

}  // namespace
}  // namespace bm::rules
