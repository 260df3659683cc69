#!/usr/bin/env python3
"""Mutates the repository's BENCHFILEs and checks how benchmake takes each mutant.

The rule (README, "bad input"): a BENCHFILE benchmake cannot use is refused with exit 2 and a
message naming FILE:LINE:COL, and leaves nothing behind; a usable one is accepted. This script
takes every tracked BENCHFILE.toml, makes mutants of it (a line deleted or doubled, a value
swapped for another type or an extreme number, a key misspelt, a target made its own input, the
file cut short, a byte flipped), writes each in place of the original in a copy of the tree and
runs `benchmake build -n` and `benchmake status` on it. Best with a sanitizer build
(`-DBENCHMAKE_SANITIZE=address,undefined`), whose reports it looks for.

A finding is: a sanitizer report, an uncaught exception or a signal, an exit code other than
0 or 2, no end within the time limit, an exit 2 whose message names no place in the mutated
BENCHFILE (listed apart: some errors rightly name another file), or a refused mutant that
changed the workspace (anything under out/, or under .benchmake/ but the lock when the
BENCHFILE did not load).

  python3 scripts/fuzz_benchfile.py --benchmake build-asan/benchmake [--mutants 200] [--seed 1]

Exit 1 when there is a finding of the first kinds; the summary counts each outcome.
"""
import argparse
import hashlib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

VALUES = ['""', '0', '-1', '1e309', 'nan', '-inf', 'true', '[]', '{}', '"x"', '1.5',
          '9223372036854775808', '-9223372036854775809', '4294967297', '1e-320', '[1, "a"]',
          '{ a = 1 }', '"' + 'y' * 5000 + '"', '"TP0PP0DP0"', '0.0', '"../../../../etc/passwd"',
          '"/"', '"\\u0000"', '"é\\u202e"', '2024-01-01T00:00:00Z', '[[1], [2]]', "'''\n'''",
          '"{in.nowhere}"', '"{out}/../../x"', '-0', '"cuda:99"', '"TP3PP1DP1"', '"TP1PP1DP0"',
          '100000000000', '"fp8"', '0x10', '1_000']

# Refusals of a BENCHFILE that loaded (engine/plan.h): the generator's state is rightly new.
PLAN_REFUSAL = re.compile(r"cannot run here|needs \d+ GPU\(s\)")
# Lines of structure inserted anywhere. Not `executor = "slurm"`: its platform probe through srun
# fails (exit 1, naming srun's error) where no cluster runs, as it should.
STRUCTURE = ['[benchmake]', '[target.x]', 'rule = "exec"', '[[target.a]]', 'target = 1',
             '[benchmake.slurm]', 'jobs = "2"', '[target]', 'rule = "pretrain"', 'inputs = []',
             '[benchmake.cache]', 'url = "http://127.0.0.1:1/"', 'gpus = 3', 'layout = "TP2PP2DP1"', 'device = "cuda"', '[target."a.b".c]']
SANITIZER = re.compile(r'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:|'
                       r'terminate called|Assertion .* failed')


def tracked_benchfiles(root):
    out = subprocess.run(['git', '-C', root, 'ls-files', '*BENCHFILE.toml'], check=True,
                         capture_output=True, text=True).stdout.split()
    return sorted(out)


def mutate(text, rng):
    """One mutant of `text` and what was done, as bytes (flips may make it invalid UTF-8)."""
    lines = text.split('\n')
    kind = rng.choice(['delete', 'double', 'value', 'value', 'value', 'key', 'self_input',
                       'truncate', 'flip', 'number', 'unquote', 'swap_targets', 'insert'])
    assign = [i for i, l in enumerate(lines) if re.match(r'\s*[A-Za-z_"][^=#]*=', l)]
    if kind == 'delete':
        i = rng.randrange(len(lines))
        return '\n'.join(lines[:i] + lines[i + 1:]).encode(), f'delete line {i + 1}'
    if kind == 'double':
        i = rng.randrange(len(lines))
        return '\n'.join(lines[:i + 1] + lines[i:]).encode(), f'double line {i + 1}'
    if kind in ('value', 'key', 'number', 'unquote') and assign:
        i = rng.choice(assign)
        key, _, value = lines[i].partition('=')
        if kind == 'value':
            lines[i] = key + '= ' + rng.choice(VALUES)
        elif kind == 'key':
            lines[i] = key.rstrip() + rng.choice(['s', '_', 'x']) + ' =' + value
        elif kind == 'number':
            nums = list(re.finditer(r'(?<![\w.])\d+(\.\d+)?', value))
            if not nums:
                return mutate(text, rng)
            m = rng.choice(nums)
            new = rng.choice(['0', '-' + m.group(), m.group() + '000000', str(2 ** 63),
                              m.group() + 'e400'])
            lines[i] = key + '=' + value[:m.start()] + new + value[m.end():]
        else:
            lines[i] = key + '=' + value.replace('"', '', 1)
        return '\n'.join(lines).encode(), f'{kind} at line {i + 1}'
    if kind == 'insert':  # a line of structure where it does not belong
        i = rng.randrange(len(lines) + 1)
        line = rng.choice(STRUCTURE)
        return '\n'.join(lines[:i] + [line] + lines[i:]).encode(), f'insert {line!r} at {i + 1}'
    if kind == 'self_input':
        heads = [(i, m.group(1)) for i, l in enumerate(lines)
                 for m in [re.match(r'\[target\.("?[^\]]+"?)\]', l)] if m]
        if not heads:
            return mutate(text, rng)
        i, name = rng.choice(heads)
        name = name.strip('"')
        lines.insert(i + 1, f'inputs = ["{name}"]')
        return '\n'.join(lines).encode(), f'{name} as its own input'
    if kind == 'swap_targets':
        names = re.findall(r'^\[target\.("?[^\]]+"?)\]', text, re.M)
        if len(names) < 2:
            return mutate(text, rng)
        a, b = rng.sample(names, 2)
        return text.replace(f'[target.{a}]', f'[target.{b}]', 1).encode(), f'{a} named {b}'
    data = bytearray(text.encode())
    if kind == 'truncate':
        n = rng.randrange(len(data))
        return bytes(data[:n]), f'cut at byte {n}'
    n = rng.randrange(len(data))
    data[n] = rng.choice([0, 0x80, 0xff, ord('"'), ord('['), ord(']'), ord('='), ord('\n')])
    return bytes(data), f'byte {n} set to {data[n]:#x}'


