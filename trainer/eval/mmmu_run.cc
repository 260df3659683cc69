#include "trainer/eval/mmmu_run.h"

#include "trainer/eval/mmmu_judge.h"
#include "trainer/eval/mmmu_prompt.h"
#include "trainer/eval/mmmu_score.h"

namespace bm::train::eval {

Result<MmmuRun> RunMmmu(const std::vector<MmmuQuestion>& questions, const MmmuRespond& respond,
                        uint32_t seed) {
  MmmuJudge judge(seed);
  MmmuRun run;
  run.predictions = nlohmann::json::object();
  run.responses = nlohmann::json::object();
  std::vector<Judged> judged;
  for (size_t i : MmmuOrder(questions)) {
    const MmmuQuestion& q = questions[i];
    Result<std::string> response = respond(q, LlavaMmmuPrompt(q));
    if (!response.ok()) return response.status().WithContext("MMMU question " + q.id);
    const MmmuJudgement j = judge.Judge(q, *response);
    run.predictions[q.id] = q.multiple_choice ? j.pred : nlohmann::json(*response);
    run.responses[q.id] = *response;
    judged.push_back({q.subject, j.correct});
  }
  run.eval = MmmuEvalFields(MmmuAccuracy(judged), seed);
  return run;
}

}  // namespace bm::train::eval
