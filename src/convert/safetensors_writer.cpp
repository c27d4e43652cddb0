// The header is padded with spaces to a multiple of 8 bytes so that tensor data is aligned.
#include "convert/safetensors_writer.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/output_file.h"

namespace ls::convert {

std::size_t TensorSpec::nbytes() const {
  std::size_t n = dtype_size(dtype);
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

void write_safetensors(const std::string& path, const std::vector<TensorSpec>& specs,
                       const std::function<void(std::size_t, const ByteSink&)>& fill,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::size_t offset = 0;
  for (const auto& s : specs) {
    header[s.name] = {{"dtype", std::string(dtype_name(s.dtype))},
                      {"shape", s.shape},
                      {"data_offsets", {offset, offset + s.nbytes()}}};
    offset += s.nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  OutputFile file(path, "");
  std::ofstream& out = file.stream();
  std::uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<std::uint8_t>(text.size() >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    std::size_t written = 0;
    fill(i, [&](std::span<const std::uint8_t> bytes) {
      out.write(reinterpret_cast<const char*>(bytes.data()),
                static_cast<std::streamsize>(bytes.size()));
      written += bytes.size();
    });
    if (written != specs[i].nbytes())
      fail("{}: tensor '{}' was given {} bytes, expected {}", path, specs[i].name, written,
           specs[i].nbytes());
  }
  file.commit();
}

}  // namespace ls::convert
