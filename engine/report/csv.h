// The report as CSV (RFC 4180: comma separated, CRLF-free "\n" lines, fields
// with a comma, quote or newline quoted, quotes doubled), one line per target,
// for spreadsheets. Numbers are plain (no units, no "%") with the same decimals
// as every report (number_format.h): percents for MFU and accuracy, GiB for
// memory, mJ for the energy a token took. Measured quantities that vary between rounds have _min
// and _max columns beside their median. Absent values are empty fields.
//
// Columns: target,rule,trainer,device,devices,parallel,fix_hp,rounds,fresh,cache,file,
//   tokens_per_device_per_s,tokens_per_device_per_s_min,tokens_per_device_per_s_max,
//   mfu_6n_pct,mfu_6n_pct_min,mfu_6n_pct_max,mfu_palm_pct,mfu_palm_pct_min,
//   mfu_palm_pct_max,mem_peak_gib,mem_peak_gib_min,mem_peak_gib_max,mem_total_gib,
//   step_ms,loss,energy_mj_per_token,watts_per_device,val_loss,perplexity,accuracy_pct,
//   exact_match_pct,eval_task,host,measured_at,trainer_build
// host / measured_at / trainer_build are the newest round's.
#pragma once

#include <string>
#include <vector>

#include "engine/report/report_table.h"

namespace bm::report {

std::string RenderCsv(const std::vector<ReportRow>& rows);

// One field, quoted when needed.
std::string CsvField(const std::string& field);

}  // namespace bm::report
