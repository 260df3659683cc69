#include "trainer/eval/mmmu_question.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "base/formats/json_text.h"
#include "trainer/eval/mmmu_score.h"

namespace bm::train::eval {
namespace {

Result<std::string> StringField(const nlohmann::json& j, const char* key, const std::string& at) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string())
    return Errorf(ErrorCode::kCorrupt, "{}: \"{}\" is missing or not a string", at, key);
  return it->get<std::string>();
}

Result<std::vector<std::string>> StringList(const nlohmann::json& j, const char* key,
                                            const std::string& at) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array())
    return Errorf(ErrorCode::kCorrupt, "{}: \"{}\" is missing or not a list", at, key);
  std::vector<std::string> out;
  for (const auto& e : *it) {
    if (!e.is_string())
      return Errorf(ErrorCode::kCorrupt, "{}: \"{}\" holds a value that is not a string", at, key);
    out.push_back(e.get<std::string>());
  }
  return out;
}

Result<MmmuQuestion> ParseLine(const std::string& text, const std::string& path, int line,
                               const std::filesystem::path& dir, bool require_images) {
  const std::string at = path + ":" + std::to_string(line);
  // A syntax error names path:line:column and the parser's reason.
  BM_ASSIGN_OR_RETURN(nlohmann::json j, formats::ParseJsonText(text, path, line));
  if (!j.is_object()) return Errorf(ErrorCode::kCorrupt, "{}: not a JSON object", at);
  MmmuQuestion q;
  BM_ASSIGN_OR_RETURN(q.id, StringField(j, "id", at));
  BM_ASSIGN_OR_RETURN(q.subject, StringField(j, "subject", at));
  if (MmmuCategory(q.subject).empty())
    return Errorf(ErrorCode::kCorrupt, "{}: subject \"{}\" is not one of MMMU's 30", at, q.subject);
  if (MmmuSubjectOfId(q.id) != q.subject)
    return Errorf(ErrorCode::kCorrupt, "{}: id \"{}\" does not name subject \"{}\"", at, q.id,
                  q.subject);
  BM_ASSIGN_OR_RETURN(std::string type, StringField(j, "question_type", at));
  if (type != "multiple-choice" && type != "open")
    return Errorf(ErrorCode::kCorrupt,
                  "{}: question_type \"{}\" is neither \"multiple-choice\" nor \"open\"", at, type);
  q.multiple_choice = type == "multiple-choice";
  BM_ASSIGN_OR_RETURN(q.question, StringField(j, "question", at));
  BM_ASSIGN_OR_RETURN(q.options, StringList(j, "options", at));
  auto answer = j.find("answer");
  if (answer != j.end() && answer->is_string()) {
    q.answers = {answer->get<std::string>()};
  } else if (answer != j.end() && answer->is_array() && !q.multiple_choice) {
    BM_ASSIGN_OR_RETURN(q.answers, StringList(j, "answer", at));
  } else {
    return Errorf(ErrorCode::kCorrupt, "{}: \"answer\" is missing or not a {}", at,
                  q.multiple_choice ? "string" : "string or list of strings");
  }
  if (q.answers.empty()) return Errorf(ErrorCode::kCorrupt, "{}: \"answer\" is an empty list", at);
  if (q.multiple_choice) {
    if (q.options.size() < 2 || q.options.size() > 26)
      return Errorf(ErrorCode::kCorrupt, "{}: a multiple-choice question with {} options (2 to 26)",
                    at, q.options.size());
    const std::string& a = q.answers[0];
    if (a.size() != 1 || a[0] < 'A' || a[0] >= 'A' + static_cast<int>(q.options.size()))
      return Errorf(ErrorCode::kCorrupt, "{}: answer \"{}\" is not one of the letters A to {}", at,
                    a, static_cast<char>('A' + q.options.size() - 1));
  }
  BM_ASSIGN_OR_RETURN(std::vector<std::string> images, StringList(j, "images", at));
  if (images.empty())
    return Errorf(ErrorCode::kCorrupt, "{}: \"images\" is empty (image_1 is needed)", at);
  for (const std::string& rel : images) {
    const std::filesystem::path p = dir / rel;
    std::error_code ec;
    if (require_images && !std::filesystem::is_regular_file(p, ec))
      return Errorf(ErrorCode::kNotFound, "{}: image \"{}\" is not a file", at, p.string());
    q.images.push_back(p.string());
  }
  return q;
}

}  // namespace

Result<std::vector<MmmuQuestion>> ReadMmmuQuestions(const std::string& path, bool require_images) {
  std::ifstream in(path);
  if (!in) return Errorf(ErrorCode::kNotFound, "{}: cannot open the MMMU questions", path);
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::vector<MmmuQuestion> out;
  std::set<std::string> ids;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    BM_ASSIGN_OR_RETURN(MmmuQuestion q, ParseLine(text, path, line, dir, require_images));
    if (!ids.insert(q.id).second)
      return Errorf(ErrorCode::kCorrupt, "{}:{}: id \"{}\" appears twice", path, line, q.id);
    q.line = line;
    out.push_back(std::move(q));
  }
  if (in.bad()) return Errorf(ErrorCode::kIo, "{}: read error", path);
  if (out.empty()) return Errorf(ErrorCode::kCorrupt, "{}: no questions", path);
  return out;
}

}  // namespace bm::train::eval
