// DRY sequence breakers against a vocabulary (see dry_breakers.h).
#include "decode/dry_breakers.h"

#include <algorithm>
#include <map>

namespace ls::decode {

namespace {

void add_tail(DryBreakers& out, std::int32_t head, std::vector<std::int32_t> tail) {
  auto& tails = out.heads[head];
  if (std::find(tails.begin(), tails.end(), tail) == tails.end()) tails.push_back(std::move(tail));
}

}  // namespace

DryBreakers resolve_dry_breakers(std::span<const std::string> breakers, std::int32_t vocab_size,
                                 const TokenTextFn& token_text, const TailEncodeFn& encode) {
  DryBreakers out;
  out.strings.assign(breakers.begin(), breakers.end());
  std::vector<std::string> cut;
  for (const std::string& b : breakers)
    if (!b.empty()) cut.push_back(b.substr(0, kDryMaxBreakerBytes));
  if (cut.empty()) return out;
  // The rest of breaker b from byte i, encoded once however many tokens end with its beginning.
  std::vector<std::map<std::size_t, std::vector<std::int32_t>>> tails(cut.size());
  for (std::int32_t id = 0; id < vocab_size; ++id) {
    const std::string word = token_text(id);
    for (std::size_t b = 0; b < cut.size(); ++b) {
      const std::string& s = cut[b];
      if (word.find(s) != std::string::npos) {
        add_tail(out, id, {});
        continue;
      }
      // Each occurrence of the breaker's first byte whose following bytes agree with the breaker
      // up to the word's end: the word ends with the breaker's first i bytes.
      for (std::size_t pos = word.find(s[0]); pos != std::string::npos;
           pos = word.find(s[0], pos + 1)) {
        std::size_t i = 1;
        while (i < s.size() && pos + i < word.size() && word[pos + i] == s[i]) ++i;
        if (i < s.size() && pos + i < word.size()) continue;  // a byte differs
        auto [it, fresh] = tails[b].try_emplace(i);
        if (fresh) {
          it->second = encode(std::string_view(s).substr(i));
          if (it->second.size() > kDryMaxTailTokens) it->second.resize(kDryMaxTailTokens);
        }
        add_tail(out, id, it->second);
      }
    }
  }
  return out;
}

}  // namespace ls::decode
