// Whether a line is one that only a given format prints: what `auto`
// (rules/logparse/detect.cc) recognises a log by. Each is defined in its
// format's file, beside the parser that reads the line.
//
// Thread safety: pure functions.
#pragma once

#include <string_view>

namespace bm::logparse {

bool IsFlagPerfSummaryLine(std::string_view line);  // "Tokens/p/s:  1234.5"
bool IsFlagPerfEventLine(std::string_view line);    // "[PerfLog] {\"event\": ...}"
bool IsMllogEventLine(std::string_view line);       // ":::MLLOG {"
bool IsMegatronIterationLine(std::string_view line);
// "Training epoch 0, iteration 45/99 | ... | global_step: 45 | ..." (NeMo 2)
bool IsNemoProgressLine(std::string_view line);
// "Epoch 0: ... 50/50 [..., reduced_train_loss=11.70, global_step=49.00, ...]" (NeMo 1's bar)
bool IsNemoBarLine(std::string_view line);
bool IsPaddleStepLine(std::string_view line);
// engine step=, ThroughputTimer, breakdown, fp16 overflow lines
bool IsDeepSpeedLine(std::string_view line);
bool IsTrainerDictLine(std::string_view line);  // a loss or closing dict
// "step 9 | epoch 0 | loss 0.6974 | grad_norm ... | mem 24.90 GiB | tps ..." (NeMo Automodel)
bool IsNemoAutomodelLine(std::string_view line);
// "step:  2  loss:  7.7082  grad_norm: ...  memory: ...  tps: 301,092  ..." (torchtitan), or a
// step line without the rate after torchtitan's `[titan]` or ezpz's `components/metrics:` prefix
bool IsTorchtitanStepLine(std::string_view line);
// "iteration: 992 / 1000 | consumed_tokens: 635K | ..." (Nanotron)
bool IsNanotronIterationLine(std::string_view line);
// "Epoch 4 | iter 961 step 961 | loss train: 1.062, ... | iter time: 529.46 ms (step)", "iter 1760
// | step 220: loss 1.5947, iter time: ...", "iter 0 step 1: loss 10.91, iter time: ..." (LitGPT)
bool IsLitgptLine(std::string_view line);
// "Step 1 | loss:2.0853 lr:2e-05 tokens_per_second_per_gpu:57.83" (torchtune's metric loggers)
bool IsTorchtuneStepLine(std::string_view line);
// "1|26|Loss: 1.2436443567276:  27%|██▋       | 27/101 [07:00<17:31, 14.21s/it]" (torchtune's bar)
bool IsTorchtuneBarLine(std::string_view line);
// "completed step: 9, seconds: 5.667, TFLOP/s/device: 134.924, ..." (MaxText)
bool IsMaxtextStepLine(std::string_view line);

}  // namespace bm::logparse
