#!/usr/bin/env python3
"""benchmake-train's training batches, row for row, for a second framework (plain Python, no numpy).

A run that must see the same batches as benchmake-train (examples/tools/torch_align.py, the PyTorch
peer of the loss-alignment check) reads them through this module. What benchmake-train does, from
its source (trainer/data/token_data.h, trainer/data/batch.{h,cc}, trainer/rng.h,
trainer/run/train_loop.cc):

  * The train split (TOKENIZE_OUT/train.bin + train.idx, Megatron's indexed dataset:
    base/formats/megatron_dataset.h) is read as ONE stream of tokens: every sequence of the index,
    in index order, back to back (each already ends with the end-of-text token). No shuffling of
    documents, no padding, no attention reset at document boundaries.
  * Optimizer step s (1-based) has GBS = LBS * GAS * DP rows, numbered 0..GBS-1. Micro-batch g of
    data-parallel rank r holds rows (g * DP + r) * LBS .. + LBS - 1; so the ranks' rows together are
    one process's rows whatever DP, LBS and GAS.
  * Row `row` of step s is the window of T + 1 consecutive stream tokens (T = mpe) starting at
        start = UniformIntAt(seed, kStreamData = 1, index = (s << 24) | row, n = num_tokens - T)
    inputs = window[:T], targets = window[1:]. Windows are drawn independently (with
    replacement): rows of one step may overlap.
  * UniformIntAt(seed, stream, index, n) = (Mix(seed, stream, index) * n) >> 64 (128-bit product),
    Mix(seed, stream, index) = SplitMix64(SplitMix64(SplitMix64(seed) ^ stream) ^ index), and
    SplitMix64 is Steele, Lea and Flood's finalizer of x + 0x9E3779B97F4A7C15 (so SplitMix64(0)
    = 0xE220A8397B1DCDAF, the first output of the reference splitmix64 seeded with 0).
  * Loss: the mean over every target of the step (all micro-batches, all ranks) of the token
    cross-entropy; pretraining data has no loss mask (finetune data's train_mask.bin would
    weight targets; not handled here: the peer refuses a split with a mask).

Command line (tests/trainer/data_order_test.cc runs it against the trainer's own batches):
  python3 align_data.py windows DATA_DIR --seed S --mpe T --steps 1,2 --rows 0-5
      one line per (step, row): "step row tok_0 ... tok_T" (the window, T + 1 tokens)
  python3 align_data.py selftest      the SplitMix64 reference value above
"""
import argparse
import bisect
import mmap
import os
import struct
import sys
from array import array

MASK64 = (1 << 64) - 1
STREAM_DATA = 1

# Megatron's dtype codes (megatron/core/datasets/indexed_dataset.py) -> array typecodes.
_DTYPES = {1: "B", 2: "b", 3: "h", 4: "i", 5: "q", 8: "H"}
_MAGIC = b"MMIDIDX\x00\x00"


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def mix(seed, stream, index):
    return splitmix64(splitmix64(splitmix64(seed & MASK64) ^ stream) ^ (index & MASK64))


def uniform_int(seed, stream, index, n):
    return (mix(seed, stream, index) * n) >> 64


def window_start(seed, step, row, num_tokens, T):
    """Stream offset of row `row` of optimizer step `step` (1-based)."""
    if num_tokens <= T:
        raise ValueError(f"the training data has {num_tokens} tokens, fewer than one window of "
                         f"mpe + 1 = {T + 1}")
    return uniform_int(seed, STREAM_DATA, ((step << 24) | row) & MASK64, num_tokens - T)


def rank_rows(micro, dp_rank, dp, lbs):
    """The global rows micro-batch `micro` of data-parallel rank `dp_rank` holds."""
    first = (micro * dp + dp_rank) * lbs
    return range(first, first + lbs)


