#!/usr/bin/env bash
# A compiler launcher that measures: runs the compile, then appends "<CPU seconds, user+sys>
# <object>" to $COMPILE_SECONDS_LOG. CPU seconds, not wall: they hold beside other builds on
# a shared machine. The cold build of docs/PERFORMANCE.md ("CI"), without ccache:
#   cmake -S . -B build-cold -G Ninja -DCMAKE_BUILD_TYPE=Release -DBENCHMAKE_WERROR=ON \
#     -DCMAKE_CXX_COMPILER_LAUNCHER=$PWD/scripts/compile_seconds.sh \
#     -DCMAKE_CUDA_COMPILER_LAUNCHER=$PWD/scripts/compile_seconds.sh
#   COMPILE_SECONDS_LOG=$PWD/build-cold/compile_seconds.log cmake --build build-cold -j2
#   awk '{s += $1} END {print s}' build-cold/compile_seconds.log
# A file compiled twice (an edit in between) has two lines: count its last. Needs
# /usr/bin/time (Debian package time).
set -u
log=${COMPILE_SECONDS_LOG:?set COMPILE_SECONDS_LOG to the file to append to}
out=unknown
prev=
for arg in "$@"; do
  [ "$prev" = -o ] && out=$arg
  prev=$arg
done
times=$(mktemp)
/usr/bin/time -f "%U %S" -o "$times" "$@"
rc=$?
# /usr/bin/time writes "Command exited with non-zero status N" first when the compile fails.
read -r user sys < <(tail -n 1 "$times")
rm -f "$times"
awk -v u="$user" -v s="$sys" -v o="$out" 'BEGIN { printf "%.2f %s\n", u + s, o }' >> "$log"
exit $rc
