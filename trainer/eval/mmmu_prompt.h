// The prompt MMMU's LLaVA-1.5 run gives the model for a question.
//
// MmmuPrompt is construct_prompt's final_input_prompt with mmmu/configs/llava1.5.yaml
// (mmmu/utils/data_utils.py, MMMU commit bb0b95a945998d91dfef37e969e07d49d1139438):
//   multiple choice: question + "\n" + "(A) option\n(B) option\n..." + "\n"
//                    + "Answer with the option's letter from the given choices directly."
//   open:            question + "\n" + "Answer the question using a single word or phrase."
// (the YAML's blank lines fold to single "\n"; task_instructions is empty). The
// question's and options' "<image k>" tokens stay in the text as they are.
//
// LlavaMmmuPrompt wraps it as mmmu/utils/model_utils.py's call_llava_engine_df does
// for llava-v1.5-13b (mm_use_im_start_end false): "<image>\n" + prompt as the user's
// turn of LLaVA's conv_templates["vicuna_v1"] (llava/conversation.py, LLaVA commit
// c121f0432da27facab705978f83c4ada465e46fd), the assistant's turn left open:
//   "A chat between ... questions. USER: <image>\n<prompt> ASSISTANT:"
// The one "<image>" is where the vision tower's 576 tokens of image_1 go: MMMU's LLaVA
// run feeds image_1 only (process_single_sample keeps data['image_1']), whatever the
// number of images a question has; the model sees the others only as "<image k>" text.
#pragma once

#include <string>

#include "trainer/eval/mmmu_question.h"

namespace bm::train::eval {

std::string MmmuPrompt(const MmmuQuestion& q);
std::string LlavaMmmuPrompt(const MmmuQuestion& q);

}  // namespace bm::train::eval
