// decode_table_dump: trainer/eval/decode_table.h's Decode on any ids, for
// tests/rules/llava/mmmu_data_check.py (the table against python sentencepiece's DecodeIds).
//
//   decode_table_dump DECODE_JSON < lines of JSON id lists
// prints one JSON string per input line: the decoded text. Exit 0, or 1 with a message.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "trainer/eval/decode_table.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: decode_table_dump DECODE_JSON < ids.jsonl\n");
    return 1;
  }
  bm::Result<bm::train::eval::DecodeTable> table = bm::train::eval::DecodeTable::Read(argv[1]);
  if (!table.ok()) {
    std::fprintf(stderr, "decode_table_dump: %s\n", table.status().message().c_str());
    return 1;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    const nlohmann::json ids = nlohmann::json::parse(line, nullptr, false);
    if (ids.is_discarded() || !ids.is_array()) {
      std::fprintf(stderr, "decode_table_dump: not a JSON list: %s\n", line.c_str());
      return 1;
    }
    std::cout << nlohmann::json(table->Decode(ids.get<std::vector<int32_t>>())).dump() << "\n";
  }
  return 0;
}
