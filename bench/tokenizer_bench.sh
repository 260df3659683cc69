#!/usr/bin/env bash
# Tokenizer benchmark against its peers, measured in the same run:
#   npm tiktoken (OpenAI's Rust core as WASM) and npm gpt-tokenizer, under node,
#   single-threaded gpt2 encoding of the whole corpus held in memory;
#   then benchmake's encoder (1 thread, thread scaling) and the end-to-end
#   tokenize step. Prints ratios and whether the targets (>= 3x tiktoken,
#   >= 1.5x gpt-tokenizer) are met; fails when the ids differ.
# Usage: bench/tokenizer_bench.sh [BUILD_DIR] [ROUNDS]
# Needs node and npm (peers only; installed into bench/node_modules).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-5}
[ -d bench/node_modules/tiktoken ] && [ -d bench/node_modules/gpt-tokenizer ] ||
  npm ci --prefix bench --no-audit --no-fund >/dev/null
cmake --build "$build" --target tokenizer_bench >/dev/null
peers=$(mktemp)
trap 'rm -f "$peers"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); node $(node --version); $(date -u +%FT%TZ)"
node bench/tokenizer_peers.js data/kjv.txt "$rounds" | tee "$peers"
"$build"/bench/tokenizer_bench --vocab data/gpt2.tiktoken --text data/kjv.txt \
  --rounds "$rounds" --peers "$peers"
