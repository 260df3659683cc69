// Tokenizer benchmark: single-thread gpt2 encoding of a whole corpus held in
// memory, then scaling with threads, then the end-to-end tokenize step (read,
// split into chapters, encode, write train/valid .bin/.idx and stats.json). With --peers FILE (the
// JSON lines of bench/tokenizer_peers.js, measured in the same run by bench/tokenizer_bench.sh) it
// checks the ids are identical (count and FNV-1a) and prints the speed ratio against each peer and
// the target. Each --compare FILE (a SentencePiece model or a tokenizer.json) is encoded on one
// thread too, and compared with the peer lines that name it ("vocab": python3-sentencepiece,
// npm tokenizers, npm @huggingface/tokenizers; target: at least as fast).
//
// Usage: tokenizer_bench --vocab data/gpt2.tiktoken --text data/kjv.txt
//                        [--rounds 5] [--threads-max N] [--peers FILE] [--compare FILE]...
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rules/text/encoding.h"
#include "rules/text/tokenizer.h"
#include "rules/tokenize.h"

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

uint32_t Fnv1a(const std::vector<int32_t>& ids) {
  uint32_t h = 0x811c9dc5u;
  for (int32_t id : ids) {
    for (int k = 0; k < 4; ++k) {
      h ^= (static_cast<uint32_t>(id) >> (8 * k)) & 0xffu;
      h *= 0x01000193u;
    }
  }
  return h;
}

