// Added tokens in the text: leftmost-longest matching of their patterns (as Aho-Corasick with
// MatchKind::LeftmostLongest does in Hugging Face's tokenizers) and the split of a text into
// added tokens and the plain pieces between them, with the single_word / lstrip / rstrip rules
// of tokenizers' AddedVocabulary.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ls::tok {

struct AddedToken {
  std::int32_t id;
  std::string content;  // as written in tokenizer.json
  std::string pattern;  // what is matched: content, or NFC(content) for normalized tokens
  bool single_word, lstrip, rstrip, normalized, special;
};

// Word-character and white-space tests at the edges of a text (Rust regex \w, \s).
bool ends_with_word_char(std::string_view s);
bool starts_with_word_char(std::string_view s);
// Start of the white space at the end of s (Rust regex \s*$).
std::size_t trailing_space_start(std::string_view s);
// Length of the white space at the start of s (Rust regex ^\s*).
std::size_t leading_space_length(std::string_view s);

// Leftmost-longest matching of a set of added tokens (Aho-Corasick MatchKind::LeftmostLongest).
class AddedMatcher {
 public:
  // Matches the tokens of `all` whose `normalized` flag equals `normalized`; `all` must outlive
  // the matcher and not move.
  void build(const std::vector<AddedToken>& all, bool normalized);
  bool empty() const { return empty_; }

  // The leftmost match at or after `from`, the longest there. Returns false if none.
  bool find(std::string_view s, std::size_t from, std::size_t* start, int* token) const;

  // Cuts `text` at the matched added tokens: their ids go to `out`, the text between them to
  // plain(piece) in order. With split_special, special tokens are not matched.
  template <typename Plain>
  void split(std::string_view text, bool split_special, Plain&& plain,
             std::vector<std::int32_t>& out) const;

 private:
  const std::vector<AddedToken>* tokens_ = nullptr;
  std::vector<int> by_first_[256];
  bool empty_ = true;
  bool use_memchr_ = false;
  char single_first_ = 0;
};

template <typename Plain>
void AddedMatcher::split(std::string_view text, bool split_special, Plain&& plain,
                         std::vector<std::int32_t>& out) const {
  if (empty()) {
    plain(text);
    return;
  }
  std::size_t start_offset = 0;
  std::size_t pos = 0;
  std::size_t match_start;
  int t;
  while (find(text, pos, &match_start, &t)) {
    const AddedToken& tok = (*tokens_)[static_cast<std::size_t>(t)];
    const std::size_t match_end = match_start + tok.pattern.size();
    pos = match_end;
    if (split_special && tok.special) continue;
    if (match_start < start_offset) continue;  // inside white space a previous rstrip took
    if (tok.single_word) {
      const bool start_ok = match_start == 0 || !ends_with_word_char(text.substr(0, match_start));
      const bool stop_ok =
          match_end == text.size() || !starts_with_word_char(text.substr(match_end));
      if (!start_ok || !stop_ok) continue;
    }
    std::size_t s = match_start;
    std::size_t e = match_end;
    if (tok.lstrip) s = std::max(trailing_space_start(text.substr(0, s)), start_offset);
    if (tok.rstrip) e += leading_space_length(text.substr(e));
    if (start_offset < s) plain(text.substr(start_offset, s - start_offset));
    out.push_back(tok.id);
    start_offset = e;
  }
  if (start_offset < text.size()) plain(text.substr(start_offset));
}

}  // namespace ls::tok
