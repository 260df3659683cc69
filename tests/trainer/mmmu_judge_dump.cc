// Judges model responses with trainer/eval/ for tests/support/mmmu_examples_check.py,
// which compares the result with MMMU's own code on MMMU's published example outputs.
//   mmmu_judge_dump IN.jsonl     one {"id", "question_type", "options": [...],
//                                "answer": "..." or [...], "response"} a line, judged in
//                                file order with one generator seeded 42;
//                                prints one {"id", "pred", "correct"} a line.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "trainer/eval/mmmu_judge.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: mmmu_judge_dump IN.jsonl\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << argv[1] << ": cannot open\n";
    return 1;
  }
  bm::train::eval::MmmuJudge judge(42);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      std::cerr << argv[1] << ":" << n << ": not JSON\n";
      return 1;
    }
    bm::train::eval::MmmuQuestion q;
    q.id = j.at("id");
    q.multiple_choice = j.at("question_type") == "multiple-choice";
    q.options = j.at("options").get<std::vector<std::string>>();
    if (j.at("answer").is_string())
      q.answers = {j.at("answer").get<std::string>()};
    else
      q.answers = j.at("answer").get<std::vector<std::string>>();
    const auto r = judge.Judge(q, j.at("response").get<std::string>());
    std::cout << nlohmann::json{{"id", q.id}, {"pred", r.pred}, {"correct", r.correct}}.dump()
              << "\n";
  }
  return 0;
}