class TokenStream:
    """PREFIX.bin/.idx (Megatron's indexed dataset) as one stream of tokens, mapped read-only."""

    def __init__(self, prefix):
        with open(prefix + ".idx", "rb") as f:
            idx = f.read()
        if idx[:9] != _MAGIC:
            raise ValueError(f"{prefix}.idx: not a Megatron index (magic {idx[:9]!r})")
        version, = struct.unpack_from("<Q", idx, 9)
        if version != 1:
            raise ValueError(f"{prefix}.idx: index version {version}, only 1 is read")
        code = idx[17]
        if code not in _DTYPES:
            raise ValueError(f"{prefix}.idx: dtype code {code} is not an integer token type")
        self.typecode = _DTYPES[code]
        self.itemsize = array(self.typecode).itemsize
        seqs, _docs = struct.unpack_from("<QQ", idx, 18)
        at = 34
        self.sizes = array("i", idx[at:at + 4 * seqs])
        at += 4 * seqs
        self.pointers = array("q", idx[at:at + 8 * seqs])
        if sys.byteorder != "little":
            self.sizes.byteswap()
            self.pointers.byteswap()
        self.starts = [0]  # stream offset of each sequence, then the total
        for n in self.sizes:
            self.starts.append(self.starts[-1] + n)
        self._file = open(prefix + ".bin", "rb")
        size = os.fstat(self._file.fileno()).st_size
        self._bin = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        for p, n in zip(self.pointers, self.sizes):
            if p < 0 or p + n * self.itemsize > size:
                raise ValueError(f"{prefix}.bin: a sequence lies outside the file ({size} bytes)")

    @property
    def num_tokens(self):
        return self.starts[-1]

    def read(self, offset, count):
        """Stream tokens [offset, offset + count) as a list of ints."""
        if offset < 0 or offset + count > self.num_tokens:
            raise ValueError(f"tokens [{offset}, {offset + count}) past the end ({self.num_tokens})")
        out = []
        seq = bisect.bisect_right(self.starts, offset) - 1
        while count > 0:
            in_seq = offset - self.starts[seq]
            n = min(count, self.starts[seq + 1] - offset)
            begin = self.pointers[seq] + in_seq * self.itemsize
            part = array(self.typecode, self._bin[begin:begin + n * self.itemsize])
            if sys.byteorder != "little":
                part.byteswap()
            out.extend(part)
            offset += n
            count -= n
            seq += 1
        return out


def open_train_split(data_dir):
    """The train split of a tokenize output directory; refuses one with a loss mask."""
    if os.path.exists(os.path.join(data_dir, "train_mask.idx")):
        raise ValueError(f"{data_dir} has a loss mask (train_mask.idx): instruction data; the "
                         "peer trains on pretraining data only")
    return TokenStream(os.path.join(data_dir, "train"))


def window(stream, seed, step, row, T):
    """Row `row` of step `step`: T + 1 tokens (inputs = [:T], targets = [1:])."""
    return stream.read(window_start(seed, step, row, stream.num_tokens, T), T + 1)


def _ranges(text):
    out = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("windows", help="print the windows of some rows of some steps")
    w.add_argument("data", help="a tokenize output directory (train.bin/.idx)")
    w.add_argument("--seed", type=int, required=True)
    w.add_argument("--mpe", type=int, required=True)
    w.add_argument("--steps", required=True, help="1,2 or 1-3")
    w.add_argument("--rows", required=True, help="0-7")
    sub.add_parser("selftest", help="check SplitMix64 against the reference value")
    args = ap.parse_args(argv)
    if args.cmd == "selftest":
        got = splitmix64(0)
        print(f"splitmix64(0) = {got:#018x}")
        return 0 if got == 0xE220A8397B1DCDAF else 1
    stream = TokenStream(os.path.join(args.data, "train"))
    for step in _ranges(args.steps):
        for row in _ranges(args.rows):
            toks = window(stream, args.seed, step, row, args.mpe)
            print(step, row, *toks)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
