#include "trainer/eval/mmmu_judge.h"

#include <algorithm>

namespace bm::train::eval {

MmmuJudgement MmmuJudge::Judge(const MmmuQuestion& q, std::string_view response) {
  if (q.multiple_choice) {
    std::string letter = ParseMultiChoice(response, q.options, rng_);
    const bool correct = EvalMultiChoice(q.answers, letter);
    return {letter, correct};
  }
  const std::vector<OpenPred> preds = ParseOpen(response);
  std::vector<double> numbers;
  std::vector<std::string> strings;
  for (const OpenPred& p : preds) {
    if (p.is_number)
      numbers.push_back(p.number);
    else
      strings.push_back(p.text);
  }
  std::sort(numbers.begin(), numbers.end());
  std::sort(strings.begin(), strings.end());
  return {nlohmann::json{{"numbers", numbers}, {"strings", strings}}, EvalOpen(q.answers, preds)};
}

std::vector<size_t> MmmuOrder(const std::vector<MmmuQuestion>& questions) {
  const std::vector<std::string>& subjects = MmmuSubjects();
  auto rank = [&](const std::string& s) {
    return std::find(subjects.begin(), subjects.end(), s) - subjects.begin();
  };
  std::vector<size_t> order(questions.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return rank(questions[a].subject) < rank(questions[b].subject);
  });
  return order;
}

}  // namespace bm::train::eval
