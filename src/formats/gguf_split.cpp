// Split GGUF models (see gguf_split.h).
#include "formats/gguf_split.h"

#include <filesystem>
#include <optional>
#include <regex>
#include <unordered_set>

#include <fmt/format.h>

#include "core/error.h"

namespace ls::formats {

namespace {

// NAME-00002-of-00003.gguf -> (NAME, 2, 3)
struct SplitName {
  std::string prefix;
  int no = 0, count = 0;
};

std::optional<SplitName> parse_split_name(const std::string& path) {
  static const std::regex pattern(R"(^(.*)-(\d{5})-of-(\d{5})\.gguf$)");
  std::smatch m;
  if (!std::regex_match(path, m, pattern)) return std::nullopt;
  return SplitName{m[1].str(), std::stoi(m[2].str()), std::stoi(m[3].str())};
}

std::string split_path(const std::string& prefix, int no, int count) {
  return fmt::format("{}-{:05d}-of-{:05d}.gguf", prefix, no, count);
}

}  // namespace

int gguf_split_count(const GgufFile& file) {
  const std::optional<std::int64_t> count = file.get_int("split.count");
  if (!count || *count <= 1) return 1;
  if (*count > 9999)
    fail("{}: split.count {} is not a believable number of parts", file.path(), *count);
  const std::int64_t no = file.get_int("split.no").value_or(0);
  if (no != 0) {
    const std::optional<SplitName> name = parse_split_name(file.path());
    fail("{}: this is part {} of a model split into {} files; give the first part{}", file.path(),
         no + 1, *count,
         name ? fmt::format(", {}", split_path(name->prefix, 1, name->count)) : std::string());
  }
  return static_cast<int>(*count);
}

std::vector<std::string> gguf_split_paths(const std::string& first, int count) {
  const std::optional<SplitName> name = parse_split_name(first);
  if (!name || name->no != 1 || name->count != count)
    fail(
        "{}: split.count is {}, but the file is not named like the first of {} parts "
        "(NAME-00001-of-{:05d}.gguf, as llama.cpp's gguf-split writes them), so the other parts "
        "cannot be found",
        first, count, count, count);
  std::vector<std::string> out;
  for (int no = 2; no <= count; ++no) out.push_back(split_path(name->prefix, no, count));
  return out;
}

std::vector<std::unique_ptr<GgufFile>> open_gguf_split_parts(const GgufFile& first) {
  const int count = gguf_split_count(first);
  std::vector<std::unique_ptr<GgufFile>> parts;
  if (count == 1) return parts;
  std::unordered_set<std::string> names;
  for (const TensorView& t : first.tensors()) names.insert(t.name);
  int no = 1;
  for (const std::string& path : gguf_split_paths(first.path(), count)) {
    if (!std::filesystem::exists(path))
      fail("{}: part {} of {} is missing: expected {}", first.path(), no + 1, count, path);
    auto part = std::make_unique<GgufFile>(path, GgufArrays::Skip);
    if (part->get_int("split.no") != no || part->get_int("split.count") != count)
      fail("{}: expected split.no {} and split.count {} (part {} of {}), got {} and {}", path, no,
           count, no + 1, count, part->get_int("split.no").value_or(-1),
           part->get_int("split.count").value_or(-1));
    for (const TensorView& t : part->tensors())
      if (!names.insert(t.name).second)
        fail("{}: tensor '{}' is also in an earlier part of {}", path, t.name, first.path());
    parts.push_back(std::move(part));
    ++no;
  }
  if (const auto total = first.get_int("split.tensors.count");
      total && *total != static_cast<std::int64_t>(names.size()))
    fail("{}: split.tensors.count says {} tensors, the {} parts hold {}", first.path(), *total,
         count, names.size());
  return parts;
}

}  // namespace ls::formats
