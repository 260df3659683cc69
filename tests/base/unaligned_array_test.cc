#include "base/formats/unaligned_array.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

namespace bm::formats {
namespace {

// Little-endian bytes written by hand, one byte past an aligned address, the
// way Megatron's .idx places its arrays (a 34-byte header).
TEST(UnalignedArrayTest, ReadsValuesAtAnyByteOffset) {
  alignas(8)
      const uint8_t bytes[] = {0xEE,                                             // skip
                               0x03, 0x00, 0x00, 0x00,                           // 3
                               0xFF, 0xFF, 0xFF, 0xFF,                           // -1
                               0x00, 0x01, 0x00, 0x00,                           // 256
                               0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80};  // int64 min + 1
  const UnalignedArray<int32_t> ints(bytes + 1, 3);
  ASSERT_EQ(ints.size(), 3u);
  EXPECT_EQ(ints[0], 3);
  EXPECT_EQ(ints[1], -1);
  EXPECT_EQ(ints[2], 256);
  EXPECT_EQ(ints.front(), 3);
  EXPECT_EQ(ints.back(), 256);
  const UnalignedArray<int64_t> longs(bytes + 13, 1);
  EXPECT_EQ(longs[0], INT64_MIN + 1);
}

TEST(UnalignedArrayTest, IteratesLikeASpan) {
  std::vector<uint8_t> bytes(1 + 5 * 8);
  const int64_t values[] = {10, 20, 30, 40, 50};
  std::memcpy(bytes.data() + 1, values, sizeof values);
  const UnalignedArray<int64_t> view(bytes.data() + 1, 5);
  EXPECT_EQ(std::accumulate(view.begin(), view.end(), int64_t{0}), 150);
  EXPECT_TRUE(std::equal(view.begin(), view.end(), std::begin(values)));
  EXPECT_EQ(view.end() - view.begin(), 5);
  EXPECT_EQ(view.begin()[3], 40);
  EXPECT_EQ(std::lower_bound(view.begin(), view.end(), 35) - view.begin(), 3);
  std::vector<int64_t> copy;
  for (int64_t v : view) copy.push_back(v);
  EXPECT_EQ(copy, std::vector<int64_t>(std::begin(values), std::end(values)));
}

TEST(UnalignedArrayTest, EmptyByDefault) {
  const UnalignedArray<int32_t> none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.begin(), none.end());
}

}  // namespace
}  // namespace bm::formats
