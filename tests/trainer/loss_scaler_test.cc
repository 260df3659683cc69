// The fp16 dynamic loss scaler's bookkeeping (trainer/run/loss_scaler.h) on the CPU: PyTorch
// GradScaler's defaults, backoff on overflow, growth after growth_interval clean steps in a
// row, hysteresis, the min_scale floor, and the resume state.
#include "trainer/run/loss_scaler.h"

#include <gtest/gtest.h>

#include "trainer/run/run_config.h"

namespace bm::train {
namespace {

TEST(LossScalerTest, DefaultsAreGradScalers) {
  LossScalerOptions o;
  EXPECT_EQ(o.init_scale, 65536.0);
  EXPECT_EQ(o.growth_factor, 2.0);
  EXPECT_EQ(o.backoff_factor, 0.5);
  EXPECT_EQ(o.growth_interval, 2000);
  EXPECT_EQ(o.hysteresis, 1);
  EXPECT_TRUE(o.Validate().ok());
  EXPECT_EQ(LossScaler(o).scale(), 65536.0);
}

TEST(LossScalerTest, BacksOffOnOverflowAndGrowsAfterCleanSteps) {
  LossScalerOptions o;
  o.init_scale = 1024;
  o.growth_interval = 3;
  LossScaler s(o);
  ASSERT_TRUE(s.Update(true).ok());
  EXPECT_EQ(s.scale(), 512);
  ASSERT_TRUE(s.Update(false).ok());
  ASSERT_TRUE(s.Update(false).ok());
  EXPECT_EQ(s.scale(), 512);
  ASSERT_TRUE(s.Update(true).ok());  // an overflow restarts the count of clean steps
  EXPECT_EQ(s.scale(), 256);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(s.Update(false).ok());
  EXPECT_EQ(s.scale(), 256);
  ASSERT_TRUE(s.Update(false).ok());
  EXPECT_EQ(s.scale(), 512);
  EXPECT_EQ(s.skipped(), 2);
}

TEST(LossScalerTest, HysteresisToleratesOverflowsUntilGrowth) {
  LossScalerOptions o;
  o.init_scale = 1024;
  o.growth_interval = 2;
  o.hysteresis = 2;
  LossScaler s(o);
  ASSERT_TRUE(s.Update(true).ok());
  EXPECT_EQ(s.scale(), 1024);  // the first overflow is tolerated (but still skipped)
  ASSERT_TRUE(s.Update(true).ok());
  EXPECT_EQ(s.scale(), 512);
  ASSERT_TRUE(s.Update(true).ok());  // no growth since: every overflow backs off
  EXPECT_EQ(s.scale(), 256);
  ASSERT_TRUE(s.Update(false).ok());
  ASSERT_TRUE(s.Update(false).ok());
  EXPECT_EQ(s.scale(), 512);  // growth restores the tolerance
  ASSERT_TRUE(s.Update(true).ok());
  EXPECT_EQ(s.scale(), 512);
  EXPECT_EQ(s.skipped(), 4);
}

TEST(LossScalerTest, FailsBelowMinScaleAndLeavesItsState) {
  LossScalerOptions o;
  o.init_scale = 4;
  o.min_scale = 1;
  LossScaler s(o);
  ASSERT_TRUE(s.Update(true).ok());
  ASSERT_TRUE(s.Update(true).ok());
  EXPECT_EQ(s.scale(), 1);
  Status st = s.Update(true);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kFailed);
  EXPECT_NE(st.message().find("min_scale = 1"), std::string::npos) << st.message();
  EXPECT_EQ(s.scale(), 1);
  EXPECT_EQ(s.skipped(), 2);
}

TEST(LossScalerTest, StateRoundTripsAndBadStateIsCorrupt) {
  LossScalerOptions o;
  o.init_scale = 1024;
  o.growth_interval = 5;
  o.hysteresis = 3;
  LossScaler a(o);
  for (bool overflow : {true, false, false, true, true, true, false, false})
    ASSERT_TRUE(a.Update(overflow).ok());
  LossScaler b(o);
  ASSERT_TRUE(b.Restore(a.State()).ok());
  EXPECT_EQ(b.State(), a.State());
  for (bool overflow : {false, false, false, true}) {
    ASSERT_TRUE(a.Update(overflow).ok());
    ASSERT_TRUE(b.Update(overflow).ok());
    EXPECT_EQ(a.scale(), b.scale());
  }
  for (const char* bad : {R"(null)", R"({"scale": 8})",
                          R"({"scale": 0.5, "growth_tracker": 0, "hysteresis_tracker": 1,
                              "skipped": 0})",
                          R"({"scale": 8, "growth_tracker": 5, "hysteresis_tracker": 1,
                              "skipped": 0})"}) {
    Status st = b.Restore(nlohmann::json::parse(bad));
    EXPECT_EQ(st.code(), ErrorCode::kCorrupt) << bad;
  }
}

