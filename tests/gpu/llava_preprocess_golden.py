#!/usr/bin/env python3
"""The llava_data rule against LLaVA's own preprocessing code.

Loads preprocess_multimodal, preprocess_plain and preprocess_v1 (llava/train/train.py),
tokenizer_image_token (llava/mm_utils.py), llava/conversation.py and llava/constants.py
from a LLaVA checkout (github.com/haotian-liu/LLaVA; a work tree, or a bare git
directory whose HEAD is read), taking the functions out of train.py with `ast` so that
neither deepspeed, torch nor transformers' Trainer has to be importable. It runs them on
a LLaVA JSON file, as LLaVA's LazySupervisedDataset.__getitem__ does (one sample at a
time, conversation_lib.default_conversation set as train.py sets it for --version
plain / v1), with the tokenizer LLaVA builds (AutoTokenizer, use_fast=False: the slow
LlamaTokenizer; padding right; pad = unk; model_max_length), and compares, sample by
sample, the input_ids and the label masks with a llava_data output directory:
  our ids == LLaVA's input_ids with IMAGE_TOKEN_INDEX (-200) replaced by stats.json's
  image_token_id; our mask == (labels != IGNORE_INDEX); train_images.bin names the image
  the sample's "image" field names (images.json's sources).
With --pixels (and no padding option turned off) it also checks images.u8 against LLaVA's
image path in Pillow: expand2square with int(mean * 255), then CLIPImageProcessor's
resize (shortest edge, int(size * long / short), PIL BICUBIC) and center crop
((h - size) // 2), the uint8 image before rescale and normalise, byte for byte.

Tokenizer (--tokenizer):
  transformers  AutoTokenizer.from_pretrained(FOLDER, use_fast=False, ...) as train.py calls
                it, FOLDER holding the model and a tokenizer_config.json like
                Vicuna-v1.5's — the reference; needs transformers and sentencepiece.
                LLaVA-1.5 pins transformers 4.37.2 (tokenizers 0.15.1), where this is the
                slow LlamaTokenizer; the class and version used are printed (transformers
                5 reorganised its tokenizers: a difference there may be the version's).
  shim          a few lines over the sentencepiece module mirroring the slow
                LlamaTokenizer's tokenize / _tokenize (transformers 4.37) and a NumPy
                stand-in for the torch calls LLaVA's functions make; for machines
                without transformers (CTest llava_preprocess_golden_shim).
  auto          transformers when importable, else shim (the default).

    python3 tests/gpu/llava_preprocess_golden.py --llava /path/to/LLaVA \\
        --json examples/llava1.5_13b/data/sample/llava_v1_5_mix665k.json \\
        --data WORKSPACE/out/smoke_llava_data --vocab data/kjv_sp.model --template v1

Or let it make the datasets itself with a built benchmake (a scratch workspace holding
llava_images + llava_data targets for both sample files, both templates):
    python3 tests/gpu/llava_preprocess_golden.py --llava /path/to/LLaVA \\
        --benchmake build/benchmake --pixels

Exit status: 0 all equal, 1 a difference (the first few are printed), 2 a usage or
setup error, 77 the LLaVA checkout is absent (CTest's skip code).
"""
import argparse
import ast
import copy
import importlib.util
import json
import os
import struct
import subprocess
import sys
import shutil
import tempfile
import types

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "examples/llava1.5_13b/data/sample")
SPIECE_UNDERLINE = "\u2581"


# ---- LLaVA's source --------------------------------------------------------------

def read_llava_file(checkout, rel):
    if os.path.isfile(os.path.join(checkout, rel)):
        with open(os.path.join(checkout, rel), encoding="utf-8") as f:
            return f.read()
    git_dir = checkout if os.path.isdir(os.path.join(checkout, "objects")) else None
    if git_dir is None:
        raise FileNotFoundError(f"{checkout}: no {rel} (not a LLaVA work tree or git dir)")
    return subprocess.run(["git", "--git-dir", git_dir, "show", "HEAD:" + rel], check=True,
                          capture_output=True, text=True).stdout


