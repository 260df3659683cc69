#include "trainer/cuda/model_spec.h"

namespace bm::train::cuda {

bool ModelPreset(const std::string& name, ModelSpec* s) {
  ModelSpec m;
  if (name == "gpt2-124m") {
    m = {Family::kGpt, 50304, 768, 12, 12, 12, 3072, 1024, true};
  } else if (name == "llama-1b") {
    m = {Family::kLlama, 32000, 2048, 16, 32, 32, 5632, 2048, false};
  } else if (name == "llama7b-8l") {
    m = {Family::kLlama, 32000, 4096, 8, 32, 32, 11008, 4096, false};
  } else if (name == "llama2-7b") {
    m = {Family::kLlama, 32000, 4096, 32, 32, 32, 11008, 4096, false};
  } else if (name == "tiny-gpt") {
    m = {Family::kGpt, 512, 128, 2, 2, 2, 512, 128, true};
  } else if (name == "tiny-llama") {
    m = {Family::kLlama, 512, 128, 2, 2, 1, 352, 128, false};
  } else {
    return false;
  }
  *s = m;
  return true;
}

}  // namespace bm::train::cuda
