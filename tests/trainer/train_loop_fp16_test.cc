// The training loop's fp16 loss scaling, on the CPU: a test backend wraps the fp32 CPU backend
// and reports overflowing gradients on chosen steps. Shows skipped steps (no AdamW update,
// AdamW's own step count held back), the scale halving and growing, the counts in log.jsonl
// and metrics.json, the failure below min_scale, a kill-and-resume that restores the scaler
// (bit-identical), and that without overflows the scaled run equals the fp32 run bit for bit
// (the scale is a power of two, and 1 / S is folded into clipping and AdamW exactly).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "tests/trainer/test_data.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/run/train_loop.h"

namespace bm::train {
namespace {

using testing::kEot;
using testing::kVocab;

struct OptimizerCall {
  int64_t loop_step, adam_step;
  float grad_scale;
};

// The CPU backend in fp32, presenting a non-finite gradient norm on the steps in `overflow`
// (counted from first_step: a resumed run starts after its checkpoint).
class OverflowBackend final : public Backend {
 public:
  OverflowBackend(std::set<int64_t> overflow, int64_t first_step, std::vector<OptimizerCall>* calls)
      : inner_(std::move(*CreateBackend("cpu"))),
        overflow_(std::move(overflow)),
        step_(first_step - 1),
        calls_(calls) {}

  std::string_view device() const override { return "cpu"; }
  std::string device_name() const override { return "fp16 test backend (cpu inside)"; }
  Status Init(const ModelConfig& model, const BackendOptions& options) override {
    BackendOptions fp32 = options;
    fp32.precision = Precision::kFp32;
    return inner_->Init(model, fp32);
  }
  Status SetParameters(std::span<const float> p) override { return inner_->SetParameters(p); }
  Status GetParameters(std::span<float> p) const override { return inner_->GetParameters(p); }
  Status SetParametersFrom(const ParamSource& s) override { return inner_->SetParametersFrom(s); }
  Status GetGradients(std::span<float> g) const override { return inner_->GetGradients(g); }
  Status GetParametersTo(const ParamSink& sink) const override {
    return inner_->GetParametersTo(sink);
  }
  Status GetOptimizerState(std::span<float> m, std::span<float> v) const override {
    return inner_->GetOptimizerState(m, v);
  }
  Status SetOptimizerState(std::span<const float> m, std::span<const float> v) override {
    return inner_->SetOptimizerState(m, v);
  }
  int64_t LocalStateSize() const override { return inner_->LocalStateSize(); }
  Status GetLocalState(std::span<float> p, std::span<float> m, std::span<float> v) const override {
    return inner_->GetLocalState(p, m, v);
  }
  Status SetLocalState(std::span<const float> p, std::span<const float> m,
                       std::span<const float> v) override {
    return inner_->SetLocalState(p, m, v);
  }
  Status ZeroGrad() override {
    ++step_;
    return inner_->ZeroGrad();
  }
  Result<LossSum> ForwardBackward(const MicroBatch& b, float loss_scale) override {
    return inner_->ForwardBackward(b, loss_scale);
  }
  Result<float> GradNorm() override {
    if (overflow_.count(step_)) return std::numeric_limits<float>::infinity();
    return inner_->GradNorm();
  }
  Status OptimizerStep(const AdamWStep& s) override {
    if (calls_) calls_->push_back({step_, s.step, s.grad_scale});
    return inner_->OptimizerStep(s);
  }
  Status TokenLosses(const MicroBatch& b, float* losses) override {
    return inner_->TokenLosses(b, losses);
  }
  Status NextTokenArgmax(const int32_t* in, int64_t B, int64_t T, int32_t* out) override {
    return inner_->NextTokenArgmax(in, B, T, out);
  }
  MemoryStats Memory() const override { return inner_->Memory(); }

