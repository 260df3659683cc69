// An MMMU question as benchmake reads it: one line of the JSONL file that
// examples/tools/mmmu_to_jsonl.py writes from MMMU's published parquet files (MMMU/MMMU on
// Hugging Face, one folder per subject; the trainer has no Arrow reader, see
// docs/TRAINER.md "MMMU"). A line:
//   {"id": "validation_Art_1", "subject": "Art", "question_type": "multiple-choice",
//    "question": "... <image 1> ...", "options": ["...", ...], "answer": "A",
//    "images": ["images/validation_Art_1_1.png", ...], ...}
//   question_type  "multiple-choice" (answer: one letter, A + index into options, which
//                  must hold 2 to 26 entries) or "open" (answer: a string, or a list of
//                  accepted strings as MMMU's answer_dict_val.json has for a few; options
//                  empty)
//   images         image_1, image_2, ... in order, relative to the JSONL file's folder;
//                  at least image_1 (the one LLaVA-1.5 sees, see mmmu_prompt.h)
//   other fields (img_type, topic_difficulty, subfield, explanation) are kept unread.
// ReadMmmuQuestions refuses a malformed line naming "file:line" and the field, or
// "file:line:column" and the parser's reason for a line that is not JSON (kCorrupt:
// mmmu_data, which reads the user's file, reports these as the user's, exit 2).
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace bm::train::eval {

struct MmmuQuestion {
  std::string id;
  std::string subject;
  bool multiple_choice = false;
  std::string question;
  std::vector<std::string> options;
  std::vector<std::string> answers;  // one, or several accepted (open questions)
  std::vector<std::string> images;   // absolute or relative to the current directory
  int line = 0;                      // in the file, for messages
};

// Reads every line of path (blank lines skipped), in file order. require_images = false
// keeps the image paths without checking that they are files (the trainer's copy of the
// questions in an mmmu_data directory, whose pixels are already in its images.u8).
Result<std::vector<MmmuQuestion>> ReadMmmuQuestions(const std::string& path,
                                                    bool require_images = true);

}  // namespace bm::train::eval
