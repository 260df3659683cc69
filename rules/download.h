// The `download` rule: fetch one URL (https, http, file) into out_dir,
// verify it, optionally unpack it. docs/DATA.md is the user's page.
//
// Parameters: url, sha256, xxh128, headers, unpack, filename; and, outside
// the key, retries, retry_delay_s, connect_timeout_s, stall_timeout_s.
//
// Behaviour:
//  - The body streams into RESUME_DIR/FILENAME.part (resume_dir survives a
//    killed run of the same key); a later attempt or run asks for the rest
//    with a Range request, and starts over when the server ignores it.
//  - Transient failures (connect/DNS/TLS, timeout or stall, truncated body,
//    HTTP 5xx or 429) are retried `retries` times with delays of
//    retry_delay_s, 2·retry_delay_s, 4·retry_delay_s, ...; 404 and other 4xx
//    fail at once.
//  - The whole file is checked against sha256 and/or xxh128 when given; a
//    mismatch is an error and deletes the partial file. Without a checksum the
//    log warns and records the digests this download saw.
//  - unpack = "gz" | "zst" writes FILENAME without that suffix; "tar",
//    "tar.gz", "tar.zst" extract into out_dir; "" keeps the file as FILENAME.
//  - On any failure out_dir is left empty (the engine caches nothing).
//  - http(s) downloads stream progress (ninja's console pool); file:// do not.
// Metrics: {url (expanded), file, bytes, sha256, xxh128,
// attempts, resumed_from, seconds, unpack}. Header values never appear in
// logs, metrics or errors.
#pragma once

#include <memory>

#include "engine/rule.h"

namespace bm::rules {

std::unique_ptr<engine::Rule> MakeDownloadRule();

}  // namespace bm::rules
