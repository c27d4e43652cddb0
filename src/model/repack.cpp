// Repacking weight matrices at load (repack.h): each Q8_0/Q4_0/Q5_0/Q5_1 matrix whose rows come in whole
// groups of 8 is interleaved into a new buffer, then the file's pages under it are released.
#include "model/repack.h"

#include <algorithm>
#include <map>

#include "core/mapped_file.h"
#include "kernels/interleave.h"

namespace ls {

std::size_t repack_weights(Weights& w, RepackedBuffers& owned) {
  std::map<const std::uint8_t*, const std::uint8_t*> done;  // file bytes -> repacked (tied views)
  std::size_t bytes = 0;
  const auto repack = [&](TensorView& t) {
    if (t.empty() || t.interleaved != 0 || t.shape.size() != 2 ||
        !kernels::can_interleave(t.dtype, t.shape[0], t.shape[1]))
      return;
    auto it = done.find(t.data);
    if (it == done.end()) {
      // Not make_unique: it would zero (and so page in) the whole buffer before the copy.
      std::unique_ptr<std::uint8_t[]> buf(new std::uint8_t[t.nbytes()]);
      // In slices of 1024 rows, each slice's file pages released as soon as it is copied, so the
      // resident set never holds both copies of a matrix (the load-time validation has already
      // paged the whole file in).
      const auto rows = static_cast<std::size_t>(t.shape[0]), row_bytes = t.row_bytes();
      constexpr std::size_t kSlice = 1024;  // a multiple of the group size
      for (std::size_t r = 0; r < rows; r += kSlice) {
        const std::size_t n = std::min(kSlice, rows - r);
        kernels::interleave_rows(t.dtype, t.data + r * row_bytes, n,
                                 static_cast<std::size_t>(t.shape[1]), buf.get() + r * row_bytes);
        release_mapped_pages(t.data + r * row_bytes, n * row_bytes);
      }
      bytes += t.nbytes();
      it = done.emplace(t.data, buf.get()).first;
      owned.push_back(std::move(buf));
    }
    t.data = it->second;
    t.interleaved = kernels::kInterleave;
  };
  repack(w.embed);
  for (LayerWeights& L : w.layers)
    for (TensorView* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) repack(*t);
  repack(w.lm_head);
  return bytes;
}

}  // namespace ls
