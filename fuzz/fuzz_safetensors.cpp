// Fuzz target: the safetensors reader (src/formats/safetensors.*). Each input is the bytes of a
// .safetensors file (an 8-byte header length, the JSON header, the data), given to
// SafetensorsFile through an in-memory file. It must open, with every tensor's bytes inside
// the file, disjoint and of the size its dtype and shape give, or throw ls::Error; a crash, a
// sanitizer report, a hang or any other exception is a finding.
#include <algorithm>
#include <cstdint>
#include <exception>

#include "core/error.h"
#include "formats/safetensors.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static ls::fuzz::MemFile file;
  const std::string& path = file.write(data, size);
  try {
    const ls::formats::SafetensorsFile st(path);
    const std::uint8_t* lo = nullptr;
    const std::uint8_t* hi = nullptr;
    std::size_t total = 0;
    unsigned sum = 0;
    for (const ls::TensorView& t : st.tensors()) {
      if (st.find(t.name) != &t) ls::fuzz::finding("find() does not return tensor " + t.name);
      for (auto d : t.shape)
        if (d < 0) ls::fuzz::finding("tensor " + t.name + " has a negative dimension");
      const std::size_t n = t.nbytes();
      if (n == 0) continue;
      // Touch the first and last byte: past the mapping this faults.
      sum += t.data[0] + t.data[n - 1];
      lo = lo == nullptr ? t.data : std::min(lo, t.data);
      hi = std::max(hi, t.data + n);
      total += n;
    }
    // All tensors lie in one mapping of `size` bytes, after the 8-byte length and the header.
    if (hi != nullptr && (static_cast<std::size_t>(hi - lo) > size - 8 || total > size - 8))
      ls::fuzz::finding("tensor bytes span more than the file's data section");
    (void)sum;
  } catch (const ls::Error&) {
  } catch (const std::exception& e) {
    ls::fuzz::finding(std::string("not an ls::Error: ") + e.what());
  } catch (...) {
    ls::fuzz::finding("a non-std::exception escaped");
  }
  return 0;
}
