// GIF through giflib (the only file that sees gif_lib.h is gif_decoder.cc): the first frame,
// as Pillow's Image.open(f).convert("RGB") gives it. Conversions and errors:
// base/image/image.h and docs/IMAGES.md. Callers go through DecodeImage.
#pragma once

#include <span>
#include <string_view>

#include "base/image/image.h"

namespace bm::image {

Result<Image> DecodeGif(std::span<const uint8_t> bytes, std::string_view name,
                        const DecodeOptions& options);

}  // namespace bm::image
