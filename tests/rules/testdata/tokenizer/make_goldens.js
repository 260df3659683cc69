// Generates the tokenizer goldens with npm `tiktoken` (OpenAI's Rust core as
// WASM). Run once; the output is committed:
//   npm ci --prefix bench && node tests/rules/testdata/tokenizer/make_goldens.js
// Writes, beside this script:
//   cases.json   [{name, text, ids}] — hand-picked and seeded random strings
//   kjv_slice.ids  ids of the first SLICE_BYTES of data/kjv.txt, one per line
"use strict";
const fs = require("fs");
const path = require("path");
const { get_encoding } = require(path.join(__dirname, "../../../../bench/node_modules/tiktoken"));

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
fs.writeFileSync(path.join(here, "cases.json"), JSON.stringify(out, null, 0).replace(/\},\{/g, "},\n{") + "\n");

const corpus = fs.readFileSync(path.join(here, "../../../../data/kjv.txt"));
const slice = corpus.subarray(0, SLICE_BYTES).toString("utf8");
fs.writeFileSync(path.join(here, "kjv_slice.ids"), ids(slice).join("\n") + "\n");
console.log(`${out.length} cases; kjv slice ${SLICE_BYTES} bytes → ${ids(slice).length} ids`);
enc.free();
