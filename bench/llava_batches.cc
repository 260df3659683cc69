// llava_batches: the micro-batches a LLaVA run of benchmake-train trains on, written out for a
// peer (bench/llava_reference.py) so that it trains on the same batches: the same sampler
// (trainer/data/llava_batch.h: SampleLlavaTrainBatch, then TrimLlavaBatch to a multiple of 64) with
// the run's seed, LBS, MPE, GAS and DP, as trainer/run/llava_train_loop.cc calls it.
//
//   llava_batches DATA_DIR OUT_DIR --steps N --lbs B --mpe T [--gas G] [--dp D] [--seed S]
//
// OUT_DIR/index.json lists {step, micro, rank, B, T, width, images, image_tokens, prefix} per
// micro-batch (width: the longest actual row, the seed's tokens a row as llava_metrics.h counts
// them; T: that rounded up to 64, the padded width trained); PREFIX.inputs (int32 [B, T]), .targets
// (int32 [B, T]: the next token), .mask (uint8 [B, T]: whether targets[t] counts), .pixels (float32
// [images, 3, S, S], normalised), .positions (int64 [images, image_tokens]: flat b*T + t, -1 where
// a cut image lost it), all little-endian, read with numpy.fromfile.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "trainer/data/llava_batch.h"
#include "trainer/data/llava_data.h"
#include "trainer/run/llava_metrics.h"

namespace {

template <typename T>
bool WriteRaw(const std::string& path, const std::vector<T>& v) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(v.data()),
          static_cast<std::streamsize>(v.size() * sizeof(T)));
  return static_cast<bool>(f);
}

int Usage() {
  std::fprintf(stderr,
               "usage: llava_batches DATA_DIR OUT_DIR --steps N --lbs B --mpe T [--gas G] [--dp D] "
               "[--seed S]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  const std::string data_dir = argv[1], out = argv[2];
  int64_t steps = 0, lbs = 0, mpe = 0, gas = 1, dp = 1;
  uint64_t seed = 1234;  // RunConfig's default
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const int64_t v = std::strtoll(argv[i + 1], nullptr, 10);
    if (k == "--steps")
      steps = v;
    else if (k == "--lbs")
      lbs = v;
    else if (k == "--mpe")
      mpe = v;
    else if (k == "--gas")
      gas = v;
    else if (k == "--dp")
      dp = v;
    else if (k == "--seed")
      seed = static_cast<uint64_t>(v);
    else
      return Usage();
  }
  if (steps < 1 || lbs < 1 || mpe < 1 || gas < 1 || dp < 1) return Usage();
  bm::Result<bm::train::LlavaData> data = bm::train::LlavaData::Open(data_dir, "train");
  if (!data.ok()) {
    std::fprintf(stderr, "llava_batches: %s\n", data.status().message().c_str());
    return 1;
  }
  std::filesystem::create_directories(out);
  nlohmann::json index = nlohmann::json::array();
  bm::train::Batch b;
  for (int64_t step = 1; step <= steps; ++step)
    for (int64_t g = 0; g < gas; ++g)
      for (int64_t r = 0; r < dp; ++r) {
        bm::Status st =
            bm::train::SampleLlavaTrainBatch(*data, seed, step, (g * dp + r) * lbs, lbs, mpe, &b);
        if (!st.ok()) {
          std::fprintf(stderr, "llava_batches: %s\n", st.message().c_str());
          return 1;
        }
        bm::train::TrimLlavaBatch(&b, bm::train::kLlavaWidthMultiple);
        const std::string prefix = fmt::format("s{}_g{}_r{}", step, g, r);
        const std::string p = out + "/" + prefix;
        if (!WriteRaw(p + ".inputs", b.inputs) || !WriteRaw(p + ".targets", b.targets) ||
            !WriteRaw(p + ".mask", b.mask) || !WriteRaw(p + ".pixels", b.pixel_values) ||
            !WriteRaw(p + ".positions", b.image_positions)) {
          std::fprintf(stderr, "llava_batches: cannot write %s.*\n", p.c_str());
          return 1;
        }
        index.push_back({{"step", step},
                         {"micro", g},
                         {"rank", r},
                         {"B", b.B},
                         {"T", b.T},
                         {"width", bm::train::SeedBatchWidth(b)},
                         {"images", b.images},
                         {"image_tokens", data->image_tokens()},
                         {"image_size", data->image_size()},
                         {"prefix", prefix}});
      }
  std::ofstream(out + "/index.json") << index.dump(1) << "\n";
  std::printf("llava_batches: %zu micro-batches in %s\n", index.size(), out.c_str());
  return 0;
}
