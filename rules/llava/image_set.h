// An image set: LLaVA's images preprocessed once, for the trainer to normalise
// at batch time (rules/vision/clip_image.h ClipNormalize).
//
// Layout under a directory:
//   images.u8    [count, size, size, 3] uint8: image i at byte i * size*size*3,
//                RGB interleaved, rows top-down — ClipResizedImage's output (LLaVA's
//                expand2square pad with the mean colour, Pillow-bicubic resize of the
//                shortest edge, center crop), 4x smaller than float pixel values
//   images.json  {"size", "pad_to_square", "pad_colour", "mean", "std", "count",
//                 "bytes_per_image", "layout", "sources": [paths relative to the image
//                 folder, image i = sources[i]]}
// Both are written under temporary names and renamed at the end: a failure
// (an unreadable, corrupt or unsupported image) leaves neither, and names the
// image file and the first sample that uses it.
//
// Decoding and resizing run on `threads` threads, each image once; the bytes
// do not depend on the thread count.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "rules/llava/llava_json.h"
#include "rules/vision/clip_image.h"

namespace bm::rules::llava {

struct ImageSource {
  std::string path;   // relative to the image folder, as the JSON says
  std::string where;  // the first sample that uses it (SampleWhere), for errors
};

// The distinct images of the samples, in order of first use.
void CollectImages(const std::vector<Sample>& samples, const std::string& file,
                   std::vector<ImageSource>* images,
                   std::unordered_map<std::string, int64_t>* index);

// Writes images.u8 and images.json under out_dir. Returns images.json's object
// (plus "seconds" and "images_per_second" for the step's metrics, not in the file).
Result<nlohmann::json> WriteImageSet(const std::vector<ImageSource>& images,
                                     const std::string& folder,
                                     const vision::ClipImageOptions& options, int threads,
                                     const std::string& out_dir, std::ostream* log);

struct ImageSet {
  nlohmann::json meta;                             // images.json
  std::unordered_map<std::string, int64_t> index;  // source path → image index
};

// Reads dir/images.json and checks images.u8's size against it.
Result<ImageSet> ReadImageSet(const std::string& dir);

inline constexpr const char* kImagesFile = "images.u8";
inline constexpr const char* kImagesMetaFile = "images.json";

}  // namespace bm::rules::llava
