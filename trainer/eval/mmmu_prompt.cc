#include "trainer/eval/mmmu_prompt.h"

namespace bm::train::eval {

std::string MmmuPrompt(const MmmuQuestion& q) {
  if (!q.multiple_choice)
    return q.question + "\nAnswer the question using a single word or phrase.";
  std::string example;
  for (size_t i = 0; i < q.options.size(); ++i)
    example += "(" + std::string(1, static_cast<char>('A' + i)) + ") " + q.options[i] + "\n";
  return q.question + "\n" + example +
         "\nAnswer with the option's letter from the given choices directly.";
}

std::string LlavaMmmuPrompt(const MmmuQuestion& q) {
  return "A chat between a curious user and an artificial intelligence assistant. The assistant "
         "gives helpful, detailed, and polite answers to the user's questions. USER: <image>\n" +
         MmmuPrompt(q) + " ASSISTANT:";
}

}  // namespace bm::train::eval
