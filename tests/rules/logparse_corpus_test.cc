// The log corpus (tests/data/logs/, sources in SOURCES.md): every log read as
// it is, through its parser and BuildExternalMetrics, against the loss per
// step, tokens/s per device and memory read off the log by hand. The comments
// say which lines each expected value comes from; a value the log does not
// give (a sequence length the excerpt leaves out) is a BENCHFILE parameter
// here, and the comment says so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tests/rules/read_log.h"

namespace bm::rules {
namespace {

using logparse::Iteration;
using logparse::ParsedLog;
using nlohmann::json;
using testing_logs::Read;
using testing_logs::ReadLog;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

double Sum(std::initializer_list<double> v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// ---- Megatron-LM and FlagScale -------------------------------------------

TEST(Corpus, MegatronCore080Gpt7bOneNode) {
  // --log-interval 10 on 8 GPUs (mpirun --np 8); the sequence length is not in the
  // excerpt: 2048 set here.
  Result<Read> r = ReadLog("megatron_core080_gpt7b_1node.log", "megatron",
                           {{"mpe", 2048}, {"layout", "TP1PP1DP8"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}));
  // Line 2: iterations 1-10 all skipped (number of skipped iterations: 10): no loss.
  EXPECT_FALSE(r->Loss(10));
  EXPECT_EQ(r->Loss(20), 10.64275);   // line 8 (5 of its 10 iterations skipped)
  EXPECT_EQ(r->Loss(50), 8.219823);   // line 12
  EXPECT_EQ(r->Loss(100), 5.847192);  // line 17
  // Lines 8-17: iterations 11-100 at 1024 x 2048 tokens each; iteration 10's line
  // covers iteration 1 (warm-up) and is left out.
  const double ms =
      Sum({12137.8, 12068.8, 12036.3, 12056.1, 12072.4, 12090.5, 12099.3, 12099.4, 12104.3});
  EXPECT_DOUBLE_EQ(r->PerDevice(), 90 * 1024 * 2048 / (10 * ms / 1000) / 8);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 75682.0 * kMiB);  // line 9, max reserved
  // Line 5: "Total number of parameters in billions: 6.44", with a note.
  EXPECT_EQ(r->m()["model"]["parameters"], 6.44e9);
  EXPECT_TRUE(r->Note("megatron_core080_gpt7b_1node.log:5 gives the count in billions"));
}

TEST(Corpus, MegatronCore080Gpt7bTwoNodes) {
  Result<Read> r = ReadLog("megatron_core080_gpt7b_2node.log", "megatron",
                           {{"mpe", 2048}, {"layout", "TP1PP1DP16"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->Loss(10));
  EXPECT_EQ(r->Loss(20), 10.62389);   // line 8
  EXPECT_EQ(r->Loss(100), 5.806238);  // line 17
  const double ms =
      Sum({14351.0, 14197.6, 14099.7, 14124.1, 14176.3, 14200.2, 14212.7, 14182.6, 14234.7});
  EXPECT_DOUBLE_EQ(r->PerDevice(), 90 * 1024 * 2048 / (10 * ms / 1000) / 16);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 71202.0 * kMiB);  // line 9
}

TEST(Corpus, MegatronEveryIterationSkipped) {
  // SEQ_LENGTH=128 on the source page's command line (not in the excerpt); one GPU.
  Result<Read> r =
      ReadLog("megatron_tiny_all_skipped.log", "megatron", {{"mpe", 128}, {"layout", "TP1PP1DP1"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  for (int64_t s = 1; s <= 5; ++s) EXPECT_FALSE(r->Loss(s)) << s;  // all skipped
  EXPECT_TRUE(r->m()["loss"].is_null());
  // Lines 10-13: iterations 2-5, 32 samples x 128 tokens each.
  EXPECT_DOUBLE_EQ(r->PerDevice(), 4 * 32 * 128 / (Sum({689.4, 645.4, 613.5, 624.4}) / 1000));
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 648.0 * kMiB);  // line 9
  EXPECT_EQ(r->m()["provenance"]["skipped_iterations"], 5);
}

TEST(Corpus, MegatronDeepSpeedBf16NaNPrintsNoLoss) {
  // bigscience Megatron-DeepSpeed, --log-interval 1, loss scale 1.0 (bf16): three lines
  // with `grad norm: nan`, no lm loss, 0 skipped and 0 NaN iterations. Megatron prints a
  // loss only if its average is >= 0: NaN, counted as one.
  Result<Read> r = ReadLog("megatron_deepspeed_bf16_nan_no_loss_issue396.log", "megatron",
                           {{"layout", "TP1PP1DP1"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{5426, 5427, 5428}));
  for (int64_t s = 5426; s <= 5428; ++s) {
    ASSERT_TRUE(r->Loss(s)) << s;
    EXPECT_TRUE(std::isnan(*r->Loss(s))) << s;
    EXPECT_EQ(r->At(s)->nan, 1) << s;
    EXPECT_EQ(r->At(s)->skipped, 0) << s;
    EXPECT_TRUE(std::isnan(*r->At(s)->grad_norm)) << s;
  }
  EXPECT_EQ(r->At(5427)->ms, 4225.8);        // line 2
  EXPECT_EQ(r->At(5428)->samples, 8);        // global batch size:     8
  EXPECT_EQ(r->m()["config"]["mpe"], 2048);  // actual seqlen:  2048
  EXPECT_EQ(r->m()["provenance"]["nan_iterations"], 3);
  EXPECT_EQ(r->m()["provenance"]["skipped_iterations"], 0);
  EXPECT_TRUE(r->m()["loss"].is_null());  // NaN losses are left out: none is left
  EXPECT_TRUE(
      r->Note("3 iteration line(s) from megatron_deepspeed_bf16_nan_no_loss_issue396.log:1"));
}

TEST(Corpus, MegatronBertLogInterval100) {
  // The page's command: 4 nodes x 1 GPU, --seq-length 512, --global-batch-size 64.
  Result<Read> r = ReadLog("megatron_bert_sop_interval100.log", "megatron",
                           {{"mpe", 512}, {"layout", "TP1PP1DP4"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Loss(100), 9.598613);  // line 1: 18 of 100 skipped, the others' mean
  EXPECT_EQ(r->Loss(200), 7.458513);  // line 5
  EXPECT_EQ(r->Loss(300), 6.773415);  // line 8
  EXPECT_EQ(r->At(200)->span, 100);
  // Lines 5 and 8: iterations 101-300; line 1 covers iteration 1 and is left out.
  EXPECT_DOUBLE_EQ(r->PerDevice(), 200 * 64 * 512 / ((100 * 1228.9 + 100 * 1244.8) / 1000) / 4);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 12906.0 * kMiB);  // line 2
}

TEST(Corpus, MegatronLlmIssueExcerptWithoutDeviceCount) {
  // seq_length is not in the issue's excerpt: 4096 set here. The device count is not
  // set: the rate over all devices is reported, per device is null with a note.
  Result<Read> r = ReadLog("megatron_llm_issue11.log", "megatron", {{"mpe", 4096}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{122, 123, 124, 125}));
  EXPECT_EQ(r->Loss(122), 2.50422);
  EXPECT_EQ(r->Loss(125), 2.477393);
  // All four lines timed (the excerpt starts at 122, past the warm-up).
  const double seconds = Sum({86545.2, 87871.6, 89474.8, 89075.2}) / 1000;
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["tokens_per_s"].get<double>(), 4 * 1024 * 4096 / seconds);
  EXPECT_TRUE(r->m()["throughput"]["tokens_per_device_per_s"].is_null());
  EXPECT_TRUE(r->Note("does not say how many devices ran it: set layout"));
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());
}

TEST(Corpus, MegatronMixtralIssue) {
  // 16 x H100 (the issue's title); Mixtral's 4096 tokens set here.
  Result<Read> r = ReadLog("megatron_mixtral_issue756.log", "megatron",
                           {{"mpe", 4096}, {"layout", "TP1PP1DP16"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Loss(43), 1.825991);  // lm loss, not load_balancing_loss
  EXPECT_EQ(r->Loss(45), 1.834162);
  EXPECT_DOUBLE_EQ(r->PerDevice(), 3 * 128 * 4096 / (Sum({5444.9, 5533.8, 5718.6}) / 1000) / 16);
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());  // the log reports none
}

TEST(Corpus, MegatronCore013ZLossMtpAndThroughputPerGpu) {
  // Ling-V2's Megatron-LM (core_v0.13.0) pretraining example, --log-interval 1: after `lm loss`
  // come `z_loss` and `mtp_1 loss`; `throughput per GPU (TFLOP/s/GPU)` is the record's FLOP/s
  // per device (checked in logparse_stated_tflops_test.cc); the report_memory line after
  // iteration 1 (MiB: max reserved 66802.0).
  Result<Read> r = ReadLog("megatron_ling_v2_core013_zloss_mtp.log", "megatron");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 10u);  // lines 1, 3-11
  EXPECT_EQ(r->Loss(1), 2.605958);           // lm loss, not z_loss 10.91659 or mtp_1 2.828435
  EXPECT_EQ(r->Loss(10), 2.557783);
  EXPECT_EQ(*r->At(2)->ms, 11182.0);
  EXPECT_EQ(*r->At(2)->samples, 128);
  EXPECT_EQ(*r->At(2)->grad_norm, 7.737);
  EXPECT_EQ(*r->log.peak_memory_bytes, 66802.0 * kMiB);
}

TEST(Corpus, MegatronLinesCutAfterThroughputGiveSamplesFromConsumed) {
  // A README quotes three lines cut after `throughput per GPU (TFLOP/s/GPU): 68.2` (no global
  // batch size, no loss). Consumed samples 51200, 56320, 61440 at iterations 50, 55, 60:
  // (56320 - 51200) / 5 = 1024 a step, and 51200 / 50 = 1024 for the first line. The
  // repository's scripts/pretrain.sh: --global-batch-size 1024, --seq-length 2048, 8 GPUs
  // (the README: DP2 PP2 EP2 on 8xH100).
  Result<Read> r = ReadLog("megatron_dsv2lite_readme_cut_lines.log", "megatron",
                           {{"mpe", 2048}, {"layout", "TP1PP2DP4"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{50, 55, 60}));
  EXPECT_EQ(*r->At(55)->samples, 1024);
  EXPECT_EQ(*r->At(50)->samples, 1024);
  EXPECT_EQ(*r->At(60)->ms, 61681.5);
  EXPECT_FALSE(r->At(60)->loss.has_value());
  bool noted = false;
  for (const std::string& n : r->log.notes) noted |= n.find("consumed samples") != n.npos;
  EXPECT_TRUE(noted);
  // Iterations 46-60 (past any warm-up), 5 steps a record of 1024 x 2048 tokens over 8 devices.
  EXPECT_DOUBLE_EQ(r->PerDevice(),
                   3 * 5 * 1024 * 2048 / (5 * (61674.3 + 61614.9 + 61681.5) / 1000) / 8);
}

TEST(Corpus, MegatronBridgeMtpAndSequenceAuxLosses) {
  // Megatron-Bridge (2026-05): lm loss, then seq_load_balancing_loss, mtp_1 loss and mtp_2
  // loss on the same line; only lm loss is the loss. --log-interval 1, GBS 512. The excerpt
  // states no sequence length: 4096 set here.
  Result<Read> r =
      ReadLog("megatron_bridge_mtp2_seq_aux_issue4024.log", "megatron", {{"mpe", 4096}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{15, 16, 17}));
  EXPECT_EQ(r->Loss(15), 1.059172);  // not seq_load_balancing_loss 1.236344, mtp_1 1.175022
  EXPECT_EQ(r->Loss(17), 1.028811);  // not mtp_2 loss 1.227099
  EXPECT_EQ(r->At(16)->ms, 27875.2);
  EXPECT_EQ(r->At(16)->samples, 512);
  EXPECT_EQ(r->At(16)->lr, 3.2e-05);
  EXPECT_EQ(r->At(17)->grad_norm, 2.104);
  EXPECT_EQ(r->At(17)->skipped, 0);
  EXPECT_EQ(r->At(17)->nan, 0);
  // Three iterations of 512 x 4096 tokens in 27447.6 + 27875.2 + 28802.1 ms.
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["tokens_per_s"].get<double>(),
                   3 * 512 * 4096 / (Sum({27447.6, 27875.2, 28802.1}) / 1000));
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());  // the excerpt reports none

  // The same comment's later excerpt, iterations 29-31.
  r = ReadLog("megatron_bridge_mtp2_seq_aux_issue4024_later.log", "megatron", {{"mpe", 4096}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{29, 30, 31}));
  EXPECT_EQ(r->Loss(29), 0.8716962);  // 8.716962E-01; mtp_1 loss is 1.115410
  EXPECT_EQ(r->Loss(31), 0.8641004);
  EXPECT_EQ(r->At(30)->grad_norm, 1.366);
  EXPECT_EQ(r->At(31)->lr, 6.2e-05);
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["tokens_per_s"].get<double>(),
                   3 * 512 * 4096 / (Sum({26813.0, 29511.9, 29793.2}) / 1000));
}

TEST(Corpus, MegatronBridgeMemoryReportInGigabytes) {
  // Megatron-Bridge's report_memory (training/utils/train_utils.py) prints "memory (GB)" with
  // torch.cuda.memory_stats()' bytes / 1e9: line 4, "mem-max-reserved-gigabytes: 80.487"
  // (before iteration 1's line, which it follows in the run). "Step Time : ..." lines (6, 8, 10)
  // are the Bridge's own and are not read. --log-interval 1, GBS 2048; the excerpt states no
  // sequence length: 8192 set here.
  Result<Read> r = ReadLog("megatron_bridge_nano30b_memory_gb.log", "megatron", {{"mpe", 8192}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(r->Loss(1), 12.1982);  // 1.219820E+01, not seq_load_balancing_loss 1.090370E+00
  EXPECT_EQ(r->Loss(4), 11.63866);
  EXPECT_EQ(r->At(1)->ms, 105400.6);
  EXPECT_EQ(r->At(4)->grad_norm, 90.17);
  EXPECT_EQ(r->At(4)->span, 1);
  EXPECT_EQ(*r->log.peak_memory_bytes, 80.487e9);
  EXPECT_EQ(r->log.memory_source, "mem-max-reserved-gigabytes (Megatron-Bridge report_memory)");
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 80.487e9);
  // Iteration 1 (the first) is left out: 3 x 2048 x 8192 tokens in lines 7, 9, 11.
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["tokens_per_s"].get<double>(),
                   3 * 2048 * 8192 / (Sum({12090.4, 11928.8, 12029.2}) / 1000));

  // NVIDIA's DGX Cloud benchmarking recipe (Megatron-Bridge), a one-iteration resumed run: the
  // parameter count follows the iteration line on the same line (line 1) and in billions
  // (line 4); memory at line 7, 216.89 GB reserved (194.41 GB allocated).
  r = ReadLog("megatron_bridge_llmb_resumed_memory_gb.log", "megatron", {{"mpe", 8192}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1}));
  EXPECT_EQ(r->Loss(1), 12.58695);
  EXPECT_EQ(r->At(1)->ms, 20289.1);
  EXPECT_EQ(r->At(1)->samples, 128);
  EXPECT_EQ(*r->log.peak_memory_bytes, 216.89e9);
  EXPECT_DOUBLE_EQ(r->log.facts.at("parameters").value, 8.03e9);
  EXPECT_EQ(r->log.facts.at("parameters").line, 4);
}

TEST(Corpus, MegatronBridgeConfigYamlGivesTheFacts) {
  // Megatron-Bridge (October 2025) prints no Megatron-LM argument block but its ConfigContainer
  // as YAML (`------- Task Configuration -------`, line 1; `_target_: ...ConfigContainer`, line
  // 2). Llama-3.2-1B, mock data, on the page's `torchrun --nproc_per_node=8` (the excerpt states
  // no device count: gpus set here). Its one iteration line (656, --log-interval 10) spans
  // iterations 1-10: excluded_warmup_steps 0 times it.
  Result<Read> r = ReadLog("megatron_bridge_byoc_config_yaml.log", "megatron",
                           {{"gpus", 8}, {"excluded_warmup_steps", 0}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto fact = [&](const char* f) { return r->log.facts.at(f); };
  EXPECT_EQ(fact("gbs").value, 512);  // line 636, train.global_batch_size
  EXPECT_EQ(fact("gbs").line, 636);
  EXPECT_EQ(fact("lbs").value, 1);  // line 640, train.micro_batch_size
  EXPECT_EQ(fact("lbs").line, 640);
  // Line 62, dataset.sequence_length 1024: the training length. model.seq_length (line 470,
  // 131072) is the Llama 3.1 provider's maximum, not what ran.
  EXPECT_EQ(fact("mpe").value, 1024);
  EXPECT_EQ(fact("mpe").line, 62);
  EXPECT_TRUE(std::any_of(r->log.notes.begin(), r->log.notes.end(), [](const std::string& n) {
    return n.find(":470 model.seq_length 131072 is the model's maximum") != std::string::npos;
  }));
  EXPECT_EQ(fact("tp").value, 1);  // line 477, model.tensor_model_parallel_size
  EXPECT_EQ(fact("tp").line, 477);
  EXPECT_EQ(fact("pp").value, 1);         // line 454
  EXPECT_EQ(fact("layers").value, 16);    // line 424, model.num_layers
  EXPECT_EQ(fact("hidden").value, 2048);  // line 351, model.hidden_size (not generation_config's)
  EXPECT_EQ(fact("heads").value, 32);     // line 423
  EXPECT_EQ(r->log.precision, "bf16");    // line 150, mixed_precision.bf16: true
  EXPECT_EQ(r->log.precision_line, 150);
  // The rank line is before the excerpt: "Total number of parameters in billions: 1.24" (653).
  EXPECT_DOUBLE_EQ(fact("parameters").value, 1.24e9);
  // Line 656; Bridge's "Step Time : 4.65s GPU utilization: 59892.5TFLOP/s/GPU" (650) is the same
  // interval's time to 10 ms and is not read.
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10}));
  EXPECT_EQ(r->At(10)->span, 10);
  EXPECT_EQ(r->At(10)->ms, 4647.8);
  EXPECT_EQ(r->At(10)->samples, 512);
  EXPECT_EQ(r->Loss(10), 9.763827);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 12232.0 * kMiB);  // line 657, max reserved
  // Tokens per step 512 x 1024 = 524288, in 4.6478 s a step: 112803.46 tokens/s over the 8
  // GPUs, 14100.43 each.
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["tokens_per_s"].get<double>(), 512 * 1024 / 4.6478);
  EXPECT_DOUBLE_EQ(r->PerDevice(), 512 * 1024 / 4.6478 / 8);
  EXPECT_EQ(r->m()["config"]["mpe"], 1024);
  EXPECT_EQ(r->m()["config"]["gbs"], 512);
  EXPECT_EQ(r->m()["config"]["precision"], "bf16");
  // 512 / (1 x 8 replicas) = 64 micro-batches a step, as the page's log says before the
  // excerpt ("setting number of microbatches to constant 64").
  EXPECT_EQ(r->m()["config"]["gas"], 64);
}

TEST(Corpus, MegatronBridgeConfigSummaryGivesTheFacts) {
  // Megatron-Bridge v0.4+'s "Configuration Summary (Non-Default Values vs Megatron Core)"
  // (reconstructed from v0.6.0's code): TP2 PP2 on 16 GPUs (not stated: gpus set here).
  Result<Read> r = ReadLog("megatron_bridge_v06_config_summary.log", "megatron", {{"gpus", 16}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto fact = [&](const char* f) { return r->log.facts.at(f); };
  EXPECT_EQ(fact("gbs").value, 128);  // line 42, [train] global_batch_size
  EXPECT_EQ(fact("gbs").line, 42);
  EXPECT_EQ(fact("lbs").value, 1);     // line 45
  EXPECT_EQ(fact("mpe").value, 8192);  // line 62, [dataset] sequence_length (seq_length, 61)
  EXPECT_EQ(fact("mpe").line, 62);
  EXPECT_EQ(fact("tp").value, 2);  // line 33, `tensor_model_parallel_size: 2  (Mcore default: 1)`
  EXPECT_EQ(fact("tp").line, 33);
  EXPECT_EQ(fact("pp").value, 2);         // line 31
  EXPECT_EQ(fact("layers").value, 32);    // line 27
  EXPECT_EQ(fact("hidden").value, 4096);  // line 24
  EXPECT_EQ(fact("heads").value, 32);     // line 26
  EXPECT_EQ(r->log.precision, "bf16");    // line 21, the model's bf16 (the optimizer's is line 10)
  EXPECT_EQ(r->log.precision_line, 21);
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 20, 30}));  // lines 76, 79, 81
  EXPECT_EQ(r->At(20)->ms, 4100.0);                           // not Step Time's 4.10s (line 78)
  EXPECT_EQ(r->Loss(30), 6.9917);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 71.305e9);  // line 77, mem-max-reserved-gigabytes
  // 16 / (2 x 2) = 4 replicas; 128 / (1 x 4) = 32 micro-batches (line 1 says 32).
  EXPECT_EQ(r->m()["config"]["dp"], 4);
  EXPECT_EQ(r->m()["config"]["gas"], 32);
  // The line at 10 spans iterations 1-10 and is the warm-up; 20 iterations of 128 x 8192 tokens
  // in 10 x 4.100 + 10 x 4.120 s: 255128.0 tokens/s, 15945.5 a GPU.
  EXPECT_EQ(r->m()["throughput"]["measured_steps"], 20);
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["tokens_per_s"].get<double>(),
                   20 * 128 * 8192 / (10 * 4.1 + 10 * 4.12));
  EXPECT_DOUBLE_EQ(r->PerDevice(), 20 * 128 * 8192 / (10 * 4.1 + 10 * 4.12) / 16);
}

TEST(Corpus, MegatronFlOnAscendWithMicrosecondStamps) {
  // Megatron-LM-FL (core 0.18.2) under FlagScale on one Ascend NPU: "[default0]: [... .987995]"
  // before each line; consumed samples 96 = 3 x 32 agrees with --log-interval 1.
  Result<Read> r = ReadLog("megatron_fl_core0182_ascend_default0.log", "megatron");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(r->Loss(3), 11.07468);  // 1.107468E+01
  EXPECT_EQ(r->Loss(4), 10.44366);
  EXPECT_EQ(r->At(4)->ms, 24386.9);
  EXPECT_EQ(r->At(4)->span, 1);
  EXPECT_EQ(r->At(4)->samples, 32);
  EXPECT_EQ(r->At(3)->grad_norm, 30.066);  // not num zeros 1299.0 or params norm 496.206
}

TEST(Corpus, MegatronGluedMemoryReportsOfTwoRanks) {
  // Line 8 holds rank 4's report_memory print and, glued to its end without a newline, rank 0's;
  // lines 10-11 are ranks 2 and 6. The peak is rank 0's max reserved, 31086.0 MiB (not rank 4's
  // 21534.0, nor rank 2's 25890.0 on the next line).
  Result<Read> r = ReadLog("megatron_infini_4090_glued_memory_reports.log", "megatron");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 31086.0 * kMiB);
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(r->Loss(1), 10.45013);  // line 12: 1.045013E+01
  EXPECT_EQ(r->At(1)->ms, 33186.0);
  EXPECT_EQ(r->Loss(10), 9.619979);  // line 21
  EXPECT_EQ(r->At(10)->ms, 25836.8);
  EXPECT_EQ(r->At(10)->samples, 128);  // global batch size; consumed samples 1280 = 10 x 128
  EXPECT_EQ(r->At(10)->grad_norm, 26.519);
}

TEST(Corpus, MegatronSelectedLinesAreNoCore016FirstInterval) {
  // A README's pick of lines 1, 100, 400 and 600 of a --log-interval 1 run (no global batch
  // size printed). The gaps 99, 300, 200 make "300" the interval; 400 is off it and 600 on it,
  // but 400 follows the line at 100 by a whole interval: not a resumed run's first line, so
  // 600's line keeps its own numbers (line 4: 76.0 ms, 8.372381E-01).
  Result<Read> r = ReadLog("megatron_primus_bridge_dp8_selected_lines.log", "megatron");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 100, 400, 600}));
  EXPECT_EQ(r->At(600)->ms, 76.0);
  EXPECT_EQ(r->Loss(600), 0.8372381);
  EXPECT_EQ(r->At(600)->span, 200);
  // Samples per step from consumed samples: (4800 - 3200) / 200 = 8; line 1: 8 / 1.
  EXPECT_EQ(r->At(600)->samples, 8);
  EXPECT_EQ(r->At(1)->samples, 8);
  EXPECT_FALSE(r->Note("does not reset its timers"));
  ASSERT_EQ(r->log.evals.size(), 1u);
  EXPECT_EQ(r->log.evals[0].step, 600);  // line 5, "on validation set" after training
  EXPECT_EQ(r->log.evals[0].value, 0.3852793);
}

TEST(Corpus, MegatronElisionMarksBetweenLinesLeaveTheInterval) {
  // A notes page quotes a --log-interval 100 run (GBS 8, fp16), its author's `...` lines (4, 10,
  // 16, 23, 29) leaving iterations out: the lines after them (1000, 2000, 2900, 4000, 4800)
  // average iterations 901-1000 and so on, 100 like the unmarked gaps (1000-1100, 2000-2100,
  // 2900-3000-3100, 4000-4100, 4800-4900-5000), not the 900, 800 and 700 between the lines.
  // The sequence length (1024, the page's argument block) is not in the excerpt: set here.
  Result<Read> r =
      ReadLog("megatron_345m_fp16_ellipsis_between_lines.log", "megatron", {{"mpe", 1024}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{100, 1000, 1100, 2000, 2100, 2900, 3000, 3100, 4000,
                                              4100, 4800, 4900, 5000}));
  for (const Iteration& it : r->log.iterations) EXPECT_EQ(it.span, 100) << it.step;
  EXPECT_TRUE(r->Note("elision mark"));
  EXPECT_EQ(r->Loss(100), 9.729805);  // line 2, 16 of its 100 iterations skipped
  EXPECT_EQ(r->At(100)->skipped, 16);
  EXPECT_EQ(r->Loss(1000), 5.544420);  // line 5
  EXPECT_EQ(r->At(2900)->ms, 531.2);   // line 17
  // Iteration 100's line is the warm-up; the 12 lines after it, 100 iterations of 8 x 1024
  // tokens each.
  EXPECT_EQ(r->m()["throughput"]["measured_steps"], 1200);
  const double ms =
      Sum({283.9, 291.7, 292.5, 373.8, 531.2, 290.9, 289.2, 286.2, 290.9, 318.3, 288.0, 287.0});
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["tokens_per_s"].get<double>(),
                   1200 * 8 * 1024 / (100 * ms / 1000));
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 8786.0 * kMiB);  // line 3, max reserved
  // Lines 7, 13, 20, 26, 34; the end-of-training val and test lines (38, 41) name no iteration.
  ASSERT_EQ(r->log.evals.size(), 5u);
  EXPECT_EQ(r->log.evals[0].step, 1000);
  EXPECT_EQ(r->log.evals[0].value, 6.439325);
  EXPECT_EQ(r->log.evals[4].step, 5000);
  EXPECT_EQ(r->log.evals[4].value, 8.208897);
}

TEST(Corpus, MegatronDeepSpeedElidedLinesAreNotInTheTokenGrowth) {
  // BigScience's 176B chronicles quote --log-interval 1 lines 31214-31222, `[...]` (line 10),
  // then 31250 and 31251. Line 11 averages iteration 31250 alone: span 1, not the 28 since
  // 31222, and no token rate from the growth of consumed tokens since line 9 (it counts the 27
  // iterations left out). Line 12's rate: (97985069056 - 97980874752) / 106.13 s.
  Result<Read> r =
      ReadLog("megatron_deepspeed_176b_spike_elided_lines.log", "megatron", {{"mpe", 2048}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 11u);
  for (const Iteration& it : r->log.iterations) EXPECT_EQ(it.span, 1) << it.step;
  EXPECT_EQ(r->At(31250)->ms, 106090.0);  // `elapsed time per iteration (s): 106.09`
  EXPECT_FALSE(r->At(31250)->tokens_per_s);
  EXPECT_DOUBLE_EQ(*r->At(31251)->tokens_per_s, 4194304 / 106.13);
  EXPECT_EQ(r->Loss(31219), 5.098124);  // line 6, the spike
  EXPECT_EQ(r->At(31219)->grad_norm, 960.351);
  // Every line is past the warm-up: 11 iterations of 2048 x 2048 tokens.
  EXPECT_EQ(r->m()["throughput"]["measured_steps"], 11);
  const double s =
      Sum({106.46, 105.90, 106.40, 106.33, 107.53, 106.36, 106.30, 106.13, 106.44, 106.09, 106.13});
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["tokens_per_s"].get<double>(), 11 * 2048 * 2048 / s);
}

TEST(Corpus, MegatronElidedGapsAreNoCore016FirstInterval) {
  // A ROCm blog post on MegaBlocks (Stanford-Megatron-LM, 2025-02, MI300X) quotes lines 100,
  // 1000 and 2000 with `...` between them (lines 5 and 11). The gaps 900 and 1000 made 1000 the
  // interval and 100 a core 0.16 first line: line 7 lost iteration 100's share (657.0 ms ->
  // 656.996). Across an elision mark the lines are not consecutive: line 7's own numbers. No
  // unmarked gap gives the interval, so the spans stay the gaps.
  Result<Read> r = ReadLog("megatron_megablocks_mi300x_elided_gaps.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{100, 1000, 2000}));
  EXPECT_EQ(r->At(1000)->ms, 657.0);
  EXPECT_EQ(r->Loss(1000), 5.360341);
  EXPECT_FALSE(r->Note("does not reset its timers"));
  ASSERT_EQ(r->log.evals.size(), 2u);
  EXPECT_EQ(r->log.evals[0].value, 5.314413);  // line 9
  EXPECT_EQ(r->log.evals[1].value, 4.583530);  // line 14
}

TEST(Corpus, MegatronModelLinkTgsBeforeTheTimers) {
  // ModelLink on DeepLink (Atlas 800T A2, 1024 NPUs): each line ends `| TFLOPs: 148.25 | tgs
  // (tokens/gpu/second): 353.02 time (ms)`, the timers' `time (ms)` on the same line and no ` |`
  // after the tgs. tgs = 2048 x 4096 tokens / 23.2052 s / 1024 = 353.02 (line 1), / 23.1123 s =
  // 354.44 (line 2).
  Result<Read> r = ReadLog("megatron_modellink_deeplink_tgs_time_ms.log", "megatron");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1665, 1666}));
  EXPECT_EQ(r->At(1665)->tokens_per_device_per_s, 353.02);
  EXPECT_EQ(r->At(1666)->tokens_per_device_per_s, 354.44);
  EXPECT_NEAR(2048.0 * 4096 / 23.1123 / 1024, 354.44, 0.005);
  EXPECT_EQ(r->Loss(1666), 1.915679);  // 1.915679E+00
  EXPECT_EQ(r->At(1666)->ms, 23112.3);
  EXPECT_EQ(r->m()["config"]["mpe"], 4096);  // actual seqlen
}

TEST(Corpus, MegatronDeepSpeedAlcfTgsWithoutSpace) {
  // argonne-lcf Megatron-DeepSpeed (April 2024, Sunspot): `tokens per gpu per second(tgs):
  // 633.832 |`, no space before "(tgs)", between DeepSpeed's step and timer lines. 96 x 4096
  // tokens / 25.8491 s / 633.832 = 24.0 ranks (line 6), / 20.2983 s / 807.159 = 24.0 (line 11).
  Result<Read> r = ReadLog("megatron_deepspeed_alcf_tgs_no_space.log", "megatron");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r->At(1)->tokens_per_device_per_s, 633.832);
  EXPECT_EQ(r->At(2)->tokens_per_device_per_s, 807.159);
  EXPECT_NEAR(96.0 * 4096 / 20.2983 / 24, 807.159, 0.01);  // the printed time is rounded
  EXPECT_EQ(r->Loss(2), 25.37718);  // 2.537718E+01, the loss jumping at iteration 2
  EXPECT_EQ(r->m()["config"]["mpe"], 4096);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 46764.0 * kMiB);  // line 5, max reserved
}

TEST(Corpus, MegatronAwsParameterLineAndSkippedStart) {
  Result<Read> r = ReadLog("megatron_aws_tp8_all_skipped.log", "megatron", {{"mpe", 4096}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(r->m()["loss"].is_null());
  EXPECT_EQ(r->m()["model"]["parameters"], 941594624);  // line 4, the one rank printed
  // Lines 12-13: iterations 2-3, 288 samples each (4096 tokens set here).
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["tokens_per_s"].get<double>(),
                   2 * 288 * 4096 / (Sum({243438.3, 243344.4}) / 1000));
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());  // the log reports none
}

TEST(Corpus, MegatronDeepSpeedActualSeqlen) {
  // The checkpoint name says tp2 mb8 gb768: DP 96, 192 GPUs (48 Polaris nodes).
  Result<Read> r =
      ReadLog("megatron_deepspeed_alcf_tp2.log", "megatron", {{"layout", "TP2PP1DP96"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Loss(199), 5.905366);         // line 2
  EXPECT_EQ(r->Loss(200), 5.897035);         // line 5
  EXPECT_EQ(r->m()["config"]["mpe"], 4096);  // "actual seqlen:  4096", line 2
  // Lines 2 and 5: 768 x 4096 tokens each; the log's own tgs are 1146.733 and 1126.713.
  const double per_device = 2 * 768 * 4096 / (Sum({14287.5, 14541.4}) / 1000) / 192;
  EXPECT_DOUBLE_EQ(r->PerDevice(), per_device);
  EXPECT_NEAR(per_device, 2 / (1 / 1146.733 + 1 / 1126.713), 0.01);
  // No report_memory line; DeepSpeed's timer lines 1 and 4: MaxMemAllocated=19.52GB (GiB).
  EXPECT_DOUBLE_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 19.52 * kGiB);
  EXPECT_EQ(r->m()["memory"]["source"],
            "MaxMemAllocated (DeepSpeed ThroughputTimer; allocated, not reserved)");
}

TEST(Corpus, MegatronDeepSpeedTimeInSeconds) {
  // BigScience Megatron-DeepSpeed prints `elapsed time per iteration (s)`; 96 sequences a
  // step. The unit checks against the line's own rate: 96 / 7.2310 = 13.276 samples/s (line 1).
  Result<Read> r = ReadLog("megatron_deepspeed_juwels_seconds.log", "megatron", {{"mpe", 2048}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 20, 30, 40, 50}));
  EXPECT_DOUBLE_EQ(*r->At(10)->ms, 7231.0);  // 7.2310 s, line 1
  EXPECT_DOUBLE_EQ(*r->At(20)->ms, 5355.1);  // line 2
  EXPECT_DOUBLE_EQ(*r->At(50)->ms, 5324.7);  // line 5
  EXPECT_NEAR(96 / (*r->At(10)->ms / 1000), 13.276, 0.001);
  EXPECT_NEAR(96 / (*r->At(40)->ms / 1000), 18.014, 0.001);  // line 4
  EXPECT_EQ(r->Loss(10), 10.10967);                          // 1.010967E+01
  EXPECT_EQ(*r->At(30)->samples, 96);
}

TEST(Corpus, MegatronDeepSpeedPipelineEngineSkippedStepsFromTheStepLines) {
  // Megatron-DeepSpeed with its DeepSpeed pipeline engine, fp16: the engine's `step=1, skipped=1,
  // lr=[0.0, 0.0]` (line 1) and the loss scale's halving (line 2) say step 1 was skipped, while
  // Megatron's iteration line (line 4) prints `number of skipped iterations:   0` (train_step
  // returns skipped_iter = 0 for the pipeline engine). Steps 2 and 3: skipped=1 still, none.
  for (const char* format : {"auto", "megatron"}) {
    Result<Read> r = ReadLog("megatron_deepspeed_pipe_engine_skipped_step1.log", format);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->log.format, "megatron");
    EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3}));
    EXPECT_EQ(r->At(1)->skipped, 1);
    EXPECT_EQ(r->At(2)->skipped, 0);
    EXPECT_EQ(r->At(3)->skipped, 0);
    EXPECT_EQ(r->m()["provenance"]["skipped_iterations"], 1);
    EXPECT_EQ(r->Loss(1), 10.65542);           // lm loss: 1.065542E+01, line 4
    EXPECT_DOUBLE_EQ(*r->At(3)->ms, 1250.2);   // line 10
    EXPECT_EQ(*r->At(2)->samples, 32);         // global batch size, line 7
    EXPECT_EQ(r->m()["config"]["mpe"], 2048);  // actual seqlen
    EXPECT_TRUE(
        r->Note("megatron_deepspeed_pipe_engine_skipped_step1.log:1: DeepSpeed's "
                "`step=N, skipped=K` lines count skipped steps"));
  }
}

TEST(Corpus, FlagScaleOneIterationGivesLossNotSpeed) {
  Result<Read> r = ReadLog("flagscale_openseek_first_iteration.log", "flagscale", {{"mpe", 4096}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Loss(1), 11.92634);  // behind "[default0]: "
  EXPECT_TRUE(r->m()["throughput"]["tokens_per_s"].is_null());
  EXPECT_TRUE(
      r->Note("token/p/s: no timed step after the first 1 warm-up steps (1 records up "
              "to step 1): set excluded_warmup_steps to 0 or less"));
  r = ReadLog("flagscale_openseek_first_iteration.log", "flagscale",
              {{"mpe", 4096}, {"layout", "TP1PP1DP64"}, {"excluded_warmup_steps", 0}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->PerDevice(), 1024 * 4096 / 271.607 / 64);
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());  // the log reports none
}

TEST(Corpus, MegatronCore016FirstIntervalAveragesFromIterationOne) {
  Result<Read> r = ReadLog("megatron_core016_first_interval.log", "megatron");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 10, 20, 30}));
  // Line 21 averages iterations 1-10 (1800 ms, loss 10.05) and line 19 is iteration 1
  // (9000 ms, loss 10.5): iterations 2-10 took (10 x 1800 - 9000) / 9 = 1000 ms and
  // averaged (10 x 10.05 - 10.5) / 9 = 10.0.
  EXPECT_EQ(r->At(10)->span, 9);
  EXPECT_NEAR(*r->At(10)->ms, 1000.0, 1e-9);
  EXPECT_NEAR(*r->Loss(10), 10.0, 1e-9);
  EXPECT_EQ(r->Loss(30), 9.0);
  // Iterations 2-30 at 1000 ms, 64 x 4096 tokens, 8 GPUs: 32768 per device. (Reading
  // line 21 as iterations 2-10 at 1800 ms would give 29 x 262144 / 36.2 / 8.)
  EXPECT_NEAR(r->PerDevice(), 64.0 * 4096 / 8, 1e-6);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 44032.0 * kMiB);  // line 20
  EXPECT_EQ(r->m()["model"]["parameters"], 1235814400);       // line 17
  EXPECT_EQ(r->m()["config"]["precision"], "bf16");
  EXPECT_TRUE(
      r->Note("megatron_core016_first_interval.log:21: iteration 10's line averages "
              "iterations 1-10"));
}

