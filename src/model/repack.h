// Repacking weight matrices at load into the memory and layouts the kernels run fastest on: one
// buffer on huge pages (core/huge_page_buffer.h), Q8_0, Q4_0, Q5_0 and Q5_1 matrices in the
// interleaved groups of 8 rows of kernels/interleave.h (decode about twice as fast) and, when
// asked, every other matrix as it is (decode 10-20% faster than from the file's 4 KiB pages, but
// the copy costs load time: 0.5 -> 0.7-3.7 s for the 0.5B BF16 file in a VM, where the kernel
// zeroes fresh 2 MiB pages the host may not have backed yet).
// The copy replaces the memory-mapped bytes, whose pages are released, so the resident weights
// stay one copy; tied embeddings are moved once for both uses.
#pragma once

#include <cstdint>

#include "core/huge_page_buffer.h"
#include "model/weights.h"

namespace ls::model {

// Moves the matrices of `w` that have a faster layout into `owned`, interleaved, and with
// `move_all` every other matrix too (its bytes unchanged), pointing their views at the new bytes;
// returns the bytes interleaved. The views must point into
// memory-mapped files (a TensorStore's): the pages under the old bytes are released.
std::size_t repack_weights(Weights& w, HugePageBuffer& owned, bool move_all);

}  // namespace ls::model
