// Repacking weight matrices at load into the layouts the kernels run fastest on: today the
// interleaved groups of 8 rows of kernels/interleave.h for Q8_0, Q4_0, Q5_0 and Q5_1 (decode about twice as
// fast). The repacked copy replaces the memory-mapped bytes, whose pages are released, so the
// resident weights stay one copy; tied embeddings are repacked once for both uses.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/weights.h"

namespace ls {

// The buffers the repacked views point into (owned by the Model beside its Weights).
using RepackedBuffers = std::vector<std::unique_ptr<std::uint8_t[]>>;

// Repacks every matrix of `w` that has a faster layout, pointing its views at the new bytes;
// returns the bytes repacked. The views must point into memory-mapped files (a TensorStore's):
// the pages under the old bytes are released.
std::size_t repack_weights(Weights& w, RepackedBuffers& owned);

}  // namespace ls
