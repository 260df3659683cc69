// JPEG through libjpeg-turbo (the only file that sees jpeglib.h is jpeg_decoder.cc).
// Conversions and errors: base/image/image.h. Callers go through DecodeImage.
#pragma once

#include <span>
#include <string_view>

#include "base/image/image.h"

namespace bm::image {

Result<Image> DecodeJpeg(std::span<const uint8_t> bytes, std::string_view name,
                         const DecodeOptions& options);

}  // namespace bm::image