// Best of `rounds` timings of f; setup() runs untimed before each.
template <typename F, typename S = void (*)()>
double BestSeconds(
    int rounds, F&& f, S setup = [] {}) {
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    setup();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::string vocab = "data/gpt2.tiktoken", text_path = "data/kjv.txt", peers_path;
  std::vector<std::string> compare;
  int rounds = 5;
  int threads_max = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--vocab")
      vocab = value;
    else if (flag == "--text")
      text_path = value;
    else if (flag == "--rounds")
      rounds = std::stoi(value);
    else if (flag == "--threads-max")
      threads_max = std::stoi(value);
    else if (flag == "--peers")
      peers_path = value;
    else if (flag == "--compare")
      compare.push_back(value);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  // Each timed round gets a freshly loaded encoding, so its per-thread piece
  // cache starts cold, as in a one-shot run (tiktoken has no such cache;
  // gpt-tokenizer keeps one across calls). A warm figure is printed too.
  auto enc = bm::text::Encoding::Load("gpt2", vocab);
  if (!enc.ok()) {
    std::fprintf(stderr, "%s\n", enc.status().message().c_str());
    return 1;
  }
  auto reload = [&] { enc = bm::text::Encoding::Load("gpt2", vocab); };
  const std::string text = ReadFile(text_path);
  std::vector<int32_t> ids = enc->Encode(text);  // page in the text and the tables
  const double single = BestSeconds(
      rounds, [&] { ids = enc->Encode(text); }, reload);
  const uint32_t digest = Fnv1a(ids);
  std::printf("benchmake gpt2, 1 thread (cold cache): %.4f s, %.1f MB/s, %zu tokens, fnv1a %u\n",
              single, text.size() / single / 1e6, ids.size(), digest);
  const double warm = BestSeconds(rounds, [&] { ids = enc->Encode(text); });
  std::printf("benchmake gpt2, 1 thread (warm cache, for reference): %.4f s\n", warm);
  for (int t = 2; t <= threads_max; t *= 2) {
    std::vector<int32_t> par;
    const double s = BestSeconds(
        rounds, [&] { par = enc->EncodeParallel(text, t); }, reload);
    std::printf("benchmake gpt2, %d threads (cold): %.4f s, %.1f MB/s, speed-up %.2fx, ids %s\n", t,
                s, text.size() / s / 1e6, single / s, par == ids ? "identical" : "DIFFERENT");
    if (par != ids) return 1;
  }
  double step_one_thread = 0;
  for (int t = 1; t <= threads_max; t *= 2) {
    char templ[] = "/tmp/bm_tokenize_bench_XXXXXX";
    const std::string dir = ::mkdtemp(templ);
    bm::rules::TokenizeOptions o;
    o.inputs = {text_path};
    o.vocab = vocab;
    o.read.document_start = "^([1-3] )?[A-Z][a-z]+( [A-Za-z]+)* [0-9]+$";
    o.split.valid_fraction = 0.05;
    o.threads = t;
    bool ok = true;
    const double s = BestSeconds(std::max(1, rounds / 2), [&] {
      ok = ok && bm::rules::TokenizeToDirectory(o, dir, nullptr).ok();
    });
    std::filesystem::remove_all(dir);
    if (!ok) return 1;
    if (t == 1) step_one_thread = s;
    std::printf("tokenize step (end to end), %d thread%s: %.4f s, %.1f MB/s, speed-up %.2fx\n", t,
                t == 1 ? "" : "s", s, text.size() / s / 1e6, step_one_thread / s);
  }
  // The other kinds, one thread, a freshly opened tokenizer per round.
  struct Ours {
    double seconds;
    size_t tokens;
    uint32_t digest;
  };
  std::map<std::string, Ours> ours;
  for (const std::string& path : compare) {
    auto tok = bm::text::OpenTokenizer("auto", path);
    if (!tok.ok()) {
      std::fprintf(stderr, "%s\n", tok.status().message().c_str());
      return 1;
    }
    std::vector<int32_t> other = (*tok)->Encode(text);
    const double s = BestSeconds(
        rounds, [&] { other = (*tok)->Encode(text); },
        [&] { tok = bm::text::OpenTokenizer("auto", path); });
    ours[path] = {s, other.size(), Fnv1a(other)};
    std::printf(
        "benchmake %s %s, 1 thread (cold cache): %.4f s, %.1f MB/s, %.0f tokens/s, %zu "
        "tokens\n",
        (*tok)->name().c_str(), path.c_str(), s, text.size() / s / 1e6, other.size() / s,
        other.size());
  }
  if (peers_path.empty()) return 0;
  std::ifstream peers(peers_path);
  int failures = 0;
  for (std::string line; std::getline(peers, line);) {
    if (line.empty() || line[0] != '{') continue;
    const auto p = nlohmann::json::parse(line);
    const std::string name = p["peer"];
    if (p.contains("vocab")) {
      auto it = ours.find(p["vocab"].get<std::string>());
      if (it == ours.end()) continue;
      const double ratio = p["seconds"].get<double>() / it->second.seconds;
      const bool same = p["tokens"].get<size_t>() == it->second.tokens &&
                        p["fnv1a"].get<uint32_t>() == it->second.digest;
      std::printf(
          "%s vs %s %s: %.4f s, %.0f tokens/s → benchmake is %.2fx faster (target 1.0x: "
          "%s), ids %s\n",
          it->first.c_str(), name.c_str(), p["version"].get<std::string>().c_str(),
          p["seconds"].get<double>(), p["tokens"].get<double>() / p["seconds"].get<double>(), ratio,
          ratio >= 1.0 ? "met" : "NOT met", same ? "identical" : "DIFFERENT");
      if (!same) ++failures;
      continue;
    }
    const double target = name == "tiktoken" ? 3.0 : 1.5;
    const double ratio = p["seconds"].get<double>() / single;
    const bool same =
        p["tokens"].get<size_t>() == ids.size() && p["fnv1a"].get<uint32_t>() == digest;
    std::printf("vs %s %s: %.4f s → benchmake is %.2fx faster (target %.1fx: %s), ids %s\n",
                name.c_str(), p["version"].get<std::string>().c_str(), p["seconds"].get<double>(),
                ratio, target, ratio >= target ? "met" : "NOT met",
                same ? "identical" : "DIFFERENT");
    if (!same) ++failures;
    if (name == "tiktoken") {
      std::printf("tokenize step (end to end, 1 thread) vs %s encode alone: %.2fx faster\n",
                  name.c_str(), p["seconds"].get<double>() / step_one_thread);
    }
  }
  return failures == 0 ? 0 : 1;
}
