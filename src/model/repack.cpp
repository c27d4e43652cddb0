// Repacking weight matrices at load (repack.h): each Q8_0/Q4_0/Q5_0/Q5_1 matrix whose rows come
// in whole groups of 8 moves into one huge-page buffer, interleaved on the way (and, asked to,
// every other matrix as it is); the file's pages under it are released as it goes.
#include "model/repack.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "core/mapped_file.h"
#include "kernels/interleave.h"

namespace ls::model {

std::size_t repack_weights(Weights& w, HugePageBuffer& owned, bool move_all) {
  std::vector<TensorView*> views;
  views.push_back(&w.embed);
  for (LayerWeights& L : w.layers)
    for (TensorView* t : L.matrices()) views.push_back(t);
  views.push_back(&w.lm_head);
  const auto movable = [](const TensorView& t) {
    return !t.empty() && t.shape.size() == 2 && t.interleaved == 0;
  };
  const auto interleave = [&](const TensorView& t) {
    return movable(t) && kernels::can_interleave(t.dtype, t.shape[0], t.shape[1]);
  };
  // With move_all the other matrices move too, in their own layout: on huge pages they read
  // faster (BF16 decode 24 -> 25-33 tok/s on an AMD EPYC Zen 4 than from the file's 4 KiB pages).
  const auto wanted = [&](const TensorView& t) { return move_all ? movable(t) : interleave(t); };
  // Where each distinct matrix goes (tied views share one), 64-byte aligned, and whether its
  // bytes are there yet.
  struct Place {
    std::size_t offset;
    bool filled = false;
  };
  std::map<const std::uint8_t*, Place> place;
  std::size_t total = 0;
  for (const TensorView* t : views) {
    if (!wanted(*t) || place.contains(t->data)) continue;
    place.emplace(t->data, Place{total});
    total += (t->nbytes() + 63) / 64 * 64;
  }
  if (total == 0) return 0;
  owned = HugePageBuffer(total);
  std::size_t bytes = 0;
  for (TensorView* t : views) {
    if (!wanted(*t)) continue;
    Place& at = place.at(t->data);
    std::uint8_t* dst = owned.data() + at.offset;
    const bool inter = interleave(*t);
    if (!at.filled) {
      // In slices of 1024 rows, each slice's file pages released as soon as it is copied, so the
      // resident set never holds both copies of a matrix (the load-time validation has already
      // paged the whole file in).
      const auto rows = static_cast<std::size_t>(t->shape[0]), row_bytes = t->row_bytes();
      constexpr std::size_t kSlice = 1024;  // a multiple of the group size
      for (std::size_t r = 0; r < rows; r += kSlice) {
        const std::size_t n = std::min(kSlice, rows - r);
        if (inter)
          kernels::interleave_rows(t->dtype, t->data + r * row_bytes, n,
                                   static_cast<std::size_t>(t->shape[1]), dst + r * row_bytes);
        else
          std::memcpy(dst + r * row_bytes, t->data + r * row_bytes, n * row_bytes);
        release_mapped_pages(t->data + r * row_bytes, n * row_bytes);
      }
      if (inter) bytes += t->nbytes();
      at.filled = true;
    }
    t->data = dst;
    if (inter) t->interleaved = kernels::kInterleave;
  }
  return bytes;
}

}  // namespace ls::model
