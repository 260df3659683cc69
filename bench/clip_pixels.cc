// pixel_values of images as LLaVA-1.5 computes them (rules/vision/clip_image.h: decode,
// expand2square with the CLIP mean colour, shortest edge to 336 with Pillow's bicubic, center
// crop, rescale and normalise), for tests/gpu/clip_pixels_check.py to compare with
// transformers' CLIPImageProcessor. Writes OUT as N x 3 x 336 x 336 float32, little-endian,
// image i from FILE i; --no-pad skips expand2square. Errors name the file; OUT is written
// under a temporary name and renamed only when every image succeeded.
//
//   clip_pixels [--no-pad] OUT FILE...
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "rules/vision/clip_image.h"

int main(int argc, char** argv) {
  bm::vision::ClipImageOptions options;
  int first = 1;
  if (argc > 1 && std::strcmp(argv[1], "--no-pad") == 0) {
    options.pad_to_square = false;
    first = 2;
  }
  if (argc - first < 2) {
    std::fprintf(stderr, "usage: clip_pixels [--no-pad] OUT FILE...\n");
    return 2;
  }
  const std::string out_path = argv[first];
  const std::string tmp_path = out_path + ".tmp";
  FILE* out = std::fopen(tmp_path.c_str(), "wb");
  if (out == nullptr) {
    std::fprintf(stderr, "clip_pixels: cannot write %s\n", tmp_path.c_str());
    return 1;
  }
  const size_t plane = static_cast<size_t>(options.size) * options.size;
  std::vector<float> chw(3 * plane);
  for (int i = first + 1; i < argc; ++i) {
    bm::Result<bm::image::Image> decoded = bm::image::DecodeImageFile(argv[i]);
    bm::Result<bm::image::Image> resized =
        decoded.ok() ? bm::vision::ClipResizedImage(*decoded, options) : decoded.status();
    if (!resized.ok()) {
      std::fprintf(stderr, "clip_pixels: %s\n", resized.status().message().c_str());
      std::fclose(out);
      std::remove(tmp_path.c_str());
      return 1;
    }
    bm::vision::ClipNormalize(*resized, options, chw.data());
    if (std::fwrite(chw.data(), sizeof(float), chw.size(), out) != chw.size()) {
      std::fprintf(stderr, "clip_pixels: writing %s failed\n", tmp_path.c_str());
      std::fclose(out);
      std::remove(tmp_path.c_str());
      return 1;
    }
  }
  if (std::fclose(out) != 0 || std::rename(tmp_path.c_str(), out_path.c_str()) != 0) {
    std::fprintf(stderr, "clip_pixels: cannot finish %s\n", out_path.c_str());
    std::remove(tmp_path.c_str());
    return 1;
  }
  return 0;
}