TEST(Corpus, MegatronMainSkippedIterationPrintsZeroLoss) {
  Result<Read> r = ReadLog("megatron_main_fp16_gtp_crash.log", "megatron");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_FALSE(r->Loss(3)) << "line 22: 'lm loss: 0.000000E+00' with 1 skipped iteration";
  EXPECT_EQ(r->m()["loss"]["min"], 10.1);  // line 24, not 0
  EXPECT_FALSE(r->Loss(6));                // line 26, cut before its loss
  // (tensor, gtp_weight_remat, pipeline) lines 16-19: 4 x 100663296.
  EXPECT_EQ(r->m()["model"]["parameters"], 4 * 100663296);
  EXPECT_EQ(r->m()["config"]["devices"], 8);  // world_size
  EXPECT_EQ(r->m()["config"]["precision"], "fp16");
  // Iterations 2-6 (6's elapsed time precedes the cut), 16 x 2048 tokens, 8 devices.
  EXPECT_DOUBLE_EQ(r->PerDevice(),
                   5 * 16 * 2048 / (Sum({1000.0, 990.0, 1010.0, 1000.0, 1005.0}) / 1000) / 8);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 31744.0 * kMiB);  // line 25
}

TEST(Corpus, MegatronRankPrefixesCrashAndResume) {
  Result<Read> r = ReadLog("megatron_srun_ranks_resumed.log", "megatron");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 20, 30, 40}));
  EXPECT_EQ(r->log.restarts, 1);
  EXPECT_EQ(r->At(30)->ms, 10500.0);  // the resumed run's line 31, not the cut line 24
  EXPECT_EQ(r->Loss(30), 7.1);
  EXPECT_DOUBLE_EQ(r->m()["loss"]["final"].get<double>(), (9.0 + 8.0 + 7.1 + 6.5) / 4);
  EXPECT_EQ(r->m()["model"]["parameters"], 7e9);  // ranks (0,0) and (1,0), printed twice
  // Iterations 11-40 (20, 30 resumed, 40), 64 x 2048 tokens, TP2 on 2 GPUs.
  EXPECT_DOUBLE_EQ(r->PerDevice(), 30 * 64 * 2048 / (Sum({100.0, 105.0, 100.0})) / 2);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 53000.0 * kMiB);  // rank 1, line 20
}

// ---- DeepSpeed ------------------------------------------------------------

TEST(Corpus, DeepSpeedExcerptFromMidRunSkippedCount) {
  // ChatGLM-Finetuning#12: DeepSpeed timer lines, the script's `loss:x, global_step:N` after
  // them, engine lines every 10 steps from step=170. skipped=21 at line 3 is DeepSpeed's count
  // since the run's start (fp16 loss scaling's early skips); the excerpt starts at 160, so none
  // is put on the 161-170 record, and the later lines add nothing (21, 21, 21).
  Result<Read> r = ReadLog("deepspeed_chatglm_ft_issue12_skipped_midrun.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "deepspeed");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{160, 170, 180, 190}));
  EXPECT_EQ(r->Loss(160), 0.92626953125);  // line 2
  EXPECT_EQ(r->Loss(190), 0.74072265625);  // line 11
  EXPECT_EQ(r->At(170)->skipped, 0);
  EXPECT_EQ(r->At(170)->span, 10);
  EXPECT_EQ(r->m()["provenance"]["skipped_iterations"].get<int64_t>(), 0);
  EXPECT_DOUBLE_EQ(*r->At(170)->samples_per_s, 0.9075004102820523);  // CurrSamplesPerSec
  EXPECT_DOUBLE_EQ(*r->log.peak_memory_bytes, 24.74 * kGiB);         // MaxMemAllocated=24.74GB
  bool noted = false;
  for (const std::string& n : r->log.notes)
    noted = noted || n.find(":3: skipped=21 counts the run's skipped steps") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Corpus, DeepSpeedLossLinesCountingStepsWithinEachEpoch) {
  // TRACE#5: a DeepSpeed script's bar descriptions `Epoch 1, Step 0, Loss: 0.9741` (TRACE's
  // model/base_model.py train_one_task: `step` of `enumerate(train_dataloader)`, from 0 in every
  // epoch; `refresh=False`, so each shows on the next micro-batch's drawing). Epoch 1's steps
  // 0-7 (lines 6-12, and 14 after `Beginning of Epoch 2/18`) are read as steps 1-8; `Epoch 2, Step
  // 0` (line 15) starts again: it and the lines after are left out, with a note, rather than read
  // as steps 1-6 again (they used to be dropped without a word, the first loss of a step kept).
  Result<ParsedLog> log = logparse::ParseDeepSpeedLog(
      testing::ReadTestData("logs/deepspeed_trace_epoch_step_counter_issue5.log"),
      "deepspeed_trace_epoch_step_counter_issue5.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_EQ(log->iterations.size(), 8u);
  const double losses[] = {0.9741, 1.3742, 1.2390, 0.9670, 1.0386, 1.1681, 1.2240, 0.9610};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(log->iterations[i].step, i + 1);
    EXPECT_EQ(log->iterations[i].loss, losses[i]) << i;
  }
  EXPECT_EQ(log->iterations[7].line, 14);
  EXPECT_NE(std::find(log->notes.begin(), log->notes.end(),
                      "deepspeed_trace_epoch_step_counter_issue5.log:15: the loss lines count "
                      "their steps within each epoch (a later epoch starts again at step 0): the "
                      "optimizer steps of this line and those after are not known, their losses "
                      "are left out"),
            log->notes.end());
}

TEST(Corpus, DeepSpeed07RunningAverageWithoutGlobalStep) {
  // "0/40, RunningAvgSamplesPerSec=229.93929267351086" (line 6) belongs to step=40 (line 5).
  // SQuAD's 384 tokens set here; the device count is not in the excerpt.
  Result<Read> r = ReadLog("deepspeed_0.7_running_avg_old_timer.log", "deepspeed", {{"mpe", 384}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{20, 30, 40}));
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["tokens_per_s"].get<double>(), 229.93929267351086 * 384);
  EXPECT_EQ(r->m()["throughput"]["excluded_warmup_steps"], 2);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 15.06 * kGiB);
  EXPECT_TRUE(r->m()["loss"].is_null());
  EXPECT_EQ(r->At(20)->samples_per_s, 227.48090316379353);  // CurrSamplesPerSec, line 2
}

TEST(Corpus, DeepSpeedSamplesPerSecBefore07) {
  Result<Read> r = ReadLog("deepspeed_issue1825_samples_per_sec.log", "deepspeed", {{"mpe", 512}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{40, 50}));
  // Line 14: "0/50, SamplesPerSec=83.73838805358588" (the running average); 512 set here.
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["tokens_per_s"].get<double>(), 83.73838805358588 * 512);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 9.02 * kGiB);
  // The issue's case: excluded_warmup_steps = 0 cannot be honoured, and the message says
  // which setting does help.
  r = ReadLog("deepspeed_issue1825_samples_per_sec.log", "deepspeed",
              {{"mpe", 512}, {"excluded_warmup_steps", 0}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "excluded_warmup_steps = 0, but deepspeed_issue1825_samples_per_sec.log times no step "
            "of its own: its only timing is DeepSpeed's SamplesPerSec (ThroughputTimer before "
            "0.7: the running average of the steps after the first 2) "
            "(deepspeed_issue1825_samples_per_sec.log:14), which sets its own window: leave "
            "excluded_warmup_steps unset (-1)");
}

TEST(Corpus, DeepSpeedZero3TwoLinesNeedTheSequenceLength) {
  // Step 25, skipped=5, SamplesPerSec=6.302019280317165: without mpe nothing is usable, and
  // the error says what to set.
  Result<Read> r = ReadLog("deepspeed_pr849_zero3_samples_per_sec.log", "deepspeed");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nothing to report: no loss and no timed step in its 1 "
                                      "records"),
            std::string::npos);
  EXPECT_NE(r.status().message().find("set mpe"), std::string::npos);
  r = ReadLog("deepspeed_pr849_zero3_samples_per_sec.log", "deepspeed", {{"mpe", 128}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["tokens_per_s"].get<double>(), 6.302019280317165 * 128);
  EXPECT_EQ(r->At(25)->skipped, 5);
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());
}

TEST(Corpus, DeepSpeedChatGradientAccumulation) {
  // micro_step=40/global_step=10: GAS 4. One NPU; max_seq_len 512 set here.
  Result<Read> r =
      ReadLog("deepspeed_chat_npu_gas4.log", "deepspeed", {{"mpe", 512}, {"layout", "TP1PP1DP1"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 450, 460, 470}));
  EXPECT_EQ(r->At(10)->skipped, 4);                            // line 13: skipped=4
  EXPECT_DOUBLE_EQ(r->PerDevice(), 25.721826080545203 * 512);  // line 23
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 38.49 * kGiB);
  EXPECT_TRUE(r->m()["loss"].is_null());  // "Epoch 1/1 with loss 0.66" names no step
}

TEST(Corpus, DeepSpeedScriptLossLinesCountingMicroBatches) {
  // SLAM-LLM under DeepSpeed with gradient accumulation 2: its "Training Epoch: 1/10, step 1100
  // ... (loss: ...)" lines (1, 2) count micro-batches, and the engine's next line (3) is at
  // step=600 (line 4: micro_step=1200/global_step=600). The losses are not step 1000's and
  // 1100's: left out, with a note; the engine's step 600 stays. The excerpt states no sequence
  // length: 1024 set here.
  Result<Read> r = ReadLog("deepspeed_slamllm_micro_batch_steps.log", "deepspeed", {{"mpe", 1024}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{600}));
  EXPECT_FALSE(r->Loss(600));
  EXPECT_EQ(r->At(600)->samples_per_s, 56.79136995208808);  // line 4, CurrSamplesPerSec
  EXPECT_EQ(r->At(600)->lr, 9.26050416794548e-05);          // line 3
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(r->log.trainer_average->samples_per_s, 51.18608989565034);
  EXPECT_EQ(*r->log.peak_memory_bytes, 43.28 * kGiB);  // MaxMemAllocated
  bool noted = false;
  for (const std::string& n : r->log.notes)
    noted |= n.find(
                 "deepspeed_slamllm_micro_batch_steps.log:2: the loss lines number their "
                 "steps with the script's own counter") != std::string::npos &&
             n.find(
                 "optimizer steps (deepspeed_slamllm_micro_batch_steps.log:3, a step line or an "
                 "fp16 'Grad overflow on iteration N') is step 600") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Corpus, DeepSpeedScriptLossLinesCountingFromZero) {
  // TUNiB's ZeRO tutorial prints "step:{i}, loss:{loss}" after engine.step() for i from 0
  // (enumerate(data_loader)), every 10 batches: "step:0" (line 2) is optimizer step 1's loss,
  // "step:300" (line 54) step 301's. No engine line (steps_per_print 1e10).
  Result<Read> r = ReadLog("deepspeed_tunib_zero1_step0_loss_lines.log", "deepspeed");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 31u);  // i = 0, 10, ..., 300
  EXPECT_EQ(r->Steps().front(), 1);
  EXPECT_EQ(r->Steps().back(), 301);
  EXPECT_EQ(r->Loss(1), 5.453125);      // line 2, step:0
  EXPECT_EQ(r->Loss(11), 3.650390625);  // line 13, step:10
  EXPECT_EQ(r->Loss(301), 3.48828125);  // line 54, step:300
  EXPECT_EQ(r->At(10), nullptr);
  EXPECT_EQ(r->At(11)->line, 13);
  // The loss scaler's OVERFLOW lines (no engine line counts them): line 1 (the hysteresis one)
  // before step:0 is step 1 skipped; lines 3-12 before step:10 steps 2-11; lines 14-23 before
  // step:20 steps 12-21; lines 25-26 before step:30 two of steps 22-31. The scale halves with each
  // from 2^32 (line 3) to 1024 (line 26): 20 reductions after the hysteresis.
  EXPECT_EQ(r->At(1)->skipped, 1);
  EXPECT_EQ(r->At(11)->skipped, 10);
  EXPECT_EQ(r->At(21)->skipped, 10);
  EXPECT_EQ(r->At(31)->skipped, 2);
  EXPECT_EQ(r->At(41)->skipped, 0);
  EXPECT_EQ(r->m()["provenance"]["skipped_iterations"], 23);
  bool noted = false;
  for (const std::string& n : r->log.notes)
    noted |= n.find(
                 "deepspeed_tunib_zero1_step0_loss_lines.log:2: the loss lines count steps "
                 "from 0") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Corpus, DeepSpeedFp16OverflowLinesBetweenTrainerBars) {
  // The Trainer under DeepSpeed fp16 with no engine step line: the loss scaler's OVERFLOW line
  // glued after bar 378 (line 2) is step 379's, the one after bar 379 (line 4) step 380's
  // (engine.step() prints it before the bar moves on). Bar 380/2724 (line 6) ends its line before
  // tqdm.write's clear line (line 7) and the dict (line 8): step 380, with both skips. The
  // overflows after bars 380-382 (lines 10, 12, 14) are steps 381-383, past the last dict.
  for (const char* format : {"auto", "deepspeed", "trainer"}) {
    Result<Read> r = ReadLog("deepspeed_fp16_overflow_lines_trainer_bars_issue534.log", format);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->log.format, std::string(format) == "trainer" ? "trainer" : "deepspeed");
    EXPECT_EQ(r->Steps(), (std::vector<int64_t>{380}));
    EXPECT_EQ(r->Loss(380), 2.0491);
    EXPECT_EQ(r->At(380)->lr, 0.0001961913563176343);
    EXPECT_EQ(r->At(380)->skipped, 2);
    EXPECT_EQ(r->m()["provenance"]["skipped_iterations"], 2);
    EXPECT_TRUE(
        r->Note("deepspeed_fp16_overflow_lines_trainer_bars_issue534.log:10: 3 fp16 "
                "overflow line(s)"));
  }
}

TEST(Corpus, DeepSpeedTrainerDefaultLoggingStepsFromTheBarAndStepLine) {
  // The engine's step=2000 (line 4, glued after the bar 1999/24128) numbers the next dict (line
  // 6); the three dicts before it (lines 1-3), below that bar, are placed by logging_steps 500
  // (transformers' default, not stated), the one value the bar bounds allow. Epochs check it at
  // 24128 steps an epoch: 500 / 24128 = 0.0207 -> 0.02, 1500 -> 0.062 -> 0.06, 2000 -> 0.083 ->
  // 0.08, 2500 -> 0.104 -> 0.1. skipped=1995 counts from the run's start, and the record at 2000
  // spans 1501-2000: not attributed. The old timer's SamplesPerSec (line 5) is the running average
  // through step 2000.
  Result<Read> r =
      ReadLog("deepspeed_trainer_default_logging500_bar_glued_step_issue14531.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "deepspeed");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{500, 1000, 1500, 2000, 2500}));
  EXPECT_EQ(r->Loss(500), 6.2645);  // line 1
  EXPECT_EQ(r->Loss(2000), 0.0);    // line 6
  EXPECT_EQ(r->At(2000)->lr, 0.001);
  EXPECT_EQ(r->At(2000)->skipped, 0);
  EXPECT_EQ(r->At(2500)->line, 7);
  EXPECT_TRUE(r->Note("numbered by logging_steps 500"));
  EXPECT_TRUE(r->Note("skipped=1995 counts the run's skipped steps from its start"));
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(r->log.trainer_average->samples_per_s, 9.526738918021234);
  EXPECT_EQ(r->log.trainer_average->through_step, 2000);
}

TEST(Corpus, DeepSpeed010LossLinesWithoutStep) {
  // HelloDeepSpeed: "[Rank 0] Loss: 10.8766" after step=10; max_seq_length 128 is the
  // script's default (not in the log).
  Result<Read> r = ReadLog("deepspeed_0.10_hello_bert_fp16.log", "deepspeed", {{"mpe", 128}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 20, 30, 40}));
  EXPECT_EQ(r->Loss(10), 10.8766);  // line 79
  EXPECT_EQ(r->Loss(20), 10.868);   // line 100
  EXPECT_EQ(r->Loss(30), 10.7828);  // line 112
  EXPECT_EQ(r->Loss(40), 10.6658);  // line 124
  EXPECT_EQ(r->At(10)->skipped, 10);
  EXPECT_EQ(r->At(20)->skipped, 7);
  EXPECT_EQ(r->m()["config"]["precision"], "fp16");           // line 2
  EXPECT_EQ(r->m()["config"]["devices"], 1);                  // world_size, line 41
  EXPECT_DOUBLE_EQ(r->PerDevice(), 165.2798057710019 * 128);  // line 123
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 1.55 * kGiB);     // line 123
}

TEST(Corpus, DeepSpeedChatDpoStepZeroAndEvaluationLoss) {
  // DeepSpeed 0.16.2, DeepSpeed-Chat step 2 DPO on 8 GPUs; max_seq_len 512 set here.
  Result<Read> r = ReadLog("deepspeed_0.16_chat_dpo_step0_eval.log", "deepspeed", {{"mpe", 512}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Line 9, the engine's start-up `step=0, skipped=0` before its config print, is no
  // record; steps 10-50 are lines 424, 446, 468, 490, 512.
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 20, 30, 40, 50}));
  // Line 321, `chosen: 0.0, rejected: 0.0, loss: 0.693359375`, is the evaluation printed
  // after `***** Evaluating rewards` (line 320): no step gets it, no step has a loss.
  for (int64_t step : r->Steps()) EXPECT_FALSE(r->Loss(step)) << step;
  EXPECT_TRUE(r->m()["loss"].is_null());
  EXPECT_EQ(r->At(10)->skipped, 4);                        // skipped=4 at line 424, from 0
  EXPECT_EQ(r->At(20)->skipped, 0);                        // still 4 at line 446
  EXPECT_EQ(r->At(10)->samples_per_s, 50.86885115471782);  // line 425
  EXPECT_EQ(*r->At(50)->lr, 4.995290485881111e-05);        // line 512
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 8.61 * kGiB);  // MaxMemAllocated=8.61GB
  EXPECT_EQ(r->m()["config"]["devices"], 8);               // world_size 8, line 127
  EXPECT_EQ(r->m()["config"]["precision"], "fp16");        // line 83
  // Line 513: RunningAvgSamplesPerSec=46.658721893844756 over 8 GPUs, x 512 tokens.
  EXPECT_NEAR(r->PerDevice(), 46.658721893844756 * 512 / 8, 1e-9);
}

TEST(Corpus, DeepSpeedChatPpoActorAndCriticEngines) {
  // DeepSpeed-Chat step 3: the actor's and then the critic's engine print `step=N,
  // skipped=K` for each N (lines 54 and 56, ..., 446 and 448); only the actor has a timer line.
  Result<Read> r = ReadLog("deepspeed_0.9_chat_ppo_actor_critic.log", "deepspeed", {{"mpe", 512}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  // 10 records (10, 20, ..., 100): none from the 0-based `epoch: 0|step: S|...` PPO lines.
  std::vector<int64_t> steps;
  for (int64_t s = 10; s <= 100; s += 10) steps.push_back(s);
  EXPECT_EQ(r->Steps(), steps);
  // The actor's counts (lines 54, 98, 142, ..., 446): 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, so the
  // increases are 4, 1, 0, 0, 0, 1, 0, 0, 0, 1 = 7; the critic's (3, 3, 4, ..., 5) are left out.
  const std::vector<int64_t> skipped = {4, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  int64_t total = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(r->At(steps[i])->skipped, skipped[i]) << steps[i];
    total += r->At(steps[i])->skipped;
  }
  EXPECT_EQ(total, 7);
  EXPECT_EQ(*r->At(10)->lr, 5.79e-07);  // the actor's lr at line 54, not the critic's 3.5e-07
  // act_loss is not a loss: no record has one.
  for (int64_t step : r->Steps()) EXPECT_FALSE(r->Loss(step)) << step;
  EXPECT_TRUE(r->Note("deepspeed_0.9_chat_ppo_actor_critic.log:13: DeepSpeed-Chat PPO lines"));
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 20.55 * kGiB);  // MaxMemAllocated=20.55GB
  EXPECT_EQ(r->At(100)->samples_per_s, 93.22329621679403);  // line 447
}

TEST(Corpus, DeepSpeed017OnlyTrainerDictsWithStrings) {
  // One GPU, logging_steps 1; the small LLaMA's 512 tokens set here.
  Result<Read> r = ReadLog("deepspeed_0.17_trainer_dicts_only.log", "deepspeed",
                           {{"mpe", 512}, {"layout", "TP1PP1DP1"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 20u);
  EXPECT_EQ(r->Loss(1), 10.46);   // line 3: {'loss': '10.46', ...}
  EXPECT_EQ(r->Loss(20), 9.794);  // line 22
  EXPECT_DOUBLE_EQ(*r->At(1)->lr, 5e-05);
  // Line 23: train_samples_per_second '16.2' over the whole run, 2.026 x 9.874 = 20 steps.
  EXPECT_DOUBLE_EQ(r->PerDevice(), 16.2 * 512);
  EXPECT_EQ(r->m()["throughput"]["measured_steps"], 20);
  EXPECT_EQ(r->m()["wall_s"], 9.874);
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());
}

TEST(Corpus, DeepSpeed017Bfloat16Config) {
  Result<Read> r = ReadLog("deepspeed_0.17_bf16_config_info.log", "deepspeed", {{"mpe", 1024}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->m()["config"]["precision"], "bf16");  // line 2: bfloat16_config ... enabled=True
  EXPECT_EQ(r->m()["config"]["gbs"], 8);
  EXPECT_EQ(r->m()["config"]["dp"], 2);                          // world_size, line 8
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{5, 10, 15, 20}));  // --logging_steps 5, line 9
  EXPECT_EQ(r->Loss(5), 9.87);
  EXPECT_EQ(r->Loss(20), 8.21);
  EXPECT_DOUBLE_EQ(r->PerDevice(), 12.8 * 1024 / 2);      // line 14
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());  // the log reports none
}

TEST(Corpus, DeepSpeedUnfusedFp16OverflowIsASkippedStep) {
  // ADAPT (VidSwinBERT) on DeepSpeed fp16 without ZeRO, one GPU, 8 steps, steps_per_print 10: no
  // engine step line. FP16_UnfusedOptimizer's "[deepspeed] fp16 dynamic loss scale overflow!
  // Skipping step." (line 9, after "Grad overflow on iteration: 4", line 7: the 5th optimizer
  // step) is a skipped step of the script's only record, `iter: 8  global_step: 8 ... loss:
  // 10.3598 (10.4238)` (line 13; its first value, the MetricLogger's median).
  for (const char* format : {"auto", "deepspeed"}) {
    Result<Read> r = ReadLog("deepspeed_unfused_fp16_overflow_script_metric_line_2026.log", format);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->log.format, "deepspeed");
    EXPECT_EQ(r->Steps(), (std::vector<int64_t>{8}));
    EXPECT_EQ(r->Loss(8), 10.3598);
    EXPECT_EQ(r->At(8)->span, 8);
    EXPECT_EQ(r->At(8)->skipped, 1);
    EXPECT_EQ(r->m()["provenance"]["skipped_iterations"], 1);
  }
}

TEST(Corpus, DeepSpeedChatLossLinesCountMicroBatchesAgainstGradOverflowIterations) {
  // DeepSpeed-Chat step 1 (fp16 without ZeRO, FP16_Optimizer) printing its micro-batch loss every
  // 5 batches, "Time: ..., Epoch: 0, Step: 5, Rank: 0, loss = 7.7890625" (from Step 0). The
  // optimizer's own count is in its overflow lines: "Grad overflow on iteration 0" (line 6) comes
  // after Step 5 (line 4, read as step 6), iteration 1 (line 12) after Step 15, iteration 2 (line
  // 17) after Step 20, so the script's steps run 5-8 ahead: micro-batches, not optimizer steps.
  // Their losses are left out, and with no other record the log is refused, saying so.
  for (const char* format : {"auto", "deepspeed"}) {
    Result<Read> r = ReadLog("deepspeed_chat_fused_fp16_overflow_micro_batch_counter.log", format);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(
                  "deepspeed_chat_fused_fp16_overflow_micro_batch_counter.log: no DeepSpeed step "
                  "lines"),
              std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("(line 4: step 6, yet line 6 counts optimizer step 1)"),
              std::string::npos)
        << r.status().message();
  }
}

