// Minimal .npy reader for float32 C-order arrays (see npy_read.h).
#include "inspect/npy_read.h"

#include <cstring>
#include <fstream>
#include <regex>

#include "core/error.h"
#include "core/mapped_file.h"

namespace ls::inspect {

NpyF32 read_npy_f32(const std::string& path) {
  require_regular_file(path, std::size_t{16} << 30, "--logits");  // up to 16 GiB of logits
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open the .npy file", path);
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    fail("{}: not a .npy file (bad magic)", path);
  std::uint32_t header_len = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) fail("{}: truncated .npy header", path);
    header_len = b[0] | (b[1] << 8);
  } else if (magic[6] == 2 || magic[6] == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) fail("{}: truncated .npy header", path);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
  } else {
    fail("{}: unsupported .npy version {}", path, static_cast<int>(magic[6]));
  }
  if (header_len > (1u << 20)) fail("{}: .npy header of {} bytes is too large", path, header_len);
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) fail("{}: truncated .npy header", path);
  if (header.find("'descr': '<f4'") == std::string::npos)
    fail("{}: expected float32 data ('descr': '<f4'), header {}", path, header);
  if (header.find("'fortran_order': False") == std::string::npos)
    fail("{}: expected C order ('fortran_order': False)", path);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('shape':\s*\(([^)]*)\))")))
    fail("{}: no shape in the .npy header", path);
  NpyF32 out;
  std::int64_t count = 1;
  const std::string dims = m[1].str();
  const std::regex number(R"(\d+)");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) {
    const std::int64_t d = std::stoll(it->str());
    if (d > (std::int64_t{1} << 40) ||
        count > (std::int64_t{1} << 40) / std::max<std::int64_t>(d, 1))
      fail("{}: shape {} is too large", path, dims);
    out.shape.push_back(d);
    count *= d;
  }
  out.data.resize(static_cast<std::size_t>(count));
  if (!in.read(reinterpret_cast<char*>(out.data.data()), static_cast<std::streamsize>(count * 4)))
    fail("{}: the data is shorter than shape ({}) needs ({} floats)", path, dims, count);
  return out;
}

}  // namespace ls::inspect
