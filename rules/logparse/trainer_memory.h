// The peak device memory some trainers put into their Trainer log dicts
// (rules/logparse/trainer_dicts.h), in GiB (2^30 bytes) unless said:
//
//   ms-swift:  'memory(GiB)': 14.3  (or '14.3'; two decimals)
//   axolotl:   'memory/max_active (GiB)': '2.98', 'memory/max_allocated (GiB)': '2.98',
//              'memory/device_reserved (GiB)': '4.12'           (from d0d2fc560, 2025-08-27)
//              'memory/max_mem_active(gib)': 25.45, 'memory/max_mem_allocated(gib)': 25.45,
//              'memory/device_mem_reserved(gib)': 30.22         (from ba3dba3e4, 2025-08-06)
//              'memory/max_memory_allocated(gib)', 'memory/device_memory_reserved(gib)'
//              (from a54c1be97, 2025-08-04), without '(gib)' and unrounded (from
//              41709822a, 2025-08-02)
//
// ms-swift's figure is torch's max_memory_reserved in GiB (a peak) of the
// process's GPU, but summed over several GPUs of one process: from 3.0 over
// every visible GPU (under DDP the others normally hold none of this process's), from
// 3.8 (2b32542e6) only when one process drives several (the model split over
// them with device_map: swift.utils is_mp(), GPUs / local processes >= 2), and
// their largest instead from abbfc5867 (July 2026, 4.4.3). The log does not say
// which, so a note says the figure is per device only when each process used one
// GPU (DDP, DeepSpeed, FSDP, one GPU). `swift megatron` prints the largest over
// the model-parallel group: per device (from ms-swift 4 its dicts name 'iteration').
// axolotl's are max_memory_reserved / max_memory_allocated of device 0 (rank 0's
// GPU) on the main process (axolotl/utils/bench.py gpu_memory_usage_all), reset
// after each log from d0d2fc560 on, so the largest over the dicts is the run's.
// LLaMA-Factory's trainer_log.jsonl with RECORD_VRAM set: "vram_allocated", "vram_reserved"
// (LogCallback.on_log, get_peak_memory: max_memory_allocated / _reserved of rank 0's device,
// round(x / 2**30, 2)).
// optimum-habana's GaudiTrainer (Intel Gaudi HPUs; optimum/habana/utils.py get_hpu_memory_stats,
// from 2022-08): 'memory_allocated (GB)': 65.43, 'max_memory_allocated (GB)': 92.5,
// 'total_memory_available (GB)': 94.62, the HPU's InUse, MaxInUse and Limit / 2^30 rounded to 2:
// MaxInUse is the logging rank's peak.
// Liger-Kernel's EfficiencyCallback (examples/huggingface/callback.py, a callback users copy):
// 'total_peak_memory_reserved_MB': 47172.0, 'total_peak_memory_allocated_MB': 26279.24, the
// largest max_memory_reserved / _allocated of the main process's device since its warm-up
// steps, / 2^20 rounded to 2 (MiB; read as GiB here).
// The peak is the largest reserved figure, else the largest allocated one.
//
// Thread safety: a value type, one per log.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/result.h"
#include "rules/logparse/log_parser.h"
#include "rules/logparse/trainer_dict_literal.h"

namespace bm::logparse {

class DictMemory {
 public:
  // Takes the memory entries of the dict at `line` of log `name`, if it has
  // any; kCorrupt ("NAME:LINE: ...") for an entry whose value is not a number.
  Status Read(const TrainerDict& dict, std::string_view name, int64_t line);

  // After the log: the peak into log.peak_memory_bytes and log.memory_source
  // (with a note for ms-swift's figure), unless the log has one already (the
  // format's own lines: DeepSpeed's MaxMemAllocated).
  void Report(std::string_view name, ParsedLog& log) const;

 private:
  struct Peak {
    double gib = -1;
    int64_t line = 0;
    double per_gib = 1;  // the printed unit's per GiB
    const char* what = "";
  };
  Peak reserved_, allocated_;
  bool swift_ = false;  // the reserved figure is ms-swift's memory(GiB)
};

}  // namespace bm::logparse
