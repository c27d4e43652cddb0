// The .npy header is a Python dict literal padded so that the data starts on a 64-byte boundary.
#include "core/npy.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/output_file.h"

namespace ls {

void write_npy_f32(const std::string& path, std::span<const float> data,
                   const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  if (static_cast<std::size_t>(n) != data.size())
    fail("{}: npy shape holds {} elements but {} were given", path, n, data.size());
  std::string dims;  // a Python tuple body: "3," for 1-D, "2, 3" otherwise
  for (std::size_t i = 0; i < shape.size(); ++i)
    dims += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string header =
      fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", dims);
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  OutputFile file(path, "");
  std::ofstream& out = file.stream();
  const auto len = static_cast<std::uint16_t>(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  const char len_le[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(len_le, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()),
            static_cast<std::streamsize>(data.size_bytes()));
  file.commit();
}

}  // namespace ls
