// Repacking weight matrices at load into the memory and layouts the kernels run fastest on: one
// buffer on huge pages (core/huge_page_buffer.h) for every matrix, Q8_0, Q4_0, Q5_0 and Q5_1
// ones in the interleaved groups of 8 rows of kernels/interleave.h (decode about twice as fast).
// The copy replaces the memory-mapped bytes, whose pages are released, so the resident weights
// stay one copy; tied embeddings are moved once for both uses.
#pragma once

#include <cstdint>

#include "core/huge_page_buffer.h"
#include "model/weights.h"

namespace ls {

// Moves every matrix of `w` into `owned` (interleaving those that have a faster layout), pointing
// its views at the new bytes; returns the bytes interleaved. The views must point into
// memory-mapped files (a TensorStore's): the pages under the old bytes are released.
std::size_t repack_weights(Weights& w, HugePageBuffer& owned);

}  // namespace ls