 private:
  std::unique_ptr<Backend> inner_;
  std::set<int64_t> overflow_;
  int64_t step_;
  std::vector<OptimizerCall>* calls_;
};

class TrainLoopFp16Test : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = testing::TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    testing::WriteSplit(data_ + "/data", "train", testing::PatternDocs(40, 30, kVocab, kEot, 1));
    testing::WriteSplit(data_ + "/data", "valid", testing::PatternDocs(8, 30, kVocab, kEot, 2));
    testing::WriteStats(data_ + "/data", kVocab, kEot);
  }
  void TearDown() override { std::filesystem::remove_all(data_); }

  // An fp32 CPU config; Fp16() turns it into what the loop sees for precision = "fp16" (which
  // the CPU backend itself refuses: the test backend stands in for the GPU).
  RunConfig Config(const std::string& out) {
    nlohmann::json j =
        testing::TinyPretrainConfig(data_ + "/data", data_ + "/" + out, "llama-tiny");
    j["threads"] = 2;
    Result<RunConfig> c = ParseRunConfig(j);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return *c;
  }
  RunConfig Fp16(const std::string& out, double init_scale = 1024, int64_t growth_interval = 3) {
    RunConfig c = Config(out);
    c.precision = Precision::kFp16;
    c.loss_scaler.init_scale = init_scale;
    c.loss_scaler.growth_interval = growth_interval;
    return c;
  }
  static TrainHooks Overflows(std::set<int64_t> steps, std::vector<OptimizerCall>* calls = nullptr,
                              int64_t first_step = 1) {
    TrainHooks h;
    h.make_backend = [=]() -> Result<std::unique_ptr<Backend>> {
      return std::unique_ptr<Backend>(new OverflowBackend(steps, first_step, calls));
    };
    return h;
  }
  std::string data_;
};

TEST_F(TrainLoopFp16Test, SkipsOverflowsHalvesAndGrows) {
  RunConfig c = Fp16("out");
  std::vector<OptimizerCall> calls;
  Result<nlohmann::json> m = RunTraining(c, nullptr, Overflows({2, 3}, &calls));
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<nlohmann::json> log = testing::ReadLog(c.out_dir);
  ASSERT_EQ(log.size(), 12u);
  // 1 clean at 1024; 2, 3 overflow (1024 -> 512 -> 256); 4-6 clean, then x2; 7-9, then x2.
  const double want_scale[] = {1024, 1024, 512, 256, 256, 256, 512, 512, 512, 1024, 1024, 1024};
  for (size_t i = 0; i < log.size(); ++i) {
    const bool skipped = i == 1 || i == 2;
    EXPECT_EQ(log[i]["loss_scale"].get<double>(), want_scale[i]) << "step " << i + 1;
    EXPECT_EQ(log[i]["skipped"].get<bool>(), skipped) << "step " << i + 1;
    EXPECT_EQ(log[i]["grad_norm"].is_null(), skipped) << "step " << i + 1;
    EXPECT_TRUE(std::isfinite(log[i]["loss"].get<double>())) << "the forward loss is logged";
    EXPECT_GT(log[i]["lr"].get<double>(), 0) << "the lr schedule runs through skipped steps";
  }
  // AdamW ran on the ten clean steps, counting its own steps 1..10, unscaled by 1 / S.
  ASSERT_EQ(calls.size(), 10u);
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].adam_step, static_cast<int64_t>(i) + 1);
    EXPECT_EQ(calls[i].grad_scale, 1.0f / static_cast<float>(want_scale[calls[i].loop_step - 1]));
  }
  EXPECT_EQ(calls[1].loop_step, 4);
  EXPECT_EQ((*m)["skipped_steps"], 2);
  EXPECT_EQ((*m)["loss_scale"], 2048.0);  // after step 12 (10-12 clean)
  EXPECT_EQ((*m)["config"]["precision"], "fp16");
  EXPECT_EQ((*m)["config"]["loss_scaler"]["init_scale"], 1024.0);
  EXPECT_EQ((*m)["config"]["loss_scaler"]["growth_interval"], 3);
}

