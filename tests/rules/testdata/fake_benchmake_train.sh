#!/bin/sh
# A stand-in for benchmake-train in launcher tests (installed as
# <tools_dir>/benchmake-train). Called as `benchmake-train --config RUN.json`:
# writes the rank variables it got to $BENCHMAKE_RENDEZVOUS/rank-$RANK.env (or
# $FAKE_TRAINER_ENV_DIR when set) and its pid to $FAKE_TRAINER_PID_DIR/rank-$RANK.pid
# when that is set, then does what $FAKE_TRAINER_<RANK> says:
#   ok    (default) rank 0 writes out_dir/metrics.json, the others nothing
#   fail  prints 30 numbered lines and exits 1
#   hang  sleeps (until the launcher stops it)
#   kill  kills itself with SIGKILL after 0.3 s
config="$2"
out=$(sed -n 's/.*"out_dir": "\([^"]*\)".*/\1/p' "$config")
rank=${RANK:-0}
envdir=${FAKE_TRAINER_ENV_DIR:-$BENCHMAKE_RENDEZVOUS}
if [ -n "$envdir" ]; then
  env | grep -E '^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|BENCHMAKE_RENDEZVOUS|BENCHMAKE_COLLECTIVE_TIMEOUT|CUDA_VISIBLE_DEVICES|OMP_WAIT_POLICY)=' |
    sort > "$envdir/rank-$rank.env"
fi
[ -n "$FAKE_TRAINER_PID_DIR" ] && echo $$ > "$FAKE_TRAINER_PID_DIR/rank-$rank.pid"
echo "fake trainer: rank $rank of ${WORLD_SIZE:-1} starting"
eval "what=\${FAKE_TRAINER_$rank:-ok}"
case "$what" in
  fail)
    i=1
    while [ $i -le 30 ]; do echo "rank $rank line $i"; i=$((i + 1)); done
    exit 1 ;;
  hang) exec sleep 1000 ;;
  kill) sleep 0.3; kill -9 $$ ;;
esac
if [ "$rank" = 0 ]; then
  echo '{"format": "benchmake-metrics", "written_by_rank": 0}' > "$out/metrics.json"
fi
echo "fake trainer: rank $rank done"
