#!/usr/bin/env bash
# LLaVA-1.5's image steps (decode, pad to square, bicubic resize to 336, center crop), ours
# against Pillow doing the same on the same files, in one run: bench/image_peer.py makes 40
# photo-like images (JPEG and PNG, 336x224 to 1024x768); image_bench alternates rounds of
# ours and of the peer (bench/image_peer.py run) and prints both, the ratio (target >= 2x)
# and whether the outputs are identical.
# Usage: bench/image_bench.sh [BUILD_DIR] [ROUNDS] [THREADS]
#   THREADS 1 (default): one thread each, CPU time compared; THREADS > 1: ours on threads
#   (as rules/llava's image set runs), Pillow on as many processes, wall time compared.
# Needs python3-pil and python3-numpy.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-5}
threads=${3:-1}
cmake --build "$build" --target image_bench >/dev/null
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python=python3
$python -c 'import PIL, numpy' 2>/dev/null || python=/usr/bin/python3
$python bench/image_peer.py make "$dir"
files=("$dir"/img*)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1 /proc/loadavg); $(date -u +%FT%TZ)"
"$build"/bench/image_bench --rounds "$rounds" --threads "$threads" \
  --peer "$python $PWD/bench/image_peer.py" "${files[@]}"
