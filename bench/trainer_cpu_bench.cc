// The CPU backend's achieved FLOP/s against OpenBLAS's sgemm rate, measured in
// the same run (docs/PERFORMANCE.md, "Trainer (CPU)").
//
//   trainer_cpu_bench [--threads N] [--steps S]
//
// For each model (the default pipeline's llama-small with its byte vocabulary
// of 257 and with GPT-2's 50,257, and gpt2-124m) it times S training steps (forward, backward,
// AdamW) after one warm-up step at a small batch, converts tokens/s to FLOP/s
// with the PaLM count (6N + 12·L·H·Q·T), and prints the ratio to the sgemm rate
// of a square 1024³ product and of the model's own largest product (the
// classifier), both measured here.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "trainer/backend.h"
#include "trainer/cpu/blas_core.h"
#include "trainer/model/layout.h"
#include "trainer/process_env.h"

namespace {

using Clock = std::chrono::steady_clock;
using bm::train::ModelConfig;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Median FLOP/s of C[M,N] = A[M,K] B[N,K]^T over `reps` runs.
double SgemmRate(int M, int N, int K, int reps) {
  std::vector<float> a(static_cast<size_t>(M) * K, 0.5f), b(static_cast<size_t>(N) * K, 0.25f),
      c(static_cast<size_t>(M) * N);
  std::vector<double> rates;
  for (int r = 0; r < reps + 1; ++r) {
    auto t0 = Clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a.data(), K, b.data(), K,
                0.0f, c.data(), N);
    auto t1 = Clock::now();
    if (r > 0) rates.push_back(2.0 * M * N * K / Seconds(t0, t1));
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

struct Result {
  double tokens_per_s, flops;
};

Result TimeTraining(const ModelConfig& model, int64_t B, int64_t T, int steps, int threads) {
  auto backend = std::move(*bm::train::CreateBackend("cpu"));
  bm::train::BackendOptions o;
  o.max_batch = B;
  o.max_seq = T;
  o.threads = threads;
  if (!backend->Init(model, o).ok()) std::abort();
  bm::train::ParamLayout layout(model);
  if (!backend->SetParameters(bm::train::InitParameters(model, layout, 1)).ok()) std::abort();
  std::vector<int32_t> tokens(B * T), targets(B * T);
  for (int64_t i = 0; i < B * T; ++i) {
    tokens[i] = static_cast<int32_t>((i * 7919) % model.vocab);
    targets[i] = static_cast<int32_t>((i * 104729 + 1) % model.vocab);
  }
  bm::train::AdamWStep adam;
  adam.lr = 1e-4f;
  double total = 0;
  for (int s = 0; s <= steps; ++s) {
    auto t0 = Clock::now();
    if (!backend->ZeroGrad().ok()) std::abort();
    auto l =
        backend->ForwardBackward({tokens.data(), targets.data(), nullptr, B, T}, 1.0f / (B * T));
    if (!l.ok()) std::abort();
    adam.step = s + 1;
    if (!backend->OptimizerStep(adam).ok()) std::abort();
    if (s > 0) total += Seconds(t0, Clock::now());  // step 0 is warm-up
  }
  const double tps = static_cast<double>(B * T * steps) / total;
  return {tps, tps * bm::train::TrainingFlopsPerToken(model, T).palm};
}

}  // namespace

int main(int argc, char** argv) {
  bm::train::EnsureProcessEnvironment(argv);
  int threads = 0, steps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
  }
  if (threads > 0) openblas_set_num_threads(threads);
  const double square = SgemmRate(1024, 1024, 1024, 5);
  const bm::train::cpu::BlasInfo blas = bm::train::cpu::CurrentBlas();
  std::printf("OpenBLAS %s, core %s (chosen by %s%s%s)\n", blas.version.c_str(), blas.core.c_str(),
              blas.chosen_by.c_str(), blas.detected_core.empty() ? "" : "; it detected ",
              blas.detected_core.c_str());
  std::printf("OpenBLAS sgemm 1024^3: %.1f GFLOP/s (%d threads)\n", square / 1e9,
              openblas_get_num_threads());
  struct Case {
    const char* preset;
    int64_t vocab;  // 0: the preset's
    int64_t B, T;
  };
  // The default pipeline's model (byte vocabulary), the same with GPT-2's, and gpt2-124m.
  for (Case c : {Case{"llama-small", 257, 8, 256}, Case{"llama-small", 0, 8, 256},
                 Case{"gpt2-124m", 0, 1, 256}}) {
    ModelConfig m = *bm::train::Preset(c.preset);
    if (c.vocab > 0) m.vocab = c.vocab;
    const double head = SgemmRate(static_cast<int>(std::min<int64_t>(128, c.B * c.T)),
                                  static_cast<int>(m.vocab), static_cast<int>(m.hidden), 3);
    Result r = TimeTraining(m, c.B, c.T, steps, threads);
    std::printf(
        "%-12s V=%-6lld B=%lld T=%lld: %.0f tokens/s, %.1f GFLOP/s (PaLM count); ratio to sgemm "
        "1024^3 "
        "%.2f, to sgemm of its classifier shape (%.1f GFLOP/s) %.2f\n",
        c.preset, static_cast<long long>(m.vocab), static_cast<long long>(c.B),
        static_cast<long long>(c.T), r.tokens_per_s, r.flops / 1e9, r.flops / square, head / 1e9,
        r.flops / head);
  }
  return 0;
}