TEST(LossScalerTest, BadOptionsNameTheirKey) {
  auto message = [](auto change) {
    LossScalerOptions o;
    change(o);
    return o.Validate().message();
  };
  EXPECT_NE(message([](auto& o) { o.init_scale = 0; }).find("init_scale"), std::string::npos);
  EXPECT_NE(message([](auto& o) { o.growth_factor = 1; }).find("growth_factor"), std::string::npos);
  EXPECT_NE(message([](auto& o) { o.backoff_factor = 1; }).find("backoff_factor"),
            std::string::npos);
  EXPECT_NE(message([](auto& o) { o.growth_interval = 0; }).find("growth_interval"),
            std::string::npos);
  EXPECT_NE(message([](auto& o) { o.min_scale = 1e9; }).find("min_scale"), std::string::npos);
  EXPECT_NE(message([](auto& o) { o.hysteresis = 0; }).find("hysteresis"), std::string::npos);
}

// A run config written by hand: an integer past its field's type is refused, not wrapped
// (nlohmann's get<int> turns 4294967297 into 1 threads).
TEST(RunConfigTest, IntegersPastTheirTypeAreRefused) {
  nlohmann::json j = {
      {"mode", "pretrain"}, {"data", "d"}, {"out_dir", "o"}, {"model", {{"preset", "llama-tiny"}}}};
  ASSERT_TRUE(ParseRunConfig(j).ok());
  nlohmann::json threads = j;
  threads["threads"] = 4294967297LL;
  EXPECT_EQ(ParseRunConfig(threads).status().message(),
            "threads 4294967297 is out of range (at most 2147483647)");
  nlohmann::json huge = j;
  huge["lbs"] = 18446744073709551615ULL;  // past int64: get<int64_t> would read -1
  EXPECT_EQ(ParseRunConfig(huge).status().message(),
            "lbs 18446744073709551615 is out of range (at most 9223372036854775807)");
}

// AdamW's eps and the clipping norm below 0 are refused, naming the key, as torch.optim.AdamW
// refuses eps < 0 ("Invalid epsilon value"); a negative max_norm would turn clip_grad_norm_'s
// coefficient negative (the gradients' signs flipped). Both ran before, silently: eps < 0 in
// AdamW's denominator, grad_clip < 0 as "off".
TEST(RunConfigTest, NegativeEpsAndGradClipAreRefused) {
  nlohmann::json j = {
      {"mode", "pretrain"}, {"data", "d"}, {"out_dir", "o"}, {"model", {{"preset", "llama-tiny"}}}};
  for (const char* key : {"eps", "grad_clip"}) {
    nlohmann::json zero = j;
    zero[key] = 0.0;
    EXPECT_TRUE(ParseRunConfig(zero).ok()) << key;  // grad_clip 0: off, as documented
    nlohmann::json bad = j;
    bad[key] = -1e-3;
    Result<RunConfig> c = ParseRunConfig(bad);
    ASSERT_FALSE(c.ok()) << key;
    EXPECT_EQ(c.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(std::string(key) + " must be >= 0"), std::string::npos)
        << c.status().message();
  }
}

// The run config: "fp16" parses, is refused on the CPU with a message that says why, takes
// the scaler's keys, and puts them in the resume fingerprint (fp16 runs only).
TEST(LossScalerTest, RunConfigKeysAndFingerprint) {
  nlohmann::json j = {{"mode", "pretrain"}, {"data", "d"},
                      {"out_dir", "o"},     {"model", {{"preset", "llama-tiny"}}},
                      {"device", "cuda"},   {"precision", "fp16"},
                      {"init_scale", 1024}, {"growth_interval", 10},
                      {"hysteresis", 2}};
  Result<RunConfig> c = ParseRunConfig(j);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->precision, Precision::kFp16);
  EXPECT_EQ(c->loss_scaler.init_scale, 1024);
  EXPECT_EQ(c->loss_scaler.growth_interval, 10);
  EXPECT_EQ(c->loss_scaler.hysteresis, 2);
  ModelConfig m = *Preset("llama-tiny");
  const std::string fp16 = Fingerprint(*c, m);
  EXPECT_NE(fp16.find("\"growth_interval\":10"), std::string::npos) << fp16;
  RunConfig other = *c;
  other.loss_scaler.init_scale = 2048;
  EXPECT_NE(Fingerprint(other, m), fp16);
  RunConfig bf16 = *c;
  bf16.precision = Precision::kBf16;
  EXPECT_EQ(Fingerprint(bf16, m).find("loss_scaler"), std::string::npos);

  nlohmann::json bad = j;
  bad["growth_interval"] = 0;
  EXPECT_NE(ParseRunConfig(bad).status().message().find("growth_interval must be >= 1"),
            std::string::npos);
  nlohmann::json cpu = j;
  cpu["device"] = "cpu";
  Result<RunConfig> refused = ParseRunConfig(cpu);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(refused.status().message().find("precision 'fp16' on device cpu"), std::string::npos)
      << refused.status().message();
  nlohmann::json amp = j;
  amp["precision"] = "amp";
  EXPECT_EQ(ParseRunConfig(amp)->precision, Precision::kBf16);
  amp["precision"] = "fp8";
  EXPECT_NE(ParseRunConfig(amp).status().message().find("fp16"), std::string::npos);
}

}  // namespace
}  // namespace bm::train
