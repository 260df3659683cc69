// The exit status of a rank that failed only because another rank was lost.
//
// When one rank of a multi-process run dies (killed by a signal, out of
// memory, a crash, its machine gone), its peers learn of it within
// milliseconds: their next collective breaks (Gloo: the connection to it was
// reset or closed; NCCL: a remote error). Each peer then exits too, and a
// launcher that sees several ranks end at once cannot tell from exit statuses
// alone which one caused it — srun and mpirun report the tasks in the order
// their ends reached them, not the order they happened.
//
// So a rank whose collective broke because a peer disappeared exits with
// kExitPeerLost instead of 1, and every launcher (rules/launch/launcher.h)
// names, of the ranks that failed, one that did not exit with it: a rank
// killed by a signal or failing by itself. A run in which every failed rank
// only lost a peer names the first that the launcher saw.
//
// 75 is sysexits.h's EX_TEMPFAIL ("a temporary failure; the user is invited to
// retry"): the rank did nothing wrong. It is clear of 1 (a failure), 2 (bad
// input), 126-127 (the shell's: not executable, not found) and 128+N (a shell
// reporting a child killed by signal N). Any command started as a rank may use
// it to say the same (docs/TRAINER.md, "Several ranks").
#pragma once

namespace bm::train::dist {

inline constexpr int kExitPeerLost = 75;

}  // namespace bm::train::dist
