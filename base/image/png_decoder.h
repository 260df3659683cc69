// PNG through libpng (the only file that sees png.h is png_decoder.cc).
// Conversions and errors: base/image/image.h. Callers go through DecodeImage.
#pragma once

#include <span>
#include <string_view>

#include "base/image/image.h"

namespace bm::image {

Result<Image> DecodePng(std::span<const uint8_t> bytes, std::string_view name,
                        const DecodeOptions& options);

}  // namespace bm::image
