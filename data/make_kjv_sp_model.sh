#!/bin/sh
# Trains data/kjv_sp.model, the SentencePiece test model: BPE on data/kjv.txt
# with LLaMA-2's settings (byte fallback, split digits, whitespace-only pieces,
# the identity normalizer with the dummy prefix and extra white space kept) and
# an 8,000-piece vocabulary. Deterministic with Debian 12's sentencepiece
# 0.1.97 (the model records the input path and prefix, so run it as written).
#   sh data/make_kjv_sp_model.sh [OUT_PREFIX]     (default data/kjv_sp; run from the repository root)
set -eu
prefix=${1:-data/kjv_sp}
spm_train --input=data/kjv.txt --model_prefix="$prefix" --model_type=bpe --vocab_size=8000 \
  --byte_fallback=true --split_digits=true --allow_whitespace_only_pieces=true \
  --normalization_rule_name=identity --remove_extra_whitespaces=false --add_dummy_prefix=true \
  --character_coverage=1.0 --num_threads=2 >/dev/null 2>&1
rm -f "$prefix.vocab"
