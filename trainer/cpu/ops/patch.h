// Patches of an image as the rows of a matrix (im2col for a P×P convolution
// of stride P, no padding): the vision tower's patch embedding, a Conv2d
// with weight [OC, CH, P, P] and no bias, is then patches @ weight^T
// (MatmulForward with the weight viewed as [OC, CH*P*P]).
#pragma once

#include <cstdint>

namespace bm::train::cpu {

// pixels[B, CH, S, S] (channels first, as pixel_values) → patches[B, G*G, CH*P*P],
// G = S / P. Patch g = gy*G + gx (row-major over the grid, as a flattened conv
// output); within a patch, element (c*P + y)*P + x = pixels[b, c, gy*P + y, gx*P + x],
// the order of a flattened conv weight. Precondition: P divides S.
template <typename Float>
void PatchForward(Float* patches, const Float* pixels, int64_t B, int64_t CH, int64_t S, int64_t P);

// dpixels[B, CH, S, S] += the patches' gradient dpatches[B, G*G, CH*P*P] put back
// in place (the patches do not overlap: each pixel receives one value).
template <typename Float>
void PatchBackward(Float* dpixels, const Float* dpatches, int64_t B, int64_t CH, int64_t S,
                   int64_t P);

}  // namespace bm::train::cpu
