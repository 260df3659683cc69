#include "trainer/run/evaluate.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "trainer/backend.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/data/batch.h"
#include "trainer/platform.h"
#include "trainer/rng.h"
#include "trainer/run/llava_mmmu.h"
#include "trainer/run/llava_train_loop.h"
#include "trainer/run/metrics.h"
#include "trainer/run/model_setup.h"

namespace bm::train {
namespace {

struct Example {
  std::vector<int32_t> prompt, answer;
};

// Mean loss of the tokens after each row's prompt.
struct Row {
  std::vector<int32_t> tokens;
  int64_t prompt_len = 0;
};

Result<std::vector<Example>> ReadExamples(const TokenData& data, int64_t max_examples,
                                          int64_t mpe) {
  std::vector<Example> examples;
  for (int64_t i = 0;
       i < data.num_sequences() && static_cast<int64_t>(examples.size()) < max_examples; ++i) {
    const int64_t n = data.sequence_size(i);
    std::vector<int32_t> tokens(n);
    std::vector<uint8_t> mask(n);
    BM_TRY(data.Read(data.sequence_start(i), n, tokens.data(), mask.data()));
    int64_t p = 0;
    while (p < n && mask[p] == 0) ++p;
    if (p == 0 || p == n || n > mpe) continue;  // no prompt, no answer, or too long
    examples.push_back({{tokens.begin(), tokens.begin() + p}, {tokens.begin() + p, tokens.end()}});
  }
  return examples;
}

// Scores rows in batches of B: mean token loss over each row's answer part.
Result<std::vector<double>> ScoreRows(Backend& backend, const std::vector<Row>& rows, int64_t B) {
  std::vector<double> scores(rows.size());
  for (size_t start = 0; start < rows.size(); start += B) {
    const int64_t n = std::min<int64_t>(B, rows.size() - start);
    int64_t T = 1;
    for (int64_t b = 0; b < n; ++b) T = std::max<int64_t>(T, rows[start + b].tokens.size() - 1);
    std::vector<int32_t> inputs(n * T, 0), targets(n * T, 0);
    for (int64_t b = 0; b < n; ++b) {
      const auto& t = rows[start + b].tokens;
      for (size_t i = 0; i + 1 < t.size(); ++i) {
        inputs[b * T + i] = t[i];
        targets[b * T + i] = t[i + 1];
      }
    }
    std::vector<float> losses(n * T);
    BM_TRY(backend.TokenLosses({inputs.data(), targets.data(), nullptr, n, T}, losses.data()));
    for (int64_t b = 0; b < n; ++b) {
      const Row& r = rows[start + b];
      double sum = 0;
      const int64_t len = static_cast<int64_t>(r.tokens.size());
      for (int64_t i = r.prompt_len - 1; i < len - 1; ++i) sum += losses[b * T + i];
      scores[start + b] = sum / static_cast<double>(len - r.prompt_len);
    }
  }
  return scores;
}

Result<nlohmann::json> MultipleChoice(Backend& backend, const std::vector<Example>& ex,
                                      const RunConfig& run) {
  const int64_t K = std::min<int64_t>(run.eval_choices, ex.size());
  if (K < 2) return nlohmann::json(nullptr);
  std::vector<Row> rows;
  std::vector<int64_t> truth;  // per scored example: the true answer's position
  for (size_t i = 0; i < ex.size(); ++i) {
    std::vector<size_t> cands = {i};
    for (uint64_t draw = 0; static_cast<int64_t>(cands.size()) < K && draw < 1000; ++draw) {
      size_t j = UniformIntAt(run.seed, kStreamEval, i * 1000 + draw, ex.size());
      if (std::find(cands.begin(), cands.end(), j) != cands.end()) continue;
      if (ex[i].prompt.size() + ex[j].answer.size() > static_cast<size_t>(run.mpe) + 1) continue;
      if (ex[j].answer == ex[i].answer) continue;
      cands.push_back(j);
    }
    if (static_cast<int64_t>(cands.size()) < K) continue;  // too few distinct candidates fit
    // the true answer at a random position
    const size_t pos = UniformIntAt(run.seed, kStreamEval, (1ull << 40) + i, cands.size());
    std::swap(cands[0], cands[pos]);
    truth.push_back(static_cast<int64_t>(pos));
    for (size_t j : cands) {
      Row r;
      r.tokens = ex[i].prompt;
      r.tokens.insert(r.tokens.end(), ex[j].answer.begin(), ex[j].answer.end());
      r.prompt_len = static_cast<int64_t>(ex[i].prompt.size());
      rows.push_back(std::move(r));
    }
  }
  BM_ASSIGN_OR_RETURN(std::vector<double> scores, ScoreRows(backend, rows, run.lbs));
  int64_t correct = 0;
  const size_t scored = truth.size();
  if (scored == 0) return nlohmann::json(nullptr);
  for (size_t i = 0; i < scored; ++i) {
    int64_t best = 0;
    for (int64_t k = 1; k < K; ++k)
      if (scores[i * K + k] < scores[i * K + best]) best = k;
    correct += best == truth[i];
  }
  return nlohmann::json{{"accuracy", static_cast<double>(correct) / scored},
                        {"examples", scored},
                        {"choices", K},
                        {"chance", 1.0 / K}};
}

Result<nlohmann::json> ExactMatch(Backend& backend, const std::vector<Example>& all, int64_t B,
                                  int64_t max_answer) {
  // Greedy decoding reruns the whole prefix per token (no KV cache): only
  // answers of at most max_answer tokens are decoded.
  std::vector<Example> ex;
  for (const Example& e : all)
    if (static_cast<int64_t>(e.answer.size()) <= max_answer) ex.push_back(e);
  int64_t correct = 0;
  for (size_t start = 0; start < ex.size(); start += B) {
    const int64_t n = std::min<int64_t>(B, ex.size() - start);
    int64_t T = 1, steps = 0;
    for (int64_t b = 0; b < n; ++b) {
      const Example& e = ex[start + b];
      T = std::max<int64_t>(T, e.prompt.size() + e.answer.size());
      steps = std::max<int64_t>(steps, e.answer.size());
    }
    std::vector<int32_t> inputs(n * T, 0);
    std::vector<int64_t> lengths(n);
    std::vector<bool> ok(n, true);
    for (int64_t b = 0; b < n; ++b) {
      const Example& e = ex[start + b];
      std::copy(e.prompt.begin(), e.prompt.end(), inputs.begin() + b * T);
      lengths[b] = static_cast<int64_t>(e.prompt.size());
    }
    std::vector<int32_t> next(n);
    for (int64_t k = 0; k < steps && std::find(ok.begin(), ok.end(), true) != ok.end(); ++k) {
      BM_TRY(backend.LastTokenArgmax(inputs.data(), lengths.data(), n, T, next.data()));
      for (int64_t b = 0; b < n; ++b) {
        const Example& e = ex[start + b];
        if (k >= static_cast<int64_t>(e.answer.size())) continue;
        if (next[b] != e.answer[k]) ok[b] = false;
        if (lengths[b] < T) inputs[b * T + lengths[b]++] = next[b];
      }
    }
    for (int64_t b = 0; b < n; ++b) correct += ok[b];
  }
  return nlohmann::json{
      {"exact_match", ex.empty() ? 0.0 : static_cast<double>(correct) / ex.size()},
      {"exact_match_examples", ex.size()}};
}

}  // namespace

Result<nlohmann::json> RunEvaluation(const RunConfig& run, std::ostream* progress) {
  // MMMU data: a LLaVA checkpoint decodes (llava_mmmu.h, which refuses any other model).
  if (IsMmmuData(run.data_dir)) return RunLlavaMmmu(run, progress);
  if (IsLlavaRun(run))
    return Errorf(ErrorCode::kInvalidArgument,
                  "the checkpoint '{}' is a LLaVA model: evaluate runs it on MMMU data (an "
                  "mmmu_data target), and {} is not",
                  run.init, run.data_dir);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string started_at = UtcNow();
  BM_ASSIGN_OR_RETURN(nlohmann::json stats, ReadDataStats(run.data_dir));
  BM_ASSIGN_OR_RETURN(TokenData data, TokenData::Open(run.data_dir, "valid"));
  BM_ASSIGN_OR_RETURN(ModelSetup setup, SetUpModel(run, stats));
  data.LimitIds(setup.model.vocab);
  BM_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend(run.device));
  BackendOptions options;
  options.max_batch = run.lbs;
  options.max_seq = run.mpe;
  options.precision = run.precision;
  options.threads = run.threads;
  BM_TRY(backend->Init(setup.model, options));
  if (!setup.loaded)
    return Status(ErrorCode::kInvalidArgument, "evaluate needs an init checkpoint (init = ...)");
  BM_TRY(backend->SetParametersFrom(setup.loaded));