def module_from_source(name, source, namespace=None):
    mod = types.ModuleType(name)
    mod.__dict__.update(namespace or {})
    exec(compile(source, name, "exec"), mod.__dict__)
    return mod


def functions_from_source(source, filename, names, namespace):
    """Execs only the named top-level functions of `source` in `namespace`."""
    tree = ast.parse(source, filename)
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    missing = set(names) - {n.name for n in found}
    if missing:
        raise LookupError(f"{filename}: no function {sorted(missing)}")
    exec(compile(ast.Module(body=found, type_ignores=[]), filename, "exec"), namespace)
    return {n: namespace[n] for n in names}


# ---- torch and tokenizer stand-ins (shim mode) -------------------------------------

class ShimTensor(np.ndarray):
    """The torch.Tensor methods LLaVA's preprocess calls."""

    def clone(self):
        return self.copy()

    def ne(self, other):
        return np.not_equal(self, other)


def numpy_torch():
    t = types.ModuleType("torch")
    t.long = np.int64
    t.Tensor = ShimTensor
    t.tensor = lambda data, dtype=None: np.asarray(data, dtype=dtype or np.int64).view(ShimTensor)
    t.stack = lambda xs, dim=0: np.stack(xs, axis=dim).view(ShimTensor)
    return t


def without_dummy_prefix(model_bytes):
    """The model with normalizer_spec.add_dummy_prefix = false, as transformers'
    LlamaTokenizer.get_spm_processor makes it for legacy=False (protobuf's last value of
    a scalar field wins: append field 3 = 0 to normalizer_spec, field 3 of ModelProto)."""
    def varint(buf, pos):
        shift = value = 0
        while True:
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value, pos

    def put_varint(v):
        out = bytearray()
        while True:
            b = v & 0x7F
            v >>= 7
            out.append(b | (0x80 if v else 0))
            if not v:
                return bytes(out)

    out, pos = bytearray(), 0
    while pos < len(model_bytes):
        start = pos
        key, pos = varint(model_bytes, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = varint(model_bytes, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            n, body = varint(model_bytes, pos)
            pos = body + n
            if field == 3:
                payload = model_bytes[body:pos] + b"\x18\x00"
                out += put_varint(key) + put_varint(len(payload)) + payload
                continue
        else:
            raise ValueError(f"unexpected protobuf wire type {wire}")
        out += model_bytes[start:pos]
    return bytes(out)


class ShimLlamaTokenizer:
    """The slow LlamaTokenizer (transformers 4.37) as LLaVA uses it: __call__ with
    BOS, the text cut at the special tokens (a trie: leftmost, longest), legacy=False's
    "▁" prefix of the whole text and unk-prefixed encoding of pieces that start with a
    space, right padding with pad = unk, truncation to model_max_length."""

    def __init__(self, vocab_file, legacy, model_max_length):
        import sentencepiece as spm
        with open(vocab_file, "rb") as f:
            proto = f.read()
        self.sp = spm.SentencePieceProcessor()
        self.sp.LoadFromSerializedProto(proto if legacy else without_dummy_prefix(proto))
        self.legacy = legacy
        self.model_max_length = model_max_length
        self.unk_token, self.bos_token, self.eos_token = "<unk>", "<s>", "</s>"
        self.special = {t: self.sp.piece_to_id(t) for t in ("<unk>", "<s>", "</s>")}
        self.all_special_tokens = list(self.special)
        self.bos_token_id = self.special["<s>"]
        self.unk_token_id = self.special["<unk>"]
        self.pad_token = self.unk_token
        self.pad_token_id = self.unk_token_id
        self.unk_token_length = len(self.sp.encode(self.unk_token, out_type=str))

    def _split_special(self, text):
        out, start, i = [], 0, 0
        while i < len(text):
            match = max((t for t in self.special if text.startswith(t, i)), key=len, default=None)
            if match is None:
                i += 1
                continue
            if i > start:
                out.append(text[start:i])
            out.append(match)
            i += len(match)
            start = i
        if start < len(text):
            out.append(text[start:])
        return out

    def _tokenize(self, text):
        tokens = self.sp.encode(text, out_type=str)
        if self.legacy or not text.startswith((SPIECE_UNDERLINE, " ")):
            return tokens
        tokens = self.sp.encode(self.unk_token + text, out_type=str)
        return tokens[self.unk_token_length:] if len(tokens) >= self.unk_token_length else tokens

    def _base_tokenize(self, text):
        out = []
        for piece in self._split_special(text):
            out += [piece] if piece in self.special else self._tokenize(piece)
        return out

    def tokenize(self, text):
        if self.legacy or len(text) == 0:
            return self._base_tokenize(text)
        tokens = self._base_tokenize(SPIECE_UNDERLINE + text.replace(SPIECE_UNDERLINE, " "))
        if len(tokens) > 1 and tokens[0] == SPIECE_UNDERLINE and tokens[1] in self.special:
            tokens = tokens[1:]
        return tokens

    def _ids(self, text):
        return [self.bos_token_id] + [self.special[t] if t in self.special
                                      else self.sp.piece_to_id(t) for t in self.tokenize(text)]

    def __call__(self, text, return_tensors=None, padding=False, max_length=None,
                 truncation=False):
        if isinstance(text, str):
            return types.SimpleNamespace(input_ids=self._ids(text))
        rows = [self._ids(t) for t in text]
        if truncation:
            rows = [r[:max_length or self.model_max_length] for r in rows]
        if padding == "longest":
            width = max(len(r) for r in rows)
            rows = [r + [self.pad_token_id] * (width - len(r)) for r in rows]
        ids = np.asarray(rows, dtype=np.int64).view(ShimTensor) if return_tensors else rows
        return types.SimpleNamespace(input_ids=ids)


def make_tokenizer(kind, vocab, legacy, model_max_length, folder):
    """LLaVA's tokenizer: AutoTokenizer.from_pretrained(MODEL, model_max_length=...,
    padding_side="right", use_fast=False) on a folder laid out as Vicuna-v1.5's tokenizer
    files (tokenizer.model, tokenizer_config.json: LlamaTokenizer, add_bos_token true,
    add_eos_token false, `legacy`), then pad_token = unk_token (train.py, version v1)."""
    if kind in ("auto", "transformers"):
        try:
            import transformers
        except ImportError:
            if kind == "transformers":
                raise
        else:
            shutil.copy(vocab, os.path.join(folder, "tokenizer.model"))
            special = lambda t: {"__type": "AddedToken", "content": t, "lstrip": False,
                                 "normalized": False, "rstrip": False, "single_word": False}
            with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
                json.dump({"tokenizer_class": "LlamaTokenizer", "add_bos_token": True,
                           "add_eos_token": False, "legacy": legacy,
                           "clean_up_tokenization_spaces": False, "pad_token": None,
                           "bos_token": special("<s>"), "eos_token": special("</s>"),
                           "unk_token": special("<unk>"), "sp_model_kwargs": {}}, f)
            try:
                tok = transformers.AutoTokenizer.from_pretrained(
                    folder, model_max_length=model_max_length, padding_side="right",
                    use_fast=False)
            except Exception as e:  # e.g. no slow tokenizer or sentencepiece in this install
                if kind == "transformers":
                    raise
                print(f"transformers {transformers.__version__}: no slow LlamaTokenizer "
                      f"({type(e).__name__}: {e}); using the shim")
                return ShimLlamaTokenizer(vocab, legacy, model_max_length), "shim LlamaTokenizer"
            tok.pad_token = tok.unk_token
            name = (f"transformers {transformers.__version__} {type(tok).__name__} "
                    f"(is_fast={getattr(tok, 'is_fast', '?')}, legacy={getattr(tok, 'legacy', '?')})")
            return tok, name
    return ShimLlamaTokenizer(vocab, legacy, model_max_length), "shim LlamaTokenizer"


# ---- LLaVA's preprocess, loaded -------------------------------------------------

class Llava:
    def __init__(self, checkout, use_torch):
        if use_torch:
            import torch
        else:
            torch = numpy_torch()
        self.torch = torch
        constants = module_from_source("llava.constants",
                                       read_llava_file(checkout, "llava/constants.py"))
        conversation = module_from_source("llava.conversation",
                                          read_llava_file(checkout, "llava/conversation.py"))
        self.constants, self.conversation = constants, conversation
        ns = {k: getattr(constants, k) for k in dir(constants) if k.isupper()}
        ns["torch"] = torch
        functions_from_source(read_llava_file(checkout, "llava/mm_utils.py"),
                              "llava/mm_utils.py", ["tokenizer_image_token"], ns)
        try:
            import tokenizers
            from packaging import version
            at_least_014 = version.parse(tokenizers.__version__) >= version.parse("0.14")
        except ImportError:
            at_least_014 = True  # LLaVA-1.5 pins tokenizers 0.15.1
        from typing import Dict, Sequence
        ns.update({
            "copy": copy, "conversation_lib": conversation, "Dict": Dict, "Sequence": Sequence,
            "transformers": types.SimpleNamespace(PreTrainedTokenizer=object),
            "DataArguments": object, "IS_TOKENIZER_GREATER_THAN_0_14": at_least_014,
        })
        self.fns = functions_from_source(
            read_llava_file(checkout, "llava/train/train.py"), "llava/train/train.py",
            ["preprocess_multimodal", "preprocess_plain", "preprocess_v1", "preprocess"], ns)
        self.tokenizer_image_token = ns["tokenizer_image_token"]
        self.at_least_014 = at_least_014

    def sample(self, record, tokenizer, version):
        """LazySupervisedDataset.__getitem__'s text part for one record."""
        conv = self.conversation
        conv.default_conversation = conv.conv_templates[
            {"plain": "plain", "vicuna_v1": "vicuna_v1", "v1": "vicuna_v1"}[version]]
        sources = copy.deepcopy([record["conversations"]])
        has_image = "image" in record
        if has_image:
            data_args = types.SimpleNamespace(is_multimodal=True, mm_use_im_start_end=False)
            sources = self.fns["preprocess_multimodal"](sources, data_args)
        out = self.fns["preprocess"](sources, tokenizer, has_image=has_image)
        ids = np.asarray(out["input_ids"][0]).astype(np.int64)
        labels = np.asarray(out["labels"][0]).astype(np.int64)
        return ids, labels


# ---- our dataset -------------------------------------------------------------------

DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 8: np.uint16}


def read_indexed(prefix):
    with open(prefix + ".idx", "rb") as f:
        idx = f.read()
    if idx[:9] != b"MMIDIDX\x00\x00":
        raise ValueError(f"{prefix}.idx: not a Megatron index")
    version, code, count, doc_count = struct.unpack_from("<QBQQ", idx, 9)
    sizes = np.frombuffer(idx, np.int32, count, 34)
    pointers = np.frombuffer(idx, np.int64, count, 34 + 4 * count)
    data = np.fromfile(prefix + ".bin", dtype=DTYPES[code])
    item = np.dtype(DTYPES[code]).itemsize
    return [data[p // item: p // item + s] for p, s in zip(pointers, sizes)]


def compare(llava, tokenizer, json_path, data_dir, version, limit):
    with open(os.path.join(data_dir, "stats.json")) as f:
        stats = json.load(f)
    if stats.get("valid", {}).get("samples", 0):
        raise SystemExit(f"{data_dir}: has a valid split; make it with valid_fraction = 0")
    ids = read_indexed(os.path.join(data_dir, "train"))
    masks = read_indexed(os.path.join(data_dir, "train_mask"))
    images = read_indexed(os.path.join(data_dir, "train_images"))
    sources = []
    if os.path.exists(os.path.join(data_dir, "images.json")):
        with open(os.path.join(data_dir, "images.json")) as f:
            sources = json.load(f)["sources"]
    with open(json_path, encoding="utf-8") as f:
        records = json.load(f)
    if len(records) != len(ids):
        return [f"{json_path}: {len(records)} samples, {data_dir}: {len(ids)}"]
    image_id = stats["image_token_id"]
    errors = []
    mismatched = 0
    for i, record in enumerate(records):
        want_ids, labels = llava.sample(record, tokenizer, version)
        want_ids = np.where(want_ids == llava.constants.IMAGE_TOKEN_INDEX, image_id, want_ids)
        want_mask = (labels != llava.constants.IGNORE_INDEX).astype(np.uint8)
        mismatched += int(not want_mask.any())
        where = f"{os.path.basename(json_path)} sample {i} (id {record.get('id')!r})"
        ours_ids, ours_mask = ids[i].astype(np.int64), masks[i]
        if "image" not in record:  # LLaVA cuts text-only samples here; our trainer cuts later
            ours_ids = ours_ids[:tokenizer.model_max_length]
            ours_mask = ours_mask[:tokenizer.model_max_length]
        if not np.array_equal(want_ids, ours_ids):
            errors.append(f"{where}: ids differ\n  LLaVA {want_ids.tolist()}\n  ours  "
                          f"{ours_ids.tolist()}")
        elif not np.array_equal(want_mask, ours_mask):
            errors.append(f"{where}: masks differ\n  LLaVA {want_mask.tolist()}\n  ours  "
                          f"{ours_mask.tolist()}")
        want_image = [record["image"]] if "image" in record else []
        ours = [sources[k] for k in images[i].tolist()]
        if want_image != ours:
            errors.append(f"{where}: image {want_image} but ours {ours}")
        if len(errors) >= limit:
            break
    print(f"{json_path} ({version}) vs {data_dir}: {len(records)} samples, "
          f"{sum(len(x) for x in ids)} tokens, {sum(int(m.sum()) for m in masks)} labels, "
          f"{mismatched} fully masked by LLaVA; {len(errors)} differences")
    return errors


def check_pixels(image_folder, data_dir, limit):
    from PIL import Image
    with open(os.path.join(data_dir, "images.json")) as f:
        meta = json.load(f)
    size = meta["size"]
    pixels = np.fromfile(os.path.join(data_dir, "images.u8"), np.uint8).reshape(-1, size, size, 3)
    background = tuple(int(x * 255) for x in meta["mean"])
    errors = []
    for k, rel in enumerate(meta["sources"]):
        img = Image.open(os.path.join(image_folder, rel)).convert("RGB")
        if meta["pad_to_square"]:  # train.py's expand2square
            w, h = img.size
            if w != h:
                side = max(w, h)
                square = Image.new(img.mode, (side, side), background)
                square.paste(img, (0, (w - h) // 2) if w > h else ((h - w) // 2, 0))
                img = square
        w, h = img.size  # transformers' get_resize_output_image_size(shortest_edge=size)
        short, long = (w, h) if w <= h else (h, w)
        new_short, new_long = size, int(size * long / short)
        img = img.resize((new_short, new_long) if w <= h else (new_long, new_short),
                         Image.BICUBIC)
        arr = np.asarray(img)
        top, left = (arr.shape[0] - size) // 2, (arr.shape[1] - size) // 2
        want = arr[top:top + size, left:left + size]
        diff = np.abs(want.astype(int) - pixels[k].astype(int))
        if diff.max() != 0:
            errors.append(f"{rel}: images.u8[{k}] differs from Pillow in {int((diff > 0).sum())}"
                          f" values (max {int(diff.max())})")
            if len(errors) >= limit:
                break
    print(f"{data_dir}/images.u8: {len(meta['sources'])} images of {size}x{size} vs Pillow; "
          f"{len(errors)} differ")
    return errors


# ---- datasets made with benchmake ----------------------------------------------------

def make_datasets(benchmake, vocab, workspace, legacy, model_max_length):
    folder = os.path.join(SAMPLE, "images")
    runs = [("pretrain", "blip_laion_cc_sbu_558k.json", "plain"),
            ("finetune", "llava_v1_5_mix665k.json", "vicuna_v1")]
    text = ""
    for name, file, template in runs:
        text += (f'[target.{name}_images]\nrule = "llava_images"\n'
                 f'input = ["{os.path.join(SAMPLE, file)}"]\nimage_folder = "{folder}"\n'
                 f'image_size = 336\n\n'
                 f'[target.{name}_data]\nrule = "llava_data"\n'
                 f'input = ["{os.path.join(SAMPLE, file)}"]\nvocab = "{vocab}"\n'
                 f'template = "{template}"\nlegacy = {str(legacy).lower()}\n'
                 f'model_max_length = {model_max_length}\n'
                 f'images = ["{name}_images"]\n\n')
    with open(os.path.join(workspace, "BENCHFILE.toml"), "w") as f:
        f.write(text)
    targets = [f"{n}_data" for n, _, _ in runs]
    env = dict(os.environ, BENCHMAKE_CACHE_DIR=os.path.join(workspace, "cache"))
    r = subprocess.run([benchmake, "-C", workspace, "build"] + targets, capture_output=True,
                       text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"benchmake build failed:\n{r.stdout}\n{r.stderr}")
    return [(os.path.join(SAMPLE, file), os.path.join(workspace, "out", f"{n}_data"), t)
            for n, file, t in runs]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llava", default=os.environ.get("LLAVA_CHECKOUT", ""),
                    help="LLaVA work tree or bare git dir (default: $LLAVA_CHECKOUT)")
    ap.add_argument("--json", help="a LLaVA JSON file (with --data)")
    ap.add_argument("--data", help="the llava_data output directory made from --json")
    ap.add_argument("--template", default="vicuna_v1", help="plain or vicuna_v1 (v1)")
    ap.add_argument("--benchmake", help="make the sample's datasets with this benchmake")
    ap.add_argument("--vocab", default=os.path.join(ROOT, "data/kjv_sp.model"))
    ap.add_argument("--legacy", action="store_true", help="the tokenizer's legacy (default off)")
    ap.add_argument("--model-max-length", type=int, default=2048)
    ap.add_argument("--tokenizer", choices=["auto", "transformers", "shim"], default="auto")
    ap.add_argument("--pixels", action="store_true",
                    help="also check images.u8 against Pillow (needs --image-folder with --data)")
    ap.add_argument("--image-folder", default=os.path.join(SAMPLE, "images"))
    ap.add_argument("--limit", type=int, default=5, help="differences printed per file")
    args = ap.parse_args()

    if not args.llava or not os.path.exists(args.llava):
        print(f"SKIP: no LLaVA checkout ({args.llava or 'set --llava or LLAVA_CHECKOUT'}); "
              "git clone https://github.com/haotian-liu/LLaVA")
        return 77
    with tempfile.TemporaryDirectory() as workspace:
        os.makedirs(os.path.join(workspace, "tokenizer"))
        tokenizer, tok_name = make_tokenizer(args.tokenizer, args.vocab, args.legacy,
                                             args.model_max_length,
                                             os.path.join(workspace, "tokenizer"))
        use_torch = importlib.util.find_spec("torch") is not None
        llava = Llava(args.llava, use_torch)
        print(f"LLaVA from {args.llava}; {tok_name} (legacy={args.legacy}) on {args.vocab}; "
              f"IS_TOKENIZER_GREATER_THAN_0_14={llava.at_least_014}; "
              f"{'torch' if use_torch else 'NumPy stand-in for torch'}")

        if args.benchmake:
            runs = make_datasets(os.path.abspath(args.benchmake), os.path.abspath(args.vocab),
                                 workspace, args.legacy, args.model_max_length)
        elif args.json and args.data:
            runs = [(args.json, args.data, args.template)]
        else:
            ap.error("give --benchmake, or --json and --data")
        errors = []
        for json_path, data_dir, template in runs:
            errors += compare(llava, tokenizer, json_path, data_dir, template, args.limit)
            if args.pixels:
                errors += check_pixels(args.image_folder, data_dir, args.limit)
    for e in errors:
        print("DIFF:", e)
    print("FAIL" if errors else "OK: ids, masks and images equal LLaVA's")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