TEST(Corpus, DeepSpeedPipelineEngineLinesOnNpu) {
  // DeepSpeed 0.17.1 on Ascend NPUs running DeepSpeedExamples' pipeline-parallel CIFAR example
  // (steps_per_print 10, train_batch_size 256): after each `step=N` line, PipelineEngine's
  // `steps: N loss: x iter time (s): t samples/sec: r`, which was not read (no loss, no time).
  Result<Read> r = ReadLog("deepspeed_npu_pipe_engine_issue7380.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "deepspeed");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{110, 120, 130, 140, 150, 160}));
  EXPECT_EQ(r->At(110)->span, 10);
  EXPECT_EQ(r->Loss(110), 1.9161);   // line 2
  EXPECT_EQ(r->At(110)->ms, 580.0);  // line 2: iter time (s): 0.580
  EXPECT_EQ(r->At(110)->samples_per_s, 441.545);
  EXPECT_EQ(r->At(110)->lr, 0.001);  // line 1: lr=[0.001]
  EXPECT_EQ(r->Loss(160), 1.7061);   // line 12
  EXPECT_EQ(r->At(160)->ms, 576.0);
  EXPECT_EQ(r->At(150)->samples_per_s, 439.314);  // line 10
  EXPECT_FALSE(r->log.trainer_average);
}

// ---- transformers' Trainer, accelerate --------------------------------------

TEST(Corpus, TrainerBarThenTqdmClearLineThenDict) {
  // LLaMA-Factory on Ascend 910B (hiyouga/LlamaFactory#8439): bars 57-60/13080 one a line, then
  // tqdm.write's clear of the bar (53 spaces, line 5) on a line of its own, then the dict (line
  // 6), then the bar redrawn at 60. The bar at line 4 numbers the dict: step 60.
  Result<Read> r = ReadLog("trainer_llamafactory_issue8439_npu_clear_line.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{60}));
  EXPECT_EQ(r->Loss(60), 0.0);  // printed 0.0 (the issue's complaint), not NaN
  EXPECT_TRUE(std::isnan(*r->At(60)->grad_norm));
  EXPECT_EQ(*r->At(60)->lr, 4.510703363914373e-06);
}

TEST(Corpus, TrainerDictsFromAPullRequest) {
  Result<Read> r = ReadLog("trainer_pr35207_dicts.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(r->Loss(1), 10.5949);
  EXPECT_EQ(r->Loss(4), 8.0197);
  EXPECT_EQ(r->Loss(6), 5.8247);
  EXPECT_EQ(r->At(1)->grad_norm, 188.28981018066406);
  // No timing in six dicts: token/p/s null with a note, the loss stays.
  EXPECT_TRUE(r->m()["throughput"]["tokens_per_device_per_s"].is_null());
  EXPECT_TRUE(r->Note("times no step"));
  // Nothing in the excerpt states logging_steps: the numbering is a guess, and a note says so.
  EXPECT_TRUE(r->Note("trainer_pr35207_dicts.log: the log does not state logging_steps"));
  EXPECT_DOUBLE_EQ(r->m()["loss"]["final"].get<double>(),
                   Sum({10.5949, 8.2312, 7.8988, 8.0197, 6.0704, 5.8247}) / 6);
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());  // the log reports none
}

// A real run on the GPU machine (docs/gpu-runs run 96): 520 dicts between tqdm's
// carriage returns, the first {'loss': '10.88', ...}, the last {'loss': '3.506', ...},
// and the closing {'train_runtime': '12.27', 'train_samples_per_second': '678.3', ...}.
TEST(Corpus, TrainerRealRunOneGpu) {
  Result<Read> r =
      ReadLog("trainer_run96_h200_1gpu.log", "trainer", {{"mpe", 128}, {"layout", "TP1PP1DP1"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 520u);
  EXPECT_EQ(r->Loss(1), 10.88);
  EXPECT_EQ(r->Loss(2), 10.82);
  EXPECT_EQ(r->Loss(520), 3.506);
  // Steps 1-520 whether a bar or the count numbers a dict: before dict 2 (line 3) the only
  // bar is tqdm's redraw after dict 1 ("1/520"; it redraws at most every 0.1 s), which has
  // not moved past step 1 and numbers nothing; before dict 6 (line 7) "6/520" does.
  std::vector<int64_t> all(520);
  std::iota(all.begin(), all.end(), 1);
  EXPECT_EQ(r->Steps(), all);
  EXPECT_NEAR(r->PerDevice(), 678.3 * 128, 1e-6);         // samples/s × MPE, one GPU
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());  // the Trainer prints none
}

// The same under torchrun on 4 GPUs: rank 0's 520 dicts; the closing dict's
// samples per second count the global batch ('565.7'), shared by 4 GPUs.
TEST(Corpus, TrainerRealRunTorchrunFourGpus) {
  Result<Read> r =
      ReadLog("trainer_run96_4xh200_torchrun.log", "auto", {{"mpe", 128}, {"layout", "TP1PP1DP4"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->m()["provenance"]["trainer"], "trainer");
  ASSERT_EQ(r->log.iterations.size(), 520u);
  EXPECT_EQ(r->Loss(1), 10.88);
  EXPECT_EQ(r->Loss(520), 3.512);
  EXPECT_EQ(r->Steps().back(), 520);
  EXPECT_NEAR(r->PerDevice(), 565.7 * 128 / 4, 1e-6);
}

TEST(Corpus, TrainerDictsFromAnIssue) {
  Result<Read> r = ReadLog("trainer_dexbotic_issue41_dicts.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 8u);
  EXPECT_EQ(r->Loss(1), 0.2065);
  EXPECT_EQ(r->Loss(8), 0.2363);
  EXPECT_DOUBLE_EQ(*r->At(8)->lr, 2.0000000000000002e-07);
  EXPECT_EQ(r->m()["loss"]["min"], 0.2065);
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());                   // the log reports none
  EXPECT_TRUE(r->m()["throughput"]["tokens_per_device_per_s"].is_null());  // no timing
}

TEST(Corpus, TrainerDictsWithNanGradNormAndABar) {
  Result<Read> r = ReadLog("trainer_timemoe_issue71_nan_grad_norm.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 9u);  // line 1 is the progress bar
  EXPECT_EQ(r->Loss(1), 0.1474);
  EXPECT_TRUE(std::isnan(*r->At(1)->grad_norm));  // 'grad_norm': nan
  EXPECT_EQ(r->Loss(9), 0.173);
  EXPECT_EQ(r->At(2)->line, 3);
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());                   // the log reports none
  EXPECT_TRUE(r->m()["throughput"]["tokens_per_device_per_s"].is_null());  // no timing
}

TEST(Corpus, TrainerDictWithANanLossIsANanIteration) {
  // Four dicts, each after a tqdm bar (1/13000 before the second, 3/13000 before the fourth):
  // logging every step. Line 2's `'loss': nan` is one NaN iteration (the Trainer prints no count
  // of its own, as Megatron does), left out of the loss statistics.
  Result<Read> r = ReadLog("trainer_chatglm_ppo_issue49_nan_loss.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(r->Loss(1), 0.3290);
  ASSERT_TRUE(r->Loss(2));
  EXPECT_TRUE(std::isnan(*r->Loss(2)));
  EXPECT_EQ(r->At(2)->nan, 1);
  EXPECT_EQ(r->At(1)->nan + r->At(3)->nan + r->At(4)->nan, 0);
  EXPECT_EQ(r->Loss(4), 0.1512);
  EXPECT_EQ(r->m()["provenance"]["nan_iterations"], 1);
  EXPECT_EQ(r->m()["loss"]["min"], 0.1512);
  EXPECT_TRUE(
      r->Note("loss: 1 record(s) from trainer_chatglm_ppo_issue49_nan_loss.log:2 (step 2) "
              "have a NaN or Inf loss: counted as NaN iterations"));
}

TEST(Corpus, TrainerLoggingFirstStep) {
  Result<Read> r =
      ReadLog("trainer_logging_first_step.log", "trainer", {{"mpe", 128}, {"layout", "TP1PP1DP1"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  // logging_first_step=True (line 6), logging_steps=10 (line 7): steps 1, 10, 20, 30.
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 10, 20, 30}));
  EXPECT_FALSE(r->Note("does not state logging_steps"));  // it does
  EXPECT_EQ(r->Loss(1), 10.83);
  EXPECT_EQ(r->Loss(30), 8.102);
  EXPECT_EQ(r->m()["eval"]["val_loss"], 8.05);  // line 21
  EXPECT_EQ(r->m()["eval"]["step"], 30);
  EXPECT_EQ(r->m()["config"]["precision"], "bf16");       // line 3
  EXPECT_EQ(r->m()["config"]["lbs"], 4);                  // line 13
  EXPECT_DOUBLE_EQ(r->PerDevice(), 8.0 * 128);            // line 22: '8' samples/s
  EXPECT_EQ(r->m()["throughput"]["measured_steps"], 30);  // 2 steps/s x 15 s
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());  // the log reports none
}

TEST(Corpus, AccelerateTqdmCarriageReturns) {
  Result<Read> r =
      ReadLog("trainer_accelerate_tqdm_cr.log", "trainer", {{"mpe", 256}, {"layout", "TP1PP1DP2"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Line 6 holds the bar and four dicts between carriage returns.
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(r->Loss(1), 11.02);
  EXPECT_EQ(r->Loss(4), 10.66);
  EXPECT_EQ(r->At(4)->line, 6);
  // Counted, and said to be: in a raw capture (carriage returns kept) a bar before a dict does not
  // number it (a fast run's tqdm skips drawings, a buffered stdout's dicts come late), and these
  // dicts follow no tqdm.write clear, so no redraw after them numbers them either.
  EXPECT_TRUE(r->Note("does not state logging_steps"));
  EXPECT_DOUBLE_EQ(r->PerDevice(), 24.0 * 256 / 2);       // line 7
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());  // the log reports none
}

// ---- PaddleNLP -------------------------------------------------------------

TEST(Corpus, PaddleNlpTrainerTutorial) {
  // Two steps: PaddleNLP's own warm-up (10) leaves none; the note says what to set.
  Result<Read> r = ReadLog("paddlenlp_qwen0p5b_pretrain.log", "paddle");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Loss(1), 12.0635252);
  EXPECT_EQ(r->Loss(2), 12.05887604);
  EXPECT_TRUE(
      r->Note("no timed step after the first 10 warm-up steps (2 records up to step 2): "
              "set excluded_warmup_steps to 1 or less"));
  // Lines 1-2: max_memory_reserved 12.4834623336792 GiB (PaddleNLP divides by 2^30).
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 12.4834623336792 * kGiB);
  r = ReadLog("paddlenlp_qwen0p5b_pretrain.log", "paddle", {{"excluded_warmup_steps", 1}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Step 2: interval_tokens_per_second_per_device 4006.9441, as printed (no mpe needed).
  EXPECT_DOUBLE_EQ(r->PerDevice(), 4006.9441);
  EXPECT_DOUBLE_EQ(*r->At(2)->ms, 1000 / 3.913);
  EXPECT_DOUBLE_EQ(*r->At(2)->samples, 1.0);  // 3.913 samples/s over 3.913 steps/s
}

TEST(Corpus, PaddleModelZooIpsTotal) {
  Result<Read> r = ReadLog("paddle_gpt_model_zoo_ips.log", "paddle",
                           {{"layout", "TP1PP1DP4"}, {"excluded_warmup_steps", 1}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(r->Loss(1), 10.9871);
  EXPECT_EQ(r->Loss(5), 10.2011);
  // Steps 2-5: ips_total x avg_batch_cost tokens each, over the summed batch costs, 4 GPUs.
  const double tokens = 32768 * 0.5 + 32000 * 0.512 + 33032 * 0.496 + 32768 * 0.5;
  EXPECT_DOUBLE_EQ(r->PerDevice(), tokens / Sum({0.5, 0.512, 0.496, 0.5}) / 4);
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());  // the log reports none
}

TEST(Corpus, PaddleMixBenchmarkStepOfTotalAndMemoryInMiB) {
  // PaddleMIX's benchmark line: `global step 95 / 22140` (the step of max_steps), avg_batch_cost
  // the time per step, avg_samples one device's batch (its train_batch_size: not the global
  // batch, which the line does not state), memory in MiB (`// (1024 ** 2)`).
  Result<Read> r = ReadLog("paddle_paddlemix_benchmark_global_step_of_mib_pr342.log", "auto", {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "paddle");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{95}));
  EXPECT_EQ(r->Loss(95), 1.780640);
  EXPECT_DOUBLE_EQ(*r->At(95)->ms, 674.39);
  EXPECT_FALSE(r->At(95)->samples.has_value());
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 26397.0 * kMiB);  // max_mem_reserved
}

TEST(Corpus, PaddleErnieSpeedAndIpsInSequences) {
  // ERNIE-1.0's run_pretrain.py: speed in steps/s, ips = speed x global_batch_size (its code),
  // so a step takes 1 / speed and holds ips / speed sequences: 2.97 / 0.37 = 8.03 and
  // 27.60 / 3.45 = 8.0, both 8 once the prints' rounding is allowed for. The sequence length
  // (512) and one GPU are set here; the log gives neither.
  Result<Read> r = ReadLog("paddle_ernie_speed_ips_issue5119.log", "auto",
                           {{"mpe", 512}, {"layout", "TP1PP1DP1"}, {"excluded_warmup_steps", 1}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "paddle");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(r->Loss(1), 6.218822);
  EXPECT_EQ(r->Loss(5), 5.641168);
  EXPECT_DOUBLE_EQ(*r->At(1)->ms, 1000 / 0.37);
  EXPECT_DOUBLE_EQ(*r->At(2)->ms, 1000 / 3.45);
  EXPECT_EQ(r->At(1)->samples, 8.0);
  EXPECT_EQ(r->At(5)->samples, 8.0);  // 28.05 / 3.51
  // Steps 2-5: 8 sequences of 512 tokens each, over the four steps' 1 / speed.
  EXPECT_DOUBLE_EQ(r->PerDevice(), 4 * 8 * 512 / (1 / 3.45 + 1 / 3.53 + 1 / 3.46 + 1 / 3.51));
}

TEST(Corpus, PaddleErnieValidStepsAreNotTraining) {
  Result<Read> r = ReadLog("paddle_ernie_valid_steps_issue3867.log", "paddle");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{2000, 3000, 4000}));  // not the valid steps
  EXPECT_EQ(r->Loss(3000), 7.211366);  // line 3, not line 4's valid loss 7.004147
  EXPECT_EQ(r->At(3000)->span, 1000);
  EXPECT_DOUBLE_EQ(*r->At(4000)->ms, 1000 / 2.89);
  EXPECT_EQ(r->At(2000)->samples, 32.0);  // 92.20 / 2.88 = 32.01
}

TEST(Corpus, Paddlenlp24IntervalSamplesAreOneStepsOverTheInterval) {
  // PaddleNLP 2.4's trainer_base.py passes num_samples = train_batch_size x accumulation (one
  // step's) over num_steps = the interval: 5.17 / 6.463 = 0.80 = 8 / 10 (line 10). The batch is
  // line 5's `Total train batch size (w. parallel, distributed & accumulation) = 8`.
  Result<Read> r = ReadLog("paddlenlp24_trainer_interval10_eval.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "paddle");
  EXPECT_EQ(r->Steps(),
            (std::vector<int64_t>{10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130}));
  EXPECT_EQ(r->Loss(10), 3.25806541);  // line 9
  EXPECT_EQ(r->Loss(130), 2.0772438);  // line 31
  EXPECT_EQ(r->At(20)->span, 10);
  EXPECT_EQ(r->At(20)->samples, 8.0);
  EXPECT_EQ(r->At(110)->samples, 8.0);
  EXPECT_EQ(r->log.facts.at("gbs").line, 5);
  EXPECT_TRUE(r->Note("is 0.7999 samples per step, not the total train batch size 8 (line 5)"));
  EXPECT_DOUBLE_EQ(*r->At(20)->ms, 1000 / 6.463);  // line 10
  EXPECT_DOUBLE_EQ(*r->At(110)->lr, 2.9912698412698416e-05);
  // Step 110 (line 29): interval_runtime 19.6886 s holds the evaluation of lines 19-24
  // (eval_runtime 12.0756 s, line 24) and the checkpoint save of lines 25-28 (not timed):
  // 1000 / 0.508 ms x (1 - 12.0756 / 19.6886) = 761.2 ms, the save still in it.
  EXPECT_DOUBLE_EQ(*r->At(110)->ms, 1000 / 0.508 * (1 - 12.0756 / 19.6886));
  EXPECT_TRUE(r->Note("leaves out the evaluation before it (line 24"));
  EXPECT_TRUE(r->Note("the checkpoint save at line 25 is not timed"));
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());  // the log reports none
  // Line 24's eval_loss, logged right after step 100's record (line 18) with its epoch 0.2646.
  ASSERT_EQ(r->log.evals.size(), 1u);
  EXPECT_EQ(r->log.evals[0].step, 100);
  EXPECT_EQ(r->log.evals[0].value, 2.104221820831299);
  EXPECT_EQ(r->log.evals[0].line, 24);
  EXPECT_EQ(r->m()["eval"]["val_loss"], 2.104221820831299);
  EXPECT_EQ(r->m()["eval"]["step"], 100);
}

TEST(Corpus, PaddleNlpSummaryGivesTheDataParallelRanks) {
  // The same log: "Total train batch size (w. parallel, distributed & accumulation) = 8" (line 5)
  // is 8 per device (line 4) x 1 accumulation step (line 6) x 1 rank (PaddleNLP's
  // dataset_world_size). Was no lbs, gas or devices: with mpe set, no token/p/s per device.
  Result<Read> r = ReadLog("paddlenlp24_trainer_interval10_eval.log", "auto", {{"mpe", 512}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->m()["config"]["lbs"], 8);
  EXPECT_EQ(r->m()["config"]["gas"], 1);
  EXPECT_EQ(r->m()["config"]["dp"], 1);
  EXPECT_EQ(r->m()["config"]["devices"], 1);
  EXPECT_EQ(r->log.facts.at("dp").line, 5);
  // Steps 11-130 (after PaddleNLP's 10 warm-up steps): 120 x 8 samples x 512 tokens over the
  // records' 10 / interval_steps_per_second (lines 10-31), step 110's less its evaluation.
  double s = 10 / 0.508 * (1 - 12.0756 / 19.6886);
  for (double ips : {6.463, 6.452, 6.465, 6.422, 6.405, 6.472, 6.496, 6.45, 6.459, 6.476, 6.501})
    s += 10 / ips;
  EXPECT_NEAR(r->PerDevice(), 120 * 8 * 512 / s, 1e-9 * 120 * 8 * 512 / s);
  EXPECT_TRUE(
      r->Note(":5: 1 data-parallel ranks: the total train batch size 8 / (8 per device x "
              "1 accumulation steps)"));
}

TEST(Corpus, PaddleNlpFp16OptimizerNotRunIsASkippedStep) {
  // The Trainer's `optimizer not run, scale_before: 0.25, scale_after: 0.125` warning (lines 1
  // and 3) comes from the step whose gradients overflowed (trainer.py: the scaler found inf, the
  // optimizer and the lr scheduler did not step), printed before that step's record (lines 2, 4).
  // Before, both records had 0 skipped steps.
  Result<Read> r = ReadLog("paddlenlp_issue7537_fp16_optimizer_not_run.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "paddle");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{18, 19}));
  EXPECT_EQ(r->At(18)->span, 1);
  EXPECT_EQ(r->At(18)->skipped, 1);
  EXPECT_EQ(r->At(19)->skipped, 1);
  EXPECT_EQ(r->m()["provenance"]["skipped_iterations"], 2);
  EXPECT_EQ(r->Loss(18), 2.09252715);  // line 2
  EXPECT_EQ(r->Loss(19), 2.04623556);  // line 4
  EXPECT_EQ(*r->At(18)->lr, 0.0);      // the scheduler never stepped
  // 1 / interval_steps_per_second, and samples/s over steps/s: 3.68085 / 0.230053 = 16.
  EXPECT_DOUBLE_EQ(*r->At(18)->ms, 1000 / 0.23005331650420213);
  EXPECT_NEAR(*r->At(19)->samples, 16.0, 1e-9);
}

TEST(Corpus, PaddleNlp25TotalBatchOverTheInterval) {
  // PaddleNLP's Trainer of February 2023 (ERNIE-1.0 pre-training, logging every 20 steps, one
  // device): interval_samples_per_second 7.979 = interval_steps_per_second 7.979 (line 10), so
  // the ratio is the total train batch of line 5 (1), not one step's batch over the 20 steps as
  // in 2022 (1 / 20): no note. The sequence length (512) is set here; the excerpt does not give
  // it.
  Result<Read> r = ReadLog("paddlenlp25_ernie_trainer_interval20_issue4949.log", "auto",
                           {{"mpe", 512}, {"excluded_warmup_steps", 20}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "paddle");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{20, 40}));
  EXPECT_EQ(r->At(20)->span, 20);
  EXPECT_EQ(r->At(40)->span, 20);
  EXPECT_EQ(r->Loss(20), 10.70859375);  // line 10
  EXPECT_EQ(r->Loss(40), 10.84414062);  // line 11
  EXPECT_EQ(*r->At(40)->lr, 4e-07);
  EXPECT_EQ(r->At(20)->samples, 1.0);
  EXPECT_EQ(r->At(40)->samples, 1.0);
  EXPECT_FALSE(r->Note("not the total train batch size"));
  // 2.5065 s over the 20 steps of line 10 (20 / 2.5065 = 7.979 steps/s).
  EXPECT_DOUBLE_EQ(*r->At(20)->ms, 1000 / 7.979);
  EXPECT_EQ(r->m()["config"]["dp"], 1);  // 1 / (1 per device x 1 accumulation step)
  // Steps 21-40 (line 11): 20 sequences of 512 tokens in 20 / 18.378 s on one device.
  EXPECT_DOUBLE_EQ(r->PerDevice(), 18.378 * 512);
}

TEST(Corpus, PaddleNlpNpuNanLossesInBareRecords) {
  // PaddleNLP's Trainer of December 2024 on an Ascend 910B3 (UIE fine-tuning): the records
  // without the logger's `[...] [    INFO] - ` prefix, samples/s and steps/s printed unrounded,
  // `loss: nan` in five of the six (lines 1, 3-6) and `loss: 0.0` between them (line 2), the
  // record of step 80 glued after a tqdm bar (line 4). 44.09766862567628 / 2.7561042891047673 =
  // 16 samples a step.
  Result<Read> r = ReadLog("paddlenlp_npu_uie_nan_loss_bare_records_issue9693.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "paddle");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{50, 60, 70, 80, 90, 100}));
  EXPECT_EQ(r->At(50)->span, 10);
  ASSERT_TRUE(r->Loss(50));
  EXPECT_TRUE(std::isnan(*r->Loss(50)));
  ASSERT_TRUE(r->Loss(80));
  EXPECT_TRUE(std::isnan(*r->Loss(80)));  // line 4, after the bar
  EXPECT_EQ(r->Loss(60), 0.0);
  EXPECT_EQ(r->At(60)->nan, 0);
  EXPECT_EQ(r->At(100)->nan, 1);
  // One NaN step a record: a lower bound, each record spanning 10 steps.
  EXPECT_EQ(r->m()["provenance"]["nan_iterations"], 5);
  EXPECT_TRUE(
      r->Note("loss: 5 record(s) from paddlenlp_npu_uie_nan_loss_bare_records_issue9693"
              ".log:1 (step 50) have a NaN or Inf loss"));
  EXPECT_NEAR(*r->At(60)->samples, 16.0, 1e-9);
  EXPECT_DOUBLE_EQ(*r->At(50)->ms, 1000 / 2.7561042891047673);
  // Step 80's interval_runtime 70.2024 s holds the evaluation at the end of the first epoch
  // (73 steps: epoch 0.6849 at step 50), which the excerpt does not show: the record keeps it.
  EXPECT_DOUBLE_EQ(*r->At(80)->ms, 1000 / 0.14244523969284797);
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());  // the log reports none
}

TEST(Corpus, PaddleMixTwoRunsInCommentsRestartAtStepOne) {
  // PaddleMIX's U-ViT script keeps two runs' first records as shell comments (`# [...] [    INFO]
  // - loss: ...`): lines 1-6 a run to step 6, lines 9-13 a second run from step 1 again, whose
  // records replace the first run's. The rates are printed unrounded: 6.570357298475159 /
  // 0.2053236655773487 = 32 samples a step (the script's 8 per device on 4 GPUs).
  Result<Read> r = ReadLog("paddle_paddlemix_uvit_two_runs_unrounded_rates.log", "auto",
                           {{"excluded_warmup_steps", 1}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "paddle");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(r->log.restarts, 1);
  EXPECT_TRUE(r->Note("the step count went back 1 time(s)"));
  EXPECT_EQ(r->Loss(1), 1.08284163);  // line 9, not line 1's 1.08327329
  EXPECT_EQ(r->Loss(5), 1.07917476);  // line 13
  EXPECT_EQ(r->At(1)->line, 9);
  EXPECT_NEAR(*r->At(1)->samples, 32.0, 1e-9);
  EXPECT_NEAR(*r->At(4)->samples, 32.0, 1e-9);  // 240.6310226005515 / 7.519719456267234
  EXPECT_DOUBLE_EQ(*r->At(2)->ms, 1000 / 7.594648279558405);  // line 10
  EXPECT_EQ(*r->At(5)->lr, 2e-07);
}

TEST(Corpus, ErnieKitSftThroughColorlogCodes) {
  // Each line wrapped in colorlog's codes, one glued to a number: line 5 ends `= 8\x1b[0m\r`.
  // Before, that line was an error ("'Total train batch size' is '8\x1b[0m', not a number").
  Result<Read> r = ReadLog("erniekit_sft_colour_codes_crlf.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "paddle");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(r->log.facts.at("gbs").value, 8);  // line 5
  EXPECT_EQ(r->log.facts.at("gbs").line, 5);
  EXPECT_EQ(r->Loss(1), 2.61245131);  // line 12
  EXPECT_EQ(r->Loss(4), 2.64023829);  // line 15
  EXPECT_EQ(*r->At(2)->lr, 1e-06);
  EXPECT_DOUBLE_EQ(*r->At(1)->ms, 1000 / 0.1396);  // interval_steps_per_second, line 12
  EXPECT_DOUBLE_EQ(*r->At(4)->ms, 1000 / 0.6748);  // line 15
  EXPECT_EQ(r->At(3)->samples, 8.0);               // 5.2393 / 0.6549 = 8.0002; line 5's 8
  EXPECT_DOUBLE_EQ(*r->log.peak_memory_bytes, 19.390605688095093 * kGiB);  // max_memory_reserved
  // Steps 20-21 of the same run, without the block: the batch is the ratio of the two rates,
  // 5.4236 / 0.6779 = 8.0006 and 4.9404 / 0.6175 = 8.0006, a whole 8 within their 4-decimal
  // rounding (before: 8.0006).
  r = ReadLog("erniekit_sft_colour_codes_steps20_21.log", "paddle");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{20, 21}));
  EXPECT_EQ(r->At(20)->samples, 8.0);
  EXPECT_EQ(r->At(21)->samples, 8.0);
  EXPECT_EQ(*r->At(21)->lr, 9.997e-06);
  EXPECT_DOUBLE_EQ(*r->log.peak_memory_bytes, 24.518741369247437 * kGiB);  // line 2
  // The run's end: the closing line 7 `train_runtime: 158.453, train_samples_per_second: 5.0488`
  // (before: no wall time), the evaluation after training at line 33, at step 100 (its
  // progress_or_epoch 1.0 is step 100's, line 3).
  r = ReadLog("erniekit_sft_colour_codes_tail_eval.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{98, 99, 100}));
  EXPECT_EQ(r->Loss(100), 0.00038933);
  EXPECT_EQ(r->log.wall_s, 158.453);
  EXPECT_EQ(r->m()["wall_s"], 158.453);
  ASSERT_EQ(r->log.evals.size(), 1u);
  EXPECT_EQ(r->log.evals[0].step, 100);
  EXPECT_EQ(r->log.evals[0].value, 4.969167232513428);
  EXPECT_EQ(r->log.evals[0].line, 33);
  EXPECT_DOUBLE_EQ(*r->log.peak_memory_bytes, 34.84359335899353 * kGiB);
}

TEST(Corpus, ErnieKitSftLossesInExponentNotation) {
  // ERNIEKit SFT of ERNIE-4.5-0.3B for sentiment labels (1 GPU, GAS 8, logging_steps 1): the loss
  // falls below 1e-4 within 18 steps, and Python prints it in exponent notation (`loss:
  // 4.877e-05`, line 3) as it does the learning rate (`9.5e-06`, line 4). max_memory_reserved
  // grows from 13.730960607528687 (lines 1-2) to 14.651019811630249 GiB (lines 3-5).
  Result<Read> r = ReadLog("erniekit_sft_sentiment_loss_exponent_notation.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "paddle");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{16, 17, 18, 19, 20}));
  EXPECT_EQ(r->Loss(16), 0.00050533);  // line 1
  EXPECT_EQ(r->Loss(18), 4.877e-05);   // line 3
  EXPECT_EQ(r->Loss(19), 9.17e-06);    // line 4
  EXPECT_EQ(r->Loss(20), 3.71e-06);    // line 5
  EXPECT_EQ(*r->At(19)->lr, 9.5e-06);
  EXPECT_EQ(r->m()["loss"]["min"], 3.71e-06);
  EXPECT_DOUBLE_EQ(*r->log.peak_memory_bytes, 14.651019811630249 * kGiB);
  // No `Total train batch size` line in the excerpt: 5.4334 / 0.6792 = 7.9997, a whole 8 within
  // the two rates' 4 decimals (line 3).
  EXPECT_EQ(r->At(18)->samples, 8.0);
  EXPECT_DOUBLE_EQ(*r->At(18)->ms, 1000 / 0.6792);
}

TEST(Corpus, ErnieKitDpoRecordsAfterTqdmBars) {
  // Each record follows a `TrainProcess:  10%|...| 1/10 [00:18<02:44, 18.24s/it]` bar on its line
  // (lines 8-14); the batch, with no block line, is the ratio: 1.9727 / 0.0548 = 35.998 -> 36
  // (per-device 1 x GAS 36, line 1), within the rounding of the two rates.
  Result<Read> r = ReadLog("erniekit_dpo_bar_glued_records.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "paddle");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(r->Loss(3), 0.69692159);  // the DPO loss, line 12
  EXPECT_EQ(r->At(1)->samples, 36.0);
  EXPECT_EQ(r->At(4)->samples, 36.0);  // 3.4426 / 0.0956 = 36.01
  EXPECT_DOUBLE_EQ(*r->At(1)->ms, 1000 / 0.0548);
  EXPECT_EQ(*r->At(2)->lr, 2e-07);
  EXPECT_DOUBLE_EQ(*r->log.peak_memory_bytes, 61.84350395202637 * kGiB);  // line 14
}

TEST(Corpus, ErnieKitPretrainGlobalFieldsOverTenSteps) {
  // ERNIEKit pre-training: speed_metrics("global", ...) over logging_steps 10 (GAS 8, batch 1).
  Result<Read> r = ReadLog("erniekit_pretrain_global_steps10_30.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "paddle");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(r->At(10)->span, 10);
  EXPECT_EQ(r->Loss(10), 11.311073303222656);  // line 10
  // global_runtime 5.8223 s x global_steps_per_second 1.7175 = 10.0 steps: 582.23 ms a step.
  EXPECT_DOUBLE_EQ(*r->At(10)->ms, 5822.3 / 10);
  EXPECT_DOUBLE_EQ(*r->At(20)->ms, 4383.6 / 10);  // line 11
  EXPECT_EQ(r->At(30)->samples, 8.0);             // line 5; 18.3462 / 2.2933 = 8.0
  EXPECT_EQ(r->At(20)->tokens_per_device_per_s, 18687.6);
  EXPECT_EQ(r->At(20)->loss_scale, 32770.0);  // 32768 as "{0:.3e}" prints it
  EXPECT_EQ(*r->At(10)->lr, 2e-05);
  EXPECT_DOUBLE_EQ(*r->log.peak_memory_bytes, 8.815919 * kGiB);  // max_mem_reserved_gb
  EXPECT_EQ(r->log.memory_source, "max_mem_reserved_gb (ERNIEKit)");
  // The checkpoint at step 200: the trainer logs the save's time (line 11) and restarts the
  // interval's clock, so step 210's global_runtime (4.5397 s, line 12) holds no save. Before, a
  // note said that record included the save of line 3.
  r = ReadLog("erniekit_pretrain_timed_save200.log", "paddle");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{190, 200, 210}));
  EXPECT_DOUBLE_EQ(*r->At(210)->ms, 4539.7 / 10);
  EXPECT_EQ(r->At(210)->tokens_per_device_per_s, 18045.3);
  EXPECT_FALSE(r->Note("checkpoint save"));
  for (const std::string& n : r->log.notes)
    EXPECT_EQ(n.find("checkpoint save"), std::string::npos) << n;
}

TEST(Corpus, MegatronBridgeHardWrappedTerminalCopy) {
  // An 86-column terminal copy: each iteration line over four lines (1-4, 8-11), the memory
  // line over two (5-6). Before, line 1 alone (only `consumed samples`) was an error.
  Result<Read> r = ReadLog("megatron_bridge_pr841_wrapped_86col.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "megatron");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(r->At(20)->span, 10);
  EXPECT_EQ(r->At(10)->ms, 13212.7);       // line 2
  EXPECT_EQ(r->At(10)->samples, 512.0);    // `global batch` (line 2) `size:   512` (line 3)
  EXPECT_EQ(r->Loss(10), 4.474437E+00);    // line 3
  EXPECT_EQ(r->At(10)->grad_norm, 0.704);  // line 3
  EXPECT_EQ(r->At(10)->skipped, 0);        // `number of s` / `kipped iterations:   0`
  EXPECT_EQ(r->Loss(20), 8.797448E-02);    // line 10
  EXPECT_EQ(r->At(20)->ms, 14260.3);       // line 9
  EXPECT_EQ(*r->log.peak_memory_bytes, 12954.0 * kMiB);  // `max reserved: 12954.0`, line 6
  EXPECT_TRUE(r->Note(":1: 3 iteration or memory line(s) hard-wrapped"));
}

TEST(Corpus, MegatronValidationLossLines) {
  // evaluate_and_print_results: ` validation loss at iteration N | lm loss value: x | lm loss
  // PPL: y |` (lines 4-8, grepped under the iteration line by the reporter).
  Result<Read> r = ReadLog("megatron_issue1152_fp8_validation.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1000}));
  EXPECT_EQ(r->Loss(1000), 3.147666E+00);  // line 2
  ASSERT_EQ(r->log.evals.size(), 5u);
  EXPECT_EQ(r->log.evals[0].step, 200);
  EXPECT_EQ(r->log.evals[0].value, 6.496762E+00);
  EXPECT_EQ(r->log.evals[0].line, 4);
  EXPECT_EQ(r->log.evals[4].step, 1000);
  EXPECT_EQ(r->log.evals[4].value, 3.846950E+00);
  EXPECT_EQ(r->m()["eval"]["val_loss"], 3.846950E+00);
  EXPECT_EQ(r->m()["eval"]["step"], 1000);
}

TEST(Corpus, MegatronForkTokensPerSecGpu) {
  // Pai-Megatron-Patch's Megatron-LM-250624 training.py patched to add `tokens/sec/gpu: x`
  // (batch_size * seq_length / elapsed / world_size): 64 x 8192 / 5.533 s / 8 = 11844.5.
  Result<Read> r = ReadLog("megatron_paipatch_deeplink_tokens_sec_gpu.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{480, 481, 482}));
  EXPECT_EQ(r->At(480)->tokens_per_device_per_s, 11844.5);  // line 1
  EXPECT_EQ(r->At(481)->tokens_per_device_per_s, 11185.0);  // line 2
  EXPECT_EQ(r->At(482)->ms, 5546.0);                        // line 3
  EXPECT_EQ(r->Loss(482), 1.682535E+00);
  // No sequence length in the log: the printed rate, averaged over the steps' time.
  EXPECT_NEAR(r->PerDevice(),
              (11844.5 * 5.533 + 11185.0 * 5.8593 + 11816.9 * 5.546) / (5.533 + 5.8593 + 5.546),
              1e-6);
}

TEST(Corpus, MsSwiftMegatronMemoryGiB) {
  // ms-swift 3.12's Megatron trainer (swift/megatron/trainers/base.py training_log):
  // `memory(GiB): 21.54` is torch.cuda.max_memory_reserved() / 2^30 of the printing rank.
  Result<Read> r = ReadLog("megatron_swift_issue7832_memory_gib_interval5.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "megatron");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{5, 10}));
  // The trainer printed iteration 1's line (not pasted) and reset its averages there
  // (`iteration % log_interval == 0 or iteration == 1`): line 1 averages iterations 2-5.
  EXPECT_EQ(r->At(5)->span, 4);
  EXPECT_TRUE(r->Note("iteration 5's line, the first here, averages iterations 2-5"));
  EXPECT_EQ(r->At(10)->span, 5);
  EXPECT_EQ(r->Loss(5), 1.180399E+00);   // line 1
  EXPECT_EQ(r->Loss(10), 1.190541E+00);  // line 2 (the load_balancing_loss after it not read)
  EXPECT_EQ(r->At(10)->ms, 99158.9);
  EXPECT_EQ(r->At(10)->samples, 64.0);
  EXPECT_EQ(r->At(10)->grad_norm, 0.826);
  // The larger of 21.54 (line 1) and 21.56 (line 2), in GiB.
  EXPECT_EQ(*r->log.peak_memory_bytes, 21.56 * kGiB);
  EXPECT_EQ(r->log.memory_source, "max reserved (ms-swift training_log memory(GiB))");
}

TEST(Corpus, ErniekitGlobalStepLine) {
  // One real line (no longer public log was found): the record only.
  Result<Read> r =
      ReadLog("paddle_erniekit_single_line.log", "auto", {{"excluded_warmup_steps", 0}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "paddle");
  ASSERT_EQ(r->Steps(), (std::vector<int64_t>{1}));
  const Iteration& it = *r->At(1);
  EXPECT_EQ(it.loss, 22.995561599731445);
  EXPECT_EQ(it.lr, 1.666667e-06);
  // global_runtime 104.8954 s for 104.8954 x 0.0095 = 0.9965, i.e. 1 step.
  EXPECT_DOUBLE_EQ(*it.ms, 104895.4);
  // 0.6101 / 0.0095 = 64.2, both printed to 4 decimals: 64 (x 8192 = tokens_trained 524288).
  EXPECT_EQ(it.samples, 64.0);
  EXPECT_EQ(it.tokens_per_device_per_s, 4980.7);
  EXPECT_EQ(it.loss_scale, 32770.0);
  EXPECT_EQ(*r->log.peak_memory_bytes, 45.060626 * kGiB);  // max_mem_reserved_gb
  EXPECT_EQ(r->log.memory_source, "max_mem_reserved_gb (ERNIEKit)");
}

// ---- MLPerf ---------------------------------------------------------------

TEST(Corpus, MlperfLoraSamplesCountIsTheStep) {
  // global_batch_size 8 (line 4); 8192 tokens and 8 GPUs set here.
  Result<Read> r = ReadLog("mllog_llama2_70b_lora_samples_count.log", "mllog",
                           {{"mpe", 8192}, {"layout", "TP1PP1DP8"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 20, 40, 50}));  // samples_count / 8
  EXPECT_EQ(r->Loss(10), 1.4561);
  EXPECT_EQ(r->Loss(50), 1.1892);
  // Steps 11-50 from the time stamps: 10 s, 23 s less the 3 s from block_stop (line 16) to
  // block_start (line 19), the evaluation between them, 10 s.
  EXPECT_DOUBLE_EQ(r->PerDevice(), 40 * 8 * 8192 / 40.0 / 8);
  EXPECT_EQ(r->m()["eval"]["val_loss"], 0.9243);
  EXPECT_EQ(r->m()["eval"]["step"], 60);
  EXPECT_EQ(r->m()["wall_s"], 66.001);
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());  // the log reports none
}

TEST(Corpus, MlperfEvalOnlyWithStrayLines) {
  // 256 GPUs set here; gbs 1152 and 8192 tokens from the log.
  Result<Read> r = ReadLog("mllog_llama31_405b_eval_only.log", "mllog", {{"layout", "TP8PP8DP4"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{40, 80}));  // block_stop at 46080, 92160 samples
  EXPECT_TRUE(r->m()["loss"].is_null());
  EXPECT_EQ(r->m()["eval"]["val_loss"], 5.601);
  // Block 2 (steps 41-80): 480 s between block_start and block_stop.
  EXPECT_DOUBLE_EQ(r->PerDevice(), 40 * 1152 * 8192 / 480.0 / 256);
  EXPECT_TRUE(
      r->Note("mllog_llama31_405b_eval_only.log:3: 4 line(s) with ':::MLLOG' but no "
              "JSON event"));
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());  // the log reports none
}

TEST(Corpus, MlperfDeepSeekReducedTrainLossWithoutTimes) {
  // NeMo's tracked_stats name the loss reduced_train_loss; samples_count / global_batch_size
  // (16384, line 12) is the step. The log has no time_ms at all: no step is timed.
  Result<Read> r = ReadLog("mllog_deepseekv3_reduced_train_loss.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "mllog");
  ASSERT_EQ(r->log.iterations.size(), 47u);  // samples_count 16384 ... 770048
  EXPECT_EQ(r->Steps().front(), 1);
  EXPECT_EQ(r->Steps().back(), 47);
  EXPECT_EQ(r->Loss(1), 5.133626937866211);    // line 33
  EXPECT_EQ(r->Loss(47), 3.5843489170074463);  // line 309
  EXPECT_EQ(r->log.facts.at("gbs").value, 16384);
  EXPECT_EQ(r->log.facts.at("mpe").value, 4096);
  EXPECT_EQ(r->log.evals.size(), 47u);
  EXPECT_TRUE(r->Note("times no step"));
}

TEST(Corpus, MlperfGrpoStepTimeAndNoValidationStep) {
  // NeMo-RL's GRPO reference: per step one tracked_stats with the loss and grad_norm, one with
  // train_step_time (s); a last one with validation_time alone (line 63) is no training step.
  Result<Read> r = ReadLog("mllog_grpo_train_step_time.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(r->Loss(1), -0.053220854759274516);  // line 49
  EXPECT_EQ(r->At(1)->grad_norm, 1738.553466796875);
  EXPECT_EQ(r->Loss(6), -0.11390635106363334);  // line 59
  // The steps' own time (lines 50 and 60), not the time_ms gaps (1,778 s from run_start to
  // step 1's event, setup included).
  EXPECT_DOUBLE_EQ(*r->At(1)->ms, 787.2070640260063 * 1000);
  EXPECT_DOUBLE_EQ(*r->At(6)->ms, 1135.728970619908 * 1000);
  EXPECT_TRUE(r->Note("train_step_time"));
  EXPECT_EQ(r->m()["wall_s"], (1784895180062.0 - 1784886443106.0) / 1000);  // lines 47, 66
}

TEST(Corpus, MlperfThroughputStepIsSamplesNotAStep) {
  // AMD's llama31_8b submission: tracked_stats {"throughput"} at metadata.step = global_step x
  // gbs (callbacks.py log_throughput), i.e. samples: no record there. No train_loss either, so
  // the blocks time the run: global_batch_size 32 (line 17).
  Result<Read> r = ReadLog("mllog_amd_llama31_8b_throughput_step.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 14u);  // 14 block_stop events
  EXPECT_EQ(r->Steps().front(), 384);        // line 45: samples_count 12288 / 32
  EXPECT_EQ(r->Steps().back(), 5376);        // line 123: 172032 / 32
  EXPECT_EQ(r->At(12288), nullptr);          // line 44's "step": 12288 is samples
  EXPECT_EQ(r->At(384)->span, 384);
  // Lines 43 and 45: block_start and block_stop of steps 1-384; lines 49 and 51 the next.
  EXPECT_DOUBLE_EQ(*r->At(384)->ms, (1759966614209.0 - 1759966206549.0) / 384);  // 1061.6
  EXPECT_DOUBLE_EQ(*r->At(768)->ms, (1759967026079.0 - 1759966624658.0) / 384);  // 1045.4
  EXPECT_FALSE(r->At(384)->loss);
  // The eval_accuracy of line 47 names samples_count 12256 (the logger's 0-based step x 32); its
  // eval_start (line 46) names 12288: the evaluation after step 384.
  ASSERT_EQ(r->log.evals.size(), 14u);
  EXPECT_EQ(r->log.evals[0].step, 384);
  EXPECT_EQ(r->log.evals[0].value, 5.595030307769775);
  EXPECT_TRUE(r->Note("timed by the block_start/block_stop events"));
}

TEST(Corpus, MlperfEvaluationLeftOutOfTheGap) {
  // Cisco's llama2_70b_lora submission: train_loss every 10 steps at samples_count / 8 (line 9),
  // tracked_stats {"throughput"} at "step": samples (lines 66, 79, ...), no record.
  Result<Read> r = ReadLog("mllog_cisco_llama2_70b_lora_eval_gap.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 33u);  // samples_count 80 ... 2640
  EXPECT_EQ(r->Steps().front(), 10);
  EXPECT_EQ(r->Steps().back(), 330);
  EXPECT_EQ(r->At(1536), nullptr);
  EXPECT_EQ(r->Loss(10), 2.0620665550231934);  // line 39
  // Step 10 from run_start (line 37).
  EXPECT_DOUBLE_EQ(*r->At(10)->ms, (1746972093372.0 - 1746972061929.0) / 10);  // 3144.3
  // Steps 191-200: line 57 to line 74 less block_stop/eval_start (lines 67-68) to
  // eval_stop/block_start (lines 72-73): (66198 - 28165) / 10. The 12.6 s from step 190 to
  // eval_start hold 2 steps and something the log does not bracket: it stays in.
  EXPECT_DOUBLE_EQ(*r->At(200)->ms,
                   (1746972732278.0 - 1746972666080.0 - (1746972706821.0 - 1746972678656.0)) / 10);
  // Steps 241-250: line 78 to line 87 less lines 80 to 86.
  EXPECT_DOUBLE_EQ(*r->At(250)->ms,
                   (1746972919749.0 - 1746972859645.0 - (1746972887885.0 - 1746972859650.0)) / 10);
  EXPECT_EQ(r->log.evals[0].step, 192);  // line 68: 1536 / 8
  EXPECT_TRUE(r->Note("of evaluation (eval_start to eval_stop, block_stop to block_start) left"));
}

TEST(Corpus, MlperfCommonBlockStepTimeIsNoRecord) {
  // Dell's llama2_70b_lora submission (NeMo, mlperf_common): tracked_stats {"train_loss"} with
  // metadata.step every 10 steps; mlperf_common's {"train_step_time"} (lines 25, 39, 52, 66,
  // 80) has the block's samples_count (1536, then 384 per block): no record at 192 or 48. The
  // excerpt has no global_batch_size: the steps are metadata.step.
  Result<Read> r = ReadLog("mllog_dell_llama2_70b_lora_mlperf_common.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 38u);  // steps 10 ... 380
  EXPECT_EQ(r->Steps().front(), 10);
  EXPECT_EQ(r->Steps().back(), 380);
  EXPECT_EQ(r->At(48), nullptr);
  EXPECT_EQ(r->At(192), nullptr);
  EXPECT_EQ(r->At(50)->span, 10);
  EXPECT_DOUBLE_EQ(*r->At(50)->ms, (1760058904955.0 - 1760058873452.0) / 10);  // lines 9, 10
  // Steps 191-200: line 24 to line 34 less block_stop (line 26) to block_start (line 33).
  EXPECT_DOUBLE_EQ(*r->At(200)->ms,
                   (1760059408811.0 - 1760059345949.0 - (1760059383617.0 - 1760059352568.0)) / 10);
  EXPECT_EQ(r->Loss(200), 0.6319371461868286);
  EXPECT_EQ(r->log.evals[0].step, 192);  // eval_start's "step" (line 27)
  EXPECT_TRUE(
      r->Note("mllog_dell_llama2_70b_lora_mlperf_common.log:25: 5 tracked_stats train_step_time"));
}

TEST(Corpus, MlperfNemoStepIsZeroBased) {
  // Dell's llama31_8b submission (NeMo 2): "step": 31.0 with samples_count 512.0 (line 40) at
  // global_batch_size 16 (line 16) is step 512 / 16 = 32 (custom_callbacks.py
  // _log_throughputs: samples = (step + 1) x gbs).
  Result<Read> r = ReadLog("mllog_dell_llama31_8b_nemo_step0.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 48u);  // 32 ... 1536, every 32 steps
  EXPECT_EQ(r->Steps().front(), 32);
  EXPECT_EQ(r->Steps().back(), 1536);  // line 158: 1535.0, 24576.0
  EXPECT_EQ(r->At(31), nullptr);
  EXPECT_EQ(r->Loss(32), 8.089431762695312);
  // From run_start (line 38) over 32 steps.
  EXPECT_DOUBLE_EQ(*r->At(32)->ms, (1759772264745.0 - 1759772250877.0) / 32);  // 433.375
  // mlperf_common's train_step_time at lines 64 and 159 (samples_count 12288 both times) adds
  // nothing: step 768 is line 63's, 32 steps.
  EXPECT_EQ(r->At(768)->span, 32);
  EXPECT_EQ(r->At(768)->line, 63);
  // Steps 769-800: line 63 to line 135 less block_stop (line 65) to block_start (line 134),
  // which holds the evaluation (lines 66-133): (23312 - 8688) / 32.
  EXPECT_DOUBLE_EQ(*r->At(800)->ms,
                   (1759772618479.0 - 1759772595167.0 - (1759772604076.0 - 1759772595388.0)) / 32);
  ASSERT_EQ(r->log.evals.size(), 1u);
  EXPECT_EQ(r->log.evals[0].step, 768);  // eval_start's "step" (line 66)
  EXPECT_TRUE(r->Note("2 tracked_stats train_step_time"));
  EXPECT_FALSE(r->Note("the steps' time from tracked_stats' train_step_time"));  // spans of 32
}

TEST(Corpus, MlperfNvidiaGpt3CountsTokens) {
  // NVIDIA's GPT-3 (v4.1, NeMo): blocks, evals and tracked_stats {"train_step_timing in s"} count
  // tokens since the resume (custom_callbacks.py compute_consumed_mllog_tokens): one step is
  // global_batch_size 2048 (line 7) x max_sequence_length 2048 (line 21) = 4194304 tokens.
  Result<Read> r = ReadLog("mllog_nv_gpt3_tokens_train_step_timing.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Lines 27-38, 47-58, 67-78: "step" 4194304 ... 150994944 = 36 x 4194304, one record each.
  ASSERT_EQ(r->log.iterations.size(), 36u);
  EXPECT_EQ(r->Steps().front(), 1);  // line 27: 4194304 / 4194304
  EXPECT_EQ(r->Steps().back(), 36);  // line 78: 150994944 / 4194304
  EXPECT_EQ(r->At(4194304), nullptr);
  EXPECT_EQ(r->At(1)->span, 1);
  EXPECT_DOUBLE_EQ(*r->At(1)->ms, 18.09756088256836 * 1000);    // line 27, the step's own time
  EXPECT_DOUBLE_EQ(*r->At(13)->ms, 18.359329223632812 * 1000);  // line 47: 54525952 / 4194304
  EXPECT_FALSE(r->At(1)->loss);
  // eval_accuracy (the validation log-perplexity) at epoch_num 50331648 (line 44): step 12.
  ASSERT_EQ(r->log.evals.size(), 3u);
  EXPECT_EQ(r->log.evals[0].step, 12);
  EXPECT_EQ(r->log.evals[0].value, 2.752415895462036);
  EXPECT_EQ(r->log.evals[2].step, 36);  // 150994944 / 4194304
  EXPECT_TRUE(r->Note("counted from the checkpoint (init_checkpoint_step 3000)"));  // line 19
}

TEST(Corpus, MlperfNvidiaGpt3BlocksInTokens) {
  // NVIDIA's GPT-3 (v4.0): no tracked_stats; blocks at first_epoch_num / epoch_count in tokens,
  // timed by the blocks: one step is 2304 (line 2) x 2048 (line 16) = 4718592 tokens, a block
  // 51904512 tokens = 11 steps.
  Result<Read> r = ReadLog("mllog_nv_gpt3_tokens_blocks_only.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 4u);  // block_stop at lines 22, 27, 32, 37
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{11, 22, 33, 44}));
  EXPECT_EQ(r->At(11)->span, 11);
  // Lines 21 and 22: (1715043949934 - 1715043830078) / 11 = 10896; lines 26 and 27: 10904.45.
  EXPECT_DOUBLE_EQ(*r->At(11)->ms, (1715043949934.0 - 1715043830078.0) / 11);
  EXPECT_DOUBLE_EQ(*r->At(22)->ms, (1715044081144.0 - 1715043961195.0) / 11);
  ASSERT_EQ(r->log.evals.size(), 3u);
  EXPECT_EQ(r->log.evals[1].step, 22);  // line 29: epoch_num 103809024 / 4718592
}

TEST(Corpus, MlperfGoogleMaxTextGpt3PlacedByEvaluations) {
  // Google's GPT-3 on TPU v5p (v4.0, MaxText mllog_utils.py early_stop_check): no training events;
  // each block_stop names its block's first_epoch_num only (line 27: 0, no epoch_count), the
  // eval_accuracy after it the tokens at the evaluation (line 28: epoch_num 50331648).
  // global_batch_size 2048 (line 20) x max_sequence_length 2048 (line 21) = 4194304 tokens a
  // step: 50331648 / 4194304 = 12 steps between evaluations.
  Result<Read> r = ReadLog("mllog_google_maxtext_gpt3_eval_positions.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 24u);  // eval_accuracy at lines 28, 31, ..., 97
  EXPECT_EQ(r->Steps().front(), 12);
  EXPECT_EQ(r->Steps().back(), 288);  // line 97: 1207959552 / 4194304
  EXPECT_EQ(r->At(12)->span, 12);
  EXPECT_FALSE(r->At(12)->loss.has_value());
  // run_start (line 26, 1709183798092) to the first evaluation (line 28, 1709184112964).
  EXPECT_DOUBLE_EQ(*r->At(12)->ms, (1709184112964.0 - 1709183798092.0) / 12);
  // Line 28 to line 31 (1709184398703), less block_stop (line 30, ...702) to block_start (line
  // 32, ...703): 285738 / 12 = 23811.5.
  EXPECT_DOUBLE_EQ(*r->At(24)->ms, (1709184398703.0 - 1709184112964.0 - 1.0) / 12);
  ASSERT_EQ(r->log.evals.size(), 24u);
  EXPECT_EQ(r->log.evals[1].step, 24);
  EXPECT_DOUBLE_EQ(r->log.evals[1].value, 2.7376162453761856);
  EXPECT_TRUE(r->Note("placed by the eval_accuracy events' epoch_num"));
  // Six 1-ms gaps between a block_stop and the next block_start, in ms (not "0.0 s").
  EXPECT_TRUE(r->Note("6 ms of evaluation"));
}

TEST(Corpus, MlperfMaxDiffusionBlockLossAndFidSeries) {
  // Google's stable_diffusion on TPU trillium-256 (v5.0, MaxDiffusion mllog_utils.py): blocks of
  // 500 steps (samples_count / global_batch_size 1024, line 9) whose block_stop names the loss and
  // lr of the block's last step; each evaluation logs CLIP then FID (metadata.metric), and the
  // closing summary (lines 42-43) repeats the last evaluation's FID and CLIP.
  Result<Read> r = ReadLog("mllog_google_maxdiffusion_sd_fid_clip.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{500, 1000, 1500, 2000, 2500}));
  EXPECT_EQ(r->Loss(500), 0.40374454855918884);  // line 23
  EXPECT_EQ(*r->At(500)->lr, 0.00018197065219283104);
  EXPECT_EQ(r->Loss(2500), 0.3384511470794678);  // line 32
  // block_start line 24 (1746068503914) to block_stop line 25 (1746068549554) over 500 steps.
  EXPECT_DOUBLE_EQ(*r->At(1000)->ms, (1746068549554.0 - 1746068503914.0) / 500);
  // FID only (lines 37 and 41, at samples_count 2048000 and 2560000 over 1024); line 42 repeats
  // line 41.
  ASSERT_EQ(r->log.evals.size(), 2u);
  EXPECT_EQ(r->log.evals[0].step, 2000);
  EXPECT_EQ(r->log.evals[0].value, 100.75343424069968);
  EXPECT_EQ(r->log.evals[1].step, 2500);
  EXPECT_EQ(r->log.evals[1].value, 88.2065187242157);
  EXPECT_EQ(r->log.eval_what, "MLPerf eval_accuracy FID");
  // FID is no loss: the quality block's value, lower is better, MLPerf's target 90.
  EXPECT_TRUE(r->m()["eval"]["val_loss"].is_null());
  EXPECT_EQ(r->m()["eval"]["quality"]["value"], 88.2065187242157);
  EXPECT_EQ(r->m()["eval"]["quality"]["metric"], "FID");
  EXPECT_EQ(r->m()["eval"]["quality"]["reached"], true);
}

TEST(Corpus, MlperfGigaComputingBlockStopNamesTheBlocksStart) {
  // GigaComputing's stable_diffusion (v5.0, NVIDIA's NeMo implementation with its own
  // callbacks.py): each block_stop names compute_consumed_samples(train_batch_start_step), the
  // samples_count of its own block_start (lines 22-23: 0 and 0; 25-26: 512000 and 512000), so a
  // block of 2000 steps (512000 / global_batch_size 256, line 5) ends where the next begins; the
  // last (lines 34-35, from 2048000) is as long as the others. Checkpoints are evaluated offline
  // after training: the eval_accuracy events come last, run_stop (line 45) at the time of the
  // block that reached the target.
  Result<Read> r = ReadLog("mllog_gigacomputing_sd_block_stop_at_start.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{2000, 4000, 6000, 8000, 10000}));
  EXPECT_FALSE(r->Loss(2000));
  // Lines 22-23: block_start 1744860973923 to block_stop 1744861206834 over 2000 steps.
  EXPECT_DOUBLE_EQ(*r->At(2000)->ms, (1744861206834.0 - 1744860973923.0) / 2000);
  EXPECT_EQ(r->At(4000)->span, 2000);
  // Lines 34-35: the last block, 8000 to 10000.
  EXPECT_DOUBLE_EQ(*r->At(10000)->ms, (1744862155745.0 - 1744861920020.0) / 2000);
  // FID (lines 38 and 42) at samples_count 1024000 and 1536000 over 256.
  ASSERT_EQ(r->log.evals.size(), 2u);
  EXPECT_EQ(r->log.evals[0].step, 4000);
  EXPECT_EQ(r->log.evals[0].value, 102.76406687668646);
  EXPECT_EQ(r->log.evals[1].step, 6000);
  EXPECT_EQ(r->log.evals[1].value, 85.76508582043977);
  // Line 24's max_memory_usage, 30.025 GiB (every block's the same).
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 30.025 * kGiB);
  // run_start (line 21, 1744860973921) to run_stop (line 45, 1744861681020).
  EXPECT_DOUBLE_EQ(*r->log.wall_s, (1744861681020.0 - 1744860973921.0) / 1000);
}

TEST(Corpus, MlperfDellStableDiffusionAbortedRunStop) {
  // Dell's stable_diffusion (v5.0, 9x XE9712 GB200, result_9): blocks of 511488 samples (888 steps
  // of global_batch_size 576, line 40) whose block_stop names the block's first samples_count as
  // GigaComputing's do (lines 57-58: 0 and 0, ..., 72-73: 2557440); the block_start of line 75 has
  // no block_stop. Every evaluation, done offline after training, gives FID 646.08 (lines 77-93):
  // the run diverged, and run_stop (line 96) says "status": "aborted". run_start (line 56) to
  // run_stop is then no time to train: MLPerf's RCP checker counts the run as not converged.
  Result<Read> r = ReadLog("mllog_dell_sd_run_stop_aborted.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{888, 1776, 2664, 3552, 4440, 5328}));
  // Lines 57-58: block_start 1746146350591 to block_stop 1746146406373 over 888 steps.
  EXPECT_DOUBLE_EQ(*r->At(888)->ms, (1746146406373.0 - 1746146350591.0) / 888);
  // Lines 72-73: the last block, 2557440 / 576 = 4440 to 5328.
  EXPECT_DOUBLE_EQ(*r->At(5328)->ms, (1746146657481.0 - 1746146608630.0) / 888);
  ASSERT_EQ(r->log.evals.size(), 5u);     // FID at lines 77, 81, 85, 89, 93 (CLIP left out)
  EXPECT_EQ(r->log.evals[0].step, 1776);  // line 77: samples_count 1022976 / 576
  EXPECT_EQ(r->log.evals[4].step, 5328);  // line 93: 3068928 / 576
  EXPECT_EQ(r->log.evals[4].value, 646.0821975894278);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 17.176 * kGiB);  // line 59's max_memory_usage
  // run_start (line 56, 1746146350591) to run_stop (line 96, 1746146657480), with its status.
  EXPECT_DOUBLE_EQ(*r->log.wall_s, (1746146657480.0 - 1746146350591.0) / 1000);
  EXPECT_TRUE(r->Note("mllog_dell_sd_run_stop_aborted.log:96: run_stop's status is \"aborted\""));
  EXPECT_TRUE(r->Note("is no time to train"));
}

TEST(Corpus, MlperfPrimusTrainLossAtTheSamplesBeforeTheStep) {
  // The gpt-oss-20B (small_llm_moe_pretraining) reference on Primus, global_batch_size 32 (line
  // 17), max_sequence_length 8192 (line 19): primus_mllog's train_loss names samples_count 0 for
  // the first step (line 44), 32 for the second, ...: the samples before the step
  // (mlperf_pre_training.py _on_train_step_end runs inside train_step, before Megatron adds the
  // batch to consumed_train_samples). Steps 1-17 (lines 44-60); the excerpt ends before run_stop.
  Result<Read> r = ReadLog("mllog_primus_train_loss_samples_before_step.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<int64_t> steps(17);
  std::iota(steps.begin(), steps.end(), 1);
  EXPECT_EQ(r->Steps(), steps);
  EXPECT_EQ(r->Loss(1), 11.838506698608398);  // line 44
  // run_start (line 41, 1771599913588) to step 1's train_loss (line 44, 1771599949614).
  EXPECT_DOUBLE_EQ(*r->At(1)->ms, 1771599949614.0 - 1771599913588.0);
  // Lines 59-60: samples_count 480 and 512, steps 16 and 17.
  EXPECT_DOUBLE_EQ(*r->At(17)->ms, 1771600007121.0 - 1771600003594.0);
  EXPECT_EQ(r->Loss(17), 9.098333358764648);
  EXPECT_EQ(r->At(17)->lr, 0.00010625000000000001);
  EXPECT_FALSE(r->log.wall_s);
  EXPECT_TRUE(
      r->Note("mllog_primus_train_loss_samples_before_step.log:44: a training record at "
              "samples_count 0"));
  EXPECT_TRUE(r->Note("run_start but no run_stop"));
}

TEST(Corpus, MlperfNvidiaDlrmClosingMeanAtAnEpochFractionIsNoStep) {
  // NVIDIA's dlrm_dcnv2 (v6.0, HugeCTR, 64 GB200), global_batch_size 135168 (line 15): no training
  // records; blocks name their step (line 31: block_start step 0, line 32: block_stop step 1550,
  // then 1551 steps a block) and a samples_count that is the evaluation interval's, not a
  // position. After run_stop (line 126) LoggingCallback.on_training_end logs tracked_stats
  // {"train_step_time": 0.001413863189731249} at "step" 0.9494474337081548 (line 127):
  // current_iter / iter_per_epoch, the run's mean, no step (it was read as a step-0 record, the
  // log's only one, and the 19 blocks were dropped).
  Result<Read> r = ReadLog("mllog_nv_dlrm_hugectr_epoch_fraction_step.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<int64_t> steps;
  for (int64_t s = 1550; s <= 29468; s += 1551) steps.push_back(s);
  EXPECT_EQ(r->Steps(), steps);  // block_stop steps, lines 32, 37, ..., 122
  // Line 31 (block_start 1778684317777) to line 32 (block_stop 1778684319817) over 1550 steps.
  EXPECT_DOUBLE_EQ(*r->At(1550)->ms, (1778684319817.0 - 1778684317777.0) / 1550);
  // Line 121 (block_start step 27917, 1778684357181) to line 122 (block_stop 29468, 1778684359138).
  EXPECT_DOUBLE_EQ(*r->At(29468)->ms, (1778684359138.0 - 1778684357181.0) / 1551);
  EXPECT_FALSE(r->At(29468)->loss);
  ASSERT_EQ(r->log.evals.size(), 19u);
  EXPECT_EQ(r->log.evals[0].step, 1550);  // line 34, inside eval_start step 1550 (line 33)
  EXPECT_EQ(r->log.evals[0].value, 0.7857972979545593);
  EXPECT_EQ(r->log.evals[18].step, 29468);  // line 124
  EXPECT_EQ(r->log.evals[18].value, 0.8027938604354858);
  // run_start (line 30, 1778684317777) to run_stop (line 126, 1778684359365, "success").
  EXPECT_DOUBLE_EQ(*r->log.wall_s, (1778684359365.0 - 1778684317777.0) / 1000);
  EXPECT_TRUE(
      r->Note("mllog_nv_dlrm_hugectr_epoch_fraction_step.log:127: a tracked_stats "
              "train_step_time (0.00141386 s) at a fractional \"step\""));
}

TEST(Corpus, MlperfNvidiaLoraDeltaTimingCountsTheSamplesAfterTheStep) {
  // NVIDIA's llama2_70b_lora (v6.0, Megatron-Bridge, 8 GB200), global_batch_size 8 (line 18):
  // callback_logging.py DeltaTimingCallback logs tracked_stats {"train_step_time",
  // "reduced_train_loss"} every 10 steps at samples_count gbs x (train_state.step + 1): 80 for
  // step 10 (line 25). block_stop's samples_count is the block's length after the first (line 57:
  // 384), the first block's 1536 (line 45); _log_train_step_time's block means (lines 44, 56, 67,
  // 79, 91) are no step.
  Result<Read> r = ReadLog("mllog_nv_llama2_70b_lora_delta_timing_after_step.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 38u);  // 80 ... 1520, 1600 ... 1920, ..., 2720 ... 3040
  EXPECT_EQ(r->Steps().front(), 10);
  EXPECT_EQ(r->Steps().back(), 380);  // line 90: 3040 / 8
  EXPECT_EQ(r->Loss(10), 2.276958465576172);
  // run_start (line 23, 1778617795374) to step 10 (line 25, 1778617803980).
  EXPECT_DOUBLE_EQ(*r->At(10)->ms, (1778617803980.0 - 1778617795374.0) / 10);
  // Step 190 (line 43, 1778617934513) to step 200 (line 51, 1778617948217), less block_stop (line
  // 45, 1778617935079) to block_start (line 50, 1778617942393), which holds the evaluation.
  EXPECT_DOUBLE_EQ(*r->At(200)->ms,
                   (1778617948217.0 - 1778617934513.0 - (1778617942393.0 - 1778617935079.0)) / 10);
  ASSERT_EQ(r->log.evals.size(), 5u);
  EXPECT_EQ(r->log.evals[0].step, 192);  // line 48, inside eval_start step 192 (line 46)
  EXPECT_EQ(r->log.evals[4].step, 384);  // line 95
  EXPECT_EQ(r->log.evals[4].value, 0.9244517683982849);
  // run_start (line 23) to run_stop (line 97, 1778618128454, "success").
  EXPECT_DOUBLE_EQ(*r->log.wall_s, (1778618128454.0 - 1778617795374.0) / 1000);
  EXPECT_FALSE(r->Note("samples_count 0"));
  EXPECT_TRUE(
      r->Note("mllog_nv_llama2_70b_lora_delta_timing_after_step.log:44: 5 tracked_stats "
              "train_step_time event(s)"));
}

TEST(Corpus, MlperfNvidiaGptOssDeltaTimingCountsTheSamplesBeforeTheStep) {
  // NVIDIA's gpt_oss_20b (v6.0, Megatron-Bridge, 8 GB200), global_batch_size 24 (line 10): the
  // same callback's gpt_oss copy logs samples_count gbs x train_state.step before the step is
  // counted, every 32 steps: 0 for step 1 (line 32), 768 for step 33. Lines 1-77 of 9216 steps.
  Result<Read> r = ReadLog("mllog_nv_gpt_oss_20b_delta_timing_before_step.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<int64_t> steps;
  for (int64_t s = 1; s <= 993; s += 32) steps.push_back(s);
  EXPECT_EQ(r->Steps(), steps);  // lines 32-47 and 55-70
  EXPECT_EQ(r->Loss(1), 12.3104887008667);
  // Step 1 is a span of one: its own train_step_time (line 32), not run_start to line 32.
  EXPECT_DOUBLE_EQ(*r->At(1)->ms, 0.6069824695587158 * 1000);
  EXPECT_DOUBLE_EQ(*r->At(33)->ms, (1778616296591.0 - 1778616281023.0) / 32);  // lines 32-33
  // Line 47 (step 481) to line 55 (step 513), less block_stop (line 49) to block_start (line 54).
  EXPECT_DOUBLE_EQ(*r->At(513)->ms,
                   (1778616539229.0 - 1778616516489.0 - (1778616538690.0 - 1778616532166.0)) / 32);
  ASSERT_EQ(r->log.evals.size(), 2u);
  EXPECT_EQ(r->log.evals[0].step, 512);  // line 52, inside eval_start step 512 (line 50)
  EXPECT_EQ(r->log.evals[0].value, 5.013967514038086);
  EXPECT_EQ(r->log.evals[1].step, 1024);  // line 75
  EXPECT_TRUE(
      r->Note("mllog_nv_gpt_oss_20b_delta_timing_before_step.log:32: a training record "
              "at samples_count 0"));
  EXPECT_TRUE(r->Note("Megatron-Bridge DeltaTimingCallback"));
  EXPECT_TRUE(r->Note("run_start but no run_stop"));
}

TEST(Corpus, MlperfNvidiaDeepSeekRecordPrintedAfterTheBlockStop) {
  // NVIDIA's deepseekv3_671b (v6.0, Megatron-Bridge, 256 GB200), global_batch_size 15360 (line 8),
  // an evaluation after every step. Step 1's tracked_stats (line 34, samples_count 15360, stamped
  // 1778675048722) prints after the block_stop (line 32, samples_count 15360 = eval_interval x
  // gbs, step 1, stamped 1778675048723): the last pipeline stage's line, not a step that starts
  // at 15360. It was read as "samples before the step" and every record one step late (2-6).
  Result<Read> r = ReadLog("mllog_nv_deepseekv3_record_after_block_stop.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5}));  // lines 34, 42, 47, 58, 66
  EXPECT_EQ(r->Loss(1), 5.139893531799316);
  EXPECT_DOUBLE_EQ(*r->At(1)->ms, 40.34449577331543 * 1000);  // line 34's own train_step_time
  EXPECT_EQ(r->Loss(5), 5.11906099319458);                    // line 66: 76800 / 15360
  ASSERT_EQ(r->log.evals.size(), 5u);
  EXPECT_EQ(r->log.evals[0].step, 1);  // line 36, inside eval_start step 1 (line 33)
  EXPECT_EQ(r->log.evals[0].value, 5.156154155731201);
  EXPECT_EQ(r->log.evals[4].step, 5);  // line 68
  EXPECT_FALSE(r->Note("counts the samples before their step"));
}

TEST(Corpus, MlperfKraiLoraShellTraceAndSrunPrefix) {
  // Krai's llama2_70b_lora (v6.0, 4 GH200, NVIDIA's v5.0 NeMo container): shell xtrace lines, a
  // cache_clear stamped 111111111111 (line 5), srun -l's "0: " before every MLLOG line, the
  // PyTorch banner; train_loss every 10 steps at samples_count (line 79: 80, step 10) with lr,
  // block_stop naming the block's first samples_count (line 99: 0), mlperf_common's block means
  // (line 98: throughput, train_step_time, max_memory_usage at "step" 0), global batch size 8
  // (line 66).
  Result<Read> r = ReadLog("mllog_krai_gh200_llama2_70b_lora_shell_trace.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 38u);  // 80 ... 1520, 1600 ... 1920, ..., 2720 ... 3040
  // run_start (line 77, 1762262107156) to step 10 (line 79, 1762262196670).
  EXPECT_DOUBLE_EQ(*r->At(10)->ms, (1762262196670.0 - 1762262107156.0) / 10);
  EXPECT_EQ(r->At(10)->lr, 0.0005497879849661988);
  // Step 190 (line 97, 1762263819178) to step 200 (line 105, 1762263994297), less block_stop
  // (line 99, 1762263837335) to block_start (line 104, 1762263922140).
  EXPECT_DOUBLE_EQ(*r->At(200)->ms,
                   (1762263994297.0 - 1762263819178.0 - (1762263922140.0 - 1762263837335.0)) / 10);
  EXPECT_EQ(r->Loss(380), 1.3111546039581299);
  ASSERT_EQ(r->log.evals.size(), 5u);
  EXPECT_EQ(r->log.evals[0].step, 192);  // line 101: 1536 / 8
  EXPECT_EQ(r->log.evals[4].value, 0.9231685572276914);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 71.27 * kGiB);  // line 98
  // run_start (line 77) to run_stop (line 151, 1762265991272).
  EXPECT_DOUBLE_EQ(*r->log.wall_s, (1762265991272.0 - 1762262107156.0) / 1000);
}

TEST(Corpus, MlperfAmdPrimusSftBlocksCrlf) {
  // AMD's llama2_70b_lora (v6.0, Primus, primus_mllog mlperf_sft.py, 8 MI355X), CRLF line ends:
  // no training records; blocks at cumulative samples_count (line 37: 0, line 38: 1536), global
  // batch size 8 (line 9); run_duration and throughput events (lines 64-65) are not read.
  Result<Read> r = ReadLog("mllog_amd_primus_sft_llama2_70b_lora_crlf.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.lines, 65);
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{192, 240, 288, 336, 384}));
  // Line 37 (block_start 1778386209957) to line 38 (block_stop 1778386413334) over 1536 / 8.
  EXPECT_DOUBLE_EQ(*r->At(192)->ms, (1778386413334.0 - 1778386209957.0) / 192);
  // Line 57 (block_start 2688, 1778386603122) to line 58 (block_stop 3072, 1778386672329).
  EXPECT_DOUBLE_EQ(*r->At(384)->ms, (1778386672329.0 - 1778386603122.0) / 48);
  ASSERT_EQ(r->log.evals.size(), 5u);
  EXPECT_EQ(r->log.evals[0].step, 192);                  // line 40
  EXPECT_EQ(r->log.evals[4].value, 0.9249749779701233);  // line 60
  // run_start (line 35, 1778386209957) to run_stop (line 63, 1778386684912, "success").
  EXPECT_DOUBLE_EQ(*r->log.wall_s, (1778386684912.0 - 1778386209957.0) / 1000);
}

TEST(Corpus, MlperfHabanaLlama2LoraBlockStartNamesSteps) {
  // Intel Habana's llama2_70b_lora (v4.0, the reference's mlperf_logging_utils.py): train_loss at
  // samples_count 192, 576, ... (global_batch_size 8, line 10: steps 24, 72, ...), and each
  // block_start after an evaluation names the step count (line 30: samples_count 192 after the
  // evaluation at 1536 = step 192), the reference's slip, not a position.
  Result<Read> r = ReadLog("mllog_habana_llama2_70b_lora_block_start_steps.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(),
            (std::vector<int64_t>{24, 72, 120, 168, 216, 264, 312, 360, 408}));  // 3264 / 8
  EXPECT_EQ(r->Loss(24), 3.2219);
  // run_start (line 23, 1715240631570) to the first train_loss (line 24, 1715240877183).
  EXPECT_DOUBLE_EQ(*r->At(24)->ms, (1715240877183.0 - 1715240631570.0) / 24);
  ASSERT_EQ(r->log.evals.size(), 6u);
  EXPECT_EQ(r->log.evals[0].step, 192);  // line 29: 1536 / 8
  EXPECT_EQ(r->log.evals[5].step, 432);  // line 49: 3456 / 8
  EXPECT_DOUBLE_EQ(*r->log.wall_s, (1715245747047.0 - 1715240631570.0) / 1000);
}

TEST(Corpus, MlperfHabanaGpt3OneBlockPlacedByEvaluations) {
  // Intel Habana's GPT-3 on Gaudi2 (v4.0, Megatron-DeepSpeed): one block_start (line 36:
  // first_epoch_num 0, epoch_count 50331648) and one block_stop at the end of the run (line 114:
  // first_epoch_num 0); evaluations every 50331648 tokens (eval_start/eval_stop with epoch_num).
  // gbs 2048 (line 21) x seq 2048 (line 23): 12 steps between evaluations.
  Result<Read> r = ReadLog("mllog_habana_gpt3_one_block_evals.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 25u);  // 12 ... 300 (1258291200 / 4194304)
  EXPECT_EQ(r->Steps().back(), 300);
  // run_start (line 35, 1715299300491) to the first eval_start (line 38, 1715299518451).
  EXPECT_DOUBLE_EQ(*r->At(12)->ms, (1715299518451.0 - 1715299300491.0) / 12);
  // eval_start (line 38) to eval_start (line 41, 1715299678157) less the evaluation (line 38 to
  // eval_stop at line 40, 1715299537054): 141103 / 12 = 11758.6.
  EXPECT_DOUBLE_EQ(*r->At(24)->ms,
                   (1715299678157.0 - 1715299518451.0 - (1715299537054.0 - 1715299518451.0)) / 12);
  EXPECT_EQ(r->log.evals.size(), 25u);
  EXPECT_EQ(r->log.evals[0].step, 12);
}

TEST(Corpus, MlperfNvidiaStepIsSamples) {
  // NVIDIA's llama31_405b (v5.0, NeMo 25.04): MetricsLogger._log_throughputs logs "step": (step
  // + 1) x gbs, samples, at global_batch_size 896 (line 2). The last before the evaluation (line
  // 75: 46592) equals the eval_accuracy's samples_count (line 83).
  Result<Read> r = ReadLog("mllog_nv_llama31_405b_step_is_samples.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 56u);  // lines 24-75 and 87-90: 896 ... 50176
  EXPECT_EQ(r->Steps().front(), 1);          // 896 / 896
  EXPECT_EQ(r->Steps().back(), 56);          // 50176 / 896
  EXPECT_EQ(r->At(896), nullptr);
  EXPECT_EQ(r->At(1)->span, 1);
  EXPECT_DOUBLE_EQ(*r->At(1)->ms, 20.216278076171875 * 1000);  // line 24
  EXPECT_EQ(r->Loss(1), 7.7325825691223145);
  EXPECT_DOUBLE_EQ(*r->At(53)->ms, 20.237173080444336 * 1000);  // line 87: 47488 / 896
  ASSERT_EQ(r->log.evals.size(), 1u);
  EXPECT_EQ(r->log.evals[0].step, 52);  // line 83: 46592 / 896
  EXPECT_TRUE(r->Note("tracked_stats' metadata.step counts samples"));
}

TEST(Corpus, MlperfFluxTrainLossWithStepAndLr) {
  // NVIDIA's flux1 (v5.1): tracked_stats {"train_loss"} at metadata "step" 10, 20, ... with
  // samples_count = step x 512 (line 12) and the lr; timed by time_ms: run_start (line 30,
  // 1759762953618) to line 32 (1759762959109) over 10 steps.
  Result<Read> r = ReadLog("mllog_nv_flux1_train_loss_lr.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 53u);  // 10 ... 510 (lines 32-82), 520, 530
  EXPECT_EQ(r->Steps().front(), 10);
  EXPECT_EQ(r->Steps().back(), 530);
  EXPECT_EQ(r->Loss(10), 1.8901784420013428);
  EXPECT_EQ(r->At(10)->lr, 1.3741411617738913e-06);
  EXPECT_DOUBLE_EQ(*r->At(10)->ms, (1759762959109.0 - 1759762953618.0) / 10);  // 549.1
  // Step 520 (line 90) less the evaluation from block_stop (line 84) to block_start (line 89).
  EXPECT_DOUBLE_EQ(*r->At(520)->ms,
                   (1759763259767.0 - 1759763241373.0 - (1759763255240.0 - 1759763242540.0)) / 10);
  EXPECT_EQ(r->At(512), nullptr);  // line 83: mlperf_common's block mean, no step
  ASSERT_EQ(r->log.evals.size(), 1u);
  EXPECT_EQ(r->log.evals[0].step, 512);  // line 86: samples_count 262144 / 512
  EXPECT_EQ(r->log.evals[0].value, 0.7156634495176118);
}

TEST(Corpus, MlperfCommonBlockStatsAtStepZeroAreNoRecords) {
  // NVIDIA's llama2_70b_lora (v5.0, GB200, mlperf_common): train_loss every 10 steps at
  // samples_count / 8 (line 16); one tracked_stats {throughput, train_step_time,
  // max_memory_usage} per block (lines 47, 59, 70, 82, 94, 106) at "step" = the block's first
  // sample (0, 1536, ...; mlperf_common _log_training_throughput): no record at 1 or 1536.
  Result<Read> r = ReadLog("mllog_nv_llama2_70b_lora_block_stats_step0.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 43u);  // samples_count 80 ... 3440
  EXPECT_EQ(r->Steps().front(), 10);
  EXPECT_EQ(r->Steps().back(), 430);  // 3440 / 8
  EXPECT_EQ(r->At(1), nullptr);
  EXPECT_EQ(r->At(1536), nullptr);
  // Step 10 from run_start (line 26) to line 28: (1745064459127 - 1745064444546) / 10 = 1458.1.
  EXPECT_EQ(r->At(10)->span, 10);
  EXPECT_DOUBLE_EQ(*r->At(10)->ms, (1745064459127.0 - 1745064444546.0) / 10);
  EXPECT_EQ(r->Loss(10), 2.1907553672790527);
  // max_memory_usage 168.83 GiB (lines 47-106): torch.cuda.max_memory_allocated / 2^30.
  ASSERT_TRUE(r->log.peak_memory_bytes);
  EXPECT_DOUBLE_EQ(*r->log.peak_memory_bytes, 168.83 * kGiB);
  EXPECT_EQ(r->log.evals[0].step, 192);  // line 49: 1536 / 8
  EXPECT_TRUE(r->Note(":47: 6 tracked_stats train_step_time"));
}

TEST(Corpus, MlperfAmdNemoLoraBlocksNameTheirGlobalStep) {
  // AMD's llama2_70b_lora (v5.1, one MI300X node, AMD's NeMo implementation,
  // src/callbacks/custom_callbacks.py): no training records; blocks at the cumulative
  // samples_count (line 22: 0, line 24: 1536) whose block_stop also names curr_global_step (192)
  // and self.gbs (8), a tracked_stats {"throughput"} at "step" = samples before each block_stop
  // (line 23: 1536), global_batch_size 8 (line 9).
  Result<Read> r = ReadLog("mllog_amd_nemo_llama2_70b_lora_curr_global_step.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{192, 240, 288, 336, 384, 432, 480}));
  EXPECT_FALSE(r->Loss(192));
  // Line 22 (block_start 1755477365577) to line 24 (block_stop 1755478097187) over 1536 / 8.
  EXPECT_DOUBLE_EQ(*r->At(192)->ms, (1755478097187.0 - 1755477365577.0) / 192);
  // Line 28 (block_start 1755478128188) to line 30 (block_stop 1755478309685): 48 steps.
  EXPECT_DOUBLE_EQ(*r->At(240)->ms, (1755478309685.0 - 1755478128188.0) / 48);
  // Line 58 (block_start 1755479189164) to line 60 (block_stop 1755479370742).
  EXPECT_DOUBLE_EQ(*r->At(480)->ms, (1755479370742.0 - 1755479189164.0) / 48);
  ASSERT_EQ(r->log.evals.size(), 7u);
  EXPECT_EQ(r->log.evals[0].step, 192);  // line 26: samples_count 1536 / 8
  EXPECT_EQ(r->log.evals[0].value, 0.9382773041725159);
  EXPECT_EQ(r->log.evals[6].step, 480);  // line 62: 3840 / 8
  EXPECT_EQ(r->log.evals[6].value, 0.923464298248291);
  // run_start (line 21, 1755477365577) to run_stop (line 64, 1755479401425, "success"; its own
  // "duration" by the callback's clock: "2035.847635269165 sec").
  EXPECT_DOUBLE_EQ(*r->log.wall_s, (1755479401425.0 - 1755477365577.0) / 1000);
  EXPECT_TRUE(r->Note("steps timed by the block_start/block_stop events"));
}

TEST(Corpus, MlperfLambdaLoraLineGarbledMidLogIsSkipped) {
  // Lambda's llama2_70b_lora (v4.1, 4x8 H100, NVIDIA's NeMo 24.04 implementation under srun -l,
  // " 0: " before every line), lines 778-934 of the result: line 2, an init_start, was garbled by
  // a text substitution (`"value": nullLambdaorkspace/ft-llm/custom_callbacks.py", ...`: no JSON
  // object), which made the whole log an error; no event read here is lost with it. Blocks at
  // cumulative samples_count (line 116: 0, line 120: 1536), global_batch_size 8 (line 9).
  Result<Read> r = ReadLog("mllog_lambda_llama2_70b_lora_garbled_line.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{192, 240, 288, 336, 384, 432}));
  // Line 116 (block_start 1727545458319) to line 120 (block_stop 1727545673837) over 1536 / 8.
  EXPECT_DOUBLE_EQ(*r->At(192)->ms, (1727545673837.0 - 1727545458319.0) / 192);
  // Line 151 (block_start 1727545914752) to line 153 (block_stop 1727545960884): 48 steps.
  EXPECT_DOUBLE_EQ(*r->At(432)->ms, (1727545960884.0 - 1727545914752.0) / 48);
  ASSERT_EQ(r->log.evals.size(), 6u);
  EXPECT_EQ(r->log.evals[0].step, 192);  // line 125: 1536 / 8
  EXPECT_EQ(r->log.evals[0].value, 0.9422376155853271);
  EXPECT_EQ(r->log.evals[5].step, 432);  // line 155: 3456 / 8
  EXPECT_EQ(r->log.evals[5].value, 0.9229034185409546);
  // run_start (line 115, 1727545458319) to run_stop (line 157, 1727545972048, "success").
  EXPECT_DOUBLE_EQ(*r->log.wall_s, (1727545972048.0 - 1727545458319.0) / 1000);
  EXPECT_TRUE(
      r->Note("mllog_lambda_llama2_70b_lora_garbled_line.log:2: 1 :::MLLOG line(s) "
              "garbled mid-log (no JSON object; the first names key \"init_start\""));
}

TEST(Corpus, MlperfNvidiaSdRunStopStampedBeforeTheOfflineEvaluations) {
  // NVIDIA's stable_diffusion (v4.1, 8 H100, NeMo 24.09, /workspace/sd/callbacks.py): blocks of
  // 100 steps (value "training_step", samples_count 0 to 102400 at global_batch_size 1024, lines
  // 12, 29-30) with a throughput-only tracked_stats at step_num after each, training on to step
  // 3500 (line 132); the checkpoints are evaluated offline after training (lines 134-141: FID,
  // then CLIP, at samples_count 2048000 and 2560000), and run_stop comes last (line 142) but is
  // stamped at step 2500's block_stop (line 102, 1726879297395), the checkpoint that reached the
  // target ("step_num": 2500).
  Result<Read> r = ReadLog("mllog_nv_sd_v41_run_stop_before_offline_evals.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 35u);
  EXPECT_EQ(r->Steps().front(), 100);
  EXPECT_EQ(r->Steps().back(), 3500);  // line 132: 3584000 / 1024
  EXPECT_FALSE(r->Loss(100));
  // Lines 29-30: block_start 1726878976336 to block_stop 1726878987828 over 100 steps.
  EXPECT_DOUBLE_EQ(*r->At(100)->ms, (1726878987828.0 - 1726878976336.0) / 100);
  // Lines 101-102: block_start 1726879285173 to block_stop 1726879297395.
  EXPECT_DOUBLE_EQ(*r->At(2500)->ms, (1726879297395.0 - 1726879285173.0) / 100);
  // Lines 131-132: block_start 1726879414052 to block_stop 1726879426980.
  EXPECT_DOUBLE_EQ(*r->At(3500)->ms, (1726879426980.0 - 1726879414052.0) / 100);
  ASSERT_EQ(r->log.evals.size(), 2u);     // FID (lines 136, 140); CLIP (137, 141) left out
  EXPECT_EQ(r->log.evals[0].step, 2000);  // line 136: 2048000 / 1024
  EXPECT_EQ(r->log.evals[0].value, 96.78894140859427);
  EXPECT_EQ(r->log.evals[1].step, 2500);  // line 140: 2560000 / 1024
  EXPECT_EQ(r->log.evals[1].value, 88.51338542754172);
  EXPECT_EQ(r->log.eval_what, "MLPerf eval_accuracy FID");
  // run_start (line 28, 1726878976334) to run_stop's stamp (line 142, 1726879297395): MLPerf's
  // time to train, though the line is printed after the offline evaluations.
  EXPECT_DOUBLE_EQ(*r->log.wall_s, (1726879297395.0 - 1726878976334.0) / 1000);
  EXPECT_FALSE(r->Note("run_start but no run_stop"));
}

TEST(Corpus, MlperfFujitsuSdTrackedStatsAtStepNum) {
  // Fujitsu's stable_diffusion (v4.0, 4 H100, NVIDIA's v4.0 NeMo implementation under srun -l,
  // "0: " before every line), lines 592-705 of the result: one tracked_stats {throughput, loss,
  // lr} per block of 100 steps, printed after the block_stop, naming its step as "step_num" only
  // (line 48: step_num 100, no samples_count). They were numbered in order (1, 2, ...), each
  // timed as one step over 100 steps' time. The excerpt ends mid-run: no run_stop.
  Result<Read> r = ReadLog("mllog_fujitsu_sd_tracked_stats_step_num.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 22u);  // lines 48, 51, ..., 113
  EXPECT_EQ(r->Steps().front(), 100);
  EXPECT_EQ(r->Steps().back(), 2200);
  EXPECT_EQ(r->At(1), nullptr);
  EXPECT_EQ(r->Loss(100), 1.1177679331582582);  // line 48
  EXPECT_EQ(*r->At(100)->lr, 2.557442485340289e-06);
  // run_start (line 18, 1714724929129) to step 100's record (line 48), less block_stop (line
  // 47, 1714725013660) to the next block_start (line 49): run_start to that block_stop.
  EXPECT_EQ(r->At(100)->span, 100);
  EXPECT_DOUBLE_EQ(*r->At(100)->ms, (1714725013660.0 - 1714724929129.0) / 100);
  // Step 2000 (line 105): block_start line 103 (1714725928218) to block_stop line 104
  // (1714725977648), what is left of the gap from line 102's record.
  EXPECT_DOUBLE_EQ(*r->At(2000)->ms, (1714725977648.0 - 1714725928218.0) / 100);
  EXPECT_EQ(r->Loss(2200), 0.3510939372239239);  // line 113
  EXPECT_EQ(r->log.facts.at("gbs").value, 256);  // line 2
  EXPECT_FALSE(r->log.wall_s);
  EXPECT_TRUE(r->Note("mllog_fujitsu_sd_tracked_stats_step_num.log:18: run_start but no run_stop"));
}

TEST(Corpus, MlperfTinycorpBertPlacedByTheStepItsEvalStartNames) {
  // tinycorp's BERT on tinybox 8xMI300X (v5.0, tinygrad examples/mlperf/model_train.py): no
  // training events and no blocks; each eval_start names epoch_num (samples: 149504 = 146 x
  // global_batch_size 1024, line 11) and step_num (line 29: 146), its eval_stop the evaluation's
  // own samples_count (10240, line 30). max_sequence_length 512 (line 12). It was an error (no
  // training step, the epoch_stop at line 95 placing none).
  Result<Read> r = ReadLog("mllog_tinycorp_bert_eval_step_num.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 22u);  // eval_start lines 29, 32, ..., 92
  EXPECT_EQ(r->Steps().front(), 146);
  EXPECT_EQ(r->Steps().back(), 3212);  // line 92
  EXPECT_FALSE(r->Loss(146));
  // run_start (line 9, 1745532618573) to the first eval_start (line 29, 1745533321994).
  EXPECT_EQ(r->At(146)->span, 146);
  EXPECT_DOUBLE_EQ(*r->At(146)->ms, (1745533321994.0 - 1745532618573.0) / 146);
  // eval_stop (line 30, 1745533363168) to the next eval_start (line 32, 1745533638843).
  EXPECT_DOUBLE_EQ(*r->At(292)->ms, (1745533638843.0 - 1745533363168.0) / 146);
  // eval_stop (line 90, 1745538996846) to the last eval_start (line 92, 1745539272384).
  EXPECT_DOUBLE_EQ(*r->At(3212)->ms, (1745539272384.0 - 1745538996846.0) / 146);
  ASSERT_EQ(r->log.evals.size(), 22u);
  EXPECT_EQ(r->log.evals[0].step, 146);
  EXPECT_EQ(r->log.evals[0].value, 0.37238641977310183);  // line 31
  EXPECT_EQ(r->log.evals[21].step, 3212);
  EXPECT_EQ(r->log.evals[21].value, 0.7201055765151978);  // line 94
  EXPECT_EQ(r->log.facts.at("mpe").value, 512);
  // run_start (line 9) to run_stop (line 96, 1745539277038, "success").
  EXPECT_DOUBLE_EQ(*r->log.wall_s, (1745539277038.0 - 1745532618573.0) / 1000);
  EXPECT_TRUE(r->Note("placed by the step each evaluation's eval_start names"));
}

TEST(Corpus, MlperfNvidiaRgatEvaluationsAtEpochFractionsSayWhyNoStep) {
  // NVIDIA's rgat (v5.1, DGL, 8 GPUs): one epoch (epoch_start line 25, epoch_stop line 87),
  // evaluations at epoch_num 0.05, 0.1, ... 1.0 (lines 26-85), one tracked_stats {train_time,
  // throughput, train_accuracy, max_memory_usage} at epoch_num 1.0 (line 86) and one {walltime}
  // (line 88): no training statistics and no position in steps (train_samples 94605581, line 23,
  // is no multiple of global_batch_size 32768, line 17). Read by its time to train
  // (logparse_mlperf_time_to_train_test.cc); the note says why no step.
  Result<Read> r = ReadLog("mllog_nv_rgat_epoch_fraction_evals.log", "mllog");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->log.iterations.empty());
  EXPECT_TRUE(r->Note(
      "mllog_nv_rgat_epoch_fraction_evals.log: no training step in 90 lines: none of its 2 "
      "tracked_stats events holds a training loss, lr, grad_norm or step time, and it has "
      "no block_stop events; its 1 epoch_stop event(s) (the first at line 87) time whole "
      "epochs by epoch_num and place no step; its evaluations are at epoch fractions "
      "(epoch_num 0.05 at line 27), no step either; the run is read by MLPerf's own measures "
      "instead"));
}

// ---- FlagPerf -------------------------------------------------------------

TEST(Corpus, FlagPerfSummaryOverDeepSpeed) {
  Result<Read> r =
      ReadLog("flagperf_llama2_7b_deepspeed.log", "flagperf", {{"layout", "TP1PP1DP8"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 20, 30}));  // DeepSpeed's lines
  EXPECT_DOUBLE_EQ(r->PerDevice(), 1638.4);                   // line 8: Tokens/p/s
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["tokens_per_s"].get<double>(), 13107.2);  // line 7
  EXPECT_EQ(r->m()["mfu"]["stated"], 0.22055384615384614);                        // line 11
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 58.42 * kGiB);
}

TEST(Corpus, FlagPerfSummaryOnly) {
  Result<Read> r = ReadLog("flagperf_aquila2_7b_summary_only.log", "flagperf");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->log.iterations.empty());
  EXPECT_DOUBLE_EQ(r->PerDevice(), 3072.0);
  EXPECT_EQ(r->m()["mfu"]["stated"], 0.41353846153846155);
  EXPECT_TRUE(r->m()["config"]["steps"].is_null());
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());  // the log reports none
}

TEST(Corpus, FlagPerfPerfLogEventsCpm) {
  // FlagPerf's README, `tail -n 6 rank0.out.log` of a CPM case on 1x8 A100: the last STEP_END
  // (line 1), EVALUATE without a value, and FINISHED (line 5). num_trained_samples 869632 over
  // global_steps 3397 = 256 a step; seq/s 822.455385237589 is that step's rate.
  Result<Read> r = ReadLog("flagperf_perflog_cpm_readme_tail.log", "flagperf",
                           {{"mpe", 1024}, {"layout", "TP1PP1DP8"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{3397}));
  EXPECT_EQ(r->Loss(3397), 2.679504871368408);
  EXPECT_EQ(*r->At(3397)->lr, 0.000175375);
  EXPECT_EQ(*r->At(3397)->samples, 256);
  EXPECT_EQ(*r->At(3397)->samples_per_s, 822.455385237589);
  ASSERT_TRUE(r->log.trainer_average.has_value());
  EXPECT_EQ(*r->log.trainer_average->samples_per_s, 579.0933420700227);  // line 5
  EXPECT_EQ(r->log.trainer_average->through_step, 3397);
  EXPECT_EQ(*r->log.wall_s, 1661.6114165782928);  // e2e_time
  // 579.0933420700227 samples/s x 1024 tokens / 8 devices.
  EXPECT_DOUBLE_EQ(r->PerDevice(), 579.0933420700227 * 1024 / 8);
  EXPECT_TRUE(r->log.evals.empty());  // EVALUATE names no eval_loss
}

TEST(Corpus, FlagPerfPerfLogEventsBertPaddleAuto) {
  // An older FlagPerf README's BERT (Paddle) tail: num_trained_samples 10500864 at global_steps
  // 41020 (41019 x 256: the ratio, 255.994, is the mean batch the log implies).
  Result<Read> r = ReadLog("flagperf_perflog_bert_paddle_readme_tail.log", "auto", {{"mpe", 512}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "flagperf");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{41020}));
  EXPECT_EQ(r->Loss(41020), 1.298828125);
  EXPECT_DOUBLE_EQ(*r->At(41020)->samples, 10500864.0 / 41020);
  EXPECT_EQ(*r->log.trainer_average->samples_per_s, 1221.242941532543);
}

TEST(Corpus, FlagPerfPerfLogGlmKunlunxinEvalAccuracy) {
  // FlagPerf's GLM case on Kunlunxin R300 (1x8): STEP_END at every step, each carrying the
  // trainer state's eval_accuracy (the last evaluation's: 0.7769 at 2399, line 1), the STEP_END
  // of step 2400 (line 2) with the evaluation that step ran, 0.8004 (the 0.8 target, so
  // end_training), and EVALUATE after it in the same millisecond (line 3), without a value.
  // Before, no evaluation was read.
  Result<Read> r = ReadLog("flagperf_perflog_glm_kunlunxin_eval_accuracy_pr31.log", "auto",
                           {{"mpe", 512}, {"layout", "TP1PP1DP8"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "flagperf");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{2399, 2400}));
  EXPECT_EQ(r->Loss(2399), 0.2211799919605255);
  EXPECT_EQ(r->Loss(2400), 0.6775041818618774);
  EXPECT_EQ(*r->At(2400)->lr, 5.467496542185339e-06);
  EXPECT_EQ(*r->At(2399)->samples, 32);  // 76768 / 2399
  EXPECT_EQ(*r->At(2400)->samples, 32);  // 76800 / 2400
  EXPECT_EQ(*r->At(2400)->samples_per_s, 3.946610529871572);
  ASSERT_EQ(r->log.evals.size(), 1u);
  EXPECT_EQ(r->log.evals[0].step, 2400);
  EXPECT_EQ(r->log.evals[0].value, 0.8003999590873718);
  EXPECT_EQ(r->log.evals[0].line, 2);
  EXPECT_EQ(r->m()["eval"]["step"], 2400);
  // The steps' own rates (seq/s: 32 samples over each step's time, the evaluation of step 2400,
  // 631 s between the two lines' time_ms, not in it): 64 x 512 tokens over 8 devices. The
  // sequence length and the layout are set here; the log gives neither.
  EXPECT_DOUBLE_EQ(r->PerDevice(),
                   64 * 512 / (32 / 3.9555062554611267 + 32 / 3.946610529871572) / 8);
}

// ---- auto -----------------------------------------------------------------

TEST(Corpus, MegatronNeoxLmLossUnderscore) {
  // GPT-NeoX's iteration line (line 4) spells the loss lm_loss; the DeepSpeed lines around it
  // are DeepSpeed's own.
  Result<Read> r = ReadLog("megatron_neox_lm_loss_issue3742.log", "auto", {{"mpe", 2048}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "megatron");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{34}));
  EXPECT_EQ(r->Loss(34), 11.18665);
  EXPECT_EQ(r->At(34)->ms, 4103.1);
  EXPECT_EQ(r->At(34)->lr, 2.111e-06);
}

TEST(Corpus, TrainerDictsNamingGlobalStep) {
  // PaddleNLP's Trainer (2022) names the step global_step: the records are at 150-200.
  Result<Read> r = ReadLog("trainer_paddlenlp_global_step_pr1761.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "trainer");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{150, 160, 170, 180, 190, 200}));
  EXPECT_EQ(r->Loss(150), 0.1856);
  EXPECT_EQ(r->Loss(200), 0.1252);
  EXPECT_EQ(r->At(160)->span, 10);
}

TEST(Corpus, LlamaFactoryJsonlCurrentSteps) {
  // trainer_log.jsonl (LogCallback.on_log): current_steps is the Trainer's global_step; the
  // closing line (3235, "loss": null) is no training record.
  Result<Read> r = ReadLog("trainer_llamafactory_issue774_jsonl.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "trainer");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{3200, 3210, 3220, 3230}));
  EXPECT_EQ(r->Loss(3200), 4.4671);  // line 1
  EXPECT_EQ(r->Loss(3230), 4.4598);  // line 4
  EXPECT_EQ(r->At(3210)->span, 10);
  EXPECT_EQ(r->At(3230)->lr, 2.9471371284783834e-10);
  EXPECT_FALSE(r->Note("does not state logging_steps"));
}

TEST(Corpus, TrainerStepsFromProgressBarsWithDefaultLoggingSteps) {
  // A Seq2SeqTrainer run that states no logging_steps (transformers' default, 500): the bar
  // before each dict says its step (lines 9, 15, 21: 500/1689, 1000/1689, 1500/1689).
  Result<Read> r = ReadLog("trainer_marianmt_bars_default500.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{500, 1000, 1500}));
  EXPECT_EQ(r->Loss(500), 1.6771);
  EXPECT_EQ(r->Loss(1000), 1.5235);
  EXPECT_EQ(r->Loss(1500), 1.4469);
  EXPECT_DOUBLE_EQ(*r->At(500)->lr, 7.039668442865602e-06);
  EXPECT_EQ(r->At(1000)->span, 500);
  EXPECT_FALSE(r->Note("does not state logging_steps"));  // no dict is numbered by a guess
  EXPECT_EQ(r->m()["config"]["lbs"], 8);                  // lines 4-6
  EXPECT_EQ(r->m()["config"]["gbs"], 8);
  EXPECT_EQ(r->m()["config"]["gas"], 1);
  EXPECT_TRUE(r->m()["wall_s"].is_null());  // line 28, the closing dict, is cut off
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());
}

TEST(Corpus, TrainerMsSwiftMemoryOnOneGpu) {
  // swift sft on a Colab T4: bars and dicts on one line, 'memory(GiB)': '14.3' in each.
  Result<Read> r = ReadLog("trainer_msswift_colab_t4_memory.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "trainer");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50}));
  EXPECT_EQ(r->Loss(1), 0.3713);    // line 2
  EXPECT_EQ(r->Loss(50), 0.03346);  // line 12
  EXPECT_DOUBLE_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 14.3 * kGiB);
  EXPECT_NE(r->m()["memory"]["source"].get<std::string>().find("ms-swift's memory(GiB)"),
            std::string::npos);
  // One GPU here, but the log cannot say so: the note says when it would be a sum.
  EXPECT_TRUE(r->Note("ms-swift's memory(GiB) is per device only when each process drives one"));
  EXPECT_EQ(r->m()["eval"]["val_loss"], 0.03461);  // line 15
  EXPECT_EQ(r->m()["eval"]["step"], 50);
  // 'train_speed(s/it)' (four significant digits) x the step is the 'elapsed_time': line 3's
  // 46.6 x 5 = 233.0 s is its '3m 53s', line 2's 42.51 x 1 its '43s'.
  EXPECT_NEAR(*r->At(5)->ms, (46.6 * 5 - 42.51) / 4 * 1000, 30.0);
  EXPECT_NEAR(*r->At(10)->ms, (47.56 * 10 - 46.6 * 5) / 5 * 1000, 30.0);
}

TEST(Corpus, TrainerAxolotlMemory) {
  // axolotl (August 2025 keys), five dicts; nothing states logging_steps.
  Result<Read> r = ReadLog("trainer_axolotl_issue3196_memory.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_TRUE(r->Note("does not state logging_steps"));
  EXPECT_EQ(r->Loss(1), 4.75);
  EXPECT_EQ(r->Loss(5), 0.2031);
  // The largest memory/device_mem_reserved(gib) (max_memory_reserved), 41.26 from line 2;
  // the allocated figure (34.89) is lower.
  EXPECT_DOUBLE_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 41.26 * kGiB);
  EXPECT_NE(r->m()["memory"]["source"].get<std::string>().find("device_mem_reserved"),
            std::string::npos);
  EXPECT_FALSE(r->Note("ms-swift"));
}

TEST(Corpus, TrainerOptimumHabanaHpuMemory) {
  // optimum-habana's GaudiTrainer on Gaudi 2: each dict ends with the HPU's memory_allocated,
  // max_memory_allocated (its MaxInUse) and total_memory_available, GiB; nothing states
  // logging_steps.
  Result<Read> r = ReadLog("trainer_optimum_habana_hpu_memory_pr1111.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "trainer");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(r->Loss(1), 4.0842);
  EXPECT_EQ(r->Loss(6), 2.1636);
  // 'max_memory_allocated (GB)': 92.5 (lines 4-6), the largest; not the total 94.62.
  EXPECT_DOUBLE_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 92.5 * kGiB);
  EXPECT_NE(r->m()["memory"]["source"].get<std::string>().find("optimum-habana"),
            std::string::npos);
}

TEST(Corpus, TrainerLigerEfficiencyCallbackMemoryInMiB) {
  // Liger-Kernel's EfficiencyCallback adds MiB figures to each dict: total_peak_memory_reserved_MB
  // 47172.0 and total_peak_memory_allocated_MB 26279.24 on lines 2-4 (torch's
  // max_memory_reserved / _allocated / 2^20).
  Result<Read> r = ReadLog("trainer_liger_efficiency_callback_pr110.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "trainer");
  ASSERT_EQ(r->log.iterations.size(), 3u);
  EXPECT_EQ(r->log.iterations[0].loss, 75.1831);  // line 2
  EXPECT_EQ(r->log.iterations[2].loss, 75.81);    // line 4
  // The reserved figure, not the allocated one; MiB, not GiB.
  EXPECT_DOUBLE_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 47172.0 * kMiB);
  EXPECT_NE(r->m()["memory"]["source"].get<std::string>().find(
                "total_peak_memory_reserved_MB (max_memory_reserved), MiB"),
            std::string::npos);
}

TEST(Corpus, TrainerDictsOfMsSwiftNameGlobalStepOverMaxSteps) {
  // ms-swift adds 'global_step/max_steps': '205/270' to every dict (logging_steps 5).
  Result<Read> r = ReadLog("trainer_msswift_global_step_max_steps.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "trainer");
  ASSERT_EQ(r->log.iterations.size(), 14u);
  EXPECT_EQ(r->Steps().front(), 205);  // line 2
  EXPECT_EQ(r->Steps().back(), 270);   // line 15
  EXPECT_EQ(r->Loss(205), 1.00927935);
  EXPECT_FALSE(r->Note("does not state logging_steps"));  // each dict names its step
  EXPECT_EQ(r->Loss(270), 0.98493128);
  EXPECT_EQ(r->At(220)->grad_norm, 3.70276713);
  EXPECT_EQ(r->At(210)->span, 5);
  // 'memory(GiB)': 43.21 on line 2, 43.25 from line 3 on (ms-swift keeps the largest so far).
  EXPECT_DOUBLE_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 43.25 * kGiB);
  // 'train_speed(iter/s)' is global_step over the seconds since training began: the five steps
  // to 210 took 210 / 0.063164 - 205 / 0.063233 = 82.70 s (line 3 minus line 2; their
  // 'elapsed_time' 55m 24s - 54m 1s = 83 s agrees to the second). The first dict's steps are
  // timed by nothing in the excerpt.
  EXPECT_FALSE(r->At(205)->ms);
  EXPECT_NEAR(*r->At(210)->ms, 16540.1, 0.1);
  EXPECT_NEAR(*r->At(270)->ms, 15545.5, 0.1);  // lines 14-15: 270 / 0.063139 - 265 / 0.063117
  Result<Read> tokens = ReadLog("trainer_msswift_global_step_max_steps.log", "auto",
                                {{"mpe", 1024}, {"lbs", 1}, {"layout", "TP1PP1DP1"}});
  ASSERT_TRUE(tokens.ok()) << tokens.status().message();
  EXPECT_EQ(tokens->m()["throughput"]["measured_steps"], 65);  // steps 206-270
  // 65 steps of 1024 tokens over 270 / 0.063139 - 205 / 0.063233 = 1034.3 s.
  EXPECT_NEAR(tokens->PerDevice(), 65 * 1024 / (270 / 0.063139 - 205 / 0.063233), 0.01);
}

TEST(Corpus, MegatronDeepSpeedAlcfKeyValueLines) {
  // argonne-lcf Megatron-DeepSpeed's `iteration=  N/  M | name=value |` lines between
  // DeepSpeed's own (step=, ThroughputTimer): read as Megatron lines, so the time is
  // elapsed_time_per_iteration_ms, not DeepSpeed's RunningAvgSamplesPerSec (75.0, 4.7x
  // the log's own samples_per_second=15.9).
  Result<Read> r =
      ReadLog("megatron_deepspeed_alcf_key_value.log", "auto", {{"layout", "TP1PP1DP8"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "megatron");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{2, 3, 4, 5, 6}));
  EXPECT_EQ(r->Loss(2), 11.208171);  // line 6: lm loss=11.208171
  EXPECT_EQ(r->Loss(6), 11.201191);  // line 30
  EXPECT_EQ(r->At(2)->ms, 16030.6);  // elapsed_time_per_iteration_ms=16030.6
  EXPECT_EQ(r->At(6)->ms, 16092.2);
  EXPECT_EQ(r->At(4)->samples, 256.0);            // global_batch_size=  256
  EXPECT_EQ(r->At(3)->loss_scale, 65536.0);       // loss_scale=65536.0
  EXPECT_EQ(r->At(5)->lr, 0.0);                   // learning_rate=0.000000 (printed %.6f)
  EXPECT_EQ(r->log.facts.at("mpe").value, 4096);  // actual_seqlen= 4096
  EXPECT_FALSE(r->log.trainer_average);
  // The log's own rate (tokens / elapsed / world size), as `tokens per gpu per second (tgs)`.
  EXPECT_EQ(r->At(2)->tokens_per_device_per_s, 8176.383);  // line 6
  EXPECT_EQ(r->At(6)->tokens_per_device_per_s, 8145.085);  // line 30
  // Line 1: report_memory's max reserved 17240.0 MB.
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 17240.0 * kMiB);
  // Eight GPUs (the log's own tokens_per_gpu_per_second_tgs=8176.383 = 256 * 4096 / 16.0306 s
  // / 8); every record is past the first step: 5 * 256 * 4096 tokens over
  // 16.0306 + 16.0718 + 16.0692 + 16.0530 + 16.0922 = 80.3168 s, / 8 = 8159.69.
  EXPECT_NEAR(r->PerDevice(), 5 * 256 * 4096 / 80.3168 / 8, 1e-6);
}

TEST(Corpus, MegatronPrimusCurrentAndAveragePairs) {
  // Primus prints `current/running mean` (trainer.py training_log: elapsed_time_per_iteration
  // * 1000, then statistics.mean(recent_iteration_times)): the first is the iteration's.
  // One real line: the record is checked, not a throughput.
  Result<Read> r = ReadLog("megatron_primus_current_average.log", "auto", {{"mpe", 4096}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "megatron");
  ASSERT_EQ(r->Steps(), (std::vector<int64_t>{126}));
  const Iteration& it = *r->At(126);
  EXPECT_EQ(it.ms, 13372.8);  // not the mean 13364.7
  EXPECT_EQ(it.loss, 6.548988E-03);
  EXPECT_EQ(it.samples, 128.0);
  EXPECT_EQ(it.grad_norm, 0.061);
  EXPECT_DOUBLE_EQ(*it.lr, 9.984820E-06);
  EXPECT_EQ(it.loss_scale, 1.0);
  // `hip mem usage/free/total/usage_ratio: 153.81GB/...`: mem_get_info's used memory, GiB.
  EXPECT_EQ(it.tokens_per_device_per_s, 9801.4);  // `tokens per GPU (tokens/s/GPU): 9801.4/...`
  EXPECT_EQ(*r->log.peak_memory_bytes, 153.81 * kGiB);
  EXPECT_TRUE(r->log.memory_source.starts_with("hip mem usage (Primus"));
}

TEST(Corpus, MegatronPrimusRocmMaxMemoryOfAllRanks) {
  // Primus DeepSeek-V4 smoke run on 8 MI355X (the last 200 lines, colour codes kept), lines 138,
  // 157, 172-179: iterations 1-10. 1 and 2 print one elapsed time; from 3 on `current/mean`
  // pairs and `tokens per GPU` (4096 x 8 / 0.6815 s / 8 = 6010.3 at 3).
  Result<Read> r = ReadLog("megatron_primus_dsv4_rocm_max_mem_smoke_tail.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "megatron");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(r->At(1)->ms, 35577.5);
  EXPECT_EQ(r->At(2)->ms, 18131.4);
  EXPECT_EQ(r->At(3)->ms, 681.5);   // `681.5/681.5`
  EXPECT_EQ(r->At(10)->ms, 526.2);  // `526.2/543.4`: the iteration's, not the mean
  EXPECT_FALSE(r->At(2)->tokens_per_device_per_s);
  EXPECT_EQ(r->At(3)->tokens_per_device_per_s, 6010.3);
  EXPECT_EQ(r->At(10)->tokens_per_device_per_s, 7784.1);
  EXPECT_EQ(r->Loss(1), 11.89968);  // lm loss: 1.189968E+01
  EXPECT_EQ(r->Loss(10), 9.258817);
  EXPECT_EQ(r->At(10)->samples, 8.0);
  EXPECT_EQ(r->At(9)->grad_norm, 7.920);
  // Each line prints the printing rank's (rank 7's) `hip mem usage` and rocm-smi's fullest rank:
  // line 138 `134.60GB/...` and `rank-3 rocm max mem usage/usage_ratio: 136.19GB/47.29%`, lines
  // 157-179 `170.92GB/...` and `rank-3 ... 172.64GB/59.95%` (rank 3's 172.64 in the
  // `total_r_used: [169.33, 171.61, 170.11, 172.64, ...]` line 155). Not the 170.92 of rank 7,
  // nor report_memory's max reserved 160072.00 MB (line 167).
  EXPECT_EQ(*r->log.peak_memory_bytes, 172.64 * kGiB);
  EXPECT_TRUE(r->log.memory_source.starts_with("rocm max mem usage (Primus"));
  EXPECT_DOUBLE_EQ(r->log.facts.at("parameters").value, 57.10e9);  // line 142
}

TEST(Corpus, MegatronPrimusRankZeroParameterLineIsPartOfTheModel) {
  // Primus DeepSeek-V4 smoke run, PP2 EP4 on 8 MI355X under `torchrun --local-ranks-filter 0`:
  // only rank 0's output is shown, so ` > number of parameters on (tensor, pipeline) model
  // parallel rank (0, 0): 1137615064` (line 287) is pipeline stage 0's count alone, while the
  // argument block states pipeline_model_parallel_size 2 (line 1) and tensor 1 (line 135). The
  // count is `Total number of parameters in billions: 5.96` (line 467), not 1.14e9.
  Result<Read> r = ReadLog("megatron_primus_dsv4_pp2_rank0_parameters.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.facts.at("pp").value, 2);
  EXPECT_EQ(r->log.facts.at("tp").value, 1);
  EXPECT_DOUBLE_EQ(r->log.facts.at("parameters").value, 5.96e9);
  EXPECT_EQ(r->log.facts.at("parameters").line, 467);
  EXPECT_TRUE(r->Note("give 1 of the tensor x pipeline ranks' counts only"));
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(r->At(1)->ms, 33425.8);                     // line 463
  EXPECT_EQ(r->Loss(1), 11.90464);                      // lm loss: 1.190464E+01
  EXPECT_EQ(r->At(3)->tokens_per_device_per_s, 285.5);  // line 497: 128 x 16 / 0.8966 s / 8
  EXPECT_EQ(r->At(10)->samples, 16.0);
  // `rank-2 rocm max mem usage/usage_ratio: 26.03GB/9.04%` (lines 482-504) over rank 7's hip
  // 22.93GB and report_memory's 10000.00 MB (line 494).
  EXPECT_EQ(*r->log.peak_memory_bytes, 26.03 * kGiB);
}

TEST(Corpus, Megatron2019LinesWithoutColons) {
  // THUDM's Chinese-Transformer-XL (a fork of Megatron-LM's 2019 pretrain_gpt2.py, abe36e2 to
  // 73af129): ` learning rate 6.300E-06 | lm loss 6.758929E+00 | loss scale 64.0 |`, name and value
  // with no colon, every 100 iterations; its fp16 loss scale falls from 64 to 0.1. Line 4 prints
  // `lm loss NAN`; line 9 is 2019's validation line, ` validation loss at iteration 1000 | LM loss:
  // 4.503653E+00 | LM PPL: 9.034661E+01`.
  Result<Read> r = ReadLog("megatron_2019_no_colons_transformer_xl_issue7.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "megatron");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{400, 500, 600, 700, 800, 900, 1000, 1100, 1200}));
  EXPECT_EQ(r->At(400)->span, 100);
  EXPECT_EQ(r->At(400)->ms, 12879.0);
  EXPECT_EQ(r->Loss(400), 6.758929);
  EXPECT_DOUBLE_EQ(*r->At(400)->lr, 6.300E-06);
  EXPECT_EQ(r->At(400)->loss_scale, 64.0);
  EXPECT_EQ(r->At(1200)->loss_scale, 0.2);
  EXPECT_EQ(r->Loss(1200), 3.978439);
  ASSERT_TRUE(r->At(700)->loss);
  EXPECT_TRUE(std::isnan(*r->At(700)->loss));  // `lm loss NAN`
  EXPECT_EQ(r->At(700)->nan, 1);
  EXPECT_EQ(r->At(800)->nan, 0);
  ASSERT_EQ(r->log.evals.size(), 1u);
  EXPECT_EQ(r->log.evals[0].step, 1000);
  EXPECT_EQ(r->log.evals[0].value, 4.503653);
  EXPECT_EQ(r->log.evals[0].line, 9);
}

TEST(Corpus, Megatron2019ModelParallelCountsAndMaxCached) {
  // DeepSpeedExamples' Megatron-LM (NVIDIA's 2019 code) GPT-2 345M on 2 GPUs, model parallel 2:
  // ` > number of parameters on model parallel rank 0: 178100224` and rank 1 (lines 2-3),
  // report_memory's 2019 fields `| cached: 7890.0 | max cached: 7890.0` (line 19, torch's
  // max_memory_cached, later max_memory_reserved), a stray `s` before iteration 100's line.
  Result<Read> r = ReadLog("megatron_2019_mp2_max_cached_parameters.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "megatron");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{100, 200, 300, 400, 500, 600}));
  EXPECT_EQ(r->At(100)->span, 100);
  EXPECT_EQ(r->At(100)->ms, 810.9);  // line 10, after `s`
  EXPECT_EQ(r->Loss(100), 5.023855);
  EXPECT_EQ(r->Loss(600), 6.003926E-04);
  EXPECT_EQ(r->At(600)->loss_scale, 8192.0);
  EXPECT_EQ(r->log.facts.at("parameters").value, 2 * 178100224.0);
  EXPECT_EQ(r->log.facts.at("parameters").line, 2);
  EXPECT_EQ(*r->log.peak_memory_bytes, 7890.0 * 1024 * 1024);  // not max allocated 6237.83
  EXPECT_TRUE(r->log.memory_source.starts_with("max cached"));
  EXPECT_TRUE(r->log.evals.empty());  // `at the end of training for val data`: no iteration
}

TEST(Corpus, MegatronMindSpeedFsdp2ConsumedTokensAndMemory) {
  // MindSpeed-LLM's FSDP2 trainer (TrainMonitor) fine-tuning Qwen3-8B on 8 Ascend NPUs (the doc's
  // fsdp_size 8, one sample a device), logging_steps 1: no skipped counts, packed-free samples of
  // varying length, so the tokens a step are only in `consumed tokens`.
  Result<Read> r =
      ReadLog("megatron_mindspeed_fsdp2_consumed_tokens.log", "auto", {{"layout", "TP1PP1DP8"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "megatron");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(r->At(1)->ms, 7827.39);  // line 1
  EXPECT_EQ(r->At(3)->ms, 981.08);   // line 3
  EXPECT_EQ(r->Loss(2), 2.443476);   // line 2: lm loss: 2.443476E+00
  EXPECT_EQ(r->At(3)->grad_norm, 45.335);
  EXPECT_EQ(r->At(2)->samples, 8.0);
  // consumed tokens 564, 1357, 2113 (lines 1-3): 564 tokens in 7.82739 s, 793 in 1.33174 s,
  // 756 in 0.98108 s.
  EXPECT_NEAR(*r->At(1)->tokens_per_s, 564 / 7.82739, 1e-9);
  EXPECT_NEAR(*r->At(2)->tokens_per_s, 793 / 1.33174, 1e-9);
  EXPECT_NEAR(*r->At(3)->tokens_per_s, 756 / 0.98108, 1e-9);
  EXPECT_TRUE(r->Note("print consumed tokens but no token rate"));
  // max_memory_reserved(GB): 22.43 (lines 2 and 3; 20.90 on line 1): bytes / 2^30.
  EXPECT_DOUBLE_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 22.43 * kGiB);
  // Steps 2-3 after the warm-up step: (793 + 756) tokens over (1.33174 + 0.98108) s, 8 devices.
  EXPECT_NEAR(r->PerDevice(), (793.0 + 756.0) / (1.33174 + 0.98108) / 8, 1e-6);
}

TEST(Corpus, MegatronFlagScaleMusaGluedFieldAndZeroMemory) {
  // A FlagScale fork for Moore Threads' MUSA (FlagScale_musa), Aquila 7B on 8 devices, GBS 1024:
  // `chip_throughput: 1196.22 /s  learning rate: 1.875E-09 |` (no `|` between: the learning rate
  // was lost) and report_memory lines of zeros (torch.cuda does not see the device's memory:
  // they gave a peak of 0 bytes).
  Result<Read> r = ReadLog("megatron_flagscale_musa_chip_throughput_glued.log", "auto",
                           {{"mpe", 4096}, {"layout", "TP2PP2DP2"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->Steps().size(), 10u);
  EXPECT_EQ(r->At(1)->lr, 1.875E-09);   // line 1
  EXPECT_EQ(r->At(10)->lr, 1.875E-08);  // line 12
  // chip_throughput = 1024 x 4096 tokens / 438.2881 s / 8 devices = 1196.22 (line 1).
  EXPECT_EQ(r->At(1)->tokens_per_device_per_s, 1196.22);
  EXPECT_EQ(r->At(1)->ms, 438288.1);
  EXPECT_EQ(r->Loss(1), 1.120865E+01);
  EXPECT_EQ(r->At(2)->grad_norm, 10.353);  // line 4: `grad norm:`, not max_total_norm_before_clip
  EXPECT_TRUE(r->m()["memory"]["peak_bytes"].is_null());
  EXPECT_TRUE(r->Note("report_memory prints 0 MB"));
  // Steps 2-10: 9 x 1024 x 4096 tokens over their times, / 8 devices.
  const double secs = Sum(
      {428.1496, 418.4673, 429.1513, 425.0916, 428.6349, 417.2912, 430.3837, 425.4147, 420.7174});
  EXPECT_NEAR(r->PerDevice(), 9 * 1024 * 4096 / secs / 8, 1e-6);
}

TEST(Corpus, MegatronMindSpeedMmLinesAtOneAndTwoAreNotCore016s) {
  // MindSpeed-MM's FSDP trainer (train_engine.py training_log): lines at iterations 1 and 2, the
  // loss as `loss:`. Two lines at 1 and 2 were taken for core 0.16's first interval (the line at
  // 2 averaging 1-2), which gave iteration 2 2 x 2231.6 - 6603.7 = -2140.5 ms.
  Result<Read> r = ReadLog("megatron_mindspeed_mm_fsdp2_iterations_1_2.log", "megatron");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r->At(2)->span, 1);
  EXPECT_EQ(r->At(1)->ms, 6603.7);
  EXPECT_EQ(r->At(2)->ms, 2231.6);  // line 2, as printed
  EXPECT_EQ(r->Loss(1), 10.1657);   // line 1: loss: 1.016570E+01
  EXPECT_EQ(r->Loss(2), 10.09848);  // line 2
  EXPECT_EQ(r->At(2)->samples, 8.0);
  EXPECT_EQ(r->At(2)->grad_norm, 49.063);
  EXPECT_FALSE(r->Note("core >= 0.16"));
}

TEST(Corpus, MegatronMindSpeedNpuCiRunWithAGluedFirstLine) {
  // A MindSpeed-LLM (mcore) SFT run on Ascend NPUs kept as a CI baseline: iteration 1's line
  // printed right after another rank's parameter print on the same line, losses to 16 digits,
  // four ranks' memory reports.
  Result<Read> r = ReadLog("megatron_mindspeed_npu_ci_glued_first_line.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "megatron");
  ASSERT_EQ(r->Steps().size(), 11u);
  EXPECT_EQ(r->At(1)->line, 1);
  EXPECT_EQ(r->At(1)->ms, 19814.6);
  EXPECT_EQ(r->Loss(1), 12.0754003524780273);   // line 1
  EXPECT_EQ(r->Loss(11), 10.6332979202270508);  // line 21
  EXPECT_EQ(r->At(11)->ms, 3703.4);
  EXPECT_EQ(r->At(6)->samples, 16.0);
  EXPECT_EQ(r->At(6)->lr, 3.000000E-06);
  // Ranks 1 and 0 report max reserved 13350.0 MB (lines 9, 10), ranks 5 and 4 13090.0 (8, 11).
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 13350.0 * kMiB);
  EXPECT_EQ(r->log.facts.at("parameters").value, 27.63e9);  // line 4, in billions
}

// ---- NeMo 2 (ProgressPrinter) --------------------------------------------

TEST(Corpus, Nemo2PerfRecipeStepsMemoryAndTime) {
  // Llama 3 8B on 8 B200; the sequence length (8192 in the recipe) is not in the
  // excerpt: set here, with the layout.
  Result<Read> r =
      ReadLog("nemo2_llama3_8b_b200_memory.log", "auto", {{"mpe", 8192}, {"layout", "TP1PP1DP8"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "nemo");
  // global_step 45..49 is 0-based: consumed_samples 5888 = 46 * 128 at line 1, 6400 =
  // 50 * 128 at line 5.
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{46, 47, 48, 49, 50}));
  EXPECT_EQ(r->Loss(46), 11.96);         // reduced_train_loss: 11.96
  EXPECT_EQ(r->At(46)->ms, 6080.0);      // train_step_timing in s: 6.08
  EXPECT_EQ(r->At(47)->ms, 6061.0);      // 6.061
  EXPECT_EQ(r->At(50)->ms, 6060.0);      // 6.06
  EXPECT_EQ(r->At(48)->samples, 128.0);  // global_batch_size: 128
  EXPECT_DOUBLE_EQ(*r->At(46)->lr, 6.897e-06);
  EXPECT_EQ(r->At(46)->span, 1);
  // max_memory_reserved: 127785762816 (bytes, global rank 0's device).
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 127785762816.0);
  // Every step is past the first: 5 * 128 * 8192 tokens over
  // 6.080 + 6.061 + 6.082 + 6.071 + 6.060 = 30.354 s, / 8 devices = 21590.56.
  EXPECT_NEAR(r->PerDevice(), 5 * 128 * 8192 / 30.354 / 8, 1e-6);
}

TEST(Corpus, Nemo2PeakMemoryUsageBeforeJune2025) {
  // NeMo 2's MegatronStrategy logged torch.cuda.max_memory_reserved() as `peak_memory_usage`
  // until 710a3e2 (June 2025): `peak_memory_usage: 70833405952` (bytes); `memory_allocated`
  // is the current figure, not read.
  Result<Read> r = ReadLog("nemo2_llmb_llama31_peak_memory_usage.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "nemo");
  // global_step: 49 is 0-based: step 50 (consumed_samples: 6400 = 50 * 128).
  ASSERT_EQ(r->Steps(), (std::vector<int64_t>{50}));
  EXPECT_EQ(r->Loss(50), 11.96);
  EXPECT_EQ(r->At(50)->ms, 12390.0);  // train_step_timing in s: 12.39
  EXPECT_EQ(r->At(50)->samples, 128.0);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 70833405952.0);
}

TEST(Corpus, Nemo2TokensPerSecPerGpu) {
  // TimingCallback(log_tokens_per_sec=True): tokens_per_sec_per_gpu = 32 * 4096 / 8 GPUs /
  // train_step_timing (16384 / 2.389 = 6858.1, printed 6.859e+03). No sequence length in the
  // log: the token rate is the printed one, averaged over the steps' time.
  Result<Read> r = ReadLog("nemo2_deeplink_qwen3_30b_tokens_per_sec_per_gpu.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{528, 529, 530}));  // global_step 527..529
  EXPECT_EQ(r->At(528)->tokens_per_device_per_s, 6859.0);        // line 1
  EXPECT_EQ(r->At(529)->tokens_per_device_per_s, 6706.0);        // line 2
  EXPECT_EQ(r->At(530)->tokens_per_device_per_s, 7702.0);        // line 3
  EXPECT_EQ(r->At(530)->ms, 2127.0);
  EXPECT_EQ(r->Loss(530), 3.221);
  EXPECT_NEAR(r->PerDevice(),
              (6859 * 2.389 + 6706 * 2.443 + 7702 * 2.127) / (2.389 + 2.443 + 2.127), 1e-6);
}

TEST(Corpus, Nemo2BioNemoFirstIterationIsStepOne) {
  // `iteration 0/99 | ... | global_step: 0` is the run's first step (line 3, after two
  // [NeMo W] lines); consumed_samples: 8 = (1 + 1) * 4 at global_step 1 (line 4).
  // mpe 1 and one device set so that tokens read as samples.
  Result<Read> r =
      ReadLog("nemo2_bionemo_evo2_iteration0.log", "nemo", {{"mpe", 1}, {"layout", "TP1PP1DP1"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(r->Loss(1), 1.285);
  EXPECT_EQ(r->At(1)->ms, 23520.0);  // 23.52 s: the first step, left out below
  EXPECT_EQ(r->At(1)->lr, 0.0);
  EXPECT_EQ(r->Loss(8), 1.294);
  EXPECT_EQ(r->At(8)->samples, 4.0);
  EXPECT_FALSE(r->log.peak_memory_bytes);  // no max_memory_reserved field
  // Steps 2-8: 7 * 4 samples over 2.262 + 0.2453 + 0.2391 + 0.2375 + 0.2486 + 0.2475 +
  // 0.2514 = 3.7314 s.
  EXPECT_NEAR(r->PerDevice(), 28 / 3.7314, 1e-9);
}

TEST(Corpus, Nemo2BioNemoSrunPrefixAndCarriedValLoss) {
  // srun's `0: ` (and ` 0: `) before each line; val_loss is carried from the last
  // validation and is not an evaluation here. 2 x 8 H100 and ESM2's 1024 tokens are
  // the README's, not the excerpt's: set here.
  Result<Read> r = ReadLog("nemo2_bionemo_esm2_srun_prefix.log", "auto",
                           {{"mpe", 1024}, {"layout", "TP1PP1DP16"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "nemo");
  // global_step 28..34: consumed_samples 928 = 29 * 32 at line 1.
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{29, 30, 31, 32, 33, 34, 35}));
  EXPECT_EQ(r->Loss(29), 2.778);
  EXPECT_EQ(r->Loss(35), 2.788);
  EXPECT_EQ(r->At(29)->ms, 189.0);
  EXPECT_EQ(r->At(33)->samples, 32.0);
  EXPECT_TRUE(r->log.evals.empty());
  // 7 * 32 * 1024 tokens over 0.189 + 0.1903 + 0.1915 + 0.1894 + 0.1921 + 0.1893 + 0.1902 =
  // 1.3318 s, / 16 devices = 10764.38.
  EXPECT_NEAR(r->PerDevice(), 7 * 32 * 1024 / 1.3318 / 16, 1e-6);
}

TEST(Corpus, Nemo2ValLossAfterValidationLinesIsAnEvaluation) {
  // BioNeMo Evo2 fine-tuning, global_batch_size 1, val_check_interval 5: iterations 0-4 (lines
  // 3-7) are steps 1-5; the checkpoint and "Validation: iteration 1/20" .. "20/20" lines
  // (13-32) follow step 5; iteration 5 (line 37) is the first line with `val_loss: 1.264`, the
  // validation after step 5. Lines 39-45 carry the same value: no new evaluation. The second
  // validation (lines 52-71) comes after the last training line: nothing shows its value.
  Result<Read> r = ReadLog("nemo2_bionemo_evo2_validation_val_loss.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "nemo");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(r->Loss(6), 1.26);
  EXPECT_EQ(r->At(6)->ms, 396.4);  // train_step_timing in s: 0.3964
  EXPECT_EQ(r->At(10)->samples, 1.0);
  ASSERT_EQ(r->log.evals.size(), 1u);
  EXPECT_EQ(r->log.evals[0].step, 5);
  EXPECT_EQ(r->log.evals[0].value, 1.264);
  EXPECT_EQ(r->log.evals[0].line, 37);
  EXPECT_EQ(r->m()["eval"]["val_loss"], 1.264);
  EXPECT_EQ(r->m()["eval"]["step"], 5);
}

TEST(Corpus, Nemo2StepTimeWithoutTheSequenceLength) {
  // NVIDIA-BioNeMo/bionemo-recipes#740 (March 2025): global_batch_size 1, every step, no sequence
  // length anywhere. global_step 120-125 are steps 121-126, each timed by its own
  // `train_step_timing in s`. Without mpe there is no token rate, but the steps' time is the
  // log's: 31.46, 31.63, 32.15, 31.57, 31.70, 31.47 ms (lines 1-6, all past NeMo's one warm-up
  // step), median (31.57 + 31.63) / 2 = 31.60.
  Result<Read> r = ReadLog("nemo2_bionemo_pr740_step_time_no_seq_length.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "nemo");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{121, 122, 123, 124, 125, 126}));
  EXPECT_EQ(r->Loss(121), 1.233);  // line 1
  EXPECT_EQ(r->Loss(126), 1.34);   // line 6
  EXPECT_EQ(r->At(123)->ms, 32.15);
  EXPECT_EQ(r->At(126)->samples, 1.0);
  EXPECT_TRUE(r->m()["throughput"]["tokens_per_device_per_s"].is_null());
  EXPECT_TRUE(r->m()["throughput"]["tokens_per_s"].is_null());
  EXPECT_TRUE(r->Note("set mpe"));
  ASSERT_TRUE(r->m()["throughput"]["step_ms_median"].is_number());
  EXPECT_NEAR(r->m()["throughput"]["step_ms_median"].get<double>(), 31.60, 1e-9);
  EXPECT_EQ(r->m()["throughput"]["measured_steps"], 0);  // no token rate measured
  // val_loss on the first line comes from a validation before it: no evaluation.
  EXPECT_TRUE(r->m()["eval"].is_null());
}

TEST(Corpus, Nemo2LineWrappedByAPageAtItsPipes) {
  // A README's ProgressPrinter line (pretrain_llama3_8b on 8 B200, GBS 128), broken by the page
  // before ` | global_step` and ` | reduced_train_loss`: the continuations start with `|`.
  Result<Read> r = ReadLog("nemo2_perf_readme_wrapped_at_pipes.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "nemo");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{11}));  // global_step: 10 (line 2)
  EXPECT_EQ(r->Loss(11), 11.97);                      // line 3
  EXPECT_EQ(r->At(11)->ms, 3684.0);                   // train_step_timing in s: 3.684
  EXPECT_EQ(r->At(11)->samples, 128.0);               // global_batch_size: 128 (line 1)
  EXPECT_EQ(r->At(11)->lr, 1.649e-06);
  EXPECT_EQ(r->log.peak_memory_bytes, 140129599488.0);  // max_memory_reserved (line 2)
  bool noted = false;
  for (const std::string& n : r->log.notes)
    noted = noted || n.find("continued") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Corpus, Nemo2RunTableGivesTheBatchAndSequenceLength) {
  // `nemo llm pretrain` on one GPU (NeMo 24.12 era, December 2024): NeMo-Run's "Resolved
  // Arguments" table, then ProgressPrinter lines every step. The lines say the global batch (64)
  // but not the sequence length; the table's data row does.
  Result<Read> r = ReadLog("nemo2_run_table_mock_negative_step_time.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "nemo");
  const auto fact = [&](const char* f) { return r->log.facts.at(f); };
  // Lines 6-7: `MockDataModule(seq_length=128, micro_batch_size=1,` / `global_batch_size=64)`.
  EXPECT_EQ(fact("mpe").value, 128);
  EXPECT_EQ(fact("mpe").line, 6);
  EXPECT_EQ(fact("lbs").value, 1);
  EXPECT_EQ(fact("gbs").value, 64);
  EXPECT_EQ(fact("gbs").line, 7);
  // megatron_init's groups (lines 131, 140, 143) are stated before the table is applied: kept;
  // the table's strategy says the same (lines 62-63).
  EXPECT_EQ(fact("tp").line, 140);
  EXPECT_EQ(fact("pp").line, 143);
  EXPECT_EQ(fact("devices").value, 1);  // line 149, MEMBER: 1/1
  EXPECT_EQ(fact("gas").value, 64);     // line 261: 64 / (1 x 1)
  EXPECT_EQ(r->log.precision, "bf16");  // line 56, plugins=MegatronMixedPrecision(precision=
  EXPECT_EQ(r->log.precision_line, 56);
  // Lines 440-459: iterations 0-19, global_step 0-19 -> steps 1-20, each its own.
  ASSERT_EQ(r->log.iterations.size(), 20u);
  EXPECT_EQ(r->Steps().front(), 1);
  EXPECT_EQ(r->Steps().back(), 20);
  EXPECT_DOUBLE_EQ(*r->At(1)->ms, 3632.0);
  EXPECT_EQ(r->At(5)->loss, 10.83);  // line 444
  EXPECT_EQ(r->At(20)->lr, 2.999e-06);
  // Lines 448-449: 13.75 s then -12.71 s (TimingCallback's wall-clock timer moved): kept as
  // printed, with a note; their sum, 1.04 s, is two ordinary steps.
  EXPECT_DOUBLE_EQ(*r->At(9)->ms, 13750.0);
  EXPECT_DOUBLE_EQ(*r->At(10)->ms, -12710.0);
  bool noted = false;
  for (const std::string& n : r->log.notes)
    noted = noted || n.find(":449: a negative train_step_timing") != std::string::npos;
  EXPECT_TRUE(noted);
  // Steps 2-20 (the first is warm-up): 19 x 64 x 128 = 155648 tokens in 0.4531 + 0.4515 + ...
  // + 0.4437 = 8.9502 s on one GPU.
  EXPECT_NEAR(r->PerDevice(), 155648 / 8.9502, 1e-6);
  EXPECT_EQ(r->m()["config"]["mpe"], 128);
  EXPECT_EQ(r->m()["config"]["precision"], "bf16");
}

TEST(Corpus, Nemo2RunTableOfADiffusionRunOnTwoRanks) {
  // NeMo's diffusion README (DiT, `train.py --factory train_mock` under torchrun on 2 GPUs): both
  // ranks print the table, indented 4 spaces by the page; the first one's values.
  Result<Read> r = ReadLog("nemo2_run_table_dit_fake_data_two_ranks.log", "nemo");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto fact = [&](const char* f) { return r->log.facts.at(f); };
  // Lines 14-16 of VideoLatentFakeDataModule(...): seq_length=1024, micro_batch_size=1,
  // global_batch_size=8; the task encoder's seq_length (line 17) is nested deeper.
  EXPECT_EQ(fact("mpe").value, 1024);
  EXPECT_EQ(fact("mpe").line, 14);
  EXPECT_EQ(fact("lbs").line, 15);
  EXPECT_EQ(fact("gbs").value, 8);
  EXPECT_EQ(fact("devices").value, 2);  // line 192, MEMBER: 1/2
  EXPECT_EQ(fact("dp").value, 2);       // line 174, [0, 1]
  EXPECT_EQ(fact("gas").value, 4);      // line 205: 8 / (1 x 2)
  // `plugins=<nemo.lightning...M…` (line 68) is an object's repr, cut: no precision.
  EXPECT_EQ(r->log.precision, "");
  // Lines 250-265: steps 1-16.
  ASSERT_EQ(r->log.iterations.size(), 16u);
  EXPECT_DOUBLE_EQ(*r->At(1)->ms, 4022.0);
  EXPECT_EQ(r->Loss(16), 0.3763);
  // Steps 2-16: 15 x 8 x 1024 = 122880 tokens in 0.4357 + 0.4321 + ... + 0.4301 s, on 2 GPUs.
  const double seconds = 0.4357 + 0.4321 + 0.4294 + 0.4287 + 0.4291 + 0.4349 + 0.4331 + 0.4341 +
                         0.4408 + 0.4395 + 0.435 + 0.4333 + 0.4389 + 0.4324 + 0.4301;
  EXPECT_NEAR(r->PerDevice(), 122880 / seconds / 2, 1e-6);
}

// ---- NeMo 1 training bars (Lightning's TQDMProgressBar postfix) ----------

TEST(Corpus, Nemo1BarCaretMTextGluedMessagesAndRedraws) {
  // NeMo 24.03 p-tuning (global_batch_size=16 on the command line, 4 GPUs, TP 4): the bar of
  // step 6024 (global_step=6023.0, 0-based; consumed_samples 96384 = 6024 x 16) at line 1 after a
  // literal "[A^M", with an EarlyStopping message glued after its `]`; line 8 draws it twice more
  // after literal "^M"s with the same values: copies, not steps.
  Result<Read> r = ReadLog("nemo1_bar_elyza_ptuning_caret_m.log", "auto",
                           {{"mpe", 1}, {"lbs", 4}, {"layout", "TP4PP1DP1"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "nemo");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{6024}));
  EXPECT_EQ(r->Loss(6024), 0.0252);    // reduced_train_loss=0.0252
  EXPECT_EQ(r->At(6024)->ms, 2590.0);  // train_step_timing in s=2.590
  EXPECT_EQ(r->At(6024)->span, 1);     // a drawing is one step's values
  EXPECT_FALSE(r->At(6024)->samples);  // one drawing: no consumed_samples growth
  EXPECT_EQ(r->log.restarts, 0);
}

TEST(Corpus, Nemo1BarRoundedGlobalStepFromTheBarsCount) {
  // NeMo-Megatron-Launcher LoRA, max_steps 2000: the last step's global_step is 1999, which
  // tqdm's format_num prints as "2e+3"; the bar's own 2000/2000 gives step 2000 (not 2001).
  // consumed_samples=2.56e+5 is rounded and not used.
  Result<Read> r = ReadLog("nemo1_bar_launcher_lora_2e3.log", "nemo");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{2000}));
  EXPECT_EQ(r->Loss(2000), 0.139);
  EXPECT_EQ(r->At(2000)->ms, 68700.0);  // 68.70 s
  EXPECT_FALSE(r->At(2000)->samples);
}

TEST(Corpus, Nemo1BarSamplesFromConsumedSamplesGrowth) {
  // Three consecutive bars (NeMo on Trainium): global_step 188..190 -> steps 189..191;
  // consumed_samples 24064, 24192, 24320 grow by 128 a step (24064 = 188 x 128: this version
  // counts before the step). `loss=7.75` is Lightning's running mean, not read. No step time.
  Result<Read> r = ReadLog("nemo1_bar_neuron_nxdt_3steps.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "nemo");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{189, 190, 191}));
  EXPECT_EQ(r->Loss(189), 7.56);
  EXPECT_EQ(r->Loss(191), 7.91);
  EXPECT_FALSE(r->At(189)->samples);
  EXPECT_EQ(r->At(190)->samples, 128.0);  // (24192 - 24064) / 1
  EXPECT_EQ(r->At(191)->samples, 128.0);  // (24320 - 24192) / 1
  EXPECT_FALSE(r->At(190)->ms);
}

TEST(Corpus, Nemo1BarAheadOfGlobalStep) {
  // The bar has drawn 7 of 15 batches but global_step=5.000: step 6 (consumed_samples 12288 =
  // 6 x 2048); the batch Lightning did not count as an optimizer step is noted.
  Result<Read> r = ReadLog("nemo1_bar_a3mega_skipped.log", "nemo");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{6}));
  EXPECT_EQ(r->Loss(6), 11.5);
  EXPECT_EQ(r->At(6)->ms, 49500.0);
  bool noted = false;
  for (const std::string& n : r->log.notes)
    noted = noted || n.find("1 more batches than global_step + 1") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Corpus, Nemo1BarDrawnBeforeItsPostfixIsNotAhead) {
  // AWS NxD Training DPO (Lightning bar, gbs 16): 3/62 with global_step=1.000 (line 1), 4/62
  // with global_step=3.000 (line 2), 5/62 with the same postfix (line 3). Lightning sets a
  // batch's count, draws, then sets the postfix and draws again: lines 1 and 3 are drawings of
  // the new count with the previous step's values; line 2's count is global_step + 1, so no
  // "ahead" note. consumed_samples 32 -> 64 over steps 2 -> 4: 16 a step. gradient_norm and lr
  // are the step's.
  Result<Read> r = ReadLog("nemo1_bar_nxdt_dpo_stale_postfix.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "nemo");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(r->Loss(2), 6.93);
  EXPECT_EQ(r->Loss(4), 6.79);
  EXPECT_EQ(r->At(2)->grad_norm, 8.6);
  EXPECT_EQ(r->At(4)->grad_norm, 6.59);
  EXPECT_EQ(r->At(4)->lr, 5.45e-5);
  EXPECT_EQ(r->At(4)->samples, 16.0);
  EXPECT_EQ(r->log.restarts, 0);
  for (const std::string& n : r->log.notes) EXPECT_EQ(n.find("more batches"), std::string::npos);
}

TEST(Corpus, Nemo1BarValLossIsTheDrawingsOwnStep) {
  // NeMo 1 GPT pretraining under SkyPilot (Ray's `(task, pid=6678) ` prefix, the first line's
  // `(` lost by the page), validation every 5 steps, GBS 192: after validating, Lightning
  // redraws the training bar with the new val_loss (on_validation_end) and ModelCheckpoint
  // glues its message after the `]`. Line 1's val_loss=11.00 is the first drawing's: when it
  // was validated the log does not show (not read). Line 9 is cut before its `]` (its
  // `val_loss=11.0` left out); line 10 redraws step 10. New values: 10.40 at 15 (line 19:
  // "global step 15: 'val_loss' reached 10.36892"), 10.10 at 20 (line 28), 9.740 at 25 (line 37).
  Result<Read> r = ReadLog("nemo1_bar_skypilot_gcsfuse_val_loss.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "nemo");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{5, 10, 15, 20, 25}));
  EXPECT_EQ(r->At(10)->ms, 10900.0);
  EXPECT_EQ(r->At(10)->samples, 192.0);  // (1920 - 960) / 5
  EXPECT_EQ(r->At(15)->span, 1);         // a drawing is one step's values
  EXPECT_EQ(r->Loss(25), 9.83);
  EXPECT_EQ(r->log.restarts, 0);
  ASSERT_EQ(r->log.evals.size(), 3u);
  EXPECT_EQ(r->log.evals[0].step, 15);
  EXPECT_EQ(r->log.evals[0].value, 10.4);
  EXPECT_EQ(r->log.evals[0].line, 19);
  EXPECT_EQ(r->log.evals[1].step, 20);
  EXPECT_EQ(r->log.evals[1].value, 10.1);
  EXPECT_EQ(r->log.evals[2].step, 25);
  EXPECT_EQ(r->log.evals[2].value, 9.74);
  EXPECT_EQ(r->m()["eval"]["step"], 25);
}

TEST(Corpus, Nemo1BarDrawingsGluedWithoutCarriageReturns) {
  // The same page's second run (GBS 192): line 8 holds six drawings whose carriage returns the
  // page dropped, glued after `train_step_timing in s=4.580` (with Ray's prefix) or directly.
  // Each is read up to its cut: 6/300000 .. 9/300000 (global_step 5..8) lose their last field;
  // the drawing of 10/300000 with global_step=8.000 (Lightning's count-first redraw) gives step
  // 9 its train_step_timing 4.560; 10/300000 with global_step=9.000 is step 10 (4.580), drawn
  // again on line 9. This was an error ("'train_step_timing in s' is '4.580(task'").
  Result<Read> r = ReadLog("nemo1_bar_skypilot_rclone_glued_drawings.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "nemo");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(r->At(5)->ms, 4560.0);
  EXPECT_FALSE(r->At(6)->ms);
  EXPECT_EQ(r->At(9)->ms, 4560.0);
  EXPECT_EQ(r->At(10)->ms, 4580.0);
  EXPECT_EQ(r->At(7)->samples, 192.0);   // (1344 - 1152) / 1
  EXPECT_EQ(r->At(10)->samples, 192.0);  // (1920 - 1728) / 1
  EXPECT_EQ(r->log.restarts, 0);
  EXPECT_TRUE(r->log.evals.empty());  // 11.00 from line 1 on: no new value
}

TEST(Corpus, Nemo1BarStableDiffusionGlobalStepIsOneBased) {
  // NeMo-Megatron-Launcher Stable Diffusion 860M: MegatronLatentDiffusion logs
  // trainer.global_step + 1 and consumed_samples = that x 8192. Line 1 draws count 1 with
  // global_step=1.000 (a 0-based global_step is at most count - 1): steps are global_step.
  // Line 2 draws count 2 before its postfix (step 1's values again); line 3 is step 2.
  Result<Read> r = ReadLog("nemo1_bar_stable_diffusion_one_based.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "nemo");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r->At(1)->lr, 8.19e-9);
  EXPECT_EQ(r->At(2)->lr, 1.64e-8);
  EXPECT_EQ(r->At(2)->samples, 8192.0);  // (16384 - 8192) / 1
  EXPECT_EQ(r->log.restarts, 0);
  bool noted = false;
  for (const std::string& n : r->log.notes)
    noted = noted || n.find("count equals its global_step") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Corpus, Nemo1BarOlderLightningIssue55) {
  // NeMo-Framework-Launcher#55: Lightning 1.x's bar with its `loss=3.1` running mean and
  // `v_num=`; global_step=794.0 -> step 795 (the bar's 795/77225); consumed_samples=1.63e+6 is
  // rounded. No step time (TimingCallback's value is not on this bar).
  Result<Read> r = ReadLog("nemo1_bar_launcher_issue55.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{795}));
  EXPECT_EQ(r->Loss(795), 3.09);
  EXPECT_FALSE(r->At(795)->ms);
}

TEST(Corpus, TrainerDictsWithSpeedMetricsAreStepDicts) {
  // include_num_input_tokens_seen: transformers' Trainer.log adds speed_metrics("train", ...)
  // (train_runtime, train_tokens_per_second) to every dict; each has a loss, so none is the
  // closing dict (that one is speed_metrics("train", ...) plus train_loss, and no loss).
  Result<Read> r = ReadLog("trainer_ezpz_tokens_seen_speed_metrics.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "trainer");
  // Seven dicts (lines 4, 6, ..., 16); no bar precedes a dict on the line before it with a
  // step past the last dict's (the bars follow the dicts), and nothing states logging_steps.
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(r->Note("does not state logging_steps"));
  EXPECT_EQ(r->Loss(1), 2.5586);  // line 4
  EXPECT_EQ(r->Loss(7), 2.5722);  // line 16
  EXPECT_EQ(r->At(2)->lr, 4.9500000000000004e-05);
  EXPECT_TRUE(r->m()["wall_s"].is_null());  // no closing dict in the excerpt: not 49.1873
  // The dicts' train_tokens_per_second (speed_metrics with num_tokens = num_input_tokens_seen, all
  // ranks' input tokens since train() began): the last one, line 16, is the run's token rate
  // through step 7: 1376256 tokens / 49.1873 s = 27979.9 (196608 = 24 ranks x 8192 a step).
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(r->log.trainer_average->tokens_per_s, 27979.885);
  EXPECT_EQ(r->log.trainer_average->through_step, 7);
  EXPECT_EQ(r->log.trainer_average->line, 16);
}

TEST(Corpus, TrainerEvalDictHardWrappedByATerminalCopy) {
  // A 76-column terminal: the dicts are padded to 76 columns, and the first eval dict (line 2) is
  // cut at column 76 inside 'eval_samples_per_second', its rest on line 3. Read joined: both
  // evaluations, after the loss dicts of lines 1 and 4 (counted: logging_steps is not in the log).
  for (const char* format : {"trainer", "deepspeed", "auto"}) {
    Result<Read> r = ReadLog("trainer_eval_dict_hard_wrapped_issue268.log", format);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(r->Loss(2), 2.2272);
    ASSERT_EQ(r->log.evals.size(), 2u);
    EXPECT_EQ(r->log.evals[0].value, 2.2206013202667236);  // lines 2-3
    EXPECT_EQ(r->log.evals[0].step, 1);
    EXPECT_EQ(r->log.evals[0].line, 2);
    EXPECT_EQ(r->log.evals[1].value, 2.098778247833252);  // line 5
    EXPECT_EQ(r->log.evals[1].step, 2);
    EXPECT_TRUE(
        r->Note("trainer_eval_dict_hard_wrapped_issue268.log:2: 1 Trainer dict(s) "
                "hard-wrapped over several lines"));
  }
}

TEST(Corpus, TrainerDictsNumberedByTheirEpoch) {
  // Bars 1/16, 2/16, 4/16, 8/16, 12/16 end the line before the dicts at lines 3-15; the last
  // bar, 16/16 (line 17), is finished, so it numbers nothing. Epochs 0.06, 0.12, 0.25, 0.5,
  // 0.75 at steps 1, 2, 4, 8, 12: 16 steps an epoch (12 / 0.75 = 8 / 0.5 = 16; 1 / 0.06 and
  // 2 / 0.12 within the print's rounding), so the dict at epoch 1.0 (line 18) is step 16.
  Result<Read> r = ReadLog("trainer_trl_gptoss_bars_epoch.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 4, 8, 12, 16}));
  EXPECT_EQ(r->Loss(16), 1.1294);
  EXPECT_EQ(r->At(16)->grad_norm, 0.713);
  EXPECT_EQ(r->At(16)->span, 4);
  EXPECT_FALSE(r->Note("numbered as if it were 1"));
  EXPECT_TRUE(r->Note("numbered by their epoch"));
  // The closing dict (line 21): train_runtime '298.36s' is not a number; the average covers
  // the run through its last step, 16.
  EXPECT_TRUE(r->m()["wall_s"].is_null());
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(r->log.trainer_average->through_step, 16);
}

TEST(Corpus, DeepSpeedTrainerDictsNumberedByInferredLoggingSteps) {
  // DeepSpeed's step=10, 20, 30 (lines 2, 6, 10) come before the dicts of lines 3, 7, 11; one
  // dict lies between each two of them: logging_steps = (20 - 10) / 2 = 5. So the dicts are
  // at 5 (line 1), 10, 15 (line 5), 20, 25 (line 9), 30, 35 (line 13), and their epochs agree:
  // 0.04 a dict, 0.008 a step (125 steps an epoch: 35 / 125 = 0.28).
  Result<Read> r = ReadLog("deepspeed_0.12_trainer_logging5_epoch.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "deepspeed");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{5, 10, 15, 20, 25, 30, 35, 40}));
  EXPECT_EQ(r->Loss(5), 2.075);    // line 1
  EXPECT_EQ(r->Loss(15), 0.5003);  // line 5
  EXPECT_EQ(r->Loss(35), 0.3094);  // line 13
  EXPECT_FALSE(r->Loss(40));       // step=40 (line 14) has no dict after it in the excerpt
  EXPECT_EQ(r->At(15)->span, 5);
  EXPECT_EQ(r->At(20)->samples_per_s, 111.13499047776766);  // line 7's CurrSamplesPerSec
  EXPECT_TRUE(r->Note("logging_steps 5, inferred"));
  EXPECT_FALSE(r->Note("numbered as if it were 1"));
}

TEST(Corpus, TrainerSeriesPrintedTwiceKeepsTheFirst) {
  // Lines 1-12: ten dicts (logging_steps 1, epoch 0.1 a step), the closing dict (line 11:
  // 0.803 steps/s x 12.4474 s = 10 steps) and an eval dict; lines 16-36 print them all again,
  // with another closing dict (line 26, train_runtime 27.2171) and eval_runtime.
  Result<Read> r = ReadLog("trainer_ezpz_two_ranks_series_twice.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(r->Loss(1), 2.847);    // line 1
  EXPECT_EQ(r->Loss(10), 2.8064);  // line 10
  EXPECT_EQ(r->At(10)->line, 10);
  EXPECT_EQ(r->m()["wall_s"], 12.4474);  // line 11, not line 26's 27.2171
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(r->log.trainer_average->samples_per_s, 154.249);
  EXPECT_EQ(r->log.trainer_average->through_step, 10);
  EXPECT_TRUE(r->Note("trainer_ezpz_two_ranks_series_twice.log:26: a second closing dict"));
  ASSERT_EQ(r->log.evals.size(), 1u);  // line 36's eval_loss is line 12's at the same step
  EXPECT_EQ(r->log.evals[0].line, 12);
  EXPECT_EQ(r->m()["eval"]["step"], 10);
}

TEST(Corpus, TrainerMsSwiftJsonlEvalBetweenRecordsIsNoStepTime) {
  // ms-swift's logging.jsonl (ms-swift#4408, 4 A100, logging_steps = eval_steps = 200): the
  // records at 1200 (line 2) and 1400 (line 4) with the evaluation at 1200 between them (line 3,
  // eval_runtime 123.385 s). 1400 / 0.07833 - 1200 / 0.077917 = 2472.1 s holds that evaluation:
  // no step's time, so step 1400 is not timed, and a note says why.
  Result<Read> r = ReadLog("trainer_msswift_jsonl_eval_between_records_issue4408.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "trainer");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1200, 1400}));
  EXPECT_EQ(r->Loss(1200), 0.22828499);
  EXPECT_EQ(r->Loss(1400), 0.21080326);
  EXPECT_EQ(r->At(1400)->span, 200);
  EXPECT_FALSE(r->At(1400)->ms);
  EXPECT_TRUE(
      r->Note("trainer_msswift_jsonl_eval_between_records_issue4408.log:4: the elapsed time of "
              "the dicts (or of the progress bars before them) does not time the steps of 1 "
              "record(s)"));
  EXPECT_TRUE(r->Note("(line 3) came between them"));
  EXPECT_DOUBLE_EQ(*r->log.peak_memory_bytes, 64.64 * kGiB);
  ASSERT_EQ(r->log.evals.size(), 2u);
  EXPECT_EQ(r->log.evals[0].step, 1000);
  EXPECT_EQ(r->log.evals[1].value, 0.28628108);
  EXPECT_EQ(r->log.evals[1].step, 1200);
}

TEST(Corpus, TrainerEvalDictNamingGlobalStep) {
  // ms-swift 2 names the step in every dict: the last loss dict is global_step 90 (line 24),
  // the eval dict after it global_step 93 (line 26: 93/93, the end of the epoch).
  Result<Read> r = ReadLog("trainer_msswift2_eval_global_step.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 19u);  // 1, 5, 10, ..., 90
  // 'train_speed(iter/s)' = global_step / seconds since the start: steps 46-50 took
  // 50 / 0.224141 - 45 / 0.225991 s (lines 11, 12). Steps 51-55's 55 / 0.220983 - 50 / 0.224141
  // = 25.8 s also hold the evaluation (line 14) and the checkpoint save (line 16) at step 50:
  // not timed.
  ASSERT_TRUE(r->At(50)->ms);
  EXPECT_NEAR(*r->At(50)->ms, (50 / 0.224141 - 45 / 0.225991) / 5 * 1000, 0.01);
  EXPECT_FALSE(r->At(55)->ms);
  EXPECT_TRUE(r->At(60)->ms);
  EXPECT_EQ(r->Steps().back(), 90);
  EXPECT_EQ(r->Loss(90), 0.97113533);
  ASSERT_EQ(r->log.evals.size(), 2u);
  EXPECT_EQ(r->log.evals[0].step, 50);  // line 14
  EXPECT_EQ(r->log.evals[1].step, 93);
  EXPECT_EQ(r->m()["eval"]["val_loss"], 1.03077412);
  EXPECT_EQ(r->m()["eval"]["step"], 93);
  EXPECT_EQ(r->m()["wall_s"], 443.3746);  // line 29
  // 'memory(GiB)': 16.79 (line 2), 18.48, 19.46, then 20.5 from line 17 on.
  EXPECT_DOUBLE_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 20.5 * kGiB);
}

TEST(Corpus, TrainerBarsAroundCallbackPrintsNumberTheDicts) {
  // TRL GRPOTrainer (Oct 2025; logging_steps not stated: GRPOConfig's default 10): a callback
  // prints a metrics summary between the last bar drawing and the dict, so no bar ends the line
  // before it; every 'epoch' is 0.0. The bar before (line 26's last drawing, 10/29790) and
  // tqdm.write's redraw after the dict (line 46, 10/29790) agree: step 10; likewise 20 (lines 47,
  // 87) and 30 (lines 88, 128).
  Result<Read> r = ReadLog("trainer_trl_grpo_prints_between_bar_and_dict.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(r->Loss(10), 0.0751);  // line 45
  EXPECT_EQ(*r->At(10)->grad_norm, 47.75);
  EXPECT_EQ(*r->At(10)->lr, 9.996978851963747e-06);
  EXPECT_EQ(r->Loss(30), 0.0);  // line 127
  EXPECT_EQ(*r->At(30)->grad_norm, 404.0);
  EXPECT_EQ(r->At(20)->span, 10);
  EXPECT_FALSE(r->Note("does not state logging_steps"));
}

TEST(Corpus, TrainerClosingDictsRoundedStepsPerSecondAndTheLastBar) {
  // The same GRPO script, a whole 43-step run: dicts at 10-40 (bars around the callback's prints,
  // as above), then the closing dict (line 133): train_steps_per_second 0.012 is rounded to 3
  // decimals (transformers speed_metrics), so x train_runtime 3462.7809 it allows 40-43 steps;
  // the bar before it (line 114's last drawing, 43/43) settles 43. The average is TRL's num_tokens
  // there over train_runtime, not its train_samples_per_second 0.404 (logparse_trl_tokens_test).
  Result<Read> r = ReadLog("trainer_trl_grpo_closing_steps_per_second_3dp.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 20, 30, 40}));
  EXPECT_EQ(r->Loss(10), -0.0447);  // line 49
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(r->log.trainer_average->through_step, 43);
  EXPECT_DOUBLE_EQ(*r->log.trainer_average->tokens_per_s, 2079223.0 / 3462.7809);
  EXPECT_EQ(r->log.wall_s, 3462.7809);
}

TEST(Corpus, TrainerUnslothDictsNumberedByTheClosingDictsEpoch) {
  // unsloth 2026.6 on transformers 5.5 (values as .4g strings), no bar before any dict,
  // logging_steps not stated (the script's LOGGING_STEPS = 10). The closing dict (line 73): '0.139'
  // steps/s x '797.7' s is 110.5-111.3 steps: 111 at epoch '3', 37 steps an epoch; each dict's
  // epoch then allows one step: 0.2703 x 37 = 10 (line 55), ..., 2.973 x 37 = 110 (line 69).
  Result<Read> r = ReadLog("trainer_unsloth_t55_epochs_closing_anchor.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110}));
  EXPECT_EQ(r->Loss(10), 1.548);
  EXPECT_EQ(*r->At(10)->lr, 3.6e-05);
  EXPECT_EQ(r->Loss(110), 0.2138);
  // Evaluations (lines 65, 70) at epochs 2.703 (step 100, after the step-100 dict) and 3 (step
  // 111, the last step, past the last logging step).
  ASSERT_EQ(r->log.evals.size(), 2u);
  EXPECT_EQ(r->log.evals[0].step, 100);
  EXPECT_EQ(r->log.evals[0].value, 0.2559);
  EXPECT_EQ(r->log.evals[1].step, 111);
  EXPECT_EQ(r->log.trainer_average->through_step, 111);
  EXPECT_EQ(r->log.wall_s, 797.7);
  // unsloth's banner (lines 48-49): 2 per device x 4 accumulated x 1 GPU = 8.
  EXPECT_EQ(r->log.facts.at("lbs").value, 2);
  EXPECT_EQ(r->log.facts.at("gas").value, 4);
  EXPECT_EQ(r->log.facts.at("gbs").value, 8);
  EXPECT_EQ(r->log.facts.at("dp").value, 1);
  EXPECT_TRUE(r->Note("numbered by their epoch"));
}

TEST(Corpus, TrainerBarWithAMessageGluedAfterItIsStale) {
  // The same script on Qwen2.5-Coder-0.5B: line 74 is the bar drawn at step 100 with unsloth's
  // checkpoint-100 message glued after it; the drawings of steps 101-110 after it were cleared by
  // tqdm.write, so that bar, ending the line before the dict at line 75, is not the dict's step.
  // The epochs (0.2703 a dict, 37 steps an epoch from the closing dict's 0.275 x 403 = 110.6-111.0:
  // 111 steps, line 78) put it at 110.
  Result<Read> r = ReadLog("trainer_unsloth_stale_bar_glued_message.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110}));
  EXPECT_EQ(r->Loss(110), 0.1577);  // line 75
  EXPECT_EQ(r->Loss(100), 0.1601);  // line 72
  ASSERT_EQ(r->log.evals.size(), 2u);
  EXPECT_EQ(r->log.evals[1].step, 111);  // line 76, epoch '3'
}

TEST(Corpus, DeepSpeedCifarEpochBatchLossLinesAreNotAtTheEngineStep) {
  // DeepSpeed 0.15 running the CIFAR-10 example (fp16, train_batch_size 16): the script prints
  // PyTorch's tutorial line "[epoch, batch] loss: mean of the last 200 batches" (lines 3, 4, 7,
  // 15); line 15's "[2,  3000]" comes after the engine's step=6000 line (8) but is at batch 3000 of
  // the second epoch, not at step 6000: no loss for 6000.
  // Images, no sequence: mpe 1 set here so that the metrics count samples.
  Result<Read> r = ReadLog("deepspeed_0.15_cifar_epoch_batch_loss.log", "deepspeed", {{"mpe", 1}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{6000}));
  EXPECT_FALSE(r->Loss(6000));
  EXPECT_EQ(*r->At(6000)->lr, 0.001);
  EXPECT_EQ(*r->At(6000)->samples_per_s, 5892.428132408464);  // line 9
  EXPECT_EQ(r->m()["memory"]["peak_bytes"], 0.06 * kGiB);
  EXPECT_TRUE(
      r->Note("deepspeed_0.15_cifar_epoch_batch_loss.log:3: '[epoch, batch] loss: x' "
              "lines"));
}

TEST(Corpus, LlamaFactoryJsonlThroughputIsTheTrainerAverage) {
  // LLaMA-Factory's trainer_log.jsonl (2025-11, transformers >= 4.55): with
  // num_input_tokens_seen every line carries "throughput", the input tokens of all devices since
  // on_train_begin over the time since then; the last line (19, step 93 of 93, no "loss" key at
  // all) is the whole run's: 12832.23 tokens/s (28499296 tokens / 2220 s = 12837.5, the elapsed
  // time printed in whole seconds).
  Result<Read> r = ReadLog("trainer_llamafactory_jsonl_throughput.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps().size(), 18u);  // 5, 10, ..., 90
  EXPECT_EQ(r->Loss(5), 5.7013);
  EXPECT_EQ(*r->At(90)->lr, 4.319352532688444e-06);
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(r->log.trainer_average->tokens_per_s, 12832.23);
  EXPECT_EQ(r->log.trainer_average->through_step, 93);
  EXPECT_EQ(r->m()["throughput"]["tokens_per_s"], 12832.23);
  // Four devices (set here: the log does not say): 12832.23 / 4 per device.
  r = ReadLog("trainer_llamafactory_jsonl_throughput.log", "trainer", {{"layout", "TP1PP1DP4"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->PerDevice(), 12832.23 / 4);
}

TEST(Corpus, LlamaFactoryJsonlElapsedTimeTimesTheRecords) {
  // The same jsonl: each line's "elapsed_time" is the seconds since on_train_begin, whole
  // (str(timedelta(seconds=int(...)))), so each record's 5 steps took the difference to the line
  // before: step 10 (line 2) 0:04:02 - 0:02:03 = 119 s, 23.8 s a step; step 35 (line 7) 0:13:40 -
  // 0:11:55 = 105 s, 21 s a step. The first record (step 5, line 1) has no line before it. The
  // 17 timed records' differences, sorted: 101 105 113 115 115 117 117 118 118 118 118 119 119 120
  // 121 121 124 s: the median step time is 118 / 5 = 23.6 s.
  Result<Read> r = ReadLog("trainer_llamafactory_jsonl_throughput.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->At(5)->ms);
  EXPECT_EQ(r->At(10)->ms, 23800.0);
  EXPECT_EQ(r->At(35)->ms, 21000.0);
  EXPECT_EQ(r->At(90)->ms, 23600.0);  // 0:35:02 - 0:33:04 = 118 s (line 18)
  EXPECT_EQ(r->m()["throughput"]["step_ms_median"], 23600.0);
  // The token rate stays LLaMA-Factory's own average (line 19).
  EXPECT_EQ(r->m()["throughput"]["tokens_per_s"], 12832.23);
}

TEST(Corpus, LlamaFactoryJsonlEvaluationBetweenRecordsTimesNoStep) {
  // Qwen2-VL LoRA notes (2024-10-30): the record at step 1350 (line 1, 2:37:45), the evaluation
  // at 1350 (line 2, written 72 s later at 2:38:57), the record at 1355 (line 3, 2:39:25). The
  // 100 s from line 1 to line 3 hold the evaluation: step 1355 is not timed, with a note.
  Result<Read> r = ReadLog("trainer_llamafactory_jsonl_eval_between_records.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "trainer");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1350, 1355}));
  EXPECT_EQ(r->Loss(1355), 0.1392);
  EXPECT_EQ(*r->At(1355)->lr, 5e-06);
  ASSERT_EQ(r->log.evals.size(), 1u);
  EXPECT_EQ(r->log.evals[0].step, 1350);
  EXPECT_EQ(r->log.evals[0].value, 0.3004102110862732);
  EXPECT_FALSE(r->At(1355)->ms);
  EXPECT_TRUE(
      r->Note("trainer_llamafactory_jsonl_eval_between_records.log:3: the elapsed time of the "
              "dicts (or of the progress bars before them) does not time the steps of 1 "
              "record(s)"));
  EXPECT_TRUE(r->m()["throughput"]["step_ms_median"].is_null());
}

TEST(Corpus, TrainerFourDigitEpochsAndAnUnsettledClosingDict) {
  // TRL SFT of LLaVA-7B on one GPU (2026-02; the script's logging_steps=20, eval_steps=200, not in
  // the log): 62 dicts with quoted f"{v:.4g}" epochs '0.016', '0.032', ..., '0.992', no bar before
  // any. The closing dict (line 78): '0.061' steps/s (0.0605-0.0615) x '2.035e+04' s
  // (20345-20355) allows 1231-1251 steps at epoch '1' (0.9995-1.0005): 1230.4-1251.6 steps an
  // epoch. '0.016' (0.015995-0.016005) then allows only step 20 (line 10), which pins
  // 1249.6-1250.4 an epoch; every dict follows (20 apart), and the closing epoch settles 1250.
  Result<Read> r = ReadLog("trainer_trl_llava_4g_epochs_closing_range.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->Steps().size(), 62u);
  EXPECT_EQ(r->Steps().front(), 20);
  EXPECT_EQ(r->Steps().back(), 1240);  // line 77, epoch '0.992'
  EXPECT_EQ(r->Loss(20), 7.181);
  EXPECT_EQ(*r->At(20)->lr, 9.848e-05);  // 1e-4 x (1 - 19/1250)
  EXPECT_EQ(r->Loss(1240), 3.704);
  // Evaluations at epochs 0.16, 0.32, ... (lines 20, 31, ..., 75): 200, 400, ..., 1200.
  ASSERT_EQ(r->log.evals.size(), 6u);
  EXPECT_EQ(r->log.evals[0].step, 200);
  EXPECT_EQ(r->log.evals[5].step, 1200);
  EXPECT_EQ(r->log.trainer_average->through_step, 1250);
  EXPECT_EQ(r->log.wall_s, 20350);
}

TEST(Corpus, TrainerMsSwift4MegatronDictsNameTheirIteration) {
  // ms-swift 4.2.3's Megatron trainer (swift/megatron/callbacks/print.py: PrintCallback.on_log
  // writes logs['iteration'] = f'{state.iteration}/{args.train_iters}' and tqdm.write(str(logs))),
  // Qwen3.5-35B-A3B on 8 B300, lines 1-5: iterations 1, 5, 10, 15, 20 of 10635 (were counted 1..5).
  Result<Read> r = ReadLog("trainer_msswift4_megatron_iteration_key.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 5, 10, 15, 20}));
  EXPECT_EQ(r->Loss(1), 0.47705832);  // line 1, after the comment's prose
  EXPECT_EQ(r->Loss(20), 0.40979832);
  EXPECT_EQ(r->At(5)->span, 4);
  EXPECT_EQ(r->At(20)->span, 5);
  // lr_warmup_fraction 0.05 x 10635: 531 warm-up iterations of 1e-5: 1e-5 x 5/531 = 9.4e-08.
  EXPECT_EQ(*r->At(5)->lr, 9e-08);
  EXPECT_EQ(*r->At(15)->grad_norm, 0.97488004);
  // train_speed(s/it) is the running mean since the start (elapsed / iterations run), so each
  // line's elapsed time is it x its iteration, as its 'elapsed_time' says to the second (line 2:
  // 116.095699 x 5 = 580.48 s, '9m 40s'): iterations 2-5 took 580.48 - 191.76 s.
  EXPECT_FALSE(r->At(1)->ms);
  EXPECT_NEAR(*r->At(5)->ms, (116.095699 * 5 - 191.764682) / 4 * 1000, 0.01);
  EXPECT_NEAR(*r->At(10)->ms, (103.737077 * 10 - 116.095699 * 5) / 5 * 1000, 0.01);
  // memory(GiB): max_memory_reserved, the largest over the model-parallel group: per device.
  EXPECT_DOUBLE_EQ(*r->log.peak_memory_bytes, 258.57 * kGiB);  // lines 3-5
  EXPECT_NE(r->log.memory_source.find("ms-swift Megatron"), std::string::npos);
  EXPECT_FALSE(r->Note("device_map"));
}

TEST(Corpus, TrainerLlamaFactoryEchoesAreNoRecords) {
  // LLaMA-Factory 0.9 (transformers 4.51.3) launched from its Web UI: LogCallback.on_log echoes
  // each log through its logger, glued to the bar drawn at that step, before the Trainer prints the
  // dict (lines 11-30). Were read as two records a step (5, 6, 10, 11, ...).
  Result<Read> r = ReadLog("trainer_llamafactory_webui_echo_throughput.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{5, 10, 15, 20, 25, 30, 35, 40, 45, 50}));
  EXPECT_EQ(r->Loss(5), 1.4229);  // line 12, the Trainer's dict
  EXPECT_EQ(r->At(5)->line, 12);
  EXPECT_EQ(*r->At(5)->lr, 4.997807075247146e-05);  // cosine over 300 steps at 4 (lambda(s - 1))
  EXPECT_EQ(*r->At(50)->grad_norm, 0.6587629318237305);
  // The last echo's throughput (line 29): 471408 input tokens in the ~255 s since the start.
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(*r->log.trainer_average->tokens_per_s, 1845.84);
  EXPECT_EQ(r->log.trainer_average->through_step, 50);
  EXPECT_EQ(r->log.facts.at("gbs").value, 16);  // line 7
  EXPECT_TRUE(r->Note("echoes each training log"));
}

TEST(Corpus, TrainerBarsDrawnWithoutABarBoundTheDicts) {
  // unsloth 2026.5.8 GRPO on a Colab T4 (transformers 4.57.6): tqdm draws no bar there (ncols 0:
  // "  3% 6/200 [03:07<...]"), a callback prints between the bars and the dicts, logging_steps
  // not stated (5). The bars around the six dicts: 3-6 (lines 44, 46), 9-10 (52, 59), 14-15
  // (71, 78), 19-22 (96, 103), 22-26 (103, 110), 29-30 (122, 141): only logging_steps 5 puts the
  // n-th dict between its bars (4: 8 is not in 9-10; 6: 12 is not). Were counted 1..6.
  Result<Read> r = ReadLog("trainer_unsloth_grpo_colab_bars_without_bar.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{5, 10, 15, 20, 25, 30}));
  // Warm-up over 10 steps to 1.5e-5, the rate logged at step s being the schedule's at s - 1:
  // 1.5e-5 x 4/10 at 5, x 9/10 at 10.
  EXPECT_EQ(*r->At(5)->lr, 6e-06);
  EXPECT_EQ(*r->At(10)->lr, 1.3500000000000001e-05);
  EXPECT_TRUE(std::isnan(*r->At(15)->grad_norm));  // line 77: 'grad_norm': nan
  EXPECT_EQ(*r->At(30)->grad_norm, 0.13857905566692352);
  EXPECT_EQ(r->log.facts.at("gas").value, 4);  // unsloth's banner, lines 4-5
  EXPECT_EQ(r->log.facts.at("gbs").value, 4);
  EXPECT_TRUE(r->Note("logging_steps 5, the one value that puts each dict between"));
}

TEST(Corpus, TrainerEvaluationsBeforeTheFirstLossDict) {
  // transformers 5 BERT classification, 100 steps (25 an epoch), eval every epoch, one loss dict
  // (logging_steps above 25): the evals at epochs '1', '2', '3' (lines 2, 4, 6) come before any
  // loss dict. The closing dict settles 100 steps ('10.97' x '9.115': 99.94-100.04) at epoch '4'
  // (25 an epoch), which places the loss dict (line 8) at 100 and the evals at 25, 50, 75
  // (were at step 0), the last (line 9) at 100.
  Result<Read> r = ReadLog("trainer_evals_before_the_first_loss_dict.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{100}));
  EXPECT_EQ(r->Loss(100), 2.155);
  EXPECT_EQ(*r->At(100)->lr, 9.9e-06);  // 5e-5 x 99/500: the 500 warm-up steps' 99th
  ASSERT_EQ(r->log.evals.size(), 4u);
  EXPECT_EQ(r->log.evals[0].step, 25);
  EXPECT_EQ(r->log.evals[0].value, 2.409);
  EXPECT_EQ(r->log.evals[1].step, 50);
  EXPECT_EQ(r->log.evals[2].step, 75);
  EXPECT_EQ(r->log.evals[3].step, 100);
  EXPECT_EQ(r->log.evals[3].value, 1.495);
  EXPECT_EQ(r->log.trainer_average->through_step, 100);
  EXPECT_EQ(r->log.wall_s, 9.115);
}

TEST(Corpus, TrainerRunShorterThanLoggingStepsHasNoLossDict) {
  // transformers 5 BERT ag_news, 3 epochs, logging_steps left at 500 (the script's
  // TrainingArguments, not in the log): no loss dict, the evals of epochs '1'-'3' (lines 4, 6, 8)
  // and the closing dict (line 10). '2.639' x '178.5' (2.6385 x 178.45 = 470.84 to
  // 2.6395 x 178.55 = 471.28) is 471 steps, as the bar after it says (line 11: 471/471), at
  // epoch '3': 157 an epoch, the evals at 157, 314, 471. Was an error ("no Trainer loss dicts
  // ... was only stderr kept?").
  Result<Read> r = ReadLog("trainer_t5_no_loss_dict_run_under_logging_steps.log", "auto",
                           {{"mpe", 128}, {"layout", "TP1PP1DP1"}});  // max_length 128, 1 GPU
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "trainer");
  EXPECT_TRUE(r->log.iterations.empty());
  ASSERT_EQ(r->log.evals.size(), 3u);
  EXPECT_EQ(r->log.evals[0].step, 157);
  EXPECT_EQ(r->log.evals[0].value, 0.3452);
  EXPECT_EQ(r->log.evals[1].step, 314);
  EXPECT_EQ(r->log.evals[1].value, 0.3481);
  EXPECT_EQ(r->log.evals[2].step, 471);
  EXPECT_EQ(r->log.evals[2].value, 0.3154);
  EXPECT_EQ(r->log.wall_s, 178.5);
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(r->log.trainer_average->samples_per_s, 84.04);
  EXPECT_EQ(r->log.trainer_average->through_step, 471);
  // 84.04 samples/s x 128 tokens on one GPU.
  EXPECT_NEAR(r->PerDevice(), 84.04 * 128, 1e-6);
  EXPECT_TRUE(r->m()["loss"].is_null());
  EXPECT_TRUE(r->Note("no Trainer loss dict, only the closing dict"));
}

TEST(Corpus, TrainerAxolotlClosingDictOnlyWithMemory) {
  // axolotl's walkthrough shows only the closing dict (line 1), with axolotl's memory keys, and
  // the bar after it (line 2: 260/260). '1.638' x '158.8' (1.6375 x 158.75 = 259.95 to
  // 1.6385 x 158.85 = 260.28) is 260 steps. Was an error. Without a loss series the closing
  // dict's rate is all there is to report: mpe is the page's sequence_len (not in the log).
  Result<Read> r =
      ReadLog("trainer_axolotl_closing_dict_only_memory.log", "trainer", {{"mpe", 2048}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->log.iterations.empty());
  EXPECT_EQ(r->log.wall_s, 158.8);
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(r->log.trainer_average->samples_per_s, 26.2);
  EXPECT_EQ(r->log.trainer_average->through_step, 260);
  // 'memory/device_reserved (GiB)': '7.89' (max_memory_reserved), above the allocated 2.42.
  EXPECT_DOUBLE_EQ(*r->log.peak_memory_bytes, 7.89 * kGiB);
  EXPECT_NE(r->log.memory_source.find("device_reserved"), std::string::npos);
}

TEST(Corpus, TrainerTrainMetricsBlockWithoutTheClosingDict) {
  // LLaMA-Factory on two XPUs: the page keeps seven dicts (lines 11-17) and no closing dict, but
  // the `***** train metrics *****` block (lines 85-91, Trainer.log_metrics) gives the closing
  // figures: train_runtime 0:09:16.03 = 556.03 s, '0.372' x 556.03 (0.3715 x 555.98 = 206.55 to
  // 0.3725 x 556.08 = 207.14) is 207 steps (the bar, line 18: 207/207; the summary, line 7:
  // Total optimization steps = 207), 5.881 samples/s. The dicts' steps are counted: at 69 steps
  // an epoch (207 / epoch 3.0) the epoch counts micro-batches (545 an epoch, 8 a step: step 40
  // at 320/545 = 0.59, which 41 at 69 an epoch fits too), and nothing states logging_steps.
  Result<Read> r =
      ReadLog("trainer_llamafactory_xpu_train_metrics_block_no_closing_dict.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "trainer");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(r->Loss(1), 1.745);
  EXPECT_EQ(r->Loss(7), 1.3035);
  EXPECT_EQ(*r->At(7)->grad_norm, 0.7054071426391602);
  EXPECT_EQ(r->log.wall_s, 556.03);
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(r->log.trainer_average->samples_per_s, 5.881);
  EXPECT_EQ(r->log.trainer_average->through_step, 207);
  EXPECT_EQ(r->log.trainer_average->line, 85);
  EXPECT_EQ(r->log.facts.at("gas").value, 8);   // line 6
  EXPECT_EQ(r->log.facts.at("gbs").value, 16);  // line 5
  EXPECT_TRUE(r->Note("no closing dict before the `***** train metrics *****` block"));
  EXPECT_TRUE(r->Note("does not state logging_steps"));
}

TEST(Corpus, TrainerSummaryGivesTheDataParallelRanks) {
  // The same log: "Total train batch size (w. parallel, distributed & accumulation) = 16" (line
  // 5) is 1 per device (line 4) x 8 accumulation steps (line 6) x 2 data-parallel ranks, the two
  // XPUs. Was dp 1 and no devices: with mpe set, no token/p/s per device ("set layout").
  Result<Read> r = ReadLog("trainer_llamafactory_xpu_train_metrics_block_no_closing_dict.log",
                           "trainer", {{"mpe", 1024}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->log.facts.count("dp"));
  EXPECT_EQ(r->log.facts.at("dp").value, 2);
  EXPECT_EQ(r->log.facts.at("dp").line, 5);
  EXPECT_EQ(r->m()["config"]["dp"], 2);
  EXPECT_EQ(r->m()["config"]["devices"], 2);
  EXPECT_EQ(r->m()["config"]["layout"], "TP1PP1DP2");
  // Line 85's block: train_samples_per_second = 5.881 over both devices, 1024 tokens a sample.
  EXPECT_DOUBLE_EQ(r->PerDevice(), 5.881 * 1024 / 2);
  EXPECT_TRUE(
      r->Note(":5: 2 data-parallel ranks: the total train batch size 16 / (1 per device x "
              "8 accumulation steps)"));
}

TEST(Corpus, TrainerLlamaFactoryZero3FourGpusSummaryAndBars) {
  // LLaMA-Factory (transformers' Trainer on DeepSpeed ZeRO-3, steps_per_print inf: no engine
  // lines) on 4 GPUs, 2026-01-27: the summary (lines 1-8), swanlab's lines, tqdm's bars one a
  // line and five dicts, logging_steps 10 (0.09 epochs of 339 / 3 = 113 steps: 10 steps).
  Result<Read> r = ReadLog("trainer_llamafactory_zero3_4gpu_summary_bars_2026.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "trainer");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 20, 30, 40, 50}));  // bars 10/339 .. 50/339
  EXPECT_EQ(r->Loss(10), 1.2447);                                     // line 25
  EXPECT_EQ(r->Loss(50), 1.2416);                                     // line 81
  EXPECT_EQ(*r->At(20)->grad_norm, 10.782591273111295);               // line 39
  EXPECT_DOUBLE_EQ(r->m()["loss"]["final"].get<double>(),
                   (1.2447 + 1.1635 + 1.2151 + 1.27 + 1.2416) / 5);
  // Lines 4-6: 8 = 1 per device x 2 accumulation steps x 4 ranks. Was dp 1, layout TP1PP1DP1.
  EXPECT_EQ(r->m()["config"]["gbs"], 8);
  EXPECT_EQ(r->m()["config"]["lbs"], 1);
  EXPECT_EQ(r->m()["config"]["gas"], 2);
  EXPECT_EQ(r->m()["config"]["dp"], 4);
  EXPECT_EQ(r->m()["config"]["devices"], 4);
  EXPECT_EQ(r->m()["config"]["layout"], "TP1PP1DP4");
}

TEST(Corpus, TrainerStepsTimedByTheBarsBeforeTheirDicts) {
  // The same log: each dict follows the bar of its step, whose {elapsed} is the time since
  // training began (whole seconds): 10/339 [00:14<...] (line 23), 20/339 [00:24<...] (37),
  // 30/339 [00:33<...] (51), 40/339 [00:41<...] (65), 50/339 [00:50<...] (79). Each record's
  // steps took the difference over its 10 steps; the first has no bar before it to count from.
  // The sequence length is not in the log: 1024 set here. Was untimed ("times no step").
  Result<Read> r =
      ReadLog("trainer_llamafactory_zero3_4gpu_summary_bars_2026.log", "auto", {{"mpe", 1024}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->At(10)->ms);
  EXPECT_DOUBLE_EQ(*r->At(20)->ms, (24 - 14) * 1000.0 / 10);
  EXPECT_DOUBLE_EQ(*r->At(30)->ms, (33 - 24) * 1000.0 / 10);
  EXPECT_DOUBLE_EQ(*r->At(40)->ms, (41 - 33) * 1000.0 / 10);
  EXPECT_DOUBLE_EQ(*r->At(50)->ms, (50 - 41) * 1000.0 / 10);
  EXPECT_DOUBLE_EQ(r->m()["throughput"]["step_ms_median"].get<double>(), 900.0);
  // Steps 11-50: 40 x 8 samples x 1024 tokens over 50 - 14 = 36 s, on 4 devices.
  EXPECT_DOUBLE_EQ(r->PerDevice(), 40 * 8 * 1024 / 36.0 / 4);
}

TEST(Corpus, TrainerBarsTimeHoursAndSkipTheLastBar) {
  // TRL GRPO's bars with hours, `239/400 [1:33:46<...]` (line 1) and `240/400 [1:34:00<...]`
  // (line 13): step 240 took 14 s. TRL SFT's bars 1/16 [01:18<...] .. 12/16 [02:15<...]
  // (lines 2-14) time steps 2-12; the last, 16/16 (line 17), is the bar tqdm closes with, which
  // numbers no dict, so step 16 (numbered by its epoch) stays untimed.
  Result<Read> grpo = ReadLog("trainer_trl_grpo_bar_and_dict_wrapped_80col.log", "auto");
  ASSERT_TRUE(grpo.ok()) << grpo.status().message();
  EXPECT_FALSE(grpo->At(239)->ms);
  EXPECT_DOUBLE_EQ(*grpo->At(240)->ms, 14000.0);
  Result<Read> sft = ReadLog("trainer_trl_gptoss_bars_epoch.log", "trainer");
  ASSERT_TRUE(sft.ok()) << sft.status().message();
  EXPECT_DOUBLE_EQ(*sft->At(2)->ms, (83 - 78) * 1000.0);
  EXPECT_DOUBLE_EQ(*sft->At(4)->ms, (94 - 83) * 1000.0 / 2);
  EXPECT_DOUBLE_EQ(*sft->At(8)->ms, (116 - 94) * 1000.0 / 4);
  EXPECT_DOUBLE_EQ(*sft->At(12)->ms, (135 - 116) * 1000.0 / 4);
  EXPECT_FALSE(sft->At(16)->ms);
}

TEST(Corpus, TrainerGrpoBarAndDictWrappedAt80Columns) {
  // A terminal UI word-wrapped `tail -f` of a GRPO run at 80 columns: each bar with its dict glued
  // after it spreads over twelve lines (1-12, 13-24). Read joined, the bars number them: 239
  // (line 1: 239/400), 240 (line 13). Was "no Trainer loss dicts ... was only stderr kept?" (the
  // first piece was not taken for a dict after a bar, and six pieces was the most joined).
  Result<Read> r = ReadLog("trainer_trl_grpo_bar_and_dict_wrapped_80col.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "trainer");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{239, 240}));
  EXPECT_EQ(r->Loss(239), 0.01658);
  EXPECT_EQ(*r->At(239)->lr, 2.109e-06);
  EXPECT_EQ(*r->At(239)->grad_norm, 0);
  EXPECT_EQ(r->Loss(240), 0.01677);
  EXPECT_EQ(*r->At(240)->lr, 2.087e-06);
  EXPECT_EQ(r->At(240)->line, 13);
  EXPECT_TRUE(r->Note("2 Trainer dict(s) hard-wrapped over several lines"));
}

TEST(Corpus, TrainerTwoThousandStepsEpochsPastOneHundred) {
  // transformers 5.13.1, max_steps 2000, logging_steps 20 and eval_steps 200 (neither stated):
  // 100 loss dicts (lines 4-113 less the eval lines), quoted epochs '1.44' .. '142.9' (past 100
  // only four significant digits: ±0.05), the bar 1610/2000 with typed text glued after it
  // (line 92), the closing dict (line 115: '0.257' x '7767' allows 1993-2000) and 2000/2000.
  // Read right; kept as a regression.
  Result<Read> r = ReadLog("trainer_t5_2000_steps_epochs_past_100_bar_glued_typing.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<int64_t> steps;
  for (int64_t s = 20; s <= 2000; s += 20) steps.push_back(s);
  EXPECT_EQ(r->Steps(), steps);
  EXPECT_EQ(r->Loss(20), 1.701);
  EXPECT_EQ(*r->At(20)->lr, 3.8e-05);  // 2e-4 x 19/100: warm-up's 20th step (line 4)
  EXPECT_EQ(*r->At(40)->lr, 7.8e-05);  // 2e-4 x 39/100 (line 5)
  EXPECT_EQ(r->Loss(1620), 0.00859);   // line 93, after the glued bar: not numbered 1610
  EXPECT_EQ(r->At(1620)->line, 93);
  EXPECT_EQ(r->Loss(2000), 0.007558);  // line 113
  ASSERT_EQ(r->log.evals.size(), 10u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(r->log.evals[i].step, 200 * (i + 1)) << i;
  EXPECT_EQ(r->log.evals[0].value, 0.737);  // line 14
  EXPECT_EQ(r->log.evals[9].value, 2.578);  // line 114
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(r->log.trainer_average->samples_per_s, 4.12);
  EXPECT_EQ(r->log.trainer_average->through_step, 2000);
  EXPECT_EQ(r->log.wall_s, 7767);
}

TEST(Corpus, TrainerClosingStepsCountWhenTheDictsGiveTheAverage) {
  // ezpz on 24 XPUs: one loss dict (line 12, epoch 2.24) between `# [...clipped...]` marks, with
  // include_num_input_tokens_seen's train_tokens_per_second (19660800 / 252.007 = 78016.894,
  // all devices), then the closing dict (line 16): '0.334' x 299.1983 (0.3335 x 299.19825 =
  // 99.78 to 0.3345 x 299.19835 = 100.08) is 100 steps at epoch 2.24, which puts the loss dict
  // at 100 (lr 5e-5 x 1/100, the linear schedule's last). The closing dict's steps run were
  // dropped when the dicts had given the average: the dict was step 1. Its own
  // train_tokens_per_second (2737.984 = 19660800 / 24 / 299.1983) is per device and not read.
  Result<Read> r = ReadLog("trainer_ezpz_tokens_seen_closing_steps_clipped.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{100}));
  EXPECT_EQ(r->Loss(100), 2.6031);
  EXPECT_EQ(*r->At(100)->lr, 5.000000000000001e-07);
  EXPECT_EQ(*r->At(100)->grad_norm, 1.8801486492156982);
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(r->log.trainer_average->tokens_per_s, 78016.894);
  EXPECT_EQ(r->log.trainer_average->through_step, 100);
  EXPECT_EQ(r->log.trainer_average->line, 12);
  EXPECT_EQ(r->log.wall_s, 299.1983);
  EXPECT_EQ(r->log.facts.at("gbs").value, 24);  // line 5
  // The evaluation after training is only in the `***** eval metrics *****` block (lines 33-42):
  // eval_loss 2.5437 at epoch 2.24, step 100.
  ASSERT_EQ(r->log.evals.size(), 1u);
  EXPECT_EQ(r->log.evals[0].value, 2.5437);
  EXPECT_EQ(r->log.evals[0].step, 100);
  EXPECT_EQ(r->log.evals[0].line, 33);
}

TEST(Corpus, TrainerNamedStepGoingBackIsAnotherRun) {
  // ms-swift's examples/ascend/activation_cpu_offload/train.sh (@ 3602360a5) keeps the output of
  // two runs as comments, activation_cpu_offload false then true (FSDP2 on two NPUs, 16 steps,
  // logging_steps 5): the second run's dicts name steps 1-15 again (line 16 on). Its records are
  // the later run's (were the first run's, the second run's closing dict left out).
  Result<Read> r = ReadLog("trainer_msswift_two_runs_named_steps.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 5, 10, 15}));
  EXPECT_EQ(r->log.restarts, 1);
  EXPECT_EQ(*r->At(1)->grad_norm, 2.44853568);  // line 16, not line 1's 2.44835496
  EXPECT_EQ(r->Loss(5), 2.93512678);            // line 17
  EXPECT_EQ(r->Loss(15), 1.32489185);           // line 21
  // The second run's closing dict (line 24): '0.079' x 202.2537 allows only 16 steps.
  EXPECT_EQ(r->log.wall_s, 202.2537);
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(*r->log.trainer_average->samples_per_s, 2.487);
  EXPECT_EQ(r->log.trainer_average->through_step, 16);
  EXPECT_TRUE(r->Note("step 1 again after step 15"));
}

TEST(Corpus, TrainerStatedLoggingStepsBoundsASpanAcrossElidedDicts) {
  // ms-swift's examples/train/sequence_parallel/sequence_parallel_qwen3_5.sh (@ 3602360a5) keeps
  // its run's output as comments, steps 1-6, a "# ..." and step 46, after its command line's
  // `--logging_steps 1` (line 1). The dict at 46 (line 15) is one step's, not 40 steps' (the
  // gap from 6, which made its span before).
  Result<Read> r = ReadLog("trainer_msswift_elided_dicts_logging_steps_1.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 46}));
  EXPECT_EQ(r->At(46)->span, 1);
  EXPECT_EQ(r->Loss(46), 1.049);
  EXPECT_EQ(*r->At(46)->lr, 9.035e-05);
  EXPECT_DOUBLE_EQ(*r->log.peak_memory_bytes, 68.06 * kGiB);  // line 15
  EXPECT_TRUE(r->Note("step 46 comes 40 steps after the record before it, logging_steps 1"));
}

TEST(Corpus, TrainerLoggingStepsFromTheSpacingOfTheEpochs) {
  // A Slurm run's `tail -n 20` (Qwen2.5-1.5B LoRA, half an epoch of 6250 steps, logging_steps 50,
  // eval every 500; the values quoted, four digits): 18 dicts every 0.008 of an epoch from '0.376'
  // (line 1), two eval dicts, the closing dict '5212' s x '0.6' steps/s (3125-3130 steps) at '0.5'
  // (line 19: 6249.4-6260.6 steps an epoch). No dict's epoch alone allows one step (4-6), but
  // their spacing (0.0079-0.0081 x 6249-6261 = 49.4-50.7) allows only logging_steps 50, and each
  // epoch one multiple of 50: 2350 ... 3100. Were counted 1..16.
  Result<Read> r = ReadLog("trainer_tail20_logging_steps_from_epoch_spacing.log", "trainer");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->Steps().size(), 16u);
  EXPECT_EQ(r->Steps().front(), 2350);
  EXPECT_EQ(r->Steps().back(), 3100);
  EXPECT_EQ(r->Loss(2350), 0.5852);
  EXPECT_EQ(*r->At(3100)->lr, 1.814e-08);  // cosine to 0 at 3125: 26 steps left
  ASSERT_EQ(r->log.evals.size(), 2u);
  EXPECT_EQ(r->log.evals[0].step, 2500);  // line 5, epoch '0.4'
  EXPECT_EQ(r->log.evals[1].step, 3000);  // line 16, epoch '0.48'
  // The closing epoch at the placed dicts' 6249.4-6250.6 steps an epoch: 3125.
  EXPECT_EQ(r->log.trainer_average->through_step, 3125);
  EXPECT_EQ(r->log.wall_s, 5212);
}

TEST(Corpus, AutoRecognisesEveryLog) {
  const std::pair<const char*, const char*> kLogs[] = {
      {"megatron_core080_gpt7b_1node.log", "megatron"},
      {"megatron_deepspeed_alcf_tp2.log", "megatron"},
      {"flagscale_openseek_first_iteration.log", "megatron"},
      {"megatron_srun_ranks_resumed.log", "megatron"},
      {"deepspeed_0.7_running_avg_old_timer.log", "deepspeed"},
      {"deepspeed_issue1825_samples_per_sec.log", "deepspeed"},
      {"deepspeed_0.10_hello_bert_fp16.log", "deepspeed"},
      {"deepspeed_chat_npu_gas4.log", "deepspeed"},
      {"deepspeed_fp16_overflow_lines_trainer_bars_issue534.log", "deepspeed"},
      {"deepspeed_tunib_zero1_step0_loss_lines.log", "deepspeed"},  // by its overflow lines
      {"deepspeed_trainer_default_logging500_bar_glued_step_issue14531.log", "deepspeed"},
      {"deepspeed_zero3.log", "flagperf"},  // its last line is FlagPerf's summary
      {"deepspeed_0.17_trainer_dicts_only.log", "trainer"},
      {"trainer_pr35207_dicts.log", "trainer"},
      {"trainer_accelerate_tqdm_cr.log", "trainer"},
      {"trainer_marianmt_bars_default500.log", "trainer"},
      {"trainer_msswift_colab_t4_memory.log", "trainer"},
      {"trainer_msswift_jsonl_eval_between_records_issue4408.log", "trainer"},
      {"trainer_axolotl_issue3196_memory.log", "trainer"},
      {"trainer_liger_efficiency_callback_pr110.log", "trainer"},
      {"trainer_ezpz_tokens_seen_speed_metrics.log", "trainer"},
      {"trainer_eval_dict_hard_wrapped_issue268.log", "trainer"},
      {"trainer_trl_gptoss_bars_epoch.log", "trainer"},
      {"trainer_trl_grpo_prints_between_bar_and_dict.log", "trainer"},
      {"trainer_unsloth_t55_epochs_closing_anchor.log", "trainer"},
      {"trainer_unsloth_stale_bar_glued_message.log", "trainer"},
      {"trainer_trl_llava_4g_epochs_closing_range.log", "trainer"},
      {"deepspeed_0.12_trainer_logging5_epoch.log", "deepspeed"},
      {"trainer_ezpz_two_ranks_series_twice.log", "trainer"},
      {"trainer_msswift2_eval_global_step.log", "trainer"},
      {"megatron_deepspeed_bf16_nan_no_loss_issue396.log", "megatron"},
      {"paddlenlp_qwen0p5b_pretrain.log", "paddle"},
      {"paddle_gpt_model_zoo_ips.log", "paddle"},
      {"paddle_paddlemix_benchmark_global_step_of_mib_pr342.log", "paddle"},
      {"mllog_llama31_405b_eval_only.log", "mllog"},
      {"mllog_lora.log", "mllog"},
      {"mllog_deepseekv3_reduced_train_loss.log", "mllog"},
      {"mllog_grpo_train_step_time.log", "mllog"},
      {"mllog_amd_llama31_8b_throughput_step.log", "mllog"},
      {"mllog_cisco_llama2_70b_lora_eval_gap.log", "mllog"},
      {"mllog_dell_llama2_70b_lora_mlperf_common.log", "mllog"},
      {"mllog_dell_llama31_8b_nemo_step0.log", "mllog"},
      {"mllog_nv_gpt3_tokens_train_step_timing.log", "mllog"},
      {"mllog_google_maxtext_gpt3_eval_positions.log", "mllog"},
      {"mllog_google_maxdiffusion_sd_fid_clip.log", "mllog"},
      {"mllog_gigacomputing_sd_block_stop_at_start.log", "mllog"},
      {"mllog_habana_llama2_70b_lora_block_start_steps.log", "mllog"},
      {"megatron_ling_v2_core013_zloss_mtp.log", "megatron"},
      {"trainer_llamafactory_issue8439_npu_clear_line.log", "trainer"},
      {"megatron_dsv2lite_readme_cut_lines.log", "megatron"},
      {"mllog_habana_gpt3_one_block_evals.log", "mllog"},
      {"mllog_nv_gpt3_tokens_blocks_only.log", "mllog"},
      {"mllog_nv_llama31_405b_step_is_samples.log", "mllog"},
      {"mllog_nv_llama2_70b_lora_block_stats_step0.log", "mllog"},
      {"megatron_neox_lm_loss_issue3742.log", "megatron"},
      {"paddle_ernie_speed_ips_issue5119.log", "paddle"},
      {"paddle_ernie_valid_steps_issue3867.log", "paddle"},
      {"trainer_paddlenlp_global_step_pr1761.log", "trainer"},
      {"paddlenlp24_trainer_interval10_eval.log", "paddle"},
      {"paddlenlp_issue7537_fp16_optimizer_not_run.log", "paddle"},
      {"erniekit_sft_colour_codes_crlf.log", "paddle"},
      {"erniekit_sft_colour_codes_steps20_21.log", "paddle"},
      {"erniekit_sft_colour_codes_tail_eval.log", "paddle"},
      {"erniekit_pretrain_global_steps10_30.log", "paddle"},
      {"erniekit_pretrain_timed_save200.log", "paddle"},
      {"erniekit_dpo_bar_glued_records.log", "paddle"},
      {"trainer_llamafactory_issue774_jsonl.log", "trainer"},
      {"paddle_erniekit_single_line.log", "paddle"},
      {"paddlenlp25_ernie_trainer_interval20_issue4949.log", "paddle"},
      {"paddlenlp_npu_uie_nan_loss_bare_records_issue9693.log", "paddle"},
      {"paddle_paddlemix_uvit_two_runs_unrounded_rates.log", "paddle"},
      {"erniekit_sft_sentiment_loss_exponent_notation.log", "paddle"},
      {"flagperf_perflog_glm_kunlunxin_eval_accuracy_pr31.log", "flagperf"},
      {"flagperf_llama2_7b_deepspeed.log", "flagperf"},
      {"flagperf_aquila2_7b_summary_only.log", "flagperf"},
      {"flagperf_perflog_cpm_readme_tail.log", "flagperf"},
      {"flagperf_perflog_bert_paddle_readme_tail.log", "flagperf"},
      {"nemo2_llama3_8b_b200_memory.log", "nemo"},
      {"nemo2_bionemo_evo2_iteration0.log", "nemo"},
      {"nemo2_bionemo_esm2_srun_prefix.log", "nemo"},
      {"nemo1_bar_elyza_ptuning_caret_m.log", "nemo"},
      {"nemo1_bar_launcher_lora_2e3.log", "nemo"},
      {"nemo1_bar_neuron_nxdt_3steps.log", "nemo"},
      {"nemo1_bar_a3mega_skipped.log", "nemo"},
      {"nemo1_bar_launcher_issue55.log", "nemo"},
      {"nemo2_bionemo_evo2_validation_val_loss.log", "nemo"},
      {"nemo2_perf_readme_wrapped_at_pipes.log", "nemo"},
      {"nemo1_bar_nxdt_dpo_stale_postfix.log", "nemo"},
      {"nemo1_bar_skypilot_gcsfuse_val_loss.log", "nemo"},
      {"nemo1_bar_skypilot_rclone_glued_drawings.log", "nemo"},
      {"nemo1_bar_stable_diffusion_one_based.log", "nemo"},
      {"deepspeed_chatglm_ft_issue12_skipped_midrun.log", "deepspeed"},
      {"deepspeed_0.15_cifar_epoch_batch_loss.log", "deepspeed"},
      {"megatron_deepspeed_alcf_key_value.log", "megatron"},
      {"megatron_primus_current_average.log", "megatron"},
      {"megatron_deepspeed_juwels_seconds.log", "megatron"},
      {"deepspeed_0.16_chat_dpo_step0_eval.log", "deepspeed"},
      {"deepspeed_0.9_chat_ppo_actor_critic.log", "deepspeed"},
      {"megatron_bridge_mtp2_seq_aux_issue4024.log", "megatron"},
      {"megatron_bridge_mtp2_seq_aux_issue4024_later.log", "megatron"},
      {"megatron_bridge_nano30b_memory_gb.log", "megatron"},
      {"megatron_bridge_llmb_resumed_memory_gb.log", "megatron"},
      {"deepspeed_slamllm_micro_batch_steps.log", "deepspeed"},
      {"mllog_nv_flux1_train_loss_lr.log", "mllog"},
      {"mllog_amd_nemo_llama2_70b_lora_curr_global_step.log", "mllog"},
      {"mllog_nv_sd_v41_run_stop_before_offline_evals.log", "mllog"},
      {"mllog_fujitsu_sd_tracked_stats_step_num.log", "mllog"},
      {"mllog_tinycorp_bert_eval_step_num.log", "mllog"},
      {"mllog_nv_rgat_epoch_fraction_evals.log", "mllog"},
      {"mllog_lambda_llama2_70b_lora_garbled_line.log", "mllog"},
      {"megatron_fl_core0182_ascend_default0.log", "megatron"},
      {"megatron_swift_issue7832_memory_gib_interval5.log", "megatron"},
      {"megatron_bridge_pr841_wrapped_86col.log", "megatron"},
      {"megatron_issue1152_fp8_validation.log", "megatron"},
      {"megatron_paipatch_deeplink_tokens_sec_gpu.log", "megatron"},
      {"nemo2_llmb_llama31_peak_memory_usage.log", "nemo"},
      {"nemo2_deeplink_qwen3_30b_tokens_per_sec_per_gpu.log", "nemo"},
      {"trainer_msswift4_megatron_iteration_key.log", "trainer"},
      {"trainer_llamafactory_webui_echo_throughput.log", "trainer"},
      {"trainer_unsloth_grpo_colab_bars_without_bar.log", "trainer"},
      {"trainer_t5_no_loss_dict_run_under_logging_steps.log", "trainer"},
      {"trainer_axolotl_closing_dict_only_memory.log", "trainer"},
      {"trainer_llamafactory_xpu_train_metrics_block_no_closing_dict.log", "trainer"},
      {"trainer_trl_grpo_bar_and_dict_wrapped_80col.log", "trainer"},
      {"trainer_t5_2000_steps_epochs_past_100_bar_glued_typing.log", "trainer"},
      {"trainer_ezpz_tokens_seen_closing_steps_clipped.log", "trainer"},
      {"trainer_evals_before_the_first_loss_dict.log", "trainer"},
      {"trainer_msswift_two_runs_named_steps.log", "trainer"},
      {"trainer_msswift_elided_dicts_logging_steps_1.log", "trainer"},
      {"trainer_tail20_logging_steps_from_epoch_spacing.log", "trainer"},
      {"megatron_mindspeed_fsdp2_consumed_tokens.log", "megatron"},
      {"megatron_mindspeed_mm_fsdp2_iterations_1_2.log", "megatron"},
      {"megatron_mindspeed_npu_ci_glued_first_line.log", "megatron"},
      {"deepspeed_npu_pipe_engine_issue7380.log", "deepspeed"},
      {"trainer_optimum_habana_hpu_memory_pr1111.log", "trainer"},
      {"megatron_flagscale_musa_chip_throughput_glued.log", "megatron"},
      {"megatron_infini_4090_glued_memory_reports.log", "megatron"},
      {"megatron_primus_bridge_dp8_selected_lines.log", "megatron"},
      {"megatron_primus_dsv4_rocm_max_mem_smoke_tail.log", "megatron"},
      {"megatron_primus_dsv4_pp2_rank0_parameters.log", "megatron"},
      {"megatron_2019_no_colons_transformer_xl_issue7.log", "megatron"},
      {"megatron_2019_mp2_max_cached_parameters.log", "megatron"},
      {"megatron_modellink_deeplink_tgs_time_ms.log", "megatron"},
      {"megatron_deepspeed_alcf_tgs_no_space.log", "megatron"},
      {"deepspeed_unfused_fp16_overflow_script_metric_line_2026.log", "deepspeed"},
  };
  for (auto [file, format] : kLogs) {
    std::optional<logparse::Detected> d =
        logparse::DetectLogFormat(testing::ReadTestData(std::string("logs/") + file));
    ASSERT_TRUE(d) << file;
    EXPECT_EQ(d->format, format) << file;
  }
  // Read through auto: the same records, timed and labelled as the format found.
  Result<Read> r = ReadLog("megatron_core016_first_interval.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->m()["provenance"]["trainer"], "megatron");
  EXPECT_NEAR(r->PerDevice(), 32768.0, 1e-6);
  EXPECT_TRUE(
      r->Note("log_format auto: read as megatron (megatron_core016_first_interval.log:19 "
              "is a Megatron iteration line)"));
}

TEST(Corpus, WrongFormatSaysWhichOneReadsTheLog) {
  Result<Read> r = ReadLog("trainer_pr35207_dicts.log", "megatron");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "trainer_pr35207_dicts.log: no Megatron iteration lines (' iteration N/M | ... |') in "
            "6 lines; line 1 is a transformers Trainer log dict: set log_format = \"trainer\" (or "
            "\"auto\")");
  r = ReadLog("megatron_mixtral_issue756.log", "deepspeed");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 1 is a Megatron iteration line: set log_format = "
                                      "\"megatron\""),
            std::string::npos)
      << r.status().message();
  // A NeMo 2 log read as Megatron: its lines hold no Megatron field.
  r = ReadLog("nemo2_llama3_8b_b200_memory.log", "megatron");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "nemo2_llama3_8b_b200_memory.log:1: a NeMo 2 ProgressPrinter line ('Training epoch "
            "E, iteration N/M | ... | global_step: S | reduced_train_loss: x | ...'), not a "
            "Megatron iteration line: set log_format = \"nemo\" (or \"auto\")");
  r = ReadLog("megatron_mixtral_issue756.log", "nemo");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("megatron_mixtral_issue756.log: no NeMo 2 ProgressPrinter "
                                      "lines"),
            std::string::npos);
  EXPECT_NE(r.status().message().find("set log_format = \"megatron\""), std::string::npos);
  Result<ParsedLog> none = logparse::ParseAutoLog("W0601 a warning\nnothing else\n", "x.log");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("x.log: log_format = \"auto\" found none of these in 2 "
                                         "lines"),
            std::string::npos);
}

// ---- NeMo Automodel (read by nemo) -----------------------------------------

TEST(Corpus, NemoAutomodelTokenBudgetSampler) {
  // NVIDIA-NeMo/Automodel PR #3473 (2026-08-10): log_train_metrics every step on the main rank,
  // `step 9 | epoch 0 | loss 0.6974 | grad_norm 1.5436 | lr 1.00e-05 | mem 24.90 GiB | tps
  // 11278.56(1409.82/gpu) | num_label_tokens 21541`. StepScheduler.step counts from 0 (since
  // ebd03b0, October 2025): step 9 is the 10th optimizer step.
  Result<Read> r = ReadLog("nemo_automodel_pr3473_token_budget.log", "nemo");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{10, 11, 12, 13, 14}));  // lines 1-5
  EXPECT_EQ(r->Loss(10), 0.6974);
  EXPECT_EQ(r->At(10)->grad_norm, 1.5436);
  EXPECT_EQ(r->At(10)->lr, 1e-05);
  EXPECT_EQ(r->At(11)->tokens_per_s, 13746.23);      // all ranks' tokens / the step's time
  EXPECT_FALSE(r->At(11)->tokens_per_device_per_s);  // '/gpu' is over DP x CP only
  EXPECT_FALSE(r->At(11)->ms);                       // the step's tokens are not printed
  EXPECT_EQ(r->At(12)->span, 1);
  // mem: max_memory_allocated since the previous line; the largest is line 2's 29.67 GiB.
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 29.67 * kGiB);
  EXPECT_TRUE(r->m()["throughput"]["tokens_per_device_per_s"].is_null());
}

TEST(Corpus, NemoAutomodelCountingFromOneInSeptember2025) {
  // Automodel's GPT-2 pretraining guide (2025-09-01): between e557448 (2025-08-18) and ebd03b0
  // (2025-10-13) StepScheduler counted before yielding, so the first line after the recipe's
  // `Step scheduler:` block (line 1) is `step 1`, the first optimizer step (its lr 6.08e-05 =
  // 6e-5 + 5.4e-4 / 700: one warm-up step). Steps as printed.
  Result<Read> r = ReadLog("nemo_automodel_gpt2_docs_202509.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "nemo");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5}));  // lines 8-12
  EXPECT_EQ(r->Loss(1), 10.9521);
  EXPECT_EQ(r->Loss(5), 9.5964);
  EXPECT_EQ(r->At(1)->lr, 6.08e-05);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 38.63 * kGiB);  // lines 9-12
}

TEST(Corpus, NemoAutomodelStepZeroAndValidation) {
  // A page's "expected output (from the run log)" of Automodel 0.5.0 on 8 MI355X: lines picked
  // and aligned by the page (`step 0  | epoch 0`, no lr), `[val] name "default" | step 9  |
  // epoch 0 | loss 1.7634` after 0-based step 9 (val_every_steps 10): the evaluation after
  // optimizer step 10.
  Result<Read> r = ReadLog("nemo_automodel_mi355x_expected_output.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 6, 16, 20}));  // lines 4, 5, 7, 8
  EXPECT_EQ(r->Loss(1), 1.8957);
  EXPECT_EQ(r->At(16)->span, 1);  // each line is one step's values
  ASSERT_EQ(r->log.evals.size(), 2u);
  EXPECT_EQ(r->log.evals[0].step, 10);  // line 6
  EXPECT_EQ(r->log.evals[0].value, 1.7634);
  EXPECT_EQ(r->log.evals[1].step, 20);  // line 9
  EXPECT_EQ(r->log.evals[1].value, 1.6892);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 5.10 * kGiB);  // lines 5, 7
}

TEST(Corpus, NemoAutomodelMicroBatchStepsOfJuly2025) {
  // Automodel's SFT guide of 2025-07-18 (24376b21c): `INFO:root:step 4 | epoch 0 | loss 1.5514 |
  // grad_norm 102.0000 | mem: 11.66 GiB | tps 6924.50` (Python's default logging format, `mem:`
  // with a colon, no lr). StepScheduler counted micro-batches from 1 then (before e557448,
  // 2025-08-17) and the line came at each optimizer step: the guide's grad_acc_steps is 4, so
  // steps 4, 8, 12, 16, 20 (lines 7, 8, 10-12) are optimizer steps 1-5 (a checkpoint at
  // micro-batch 10, line 9, fits no optimizer step: micro-batches again). `[val] step 20 | epoch 0
  // | loss 0.2469` (line 14) is the validation after step 5, no training record.
  Result<Read> r = ReadLog("nemo_automodel_sft_docs_mem_colon_202507.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "nemo");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(r->Loss(1), 1.5514);               // line 7
  EXPECT_EQ(r->At(1)->grad_norm, 102.0);       // line 7
  EXPECT_EQ(r->Loss(5), 0.2557);               // line 12
  EXPECT_EQ(r->At(2)->tokens_per_s, 9328.79);  // line 8
  EXPECT_EQ(r->At(4)->span, 1);                // each line is one step's values
  EXPECT_FALSE(r->At(1)->lr);                  // no lr field in July 2025
  ASSERT_EQ(r->log.evals.size(), 1u);
  EXPECT_EQ(r->log.evals[0].step, 5);  // line 14
  EXPECT_EQ(r->log.evals[0].value, 0.2469);
  // mem: max_memory_allocated since the previous line; the largest is line 11's 16.47 GiB.
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 16.47 * kGiB);
}

// ---- torchtitan -----------------------------------------------------------

TEST(Corpus, TorchtitanDebugModelWholeRun) {
  // torchtitan's llama3 debug model on 8 H200 (2025-11-25), log_freq 1, the whole run.
  Result<Read> r = ReadLog("torchtitan_llama3_debug_h200_apptests.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "torchtitan");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));  // lines 24-34
  EXPECT_EQ(r->Loss(1), 8.0277);                                                 // line 24
  EXPECT_EQ(r->Loss(10), 3.9761);                                                // line 34
  EXPECT_EQ(r->At(2)->grad_norm, 1.5585);                                        // line 26
  EXPECT_EQ(r->At(2)->tokens_per_device_per_s, 301092.0);                        // `tps: 301,092`
  // Line 8: `Building 1-D device mesh with ['dp_shard'], [8]`; line 22: global batch size 64,
  // sequence length 2048: 64 x 2048 / 8 = 16384 tokens per device per step. Step 2: 16384 /
  // 301092 s (the timestamps of lines 24 and 26: 01,441 -> 01,496, 55 ms).
  EXPECT_EQ(r->log.facts.at("devices").value, 8);
  EXPECT_EQ(r->log.facts.at("gbs").value, 64);
  EXPECT_EQ(r->log.facts.at("mpe").value, 2048);
  EXPECT_EQ(r->log.facts.at("parameters").value, 6163712);  // line 15
  EXPECT_DOUBLE_EQ(*r->At(2)->ms, 16384.0 / 301092 * 1000);
  EXPECT_EQ(r->At(2)->samples, 64.0);
  // Steps 2-10 timed (step 1 includes the start-up): the same tokens each step, so the rate is
  // the harmonic mean of their tps (lines 26-34).
  EXPECT_NEAR(r->PerDevice(),
              9 / (1 / 301092.0 + 1 / 359546.0 + 1 / 347712.0 + 1 / 338287.0 + 1 / 317373.0 +
                   1 / 329413.0 + 1 / 364703.0 + 1 / 351177.0 + 1 / 324245.0),
              1e-6);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 1.34 * kGiB);  // `memory:  1.34GiB`
  // mfu: line 24's 0.04% (step 1, left out as the warm-up), then lines 26-34 (21.55 TFLOP/s /
  // 989, torchtitan's H200 peak, = 2.18%). The stated MFU of steps 2-10 is their tokens over
  // their time: each step's MFU weighted by its time, 1 / MFU for the same tokens a step.
  EXPECT_DOUBLE_EQ(*r->At(1)->mfu, 0.0004);
  EXPECT_DOUBLE_EQ(*r->At(2)->mfu, 0.0218);
  EXPECT_NEAR(r->m()["mfu"]["stated"].get<double>(),
              9 / (1 / 0.0218 + 1 / 0.0260 + 1 / 0.0252 + 1 / 0.0245 + 1 / 0.0230 + 1 / 0.0238 +
                   1 / 0.0264 + 1 / 0.0254 + 1 / 0.0235),
              1e-12);
  EXPECT_TRUE(
      r->Note("mfu.stated: the MFU torchtitan_llama3_debug_h200_apptests.log printed on 9 "
              "record(s) of steps 2\u201310 (after the first 1 warm-up steps; line 34 the "
              "last)"));
  // excluded_warmup_steps = 5: steps 6-10 (lines 30-34), for the rate and the MFU alike.
  r = ReadLog("torchtitan_llama3_debug_h200_apptests.log", "auto", {{"excluded_warmup_steps", 5}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->m()["throughput"]["measured_steps"], 5);
  EXPECT_NEAR(r->m()["mfu"]["stated"].get<double>(),
              5 / (1 / 0.0230 + 1 / 0.0238 + 1 / 0.0264 + 1 / 0.0254 + 1 / 0.0235), 1e-12);
}

TEST(Corpus, TorchtitanLlama3_8bBeforeGradNorm) {
  // torchtitan of 2025-02 (train.py): `Training starts at step 1, with local batch size 1, global
  // batch size 8, sequence length 8192, ...` (line 20), `step: 10  loss:  9.8821  memory: ...
  // tps: 7,026  mfu: 41.15%` (no grad_norm, no tflops), log_freq 10, 8 H200 (line 10).
  Result<Read> r = ReadLog("torchtitan_llama3_8b_h200_202502.log", "torchtitan");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(),
            (std::vector<int64_t>{1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}));  // lines 22-33
  EXPECT_EQ(r->Loss(10), 9.8821);
  EXPECT_EQ(r->Loss(100), 6.4719);
  EXPECT_FALSE(r->At(10)->grad_norm);
  EXPECT_EQ(r->At(10)->span, 9);  // steps 2-10
  EXPECT_EQ(r->At(20)->span, 10);
  // 8 x 8192 / 8 = 8192 tokens per device per step; step 10: 8192 / 7026 s (lines 22 and 24:
  // 35,026 -> 45,521, 10.495 s over 9 steps = 1.1661 s).
  EXPECT_DOUBLE_EQ(*r->At(10)->ms, 8192.0 / 7026 * 1000);
  EXPECT_NEAR(r->PerDevice(),
              99 / (9 / 7026.0 + 10 / 7080.0 + 10 / 7082.0 + 10 / 7072.0 + 10 / 7057.0 +
                    10 / 7051.0 + 10 / 7042.0 + 10 / 7036.0 + 10 / 7033.0 + 10 / 6856.0),
              1e-6);
  // Line 24's `mmemory:` (as the page shows it) is no memory field; lines 25-33: 49.59 GiB.
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 49.59 * kGiB);
  // mfu of steps 2-100 (lines 24-33, log_freq 10: step 10's record spans 9 steps, the others
  // 10), each record weighted by its time, span / MFU.
  EXPECT_NEAR(r->m()["mfu"]["stated"].get<double>(),
              99 / (9 / 0.4115 + 10 / 0.4146 + 10 / 0.4147 + 10 / 0.4141 + 10 / 0.4132 +
                    10 / 0.4129 + 10 / 0.4124 + 10 / 0.4120 + 10 / 0.4119 + 10 / 0.4015),
              1e-12);
  // Line 15's `[31msize: 8,030,261,248 total parameters` lost its color's ESC on the page: not
  // read as the parameter count.
  EXPECT_EQ(r->log.facts.count("parameters"), 0u);
}

TEST(Corpus, TorchtitanParallelismLineOnTwoXpus) {
  // torchtitan's ezpz experiment on 2 Intel Max 1550 (2026-02-28), log_freq 10: line 1 `Building
  // device mesh with parallelism: pp=1, dp_replicate=1, dp_shard=2, cp=1, tp=1, ep=1, etp=1`,
  // line 58 global batch size 16, sequence length 2048: 16384 tokens per device per step.
  Result<Read> r = ReadLog("torchtitan_ezpz_xpu_2ranks_mesh.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "torchtitan");
  EXPECT_EQ(r->log.facts.at("devices").value, 2);
  EXPECT_EQ(r->log.facts.at("dp").value, 2);
  ASSERT_EQ(r->Steps().size(), 20u);  // 1, 10, ..., 190 (lines 60-88)
  EXPECT_EQ(r->Loss(1), 8.13834);
  EXPECT_EQ(r->Loss(190), 2.71296);
  // Step 10: 16384 / 105974 s (lines 60 and 66: 23,662786 -> 25,055428, 1.3926 s / 9 steps).
  EXPECT_DOUBLE_EQ(*r->At(10)->ms, 16384.0 / 105974 * 1000);
  EXPECT_NEAR(r->PerDevice(),
              189 / (9 / 105974.0 + 10 / 107242.0 + 10 / 106966.0 + 10 / 107811.0 + 10 / 106472.0 +
                     10 / 107548.0 + 10 / 106864.0 + 10 / 105089.0 + 10 / 105120.0 + 10 / 106776.0 +
                     10 / 107334.0 + 10 / 107710.0 + 10 / 107753.0 + 10 / 107665.0 + 10 / 107815.0 +
                     10 / 107485.0 + 10 / 107531.0 + 10 / 108033.0 + 10 / 107576.0),
              1e-6);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 8.30 * kGiB);  // lines 66-88
}

TEST(Corpus, TorchtitanWithoutTheWorldSizeTimesNoStep) {
  // 24 Intel Max 1550 (2026-02-11, from the launcher's own line, which the excerpt does not
  // hold): the trainer line (wrapped by the page after `sequence length 4096,`, lines 13-14)
  // states global batch size 48 and 2 accumulation steps, but no device mesh line is in the
  // excerpt: no world size, so no time per step (never guessed); tps read as printed.
  Result<Read> r = ReadLog("torchtitan_ezpz_xpu24_wrapped_trainer_line.log", "torchtitan");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{2, 3, 4, 5, 6, 7, 8, 9, 10}));  // lines 19-27
  EXPECT_EQ(r->Loss(2), 7.74407);
  EXPECT_EQ(r->At(2)->tokens_per_device_per_s, 1425.0);
  EXPECT_FALSE(r->At(2)->ms);
  EXPECT_EQ(r->log.facts.at("gbs").value, 48);
  EXPECT_EQ(r->log.facts.at("gas").value, 2);
  EXPECT_EQ(r->log.facts.at("mpe").value, 4096);
  EXPECT_EQ(r->log.facts.count("devices"), 0u);
  EXPECT_EQ(r->log.facts.at("parameters").value, 5933109248);  // line 3
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 15.45 * kGiB);
}

TEST(Corpus, TorchtitanPipelinePlaceholderLoss) {
  // pytorch/torchtitan#1232 (2025-05-28): llama3 70B with pipeline_parallel_degree 16 over 16
  // GPUs, only rank 0's lines (the first stage): `step:  1  loss: -1.0000  memory: 36.90GiB
  // (46.63%)  tps: 4  ...`. Ranks without the last stage print torchtitan's placeholder -1: no
  // loss. Line 1: global batch size 2, sequence length 4096; no device mesh line: no step time.
  const std::string file = "torchtitan_pp16_loss_placeholder_issue1232.log";
  Result<ParsedLog> log =
      logparse::FindLogParser("auto")->parse(testing::ReadTestData("logs/" + file), file);
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->format, "torchtitan");
  ASSERT_EQ(log->iterations.size(), 4u);  // lines 3, 5-7
  for (const Iteration& it : log->iterations) EXPECT_FALSE(it.loss) << it.line;
  EXPECT_EQ(log->iterations[0].tokens_per_device_per_s, 4.0);  // line 3
  EXPECT_EQ(log->iterations[1].tokens_per_device_per_s, 8.0);  // line 5
  EXPECT_FALSE(log->iterations[1].ms);
  EXPECT_EQ(log->facts.at("gbs").value, 2);
  EXPECT_EQ(log->facts.at("mpe").value, 4096);
  EXPECT_EQ(log->peak_memory_bytes, 42.78 * kGiB);  // lines 5-7
  EXPECT_TRUE(std::any_of(log->notes.begin(), log->notes.end(), [](const std::string& n) {
    return n.find(":3: 4 line(s) print a negative loss") != std::string::npos &&
           n.find("4 record(s) have no loss") != std::string::npos;
  }));
  // No loss (before, the placeholder was reported as loss) and no step time, but the printed
  // per-device rate: lines 5-7 (steps 2-4, after the warm-up step) print tps 8 each, so
  // token/p/s is 8 (their harmonic mean), over 3 steps.
  Result<Read> r = ReadLog(file, "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->m()["loss"].is_null());
  EXPECT_EQ(r->PerDevice(), 8.0);
  EXPECT_EQ(r->m()["throughput"]["measured_steps"], 3);
  EXPECT_TRUE(r->m()["throughput"]["step_ms_median"].is_null());
}

TEST(Corpus, TorchtitanLinesWrappedAt72Columns) {
  // pytorch/torchtitan#3932 (2026-07-16), a DeepSeek-V3 debug model with MXFP8 on 2 GPUs: the PR
  // text wraps each training line at 72 columns, `... INFO - step:  1  loss:` / `7.98820
  // grad_norm:  3.7762  memory:  3.87GiB(2.17%)  tps: 1,578` / `tflops: 0.86  mfu: N/A`. Read
  // joined (to the `mfu:`); auto knows the first piece by torchtitan's `[titan]` prefix.
  Result<Read> r = ReadLog("torchtitan_mxfp8_wrapped_pr3932.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "torchtitan");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5}));  // lines 1, 6, 9, 12, 15
  EXPECT_EQ(r->At(2)->line, 6);
  EXPECT_EQ(r->Loss(1), 7.98820);                                        // line 2
  EXPECT_EQ(r->At(1)->grad_norm, 3.7762);                                // line 2
  EXPECT_EQ(r->At(1)->tokens_per_device_per_s, 1578.0);                  // line 2
  EXPECT_EQ(r->Loss(5), 4.57767);                                        // line 16
  EXPECT_EQ(r->At(5)->tokens_per_device_per_s, 102825.0);                // line 16
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 4.32 * kGiB);  // lines 10, 13, 16
  // Every line's `mfu: N/A` (lines 3, 8, 11, 14, 17: MXFP8 layers, torchtitan since f113706):
  // no stated MFU.
  EXPECT_FALSE(r->At(1)->mfu);
  EXPECT_TRUE(r->m()["mfu"]["stated"].is_null());
  EXPECT_TRUE(r->Note("5 training line(s) print 'mfu: N/A'"));
  EXPECT_TRUE(r->Note("none a number: no stated MFU"));
}

TEST(Corpus, TorchtitanExcerptWithFieldsElidedAfterMemory) {
  // A ROCm notes page's "healthy 8-GPU run" on MI355X (2026): the mesh line (line 1: dp_shard 4 x
  // tp 2) with `[titan]`, then step lines the author cut after the memory field, `step:   1
  // loss: 12.77955  grad_norm: 14.1134  memory: 18.42GiB(6.40%)  ...` (lines 5-6): no rate, no
  // prefix; auto knows them by the `GiB(` memory field.
  Result<Read> r = ReadLog("torchtitan_mi355x_tp2_elided_fields.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "torchtitan");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 250}));
  EXPECT_EQ(r->Loss(1), 12.77955);
  EXPECT_EQ(r->Loss(250), 0.06754);
  EXPECT_EQ(r->At(250)->grad_norm, 0.5762);
  EXPECT_FALSE(r->At(250)->tokens_per_device_per_s);
  EXPECT_FALSE(r->At(250)->mfu);
  EXPECT_EQ(r->log.facts.at("devices").value, 8);
  EXPECT_EQ(r->log.facts.at("dp").value, 4);
  EXPECT_EQ(r->log.facts.at("tp").value, 2);
  EXPECT_TRUE(r->m()["mfu"]["stated"].is_null());
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 27.39 * kGiB);  // line 6
}

TEST(Corpus, TorchtitanPeakFlopsLineAndWandbLogView) {
  // A 1B pretraining smoke test on H100 (2026-01-09) as W&B's log view shows it: each line after
  // a timestamp line of its own, the author's `...` after the start-up, log_freq 50. Line 12:
  // `Peak FLOPS used for computing MFU: 9.890e+14` (H100 SXM in torchtitan's table), so line 17's
  // `tflops: 412.06  mfu: 41.66%` = 412.06 / 989.
  Result<Read> r = ReadLog("torchtitan_wandb_log_view_peak_flops_line.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "torchtitan");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{100, 150, 200}));  // lines 17, 21, 25
  EXPECT_EQ(r->At(100)->span, 50);                               // the gaps after it: steps 51-100
  EXPECT_EQ(r->Loss(100), 9.4939);
  EXPECT_EQ(r->Loss(200), 8.1258);
  EXPECT_EQ(r->At(150)->grad_norm, 70.0);
  EXPECT_EQ(r->At(200)->tokens_per_device_per_s, 54783.0);
  EXPECT_DOUBLE_EQ(*r->At(100)->mfu, 0.4166);
  EXPECT_EQ(r->log.facts.at("parameters").value, 1040254976);  // line 4
  // Steps 51-200, each record 50 steps: 150 / (50 / 41.66% + 50 / 41.48% + 50 / 41.26%).
  EXPECT_NEAR(r->m()["mfu"]["stated"].get<double>(),
              150 / (50 / 0.4166 + 50 / 0.4148 + 50 / 0.4126), 1e-12);
  EXPECT_TRUE(
      r->Note("torchtitan_wandb_log_view_peak_flops_line.log:12: torchtitan's mfu divides "
              "by 989 TFLOP/s per device"));
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 72.82 * kGiB);
}

TEST(Corpus, TorchtitanMfuPastOneHundredPercent) {
  // pytorch/torchtitan#1190 (2025-05-13): MXFP8 on B200 two days before torchtitan's peak table
  // had B200 (4ee6a2c, 2025-05-15): the A100 fallback's 312 TFLOP/s (line 3: 40.00 / 312 =
  // 12.82%) and the BF16 peak for FP8 matmuls make line 5's `mfu: 201.71%`. Stated as printed
  // (steps 2-10: the one record past the warm-up step), with a note.
  Result<Read> r = ReadLog("torchtitan_mxfp8_b200_a100_fallback_pr1190.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "torchtitan");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 10}));  // lines 3, 5
  EXPECT_EQ(r->Loss(1), 12.2382);
  EXPECT_EQ(r->Loss(10), 9.8639);
  EXPECT_EQ(r->At(10)->span, 9);
  EXPECT_EQ(r->At(10)->tokens_per_device_per_s, 10866.0);
  EXPECT_DOUBLE_EQ(*r->At(1)->mfu, 0.1282);
  EXPECT_DOUBLE_EQ(r->m()["mfu"]["stated"].get<double>(), 2.0171);
  EXPECT_TRUE(
      r->Note("torchtitan_mxfp8_b200_a100_fallback_pr1190.log:5: mfu 201.71% is above "
              "100%"));
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 38.04 * kGiB);  // line 5
  EXPECT_TRUE(r->m()["throughput"]["tokens_per_s"].is_null());  // no start-up lines: no ms
}

TEST(Corpus, TorchtitanTensorAndExpertParallelMesh) {
  // A DeepSeek-V3 debug model on 4 GB200 (2026-05-04): `Building device mesh with parallelism:
  // pp=1, dp_replicate=1, dp_shard=2, cp=1, tp=2, ep=2` (line 3: 2 x 2 = 4 devices, ep shards
  // inside them), global batch 16 x sequence length 2048 (line 19): 16 x 2048 / 4 = 8192 tokens
  // per device per step (tps divides by tp: 8 x 2048 / 2 on each rank). Step 2: 8192 / 55,850 s
  // = 146.7 ms (lines 37 -> 39: 55,703 -> 55,850, 147 ms); step 10: 8192 / 119,540 = 68.5 ms
  // (lines 46 -> 47: 56,309 -> 56,377, 68 ms).
  Result<Read> r = ReadLog("torchtitan_dsv3_gb200_tp2_ep2_paged_stash.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "torchtitan");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));  // 37, 39-47
  EXPECT_EQ(r->log.facts.at("devices").value, 4);
  EXPECT_EQ(r->log.facts.at("dp").value, 2);
  EXPECT_EQ(r->log.facts.at("tp").value, 2);
  EXPECT_EQ(r->log.facts.at("gbs").value, 16);
  EXPECT_EQ(r->log.facts.at("parameters").value, 33014016);  // line 11
  EXPECT_EQ(r->Loss(1), 4.03431);
  EXPECT_EQ(r->Loss(10), 1.97393);
  EXPECT_DOUBLE_EQ(*r->At(2)->ms, 8192.0 / 55850 * 1000);
  EXPECT_DOUBLE_EQ(*r->At(10)->ms, 8192.0 / 119540 * 1000);
  EXPECT_NEAR(r->PerDevice(),
              9 / (1 / 55850.0 + 1 / 126876.0 + 1 / 127997.0 + 1 / 121253.0 + 1 / 118256.0 +
                   1 / 126996.0 + 1 / 128149.0 + 1 / 129482.0 + 1 / 119540.0),
              1e-6);
  EXPECT_EQ(r->m()["memory"]["peak_bytes"].get<double>(), 2.34 * kGiB);
}

TEST(Corpus, TorchtitanSrunLabelsFourNodesOneLineEach) {
  // pytorch/torchtitan#708 (2024-11-28), 4 nodes x 8 H100 under srun --label, torchtitan of
  // November 2024 (`wps:`, no tflops): each node's torchrun prints its local rank 0 (`[rank0]:`)
  // after srun's `0: ` .. `3: `, so step 10's line comes four times (lines 2-5), identical. Line 1:
  // local batch size 1, global batch size 32, sequence length 8192; no device mesh line: no step
  // time (never guessed); wps read as printed (tokens per device per second).
  Result<ParsedLog> log = logparse::FindLogParser("auto")->parse(
      testing::ReadTestData("logs/torchtitan_srun_label_wps_issue708.log"),
      "torchtitan_srun_label_wps_issue708.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->format, "torchtitan");
  ASSERT_EQ(log->iterations.size(), 1u);  // line 2; lines 3-5 are the other nodes' copies
  EXPECT_EQ(log->iterations[0].step, 10);
  EXPECT_EQ(log->iterations[0].line, 2);
  EXPECT_EQ(log->iterations[0].span, 10);  // steps 1-10 (training starts at step 1, line 1)
  EXPECT_EQ(log->iterations[0].loss, 1.5568);
  EXPECT_EQ(log->iterations[0].tokens_per_device_per_s, 1786.0);
  EXPECT_FALSE(log->iterations[0].ms);
  EXPECT_EQ(log->facts.at("gbs").value, 32);
  EXPECT_EQ(log->facts.at("lbs").value, 1);
  EXPECT_EQ(log->facts.at("mpe").value, 8192);
  EXPECT_EQ(log->peak_memory_bytes, 26.47 * kGiB);
  EXPECT_TRUE(std::any_of(log->notes.begin(), log->notes.end(), [](const std::string& n) {
    return n.find(":3: 3 records of steps already read") != std::string::npos;
  }));
}

// ---- Logs of frameworks benchmake does not read ----------------------------

TEST(Corpus, TorchtitanValidationLossIsNoTrainingLoss) {
  // torchtitan (a 2026-01-16 run, 8 ranks each printing): `validate step:  1  loss: 12.4699`
  // (lines 1-5, 11-12; torchtitan's MetricsProcessor.log_validation) is the validation loss after
  // step 1, which prints no training line (log_freq 20); `step: 20  loss: 11.8347` (lines 32-39)
  // and `step: 40  loss:  9.3507` (lines 40-47) are training lines. The deepspeed format's loss
  // lines take the training ones only; auto reads it as torchtitan.
  Result<ParsedLog> log =
      logparse::ParseDeepSpeedLog(testing::ReadTestData("logs/other_torchtitan_validate_step.log"),
                                  "other_torchtitan_validate_step.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_EQ(log->iterations.size(), 2u);
  EXPECT_EQ(log->iterations[0].step, 20);
  EXPECT_EQ(log->iterations[0].loss, 11.8347);
  EXPECT_EQ(log->iterations[1].step, 40);
  EXPECT_EQ(log->iterations[1].loss, 9.3507);
  EXPECT_NE(std::find(log->notes.begin(), log->notes.end(),
                      "other_torchtitan_validate_step.log:1: loss lines of an evaluation "
                      "('validate step: N  loss: x') left out: not a training loss"),
            log->notes.end());
  // auto reads it as torchtitan (its own format since round 15): the same steps and losses, and
  // the validation loss 12.4699 of lines 1-5 as an evaluation at step 1.
  Result<ParsedLog> titan =
      logparse::ParseAutoLog(testing::ReadTestData("logs/other_torchtitan_validate_step.log"),
                             "other_torchtitan_validate_step.log");
  ASSERT_TRUE(titan.ok()) << titan.status().message();
  EXPECT_EQ(titan->format, "torchtitan");
  ASSERT_EQ(titan->iterations.size(), 2u);
  EXPECT_EQ(titan->iterations[0].loss, 11.8347);
  EXPECT_EQ(titan->iterations[1].loss, 9.3507);
  ASSERT_EQ(titan->evals.size(), 1u);
  EXPECT_EQ(titan->evals[0].step, 1);
  EXPECT_EQ(titan->evals[0].value, 12.4699);
}

TEST(Corpus, VerlPpoMetricsAreNoPaddleOrDeepSpeedLines) {
  // veRL's PPO trainer prints its metrics as `step:1 - ... - actor/kl_loss:0.000 - ... -
  // actor/pg_loss:0.001 - ... - training/global_step:1.000 - ...` (verl-project/verl#2060): an RL
  // step (one rollout batch, several optimizer steps of the actor) and the losses of its actor's
  // objective. paddle once read `training/global_step` as PaddleNLP's global_step and the
  // `kl_loss` as the loss (0); deepspeed read #7412's `actor/loss:0.0423...` as step 34's
  // training loss. Both now find none of their lines.
  for (const char* file :
       {"other_verl_ppo_metrics_issue2060.log", "other_verl_ppo_actor_loss_issue7412.log"}) {
    const std::string text = testing::ReadTestData(std::string("logs/") + file);
    Result<ParsedLog> paddle = logparse::ParsePaddleLog(text, file);
    ASSERT_FALSE(paddle.ok()) << file;
    EXPECT_EQ(paddle.status().message().rfind(std::string(file) + ": no PaddleNLP step lines", 0),
              0u)
        << paddle.status().message();
    Result<ParsedLog> ds = logparse::ParseDeepSpeedLog(text, file);
    ASSERT_FALSE(ds.ok()) << file;
    EXPECT_EQ(ds.status().message().rfind(std::string(file) + ": no DeepSpeed step lines", 0), 0u)
        << ds.status().message();
  }
}

TEST(Corpus, VerlSftTrainLossIsTheStepsLoss) {
  // veRL's SFT trainer (verl/trainer/fsdp_sft_trainer.py: `global_step += 1`, training_step = one
  // optimizer step, `train/loss` its loss averaged over the data-parallel ranks): `step:1 -
  // train/loss:0.8078852891921997 - train/lr(1e-3):... - train/time(s):14.79...` (lines 1-3). The
  // deepspeed format's loss lines take `train/loss` (the training loss's own namespace), unlike the
  // PPO trainer's `actor/loss` or `val/loss`.
  Result<ParsedLog> log =
      logparse::ParseDeepSpeedLog(testing::ReadTestData("logs/other_verl_sft_train_loss_docs.log"),
                                  "other_verl_sft_train_loss_docs.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_EQ(log->iterations.size(), 3u);
  EXPECT_EQ(log->iterations[0].step, 1);
  EXPECT_EQ(log->iterations[0].loss, 0.8078852891921997);
  EXPECT_EQ(log->iterations[1].loss, 0.7787683010101318);
  EXPECT_EQ(log->iterations[2].step, 3);
  EXPECT_EQ(log->iterations[2].loss, 0.7899439334869385);
}

}  // namespace
}  // namespace bm::rules
