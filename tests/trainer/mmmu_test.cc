// trainer/eval/ (MMMU) against MMMU's own code: tests/data/mmmu/golden.json holds what
// mmmu/utils/eval_utils.py and data_utils.py (and LLaVA's conversation.py) give on the
// 50 responses of tests/data/mmmu/responses.json and on the sample questions of
// examples/llava1.5_13b/mmmu_sample; tests/support/mmmu_reference.py wrote it (the
// commits are in the file). Also the reader's failures, each naming file:line.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "trainer/eval/mmmu_judge.h"
#include "trainer/eval/mmmu_prompt.h"
#include "trainer/eval/mmmu_question.h"
#include "trainer/eval/mmmu_run.h"
#include "trainer/eval/python_random.h"

namespace bm::train::eval {
namespace {

const std::string kSource = BENCHMAKE_TEST_SOURCE_DIR;
const std::string kSample = kSource + "/examples/llava1.5_13b/mmmu_sample/validation.jsonl";

nlohmann::json Load(const std::string& rel) {
  std::ifstream in(kSource + "/" + rel);
  EXPECT_TRUE(in) << rel;
  return nlohmann::json::parse(in);
}

std::map<std::string, MmmuQuestion> SampleById() {
  auto qs = ReadMmmuQuestions(kSample);
  EXPECT_TRUE(qs.ok()) << qs.status().message();
  std::map<std::string, MmmuQuestion> out;
  if (qs.ok())
    for (auto& q : *qs) out[q.id] = q;
  return out;
}

TEST(PythonRandomTest, StreamOfCPythonSeeded42) {
  const nlohmann::json g = Load("tests/data/mmmu/golden.json")["random_after_seed_42"];
  PythonRandom rng(42);
  for (const auto& bits : g["getrandbits32"]) EXPECT_EQ(rng.GetRandBits(32), bits.get<uint32_t>());
  // choice() continues the same stream, as the reference draws it.
  for (const auto& c : g["choice"])
    EXPECT_EQ(rng.RandBelow(c[0].get<uint32_t>()), c[1].get<uint32_t>()) << "n=" << c[0];
}

TEST(PythonRandomTest, ChoiceOfOneStillDraws) {
  // CPython's _randbelow(1) redraws getrandbits(1) until it is 0: the stream moves on.
  // golden getrandbits32 after seed(42): 2746317213 (top bit 1), 478163327 (top bit 0),
  // 107420369 -> choice([x]) takes two words; the next 32 bits are the third word.
  PythonRandom rng(42);
  EXPECT_EQ(rng.RandBelow(1), 0u);
  EXPECT_EQ(rng.GetRandBits(32), 107420369u);
  PythonRandom none(42);
  EXPECT_EQ(none.RandBelow(0), 0u);
  EXPECT_EQ(none.GetRandBits(32), 2746317213u);  // nothing drawn
  EXPECT_EQ(ParseMultiChoice("anything", {}, none), "");
}

TEST(MmmuAnswerTest, FiftyResponsesAsMmmusOwnCode) {
  const nlohmann::json golden = Load("tests/data/mmmu/golden.json");
  const nlohmann::json responses = Load("tests/data/mmmu/responses.json")["responses"];
  ASSERT_EQ(responses.size(), 50u);
  ASSERT_EQ(golden["results"].size(), 50u);
  auto questions = SampleById();
  MmmuJudge judge(42);  // run_llava.py's seed, consumed in the same order
  std::vector<Judged> judged;
  for (size_t i = 0; i < responses.size(); ++i) {
    const std::string id = responses[i]["question"];
    const std::string response = responses[i]["response"];
    ASSERT_TRUE(questions.count(id)) << id;
    const MmmuQuestion& q = questions[id];
    const MmmuJudgement j = judge.Judge(q, response);
    const nlohmann::json& want = golden["results"][i];
    EXPECT_EQ(j.pred, want["pred"]) << "response " << i << ": \"" << response << "\"";
    EXPECT_EQ(j.correct, want["correct"].get<bool>())
        << "response " << i << ": \"" << response << "\"";
    judged.push_back({q.subject, j.correct});
  }
  // main_eval_only.py's accuracies (per question; MMMU's float arithmetic, hence the 1e-12).
  const nlohmann::json acc = MmmuAccuracy(judged);
  const nlohmann::json& want = golden["accuracy"];
  EXPECT_NEAR(acc["accuracy"].get<double>(), want["accuracy"].get<double>(), 1e-12);
  EXPECT_EQ(acc["questions"], want["questions"]);
  ASSERT_EQ(acc["by_subject"].size(), want["by_subject"].size());
  for (const auto& [s, w] : want["by_subject"].items()) {
    EXPECT_NEAR(acc["by_subject"][s]["accuracy"].get<double>(), w["accuracy"].get<double>(), 1e-12)
        << s;
    EXPECT_EQ(acc["by_subject"][s]["questions"], w["questions"]) << s;
  }
  ASSERT_EQ(acc["by_category"].size(), want["by_category"].size());
  for (const auto& [c, w] : want["by_category"].items()) {
    EXPECT_NEAR(acc["by_category"][c]["accuracy"].get<double>(), w["accuracy"].get<double>(), 1e-12)
        << c;
    EXPECT_EQ(acc["by_category"][c]["questions"], w["questions"]) << c;
  }
}

TEST(MmmuAnswerTest, SubjectsAndCategoriesAreMmmus) {
  const nlohmann::json golden = Load("tests/data/mmmu/golden.json");
  EXPECT_EQ(nlohmann::json(MmmuSubjects()), golden["subjects"]);
  for (const auto& [domain, subjects] : golden["domains"].items())
    for (const auto& s : subjects) EXPECT_EQ(MmmuCategory(s.get<std::string>()), domain) << s;
  EXPECT_EQ(MmmuCategory("Astrology"), "");
  EXPECT_EQ(MmmuSubjectOfId("validation_Art_Theory_12"), "Art_Theory");
}

TEST(MmmuAnswerTest, PythonFloatGrammar) {
  // float(s.replace(',', '')) in CPython, by hand.
  EXPECT_EQ(PythonFloat("1,000.5"), 1000.5);
  EXPECT_EQ(PythonFloat(" 1_000 "), 1000.0);
  EXPECT_EQ(PythonFloat(".5"), 0.5);
  EXPECT_EQ(PythonFloat("5."), 5.0);
  EXPECT_EQ(PythonFloat("-2e3"), -2000.0);
  EXPECT_TRUE(std::isinf(*PythonFloat("-Infinity")));
  EXPECT_TRUE(std::isinf(*PythonFloat("1e999")));
  for (const char* bad : {"", ".", "1_", "_1", "1__0", "1e", "e5", "3 mg", "0x10", "1/2"})
    EXPECT_FALSE(PythonFloat(bad).has_value()) << bad;
  // round(x, 2): 0.125 is exact, a tie, and goes to even; 2.675 is below its tie in binary.
  EXPECT_EQ(NormalizeStr("0.125")[0].number, 0.12);
  EXPECT_EQ(NormalizeStr("2.675")[0].number, 2.67);
}

TEST(MmmuPromptTest, SampleQuestionsAsConstructPromptAndLlava) {
  const nlohmann::json golden = Load("tests/data/mmmu/golden.json");
  auto questions = SampleById();
  ASSERT_EQ(golden["prompts"].size(), questions.size());
  for (const auto& p : golden["prompts"]) {
    const MmmuQuestion& q = questions[p["id"].get<std::string>()];
    EXPECT_EQ(MmmuPrompt(q), p["mmmu_prompt"].get<std::string>()) << q.id;
    EXPECT_EQ(LlavaMmmuPrompt(q), p["llava_prompt"].get<std::string>()) << q.id;
  }
}

TEST(MmmuSampleTest, AnswerKeyScoresFullMarksInMmmuOrder) {
  auto qs = ReadMmmuQuestions(kSample);
  ASSERT_TRUE(qs.ok()) << qs.status().message();
  ASSERT_EQ(qs->size(), 10u);
  // The sample's subjects by hand in CAT_SHORT2LONG's order.
  std::vector<std::string> order;
  for (size_t i : MmmuOrder(*qs)) order.push_back((*qs)[i].id);
  EXPECT_EQ(order, (std::vector<std::string>{
                       "validation_Art_1", "validation_Art_2", "validation_Clinical_Medicine_1",
                       "validation_Computer_Science_1", "validation_Economics_1",
                       "validation_Geography_1", "validation_History_1", "validation_Math_1",
                       "validation_Math_2", "validation_Physics_1"}));
  MmmuJudge judge;
  std::vector<Judged> judged;
  for (size_t i : MmmuOrder(*qs)) {
    const MmmuQuestion& q = (*qs)[i];
    EXPECT_EQ(q.images.size(), q.id == "validation_Physics_1" ? 3u
                               : q.id == "validation_Math_2"  ? 2u
                                                              : 1u);
    const MmmuJudgement j = judge.Judge(q, q.answers.back());
    EXPECT_TRUE(j.correct) << q.id;
    judged.push_back({q.subject, j.correct});
  }
  const nlohmann::json acc = MmmuAccuracy(judged);
  EXPECT_EQ(acc["accuracy"], 1.0);
  EXPECT_EQ(acc["questions"], 10);
  EXPECT_EQ(acc["by_category"]["Science"]["questions"], 4);  // Geography, Math x2, Physics
}

TEST(MmmuScoreTest, EvalFieldsForMetricsJson) {
  // Three questions by hand: Art right, Art wrong, Math right.
  const nlohmann::json acc = MmmuAccuracy({{"Art", true}, {"Art", false}, {"Math", true}});
  EXPECT_EQ(acc["correct"], 2);
  EXPECT_EQ(acc["by_subject"]["Art"]["accuracy"], 0.5);
  EXPECT_EQ(acc["by_category"]["Science"]["questions"], 1);
  EXPECT_EQ(acc["by_category"].size(), 2u);
  const nlohmann::json f = MmmuEvalFields(acc, 42);
  EXPECT_EQ(f["task"], "mmmu");
  EXPECT_EQ(f["accuracy"], 2.0 / 3.0);
  EXPECT_EQ(f["examples"], 3);
  EXPECT_EQ(f["mmmu"]["reference"], "MMMU-Benchmark/MMMU@bb0b95a945998d91dfef37e969e07d49d1139438");
  EXPECT_EQ(f["mmmu"]["by_subject"]["Math"]["correct"], 1);
  EXPECT_EQ(f["mmmu"]["seed"], 42);
}

TEST(MmmuRunTest, AsksInMmmuOrderAndWritesRunLlavasOutput) {
  auto qs = ReadMmmuQuestions(kSample);
  ASSERT_TRUE(qs.ok()) << qs.status().message();
  std::vector<std::string> asked;
  // Right on multiple choice (the key's letter in brackets), "no idea" on open questions.
  auto respond = [&](const MmmuQuestion& q, const std::string& prompt) -> Result<std::string> {
    asked.push_back(q.id);
    EXPECT_EQ(prompt, LlavaMmmuPrompt(q));
    if (q.multiple_choice) return "(" + q.answers[0] + ")";
    return std::string("no idea");
  };
  auto run = RunMmmu(*qs, respond);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(asked.front(), "validation_Art_1");  // MMMU's order (Art before Clinical_Medicine)
  EXPECT_EQ(asked.back(), "validation_Physics_1");
  // 6 multiple-choice right of 10 (by hand: Art x2, Computer_Science, History, Math_2,
  // Physics); the 4 open ones wrong.
  EXPECT_EQ(run->eval["accuracy"], 0.6);
  EXPECT_EQ(run->eval["examples"], 10);
  EXPECT_EQ(run->eval["mmmu"]["by_subject"]["Math"]["accuracy"], 0.5);
  EXPECT_EQ(run->eval["mmmu"]["by_category"]["Health and Medicine"]["accuracy"], 0.0);
  EXPECT_EQ(run->predictions["validation_Art_2"], "B");
  EXPECT_EQ(run->predictions["validation_Math_1"], "no idea");  // open: the raw response
  EXPECT_EQ(run->responses["validation_Art_2"], "(B)");

  auto failing = RunMmmu(*qs, [](const MmmuQuestion&, const std::string&) -> Result<std::string> {
    return Status(ErrorCode::kFailed, "decode failed");
  });
  ASSERT_FALSE(failing.ok());
  EXPECT_EQ(failing.status().message(), "MMMU question validation_Art_1: decode failed");
}

class MmmuReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("bm_mmmu_read_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "images");
    std::ofstream(dir_ / "images/a.png") << "png";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes a good first line, then `second`; returns the reader's error message.
  std::string ErrorOf(const std::string& second) {
    const std::string path = (dir_ / "q.jsonl").string();
    std::ofstream(path) << kGood << "\n" << second << "\n";
    auto r = ReadMmmuQuestions(path);
    EXPECT_FALSE(r.ok()) << second;
    return r.ok() ? "" : r.status().message();
  }

  static constexpr const char* kGood =
      R"({"id": "validation_Art_1", "subject": "Art", "question_type": "multiple-choice", )"
      R"("question": "q", "options": ["x", "y"], "answer": "B", "images": ["images/a.png"]})";
  std::filesystem::path dir_;
};

TEST_F(MmmuReadTest, MalformedLinesNameFileLineAndField) {
  const std::string at = (dir_ / "q.jsonl").string() + ":2: ";
  const std::string good = kGood;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  // A syntax error: where Python's json.loads puts it ("Expecting value: line 1 column 8").
  const std::string syntax = ErrorOf(R"({"id": })");
  EXPECT_EQ(syntax.rfind((dir_ / "q.jsonl").string() + ":2:8: not valid JSON: ", 0), 0u) << syntax;
  EXPECT_EQ(ErrorOf("[1, 2]"), at + "not a JSON object");
  EXPECT_EQ(ErrorOf(good), at + "id \"validation_Art_1\" appears twice");
  EXPECT_EQ(ErrorOf(with(R"("answer": "B")", R"("answer": "C")")),
            at + "answer \"C\" is not one of the letters A to B");
  EXPECT_EQ(ErrorOf(with("images/a.png", "images/b.png")),
            at + "image \"" + (dir_ / "images/b.png").string() + "\" is not a file");
  EXPECT_EQ(ErrorOf(with(R"("images": ["images/a.png"])", R"("images": [])")),
            at + "\"images\" is empty (image_1 is needed)");
  EXPECT_EQ(ErrorOf(with(R"("subject": "Art")", R"("subject": "Astrology")")),
            at + "subject \"Astrology\" is not one of MMMU's 30");
  EXPECT_EQ(ErrorOf(with("validation_Art_1", "validation_Math_7")),
            at + "id \"validation_Math_7\" does not name subject \"Art\"");
  EXPECT_EQ(ErrorOf(with("multiple-choice", "essay")),
            at + "question_type \"essay\" is neither \"multiple-choice\" nor \"open\"");
  EXPECT_EQ(ErrorOf(with(R"("answer": "B")", R"("answer": ["B"])")),
            at + "\"answer\" is missing or not a string");
  EXPECT_EQ(ErrorOf(with(R"("options": ["x", "y"])", R"("options": ["x"])")),
            at + "a multiple-choice question with 1 options (2 to 26)");
  EXPECT_EQ(ErrorOf(with(R"("options": ["x", "y"])", R"("options": ["x", 3])")),
            at + "\"options\" holds a value that is not a string");
  EXPECT_EQ(ErrorOf(with(R"("question": "q", )", "")),
            at + "\"question\" is missing or not a string");
}

TEST_F(MmmuReadTest, OpenQuestionsTakeAListOfAnswersAndMissingFilesAreNamed) {
  const std::string path = (dir_ / "q.jsonl").string();
  std::ofstream(path)
      << R"({"id": "validation_Math_1", "subject": "Math", "question_type": "open", )"
      << R"("question": "q", "options": [], "answer": ["24/7", "3.429"], )"
      << R"("images": ["images/a.png"]})"
      << "\n\n";
  auto r = ReadMmmuQuestions(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].answers, (std::vector<std::string>{"24/7", "3.429"}));
  EXPECT_EQ((*r)[0].line, 1);
  auto missing = ReadMmmuQuestions((dir_ / "none.jsonl").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            (dir_ / "none.jsonl").string() + ": cannot open the MMMU questions");
  std::ofstream(path) << "\n";
  auto empty = ReadMmmuQuestions(path);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), path + ": no questions");
}

}  // namespace
}  // namespace bm::train::eval
