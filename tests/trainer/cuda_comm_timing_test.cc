// CommTiming (trainer/cuda/comm_timing.h) on two streams of the GPU, with delays of known length
// put on the communication stream by host functions that sleep: the reduction's queue, its
// length, its end after the backward and the compute stream's wait come out as the sleeps laid
// them out (a hand count, within what launching and waking add); marks out of order are refused.
// Skips without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/trainer/cuda_test_util.h"
#include "trainer/cuda/comm_timing.h"

namespace bm::train::cuda {
namespace {

void CUDART_CB SleepMs(void* ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(reinterpret_cast<intptr_t>(ms)));
}

void Sleep(cudaStream_t s, int ms) {
  ASSERT_EQ(cudaLaunchHostFunc(s, SleepMs, reinterpret_cast<void*>(static_cast<intptr_t>(ms))),
            cudaSuccess);
}

class CommTimingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    BM_SKIP_WITHOUT_GPU();
    ASSERT_EQ(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&comm_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), cudaSuccess);
  }
  void TearDown() override {
    if (done_) cudaEventDestroy(done_);
    if (comm_) cudaStreamDestroy(comm_);
    if (compute_) cudaStreamDestroy(compute_);
  }
  // One step's last reduction: unit `unit` ready at once, queued behind 20 ms of earlier
  // communication, 30 ms long; the backward ends at once, then waits for the communication.
  void Step(CommTiming& t, int unit) {
    Sleep(comm_, 20);
    ASSERT_TRUE(t.ReductionReady(unit, compute_).ok());
    ASSERT_TRUE(t.ReductionBegins(comm_).ok());
    Sleep(comm_, 30);
    ASSERT_TRUE(t.ReductionEnds(comm_).ok());
    ASSERT_TRUE(t.BackwardEnds(compute_).ok());
    ASSERT_EQ(cudaEventRecord(done_, comm_), cudaSuccess);
    ASSERT_TRUE(t.Wait(compute_, done_, "end of micro-batch").ok());
    ASSERT_EQ(cudaStreamSynchronize(compute_), cudaSuccess);
    ASSERT_TRUE(t.Collect().ok());
  }
  cudaStream_t compute_ = nullptr, comm_ = nullptr;
  cudaEvent_t done_ = nullptr;
};

TEST_F(CommTimingTest, TheReductionsQueueLengthAndTailComeFromTheStreams) {
  CommTiming t;
  Step(t, 5);
  Step(t, 5);  // the pool's events again, summed
  const CommTiming::Reduction& r = t.reductions().at(5);
  EXPECT_EQ(r.steps, 2);
  // 20 ms queued, 30 long, ending 50 ms after the backward (which ended at once): per step.
  EXPECT_NEAR(r.queued_ms / 2, 20, 5);
  EXPECT_NEAR(r.reduce_ms / 2, 30, 5);
  EXPECT_NEAR(r.after_backward_ms / 2, 50, 8);
  EXPECT_NEAR(t.wait_ms() / 2, 50, 8);
  EXPECT_NEAR(t.wait_ms_by_site().at("end of micro-batch") / 2, 50, 8);
  // Nothing recorded: nothing added.
  ASSERT_TRUE(t.Collect().ok());
  EXPECT_EQ(t.reductions().at(5).steps, 2);
}

TEST_F(CommTimingTest, ReductionsWithoutABackwardEndAreNotCounted) {
  CommTiming t;
  ASSERT_TRUE(t.ReductionReady(1, compute_).ok());
  ASSERT_TRUE(t.ReductionBegins(comm_).ok());
  ASSERT_TRUE(t.ReductionEnds(comm_).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_TRUE(t.Collect().ok());  // (a micro-batch that was not the step's last)
  EXPECT_TRUE(t.reductions().empty());
}

TEST_F(CommTimingTest, MarksOutOfOrderAreRefused) {
  CommTiming t;
  Status s = t.ReductionBegins(comm_);
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  EXPECT_NE(s.message().find("before its ready mark"), std::string::npos) << s.message();
  ASSERT_TRUE(t.ReductionReady(2, compute_).ok());
  s = t.ReductionEnds(comm_);
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  EXPECT_NE(s.message().find("ends before it began"), std::string::npos) << s.message();
  ASSERT_TRUE(t.ReductionBegins(comm_).ok());
  EXPECT_FALSE(t.ReductionBegins(comm_).ok());  // begun twice
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
}  // namespace bm::train::cuda
