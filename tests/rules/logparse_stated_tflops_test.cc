// The per-device TFLOP/s trainers print on their records, read as Iteration::flops_per_device_per_s
// and, over the timed steps (records_mfu.h), as mfu.stated_flops_per_device: Megatron-LM's (and
// FlagScale's, Primus's, Megatron-Bridge's) `throughput per GPU (TFLOP/s/GPU)`, GPT-NeoX's `approx
// flops per GPU`, NeMo 2's `TFLOPS_per_GPU`, Nanotron's `model_tflops_per_gpu`, torchtitan's
// `tflops`. Expected values are read off real logs (tests/data/logs/SOURCES.md) by hand, or
// computed by hand in the comments; the lines written here for the failure paths say where their
// shape comes from.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rules/logparse/log_parser.h"
#include "tests/rules/read_log.h"

namespace bm::rules {
namespace {

using logparse::ParsedLog;
using testing_logs::HasNote;
using testing_logs::Read;
using testing_logs::ReadLog;

double Stated(const Read& r) { return r.m()["mfu"]["stated_flops_per_device"].get<double>(); }

TEST(StatedTflops, MegatronLmThroughputPerGpuOverTheTimedSteps) {
  // Ling-V2's example log (Megatron-LM core_v0.13.0, --log-interval 1, --log-throughput): lines
  // 1, 3-11 are iterations 1-10 with `throughput per GPU (TFLOP/s/GPU)` 18.0, 128.2, 131.7, 132.2,
  // 133.1, 132.4, 133.1, 133.2, 133.6, 133.7. Megatron's figure is one iteration's FLOPs over the
  // interval's mean time (x world size): TFLOP/s x ms is the same on every line (128.2 x 11182.0
  // = 1433532, 133.7 x 10720.6 = 1433344; 18.0 x 79489.9 = 1430818, to the 3 digits of 18.0).
  Result<Read> r =
      ReadLog("megatron_ling_v2_core013_zloss_mtp.log", "megatron", {{"peak_tflops", 989.0}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 10u);
  const std::vector<double> tflops = {18.0,  128.2, 131.7, 132.2, 133.1,
                                      132.4, 133.1, 133.2, 133.6, 133.7};
  for (size_t i = 0; i < tflops.size(); ++i) {
    const logparse::Iteration& it = r->log.iterations[i];
    EXPECT_EQ(it.flops_per_device_per_s, tflops[i] * 1e12) << it.step;
    EXPECT_NEAR(tflops[i] * *it.ms / (133.7 * 10720.6), 1.0, 3e-3) << it.step;
  }
  // Megatron's default warm-up leaves out iteration 1: iterations 2-10, one step each, weighted
  // by their time (steps / TFLOP/s).
  double inverse = 0;
  for (size_t i = 1; i < tflops.size(); ++i) inverse += 1 / tflops[i];
  const double expected = 9 / inverse * 1e12;
  EXPECT_DOUBLE_EQ(Stated(*r), expected);
  EXPECT_TRUE(r->Note("printed on 9 record(s) of steps 2\u201310"));
  // No MFU is printed: the stated figure over peak_tflops.
  ASSERT_TRUE(r->m()["mfu"]["stated"].is_number());
  EXPECT_DOUBLE_EQ(r->m()["mfu"]["stated"].get<double>(), expected / 989e12);
}

TEST(StatedTflops, MegatronLmIssueExcerpt) {
  // NVIDIA/Megatron-LM#756 (Mixtral 8x7B on 16 H100): iterations 43-45 print 239.8, 236.0 and
  // 228.4 TFLOP/s/GPU; all three are past the warm-up step.
  Result<Read> r = ReadLog("megatron_mixtral_issue756.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->At(44)->flops_per_device_per_s, 236.0e12);
  EXPECT_DOUBLE_EQ(Stated(*r), 3 / (1 / 239.8 + 1 / 236.0 + 1 / 228.4) * 1e12);
  EXPECT_TRUE(r->m()["mfu"]["stated"].is_null());  // no device or peak_tflops
}

TEST(StatedTflops, FlagScaleKeepsTheLine) {
  // FlagScale (OpenSeek-Small-v1-Baseline, `[default0]:` prefix): its one line is iteration 1,
  // 40.4 TFLOP/s/GPU. Iteration 1 is the warm-up: no figure, and a note says why; with
  // excluded_warmup_steps 0 the line's own.
  Result<Read> r = ReadLog("flagscale_openseek_first_iteration.log", "auto", {{"mpe", 4096}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->At(1)->flops_per_device_per_s, 40.4e12);
  EXPECT_TRUE(r->m()["mfu"]["stated_flops_per_device"].is_null());
  EXPECT_TRUE(r->Note("no record after the first 1 warm-up steps prints a FLOP/s"));
  r = ReadLog("flagscale_openseek_first_iteration.log", "auto",
              {{"mpe", 4096}, {"excluded_warmup_steps", 0}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(Stated(*r), 40.4e12);
  // Megatron-LM-FL launched by FlagScale on an Ascend NPU: iterations 3 and 4, 26.8 each.
  r = ReadLog("megatron_fl_core0182_ascend_default0.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(Stated(*r), 26.8e12);
}

TEST(StatedTflops, Core016FirstIntervalTakesTheFirstIterationOut) {
  // Core >= 0.16 prints iteration 1 (line 19: 9000 ms, 45.9 TFLOP/s/GPU) and its line at 10 (line
  // 21: 1800 ms, 229.5) averages iterations 1-10: iterations 2-10 took (10 x 1800 - 9000) / 9 =
  // 1000 ms, and the same FLOPs an iteration (229.5 x 1800 = 413100 = 45.9 x 9000) over 1000 ms
  // is 413.1 TFLOP/s/GPU, what lines 22-23 print for 1000 ms.
  Result<Read> r = ReadLog("megatron_core016_first_interval.log", "megatron");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->At(10)->span, 9);
  EXPECT_NEAR(*r->At(10)->flops_per_device_per_s, 413.1e12, 1e3);
  EXPECT_EQ(r->At(20)->flops_per_device_per_s, 413.1e12);
  EXPECT_NEAR(Stated(*r), 413.1e12, 1e3);
}

TEST(StatedTflops, PrimusCurrentOfItsPairs) {
  // Primus (DeepSeek-V4 smoke run, PP2): iterations 1-2 print one figure (0.3, 0.5), 3-10
  // `current/mean` pairs (10.2/10.2, 13.5/11.8, 13.3/12.3, 12.6/12.4, 12.6/12.4, 12.5/12.5,
  // 13.2/12.6, 14.0/12.7): the first is the iteration's (Megatron's own figure), the second
  // Primus's running mean. Iterations 2-10 past the warm-up.
  Result<Read> r = ReadLog("megatron_primus_dsv4_pp2_rank0_parameters.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->At(4)->flops_per_device_per_s, 13.5e12);
  const double expected = 9 /
                          (1 / 0.5 + 1 / 10.2 + 1 / 13.5 + 1 / 13.3 + 1 / 12.6 + 1 / 12.6 +
                           1 / 12.5 + 1 / 13.2 + 1 / 14.0) *
                          1e12;
  EXPECT_DOUBLE_EQ(Stated(*r), expected);
}

TEST(StatedTflops, PrimusComputePerGpuLabel) {
  // Primus's training_log patch from 868d32e (July 2026; again from 2046b02, August 2026) prints
  // Megatron's figure as `compute per GPU (TFLOP/s/GPU): {inst:.1f} (avg {mean:.1f})` and appends
  // ` | tokens/s/GPU inst/harmonic mean: ...` to the same segment (print_rank_last_patches.py);
  // no public log of it was found, so these lines are written from that code, their values
  // made up: the first number is read.
  constexpr const char* kLines =
      " [2026-08-10 10:00:01] iteration        2/      10 | consumed samples:           16 | "
      "elapsed time per iteration (ms): 900.0/900.0 | compute per GPU (TFLOP/s/GPU): 610.0 (avg "
      "610.0)  | tokens/s/GPU inst/harmonic mean: 9000.0/9000.0 | global batch size:     8 | lm "
      "loss: 9.000000E+00 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
      " [2026-08-10 10:00:02] iteration        3/      10 | consumed samples:           24 | "
      "elapsed time per iteration (ms): 892.0/896.0 | compute per GPU (TFLOP/s/GPU): 615.5 (avg "
      "612.8)  | tokens/s/GPU inst/harmonic mean: 9080.7/9040.2 | global batch size:     8 | lm "
      "loss: 8.900000E+00 | number of skipped iterations:   0 | number of nan iterations:   0 |\n";
  Result<ParsedLog> log = logparse::ParseMegatronLog(kLines, "primus.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_EQ(log->iterations.size(), 2u);
  EXPECT_EQ(log->iterations[1].flops_per_device_per_s, 615.5e12);
  EXPECT_EQ(log->iterations[1].tokens_per_device_per_s, 9080.7);
  // A line that printed both labels would keep Megatron's `throughput per GPU`.
  Result<ParsedLog> both = logparse::ParseMegatronLog(
      " iteration        3/      10 | elapsed time per iteration (ms): 892.0 | compute per GPU "
      "(TFLOP/s/GPU): 1135.2 | throughput per GPU (TFLOP/s/GPU): 294.4 | lm loss: 8.9 |\n",
      "both.log");
  ASSERT_TRUE(both.ok()) << both.status().message();
  EXPECT_EQ(both->iterations[0].flops_per_device_per_s, 294.4e12);
}

TEST(StatedTflops, GptNeoxApproxFlopsPerGpu) {
  // deepspeedai/DeepSpeed#3742 (GPT-NeoX, July 2023): line 4's `approx flops per GPU:
  // 112.9TFLOPS` (human_readable_flops: %3.1f and a decimal prefix, no space) at iteration 34.
  // (NeoX of then counted 6 x parameters + 60 x s x h x L FLOPs a token; from 5f36401, September
  // 2023, Megatron-DeepSpeed's formula with 4 for 3 under checkpoint_activations: hardware FLOPs.)
  // The lone line spans iterations 1-34 (no other line gives the interval), so it is timed only
  // with no warm-up left out.
  Result<Read> r = ReadLog("megatron_neox_lm_loss_issue3742.log", "auto",
                           {{"mpe", 2048}, {"excluded_warmup_steps", 0}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->At(34)->flops_per_device_per_s, 112.9e12);
  EXPECT_DOUBLE_EQ(Stated(*r), 112.9e12);
  // The other prefixes human_readable_flops prints (a slow run's GFLOPS; below 1000 FLOP/s no
  // prefix and no unit); a line of 0.0 is no figure, with a note.
  const std::string neox =
      " samples/sec: 7.799 | iteration       34/   10000 | elapsed time per iteration (ms): 4103.1 "
      "| learning rate: 2.111E-06 | approx flops per GPU: 999.9GFLOPS | lm_loss: 1.118665E+01 |\n"
      " samples/sec: 7.799 | iteration       35/   10000 | elapsed time per iteration (ms): 4103.1 "
      "| learning rate: 2.111E-06 | approx flops per GPU: 1.2PFLOPS | lm_loss: 1.118665E+01 |\n";
  Result<ParsedLog> log = logparse::ParseMegatronLog(neox, "neox.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_DOUBLE_EQ(*log->iterations[0].flops_per_device_per_s, 999.9e9);
  EXPECT_DOUBLE_EQ(*log->iterations[1].flops_per_device_per_s, 1.2e15);
  std::string zero = neox;
  zero.replace(zero.find("999.9GFLOPS"), 11, "0.0");
  zero.replace(zero.find("1.2PFLOPS"), 9, "0.0");
  log = logparse::ParseMegatronLog(zero, "neox.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->iterations[1].flops_per_device_per_s, 0.0);
  Result<ExternalMetrics> ext =
      BuildExternalMetrics(*logparse::FindLogParser("megatron"), *log, "neox.log",
                           testing_logs::Params({{"log_format", "megatron"}, {"mpe", 2048}}), {});
  ASSERT_TRUE(ext.ok()) << ext.status().message();
  EXPECT_TRUE(ext->metrics["mfu"]["stated_flops_per_device"].is_null());
  EXPECT_TRUE(HasNote(ext->notes,
                      "mfu.stated_flops_per_device: 2 record(s) print a FLOP/s per device that is "
                      "not above 0 (neox.log:1 the first)"));
}

TEST(StatedTflops, AValueThatDoesNotParseNamesTheLine) {
  Result<ParsedLog> log = logparse::ParseMegatronLog(
      " iteration        2/     100 | lm loss: 7.5 | throughput per GPU (TFLOP/s/GPU): n/a |\n",
      "bad.log");
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(log.status().message().find(
                "bad.log:1: 'throughput per GPU (TFLOP/s/GPU)' is 'n/a', not a number"),
            std::string::npos)
      << log.status().message();
  log = logparse::ParseMegatronLog(
      " iteration        2/     100 | lm_loss: 7.5 | approx flops per GPU: 12.3XFLOPS |\n",
      "bad.log");
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.status().message().find(
                "bad.log:1: 'approx flops per GPU' is '12.3XFLOPS', not a number"),
            std::string::npos)
      << log.status().message();
}

TEST(StatedTflops, MegatronBridgeAtModelSeqLengthIsDropped) {
  // Megatron-Bridge's training_log prints one per_gpu_tf on its `Step Time` line and as the
  // iteration line's `throughput per GPU (TFLOP/s/GPU)`, its FLOPs at cfg.model.seq_length. The
  // config print and figure of megatron_bridge_byoc_config_yaml.log (dataset.sequence_length
  // 1024, model.seq_length 131072, `Step Time : 4.65s GPU utilization: 59892.5TFLOP/s/GPU`),
  // with the iteration line as Bridge prints it with log_throughput: no figure, a note.
  constexpr const char* kBridge =
      "_target_: megatron.bridge.training.config.ConfigContainer\n"
      "dataset:\n"
      "  sequence_length: 1024\n"
      "model:\n"
      "  seq_length: 131072\n"
      "train:\n"
      "  global_batch_size: 512\n"
      "  micro_batch_size: 1\n"
      " [2025-10-06 03:27:07] iteration       10/      10 | consumed samples:         5120 | "
      "elapsed time per iteration (ms): 4647.8 | throughput per GPU (TFLOP/s/GPU): 59892.5 | "
      "learning rate: 1.500000E-06 | global batch size:   512 | lm loss: 9.763827E+00 |\n";
  Result<ParsedLog> log = logparse::ParseMegatronLog(kBridge, "bridge.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_EQ(log->iterations.size(), 1u);
  EXPECT_FALSE(log->iterations[0].flops_per_device_per_s);
  EXPECT_EQ(log->facts.at("mpe").value, 1024);
  EXPECT_TRUE(HasNote(log->notes,
                      "mfu.stated_flops_per_device: bridge.log:9: the 'throughput per GPU "
                      "(TFLOP/s/GPU)' of 1 record(s) not read: Megatron-Bridge counts each "
                      "sample's FLOPs at its model.seq_length, not the length trained "
                      "(bridge.log:5 model.seq_length 131072, not bridge.log:3 "
                      "dataset.sequence_length 1024)"));
  // The same lengths: read.
  std::string same = kBridge;
  same.replace(same.find("131072"), 6, "1024");
  log = logparse::ParseMegatronLog(same, "bridge.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->iterations[0].flops_per_device_per_s, 59892.5e12);
  // A Bridge log that prints no config (Nemotron-3 Nano 30B, iterations 1-4: 13.9, 120.8, 122.4,
  // 121.4, the Step Time lines' figures): read, iterations 2-4 past the warm-up.
  Result<Read> r = ReadLog("megatron_bridge_nano30b_memory_gb.log", "megatron", {{"mpe", 8192}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(Stated(*r), 3 / (1 / 120.8 + 1 / 122.4 + 1 / 121.4) * 1e12);
}

TEST(StatedTflops, Nemo2TflopsPerGpu) {
  // NeMo 2's performance recipe (Llama 3 8B, 8 B200): lines 1-5 are steps 46-50 with
  // `TFLOPS_per_GPU` 1.249e+03, 1.252e+03, 1.248e+03, 1.25e+03, 1.253e+03
  // (FLOPsMeasurementCallback, ProgressPrinter's {val:.4}); TFLOP/s x step time is the same on
  // every line (1249 x 6.08 = 7594, 1253 x 6.06 = 7593).
  Result<Read> r =
      ReadLog("nemo2_llama3_8b_b200_memory.log", "auto", {{"mpe", 8192}, {"layout", "TP1PP1DP8"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->At(46)->flops_per_device_per_s, 1249e12);
  EXPECT_EQ(r->At(49)->flops_per_device_per_s, 1250e12);
  EXPECT_DOUBLE_EQ(Stated(*r),
                   5 / (1 / 1249.0 + 1 / 1252.0 + 1 / 1248.0 + 1 / 1250.0 + 1 / 1253.0) * 1e12);
}

TEST(StatedTflops, Nemo2AtTheModelsSeqLengthIsDropped) {
  // FLOPsMeasurementCallback counts model.config.seq_length tokens a sample. NeMo-Run's table as
  // nemo2_run_table_mock_negative_step_time.log prints it (lines 1-6 and its model row), the
  // model's seq_length written as 8192 against the data's 128, then the B200 log's first line:
  // not read, a note.
  constexpr const char* kNemo =
      "Dry run for task nemo.collections.llm.api:pretrain\n"
      "Resolved Arguments\n"
      "┏━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓\n"
      "┃ Argument Name        ┃ Resolved Value                                               ┃\n"
      "┡━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩\n"
      "│ data                 │ MockDataModule(seq_length=128, micro_batch_size=1,           │\n"
      "│                      │ global_batch_size=64)                                        │\n"
      "│ model                │ LlamaModel(                                                  │\n"
      "│                      │   config=Llama3Config8B(                                     │\n"
      "│                      │     seq_length=8192))                                        │\n"
      "└──────────────────────┴──────────────────────────────────────────────────────────────┘\n"
      "Training epoch 0, iteration 45/99 | lr: 6.897e-06 | global_batch_size: 128 | global_step: "
      "45 | max_memory_reserved: 127785762816 | max_memory_allocated: 115792977920 | "
      "reduced_train_loss: 11.96 | train_step_timing in s: 6.08 | TFLOPS_per_GPU: 1.249e+03 | "
      "consumed_samples: 5888\n";
  Result<ParsedLog> log = logparse::ParseNemoLog(kNemo, "nemo.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_EQ(log->iterations.size(), 1u);
  EXPECT_FALSE(log->iterations[0].flops_per_device_per_s);
  EXPECT_TRUE(HasNote(log->notes,
                      "mfu.stated_flops_per_device: nemo.log:12: the TFLOPS_per_GPU of 1 "
                      "record(s) not read: NeMo's FLOPsMeasurementCallback counts each sample's "
                      "FLOPs at the model's seq_length, not the length trained (nemo.log:10 "
                      "model.config.seq_length 8192, not nemo.log:6 data.seq_length 128)"));
  // A value that does not parse names the line.
  std::string bad = kNemo;
  bad.replace(bad.find("1.249e+03"), 9, "n/a");
  log = logparse::ParseNemoLog(bad, "nemo.log");
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.status().message().find("nemo.log:12: 'TFLOPS_per_GPU' is 'n/a', not a number"),
            std::string::npos)
      << log.status().message();
}

TEST(StatedTflops, NanotronModelTflopsPerGpu) {
  // huggingface/nanotron PR #23: iterations 991-993 print `model_tflops_per_gpu: 0.00869`,
  // `0.0095`, `0.00992` (human_format below 1: {:.3g}) at 45, 41.2 and 39.4 ms: TFLOP/s x ms
  // 0.391, 0.391, 0.391.
  Result<Read> r = ReadLog("nanotron_pr23_memory_fields.log", "nanotron");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(*r->At(991)->flops_per_device_per_s, 0.00869e12);
  EXPECT_DOUBLE_EQ(Stated(*r), 3 / (1 / 0.00869 + 1 / 0.0095 + 1 / 0.00992) * 1e12);
  // nanotron#390: four steps at 38.3.
  r = ReadLog("nanotron_issue390_elapsed_k.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(Stated(*r), 38.3e12);
}

TEST(StatedTflops, TorchtitanTflopsBesideItsMfu) {
  // torchtitan's llama3 debugmodel on 8 H200: steps 2-10 print `tflops:` 21.55, 25.74, 24.89,
  // 24.22, 22.72, 23.58, 26.11, 25.14, 23.21 (num_flops_per_token x tps: 21.55e12 / 301092 =
  // 7.157e7, 23.21e12 / 324245 = 7.158e7 a token). mfu.stated stays torchtitan's own MFU.
  Result<Read> r = ReadLog("torchtitan_llama3_debug_h200_apptests.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->At(1)->flops_per_device_per_s, 0.41e12);
  const double expected = 9 /
                          (1 / 21.55 + 1 / 25.74 + 1 / 24.89 + 1 / 24.22 + 1 / 22.72 + 1 / 23.58 +
                           1 / 26.11 + 1 / 25.14 + 1 / 23.21) *
                          1e12;
  EXPECT_DOUBLE_EQ(Stated(*r), expected);
  EXPECT_NEAR(r->m()["mfu"]["stated"].get<double>(),
              9 / (1 / 0.0218 + 1 / 0.0260 + 1 / 0.0252 + 1 / 0.0245 + 1 / 0.0230 + 1 / 0.0238 +
                   1 / 0.0264 + 1 / 0.0254 + 1 / 0.0235),
              1e-12);
  Result<ParsedLog> bad = logparse::ParseTorchtitanLog(
      "[rank0]:[titan] 2025-11-25 19:45:01,496 - root - INFO - step:  2  loss:  7.7082  "
      "grad_norm:  1.5585  memory:  1.34GiB(0.96%)  tps: 301,092  tflops: abc  mfu: 2.18%\n",
      "bad.log");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.log:1: torchtitan's 'tflops' is 'abc', not a number"),
            std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace bm::rules