// No overflow: the same bits as fp32 (log and checkpoint), grad_norm unscaled.
TEST_F(TrainLoopFp16Test, WithoutOverflowEqualsFp32BitForBit) {
  RunConfig plain = Config("fp32");
  Result<nlohmann::json> m32 = RunTraining(plain, nullptr);
  ASSERT_TRUE(m32.ok()) << m32.status().message();
  RunConfig half = Fp16("fp16", 65536, 4);
  Result<nlohmann::json> m16 = RunTraining(half, nullptr, Overflows({}));
  ASSERT_TRUE(m16.ok()) << m16.status().message();
  std::vector<nlohmann::json> a = testing::ReadLog(plain.out_dir),
                              b = testing::ReadLog(half.out_dir);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]["loss"], b[i]["loss"]) << "step " << i + 1;
    EXPECT_EQ(a[i]["grad_norm"], b[i]["grad_norm"]) << "step " << i + 1;
    EXPECT_TRUE(a[i]["loss_scale"].is_null());
    EXPECT_FALSE(a[i]["skipped"].get<bool>());
  }
  EXPECT_EQ(*ReadFileBytes(plain.out_dir + "/model.safetensors"),
            *ReadFileBytes(half.out_dir + "/model.safetensors"));
  EXPECT_EQ((*m32)["skipped_steps"], 0);
  EXPECT_TRUE((*m32)["loss_scale"].is_null());
  EXPECT_TRUE((*m32)["config"]["loss_scaler"].is_null());
  EXPECT_EQ((*m16)["loss_scale"], 65536.0 * 8);  // grew after steps 4, 8 and 12
}

// Killed after step 8 with a checkpoint at step 5 (scale 256, two clean steps counted toward
// growth, two skipped): the resumed run must continue the scaler and AdamW's step count.
TEST_F(TrainLoopFp16Test, KillAndResumeRestoresTheScaler) {
  const std::set<int64_t> overflow = {2, 3, 9};
  RunConfig full = Fp16("full");
  ASSERT_TRUE(RunTraining(full, nullptr, Overflows(overflow)).ok());
  RunConfig part = Fp16("part");
  part.resume_dir = data_ + "/resume";
  part.checkpoint_every = 5;
  TrainHooks kill = Overflows(overflow);
  kill.after_step = [](int64_t step) { return step < 8; };
  EXPECT_FALSE(RunTraining(part, nullptr, kill).ok());
  Result<nlohmann::json> resumed = RunTraining(part, nullptr, Overflows(overflow, nullptr, 6));
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  EXPECT_EQ((*resumed)["provenance"]["resumed_from_step"], 5);
  std::vector<nlohmann::json> a = testing::ReadLog(full.out_dir),
                              b = testing::ReadLog(part.out_dir);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    for (const char* key : {"loss", "grad_norm", "loss_scale", "skipped", "lr"})
      EXPECT_EQ(a[i][key], b[i][key]) << key << " at step " << i + 1;
  }
  EXPECT_EQ(*ReadFileBytes(full.out_dir + "/model.safetensors"),
            *ReadFileBytes(part.out_dir + "/model.safetensors"));
  EXPECT_EQ((*resumed)["skipped_steps"], 3);
  // Other scaler settings are another run: no resume from this checkpoint.
  RunConfig other = part;
  other.loss_scaler.growth_interval = 4;
  Result<nlohmann::json> fresh = RunTraining(other, nullptr, Overflows(overflow));
  ASSERT_TRUE(fresh.ok()) << fresh.status().message();
  EXPECT_TRUE((*fresh)["provenance"]["resumed_from_step"].is_null());
}

TEST_F(TrainLoopFp16Test, FailsWhenTheScaleWouldFallBelowMinScale) {
  RunConfig c = Fp16("nan", 4);
  Result<nlohmann::json> m = RunTraining(c, nullptr, Overflows({1, 2, 3, 4, 5}));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kFailed);
  EXPECT_NE(m.status().message().find("diverged at step 3 (fp16)"), std::string::npos)
      << m.status().message();
  EXPECT_NE(m.status().message().find("min_scale = 1"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(c.out_dir + "/metrics.json"));
}

}  // namespace
}  // namespace bm::train
