#include "rules/logparse/trainer_memory.h"

#include <fmt/format.h>

namespace bm::logparse {
namespace {

struct MemoryKey {
  std::string_view key;
  bool reserved;  // else allocated
  const char* what;
  double per_gib = 1;  // the printed unit's per GiB (1024 for MiB)
};

constexpr MemoryKey kKeys[] = {
    {"memory(GiB)", true, "ms-swift's memory(GiB) (max_memory_reserved)"},
    {"memory/device_reserved (GiB)", true,
     "axolotl's memory/device_reserved (max_memory_reserved)"},
    {"memory/device_mem_reserved(gib)", true,
     "axolotl's memory/device_mem_reserved (max_memory_reserved)"},
    {"memory/device_memory_reserved(gib)", true,
     "axolotl's memory/device_memory_reserved (max_memory_reserved)"},
    {"memory/device_memory_reserved", true,
     "axolotl's memory/device_memory_reserved (max_memory_reserved)"},
    {"memory/max_allocated (GiB)", false, "axolotl's memory/max_allocated (max_memory_allocated)"},
    {"memory/max_mem_allocated(gib)", false,
     "axolotl's memory/max_mem_allocated (max_memory_allocated)"},
    {"memory/max_memory_allocated(gib)", false,
     "axolotl's memory/max_memory_allocated (max_memory_allocated)"},
    {"memory/max_memory_allocated", false,
     "axolotl's memory/max_memory_allocated (max_memory_allocated)"},
    {"vram_reserved", true, "LLaMA-Factory's vram_reserved (max_memory_reserved)"},
    {"vram_allocated", false, "LLaMA-Factory's vram_allocated (max_memory_allocated)"},
    {"max_memory_allocated (GB)", false,
     "optimum-habana's max_memory_allocated (GB) (the HPU's MaxInUse)"},
    {"total_peak_memory_reserved_MB", true,
     "Liger-Kernel's EfficiencyCallback total_peak_memory_reserved_MB (max_memory_reserved)", 1024},
    {"total_peak_memory_allocated_MB", false,
     "Liger-Kernel's EfficiencyCallback total_peak_memory_allocated_MB (max_memory_allocated)",
     1024},
};

}  // namespace

Status DictMemory::Read(const TrainerDict& dict, std::string_view name, int64_t line) {
  for (const MemoryKey& k : kKeys) {
    auto it = dict.find(k.key);
    if (it == dict.end()) continue;
    if (!it->second || !(*it->second >= 0)) {  // they print only numbers here
      return Errorf(ErrorCode::kCorrupt, "{}:{}: '{}' is not a number of {}", name, line, k.key,
                    k.per_gib == 1 ? "GiB" : "MiB");
    }
    Peak& peak = k.reserved ? reserved_ : allocated_;
    const double gib = *it->second / k.per_gib;
    if (gib > peak.gib) {
      // ms-swift 4's Megatron trainer ('iteration': 'n/m') prints the largest over the
      // model-parallel group: per device.
      const bool megatron = k.key == "memory(GiB)" && dict.count("iteration");
      peak = {gib, line, k.per_gib,
              megatron ? "ms-swift Megatron's memory(GiB) (max_memory_reserved, the largest over "
                         "the model-parallel group)"
                       : k.what};
      if (k.reserved) swift_ = k.key == "memory(GiB)" && !megatron;
    }
  }
  return Status::Ok();
}

void DictMemory::Report(std::string_view name, ParsedLog& log) const {
  if (log.peak_memory_bytes) return;
  const Peak& peak = reserved_.gib >= 0 ? reserved_ : allocated_;
  if (peak.gib < 0) return;
  log.peak_memory_bytes = peak.gib * 1024.0 * 1024.0 * 1024.0;
  log.memory_source = fmt::format("{}, {}, the largest in the log dicts", peak.what,
                                  peak.per_gib == 1 ? "GiB" : "MiB");
  if (&peak == &reserved_ && swift_) {
    log.notes.push_back(fmt::format(
        "mem: {}:{}: ms-swift's memory(GiB) is per device only when each process drives one GPU "
        "(DDP, DeepSpeed, FSDP, or one GPU); a process that splits the model over several "
        "(device_map) prints their sum (ms-swift 3.0 to 4.4.2) or their largest (from 4.4.3)",
        name, peak.line));
  }
}

}  // namespace bm::logparse