  // validation loss over consecutive windows
  int64_t windows = NumEvalWindows(data, run.mpe);
  if (run.eval_tokens > 0)
    windows = std::min(windows, std::max<int64_t>(1, run.eval_tokens / run.mpe));
  if (windows < 1)
    return Errorf(ErrorCode::kInvalidArgument,
                  "the valid split has {} tokens, fewer than mpe + 1 = {}", data.num_tokens(),
                  run.mpe + 1);
  double sum = 0;
  int64_t count = 0;
  Batch batch;
  std::vector<float> losses(run.lbs * run.mpe);
  for (int64_t w = 0; w < windows; w += run.lbs) {
    const int64_t n = std::min(run.lbs, windows - w);
    BM_TRY(ReadEvalWindows(data, w, n, run.mpe, &batch));
    BM_TRY(backend->TokenLosses(batch.View(), losses.data()));
    for (int64_t i = 0; i < n * run.mpe; ++i) {
      if (!batch.mask.empty() && !batch.mask[i]) continue;
      sum += losses[i];
      ++count;
    }
  }
  const double val_loss = count > 0 ? sum / count : 0.0;
  if (progress)
    *progress << fmt::format("validation loss {:.4f} over {} tokens\n", val_loss, count);
  nlohmann::json eval = {{"val_loss", val_loss},
                         {"perplexity", std::exp(val_loss)},
                         {"tokens", count},
                         {"masked", data.has_mask()},
                         {"task", nullptr},
                         {"accuracy", nullptr},
                         {"examples", 0},
                         {"choices", nullptr},
                         {"chance", nullptr},
                         {"exact_match", nullptr},
                         {"exact_match_examples", 0}};
  if (data.has_mask()) {
    BM_ASSIGN_OR_RETURN(std::vector<Example> examples,
                        ReadExamples(data, run.eval_examples, run.mpe));
    if (!examples.empty()) {
      eval["task"] = "instruction";
      BM_ASSIGN_OR_RETURN(nlohmann::json mc, MultipleChoice(*backend, examples, run));
      if (!mc.is_null()) eval.update(mc);
      BM_ASSIGN_OR_RETURN(nlohmann::json em,
                          ExactMatch(*backend, examples, run.lbs, run.eval_max_answer));
      eval.update(em);
      if (progress)
        *progress << fmt::format("multiple choice {} / exact match {} on {} examples\n",
                                 eval["accuracy"].dump(), eval["exact_match"].dump(),
                                 examples.size());
    }
  }
  TrainSummary summary;
  summary.model = setup.model;
  summary.run = run;
  summary.memory = backend->Memory();
  summary.device_name = backend->device_name();
  summary.started_at = started_at;
  summary.platform = ProbePlatform(/*gpu_libraries=*/run.device != "cpu");
  summary.eval = eval;
  summary.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json metrics = BuildMetrics(summary);
  std::filesystem::create_directories(run.out_dir);
  BM_TRY(WriteFileAtomically(run.out_dir + "/metrics.json", metrics.dump(2) + "\n"));
  return metrics;
}

}  // namespace bm::train
