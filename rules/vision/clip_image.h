// LLaVA-1.5's image preprocessing: LLaVA's expand2square (image_aspect_ratio "pad") and
// transformers' CLIPImageProcessor (the slow, PIL class) as openai/clip-vit-large-patch14-336
// configures it: convert("RGB"), resize the shortest edge to 336 with PIL BICUBIC, center
// crop 336 x 336, rescale by 1/255, normalise with CLIP's mean and std (docs/IMAGES.md).
//
//   BM_ASSIGN_OR_RETURN(Image decoded, image::DecodeImageFile(path));
//   BM_ASSIGN_OR_RETURN(Image square, ClipResizedImage(decoded, {}));  // 336 x 336 x 3 uint8
//   std::vector<float> chw(3 * 336 * 336);
//   ClipNormalize(square, {}, chw.data());                            // pixel_values[0]
//
// Thread safety: pure functions.
#pragma once

#include <array>
#include <cstdint>

#include "base/image/image.h"
#include "base/result.h"

namespace bm::vision {

using image::Image;

struct ClipImageOptions {
  int size = 336;             // shortest edge and crop (CLIPImageProcessor's size, crop_size)
  bool pad_to_square = true;  // LLaVA's image_aspect_ratio "pad" (expand2square) first
  std::array<float, 3> mean{0.48145466f, 0.4578275f, 0.40821073f};  // OPENAI_CLIP_MEAN
  std::array<float, 3> std{0.26862954f, 0.26130258f, 0.27577711f};  // OPENAI_CLIP_STD
};

// LLaVA's padding colour: int(m * 255) per channel of the mean ((122, 116, 104) for CLIP).
std::array<uint8_t, 3> ClipPadColour(const ClipImageOptions& options);

// The uint8 image CLIPImageProcessor normalises: padded to a square with ClipPadColour (the
// image pasted at ((s - w) / 2, (s - h) / 2), floor), resized so that the shortest edge is
// `size` (the other int(size * long / short), transformers' get_resize_output_image_size)
// with Pillow's BICUBIC, exactly, then center-cropped to size x size (top = (h - size) / 2,
// left = (w - size) / 2, floor). Errors (kInvalidArgument): an empty image, size < 1.
Result<Image> ClipResizedImage(const Image& decoded, const ClipImageOptions& options);

// pixel_values[c][y][x] (CHW float32, 3 * h * w floats at chw_out) from that uint8 image, as
// transformers computes it: float32(v * (1/255) in double), then (x - mean) / std in
// float32. Precondition: resized.rgb holds width * height * 3 bytes.
void ClipNormalize(const Image& resized, const ClipImageOptions& options, float* chw_out);

}  // namespace bm::vision
