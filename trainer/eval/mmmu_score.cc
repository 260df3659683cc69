#include "trainer/eval/mmmu_score.h"

#include <map>
#include <utility>

namespace bm::train::eval {
namespace {

// DOMAIN_CAT2SUB_CAT.
const std::vector<std::pair<std::string, std::vector<std::string>>>& Domains() {
  static const auto* d = new std::vector<std::pair<std::string, std::vector<std::string>>>{
      {"Art and Design", {"Art", "Art_Theory", "Design", "Music"}},
      {"Business", {"Accounting", "Economics", "Finance", "Manage", "Marketing"}},
      {"Science", {"Biology", "Chemistry", "Geography", "Math", "Physics"}},
      {"Health and Medicine",
       {"Basic_Medical_Science", "Clinical_Medicine", "Diagnostics_and_Laboratory_Medicine",
        "Pharmacy", "Public_Health"}},
      {"Humanities and Social Science", {"History", "Literature", "Sociology", "Psychology"}},
      {"Tech and Engineering",
       {"Agriculture", "Architecture_and_Engineering", "Computer_Science", "Electronics",
        "Energy_and_Power", "Materials", "Mechanical_Engineering"}},
  };
  return *d;
}

nlohmann::json Entry(int64_t questions, int64_t correct) {
  return {{"accuracy", questions ? static_cast<double>(correct) / questions : 0.0},
          {"questions", questions},
          {"correct", correct}};
}

}  // namespace

const std::vector<std::string>& MmmuSubjects() {
  // CAT_SHORT2LONG's values, in its order.
  static const auto* s = new std::vector<std::string>{"Accounting",
                                                      "Agriculture",
                                                      "Architecture_and_Engineering",
                                                      "Art",
                                                      "Art_Theory",
                                                      "Basic_Medical_Science",
                                                      "Biology",
                                                      "Chemistry",
                                                      "Clinical_Medicine",
                                                      "Computer_Science",
                                                      "Design",
                                                      "Diagnostics_and_Laboratory_Medicine",
                                                      "Economics",
                                                      "Electronics",
                                                      "Energy_and_Power",
                                                      "Finance",
                                                      "Geography",
                                                      "History",
                                                      "Literature",
                                                      "Manage",
                                                      "Marketing",
                                                      "Materials",
                                                      "Math",
                                                      "Mechanical_Engineering",
                                                      "Music",
                                                      "Pharmacy",
                                                      "Physics",
                                                      "Psychology",
                                                      "Public_Health",
                                                      "Sociology"};
  return *s;
}

std::string_view MmmuCategory(std::string_view subject) {
  for (const auto& [domain, subjects] : Domains())
    for (const std::string& s : subjects)
      if (s == subject) return domain;
  return {};
}

std::string MmmuSubjectOfId(std::string_view id) {
  const size_t first = id.find('_');
  const size_t last = id.rfind('_');
  if (first == std::string_view::npos || last <= first) return {};
  return std::string(id.substr(first + 1, last - first - 1));
}

bool EvalMultiChoice(const std::vector<std::string>& gold, std::string_view pred) {
  for (const std::string& g : gold)
    if (g == pred) return true;
  return false;
}

bool EvalOpen(const std::vector<std::string>& gold, const std::vector<OpenPred>& pred) {
  std::vector<OpenPred> norm;
  for (const std::string& g : gold)
    for (OpenPred& n : NormalizeStr(g)) norm.push_back(std::move(n));
  for (const OpenPred& p : pred)
    for (const OpenPred& n : norm) {
      if (p.is_number != n.is_number) continue;
      if (p.is_number ? p.number == n.number : p.text.find(n.text) != std::string::npos)
        return true;
    }
  return false;
}

nlohmann::json MmmuAccuracy(const std::vector<Judged>& judged) {
  std::map<std::string, std::pair<int64_t, int64_t>> per;  // subject -> (questions, correct)
  int64_t total = 0, correct = 0;
  for (const Judged& j : judged) {
    auto& [q, c] = per[j.subject];
    ++q;
    c += j.correct;
    ++total;
    correct += j.correct;
  }
  nlohmann::json by_subject = nlohmann::json::object(), by_category = nlohmann::json::object();
  for (const std::string& s : MmmuSubjects())
    if (auto it = per.find(s); it != per.end())
      by_subject[s] = Entry(it->second.first, it->second.second);
  for (const auto& [subject, qc] : per)  // subjects MMMU does not list, kept visible
    if (MmmuCategory(subject).empty()) by_subject[subject] = Entry(qc.first, qc.second);
  for (const auto& [domain, subjects] : Domains()) {
    int64_t q = 0, c = 0;
    for (const std::string& s : subjects)
      if (auto it = per.find(s); it != per.end()) {
        q += it->second.first;
        c += it->second.second;
      }
    if (q) by_category[domain] = Entry(q, c);
  }
  nlohmann::json out = Entry(total, correct);
  out["by_subject"] = std::move(by_subject);
  out["by_category"] = std::move(by_category);
  return out;
}

nlohmann::json MmmuEvalFields(const nlohmann::json& accuracy, uint32_t seed) {
  nlohmann::json mmmu = accuracy;
  mmmu["reference"] = std::string("MMMU-Benchmark/MMMU@") + kMmmuCommit;
  mmmu["seed"] = seed;
  return {{"task", "mmmu"},
          {"accuracy", accuracy.at("accuracy")},
          {"examples", accuracy.at("questions")},
          {"mmmu", std::move(mmmu)}};
}

}  // namespace bm::train::eval
