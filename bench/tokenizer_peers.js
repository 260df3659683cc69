// The peers of bench/tokenizer_bench, single-threaded encoding of a text
// already in memory: npm `tiktoken` (OpenAI's Rust core as WASM) and npm
// `gpt-tokenizer` for the gpt2 encoding; for each tokenizer.json given, npm
// `tokenizers` (Hugging Face's Rust library; run with RAYON_NUM_THREADS=1)
// and npm `@huggingface/tokenizers` (Tokenizers.js), encode(text, no special
// tokens added). Prints one JSON line per peer:
//   {"peer", "version", "seconds" (best of rounds), "tokens", "fnv1a" (of the ids)
//    [, "vocab": the tokenizer.json]}
// Usage: node bench/tokenizer_peers.js FILE [ROUNDS] [TOKENIZER_JSON...]
"use strict";
const fs = require("fs");
const path = require("path");
const nm = path.join(__dirname, "node_modules");
const file = process.argv[2];
const rounds = Number(process.argv[3] || 5);
const text = fs.readFileSync(file, "utf8");

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

function measure(peer, version, encode, vocab) {
  let best = Infinity;
  let ids = null;
  encode(text);  // warm-up (JIT, caches of the first call)
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    ids = encode(text);
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    best = Math.min(best, s);
  }
  console.log(JSON.stringify({ peer, version, seconds: best, tokens: ids.length, fnv1a: fnv1a(ids), vocab }));
}

async function measureAsync(peer, version, encode, vocab) {
  let best = Infinity;
  let ids = await encode(text);  // warm-up
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    ids = await encode(text);
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  console.log(JSON.stringify({ peer, version, seconds: best, tokens: ids.length, fnv1a: fnv1a(ids), vocab }));
}

const version = (name) => require(path.join(nm, name, "package.json")).version;
const { get_encoding } = require(path.join(nm, "tiktoken"));
const tk = get_encoding("gpt2");
measure("tiktoken", version("tiktoken"), (t) => tk.encode_ordinary(t));
tk.free();
const gptTokenizer = require(path.join(nm, "gpt-tokenizer/cjs/encoding/r50k_base"));
measure("gpt-tokenizer", version("gpt-tokenizer"), (t) => gptTokenizer.encode(t));

(async () => {
  for (const vocab of process.argv.slice(4)) {
    const { Tokenizer } = require(path.join(nm, "tokenizers"));
    const rust = Tokenizer.fromFile(vocab);
    await measureAsync("tokenizers", version("tokenizers"),
                       async (t) => (await rust.encode(t, null, { addSpecialTokens: false })).getIds(), vocab);
    const json = JSON.parse(fs.readFileSync(vocab, "utf8"));
    const js = new (require(path.join(nm, "@huggingface/tokenizers")).Tokenizer)(json, {});
    measure("@huggingface/tokenizers", version("@huggingface/tokenizers"),
            (t) => js.encode(t, { add_special_tokens: false }).ids, vocab);
  }
})();
