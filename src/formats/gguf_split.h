// GGUF files split by llama.cpp's gguf-split (the official Qwen2.5 GGUF repositories ship their
// larger files so): NAME-00001-of-00003.gguf holds the metadata and some tensors, each later
// part holds more tensors, and every part carries split.no (0-based), split.count and (in the
// first) split.tensors.count. They open as one model from the first part's path.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "formats/gguf.h"

namespace ls::formats {

// How many parts the file says the model has (1 when it is not split). Throws, naming the
// first part to give, when `file` is a later part.
int gguf_split_count(const GgufFile& file);

// The paths of parts 2..count beside `first` (…-00001-of-0000N.gguf); throws when the name does
// not follow the pattern.
std::vector<std::string> gguf_split_paths(const std::string& first, int count);

// Opens parts 2..count of the model whose first part is `first` and checks each one's split.no
// and split.count, and that the parts together hold split.tensors.count distinct tensors.
std::vector<std::unique_ptr<GgufFile>> open_gguf_split_parts(const GgufFile& first);

}  // namespace ls::formats
