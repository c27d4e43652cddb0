// Quant-tag matching of GGUF file names (see quant_tag.h).
#include "hub/quant_tag.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "core/error.h"

namespace ls::hub {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_gguf(const std::string& path) {
  const std::string l = lower(path);
  return l.size() > 5 && l.compare(l.size() - 5, 5, ".gguf") == 0;
}

// The lower-case stem of a .gguf's file name without a split suffix "-00001-of-00003".
std::string stem(const std::string& path) {
  std::string name = lower(path.substr(path.find_last_of('/') + 1));
  name.resize(name.size() - 5);
  const auto of = name.rfind("-of-");
  if (of != std::string::npos && of >= 6 && name[of - 6] == '-') {
    const std::string a = name.substr(of - 5, 5), b = name.substr(of + 4);
    const auto digits = [](const std::string& s) {
      return !s.empty() &&
             std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    };
    if (digits(a) && digits(b) && b.size() == 5) name.resize(of - 6);
  }
  return name;
}

// The path without its split suffix: parts of one split file share it.
std::string model_key(const std::string& path) {
  return lower(path.substr(0, path.find_last_of('/') + 1)) + stem(path);
}

}  // namespace

std::string quant_tag_of(const std::string& path) {
  if (!is_gguf(path)) return "";
  const std::string s = stem(path);
  // The tag is the last '-'- or '.'-separated part ("q4_k_m" keeps its underscores).
  const auto sep = s.find_last_of("-.");
  return sep == std::string::npos ? "" : s.substr(sep + 1);
}

bool matches_quant_tag(const std::string& path, const std::string& tag) {
  if (!is_gguf(path) || tag.empty()) return false;
  const std::string s = stem(path), t = lower(tag);
  if (s.size() <= t.size() || s.compare(s.size() - t.size(), t.size(), t) != 0) return false;
  const char before = s[s.size() - t.size() - 1];
  return before == '-' || before == '.';
}

std::string available_quant_tags(const std::vector<std::string>& paths) {
  std::set<std::string> tags;
  for (const auto& p : paths)
    if (!quant_tag_of(p).empty()) tags.insert(quant_tag_of(p));
  std::string out;
  for (const auto& t : tags) out += (out.empty() ? "" : ", ") + t;
  return out.empty() ? "none: the repository has no .gguf file" : out;
}

std::vector<std::string> pick_gguf(const std::vector<std::string>& paths, const std::string& tag,
                                   const std::string& repo) {
  std::vector<std::string> hits;
  std::set<std::string> models;
  for (const auto& p : paths)
    if (matches_quant_tag(p, tag)) {
      hits.push_back(p);
      models.insert(model_key(p));
    }
  if (hits.empty())
    fail("{}: no .gguf file has the quant tag '{}'; available tags: {}", repo, tag,
         available_quant_tags(paths));
  if (models.size() > 1) {
    std::string list;
    for (const auto& h : hits) list += "\n  " + h;
    fail(
        "{}: the quant tag '{}' is ambiguous, it matches several files:{}\nname one by a longer "
        "tag (available tags: {})",
        repo, tag, list, available_quant_tags(paths));
  }
  std::sort(hits.begin(), hits.end());
  return hits;
}

}  // namespace ls::hub