def snapshot(ws):
    seen = {}
    for top in ('out', '.benchmake'):
        for dirpath, _, files in os.walk(os.path.join(ws, top)):
            for f in files:
                p = os.path.join(dirpath, f)
                if os.path.basename(p) in ('lock', 'lock.pid'):
                    continue
                with open(p, 'rb') as f:  # contents: the generator rewrites equal files
                    seen[os.path.relpath(p, ws)] = hashlib.sha1(f.read()).hexdigest()
    return seen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--benchmake', required=True)
    ap.add_argument('--mutants', type=int, default=200, help='a BENCHFILE')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--timeout', type=float, default=120)
    ap.add_argument('--keep', help='a folder for the mutants of the findings')
    ap.add_argument('--accepted', action='store_true',
                    help='list the value mutants that were accepted, with the line (to review: '
                         'a value that should have been refused)')
    args = ap.parse_args()
    root = subprocess.run(['git', 'rev-parse', '--show-toplevel'], check=True,
                          capture_output=True, text=True).stdout.strip()
    exe = os.path.abspath(args.benchmake)
    rng = random.Random(args.seed)
    tree = tempfile.mkdtemp(prefix='fuzz_benchfile.')
    subprocess.run(f'git -C {root} archive HEAD | tar -x -C {tree}', shell=True, check=True)
    # BENCHMAKE_GPUS: the examples' full-size targets plan on 8 GPUs (a dry run starts nothing).
    env = dict(os.environ, BENCHMAKE_CACHE_DIR=os.path.join(tree, '.cache'), NO_COLOR='1',
               BENCHMAKE_GPUS='8',
               ASAN_OPTIONS='detect_leaks=1:abort_on_error=0',
               UBSAN_OPTIONS='print_stacktrace=1:halt_on_error=1')
    counts, findings, placeless, accepted = {}, [], [], []
    for rel in tracked_benchfiles(root):
        path = os.path.join(tree, rel)
        ws = os.path.dirname(path)
        original = open(path, encoding='utf-8').read()
        for n in range(args.mutants):
            mutant, what = mutate(original, rng)
            with open(path, 'wb') as f:
                f.write(mutant)
            for cmd in (['build', '-n'], ['status']):
                before = snapshot(ws)
                try:
                    p = subprocess.run([exe, '-C', ws] + cmd, env=env, capture_output=True,
                                       timeout=args.timeout)
                    rc, err = p.returncode, p.stderr.decode('utf-8', 'replace')
                except subprocess.TimeoutExpired:
                    rc, err = 'timeout', ''
                tag = f'{rel} #{n} ({what}) {" ".join(cmd)}'
                outcome = 'ok' if rc == 0 else 'refused' if rc == 2 else f'rc {rc}'
                counts[outcome] = counts.get(outcome, 0) + 1
                bad = None
                if SANITIZER.search(err):
                    bad = 'sanitizer/abort: ' + SANITIZER.search(err).group()
                elif rc not in (0, 2):
                    bad = f'exit {rc}'
                elif rc == 2:
                    after = snapshot(ws)
                    if PLAN_REFUSAL.search(err):  # a loaded BENCHFILE: its state is new
                        after, before = ({k: v for k, v in m.items() if k.startswith('out')}
                                         for m in (after, before))
                    if after != before:
                        changed = sorted(k for k in set(after) | set(before)
                                         if after.get(k) != before.get(k))
                        bad = 'refused but the workspace changed: ' + ', '.join(changed[:5])
                    elif not re.search(re.escape(os.path.basename(path)) + r':\d+:\d+', err):
                        placeless.append(f'{tag}: {err.strip()[:300]}')
                if rc == 0 and cmd[0] == 'build' and re.match(r'(value|number|unquote) at', what):
                    line = int(what.rsplit(' ', 1)[1])
                    text = mutant.decode('utf-8', 'replace').split('\n')[line - 1]
                    accepted.append(f'{rel}:{line}: {text[:160]}')
                if bad:
                    findings.append(f'{tag}: {bad}\n    {err.strip()[-1500:]}')
                    if args.keep:
                        os.makedirs(args.keep, exist_ok=True)
                        keep = os.path.join(args.keep, f'{len(findings)}.toml')
                        with open(keep, 'wb') as f:
                            f.write(mutant)
        with open(path, 'w', encoding='utf-8') as f:
            f.write(original)
    print('outcomes:', ', '.join(f'{k} {v}' for k, v in sorted(counts.items())))
    print(f'refused without a place in the BENCHFILE: {len(placeless)}')
    for line in placeless:
        print('  ' + line)
    if args.accepted:
        print(f'value mutants accepted: {len(accepted)}')
        for line in accepted:
            print('  ' + line)
    print(f'findings: {len(findings)}')
    for line in findings:
        print('  ' + line)
    shutil.rmtree(tree, ignore_errors=True)
    return 1 if findings else 0


if __name__ == '__main__':
    sys.exit(main())
