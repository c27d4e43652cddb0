// Tests of the streaming tool-call parser: fixed cases, the property that how the stream is
// split never changes the result (the server sees tokens of any size), and a fuzz loop that
// checks nothing is lost or thrown on arbitrary fragment soup.
#include "server/tool_calls.h"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ls::server {
namespace {

struct Result {
  std::string content;
  std::vector<ToolCall> calls;
  bool utf8_ok = true;  // every delta's content was valid UTF-8 on its own
};

bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c < 0x80         ? 1
                          : (c >> 5) == 6  ? 2
                          : (c >> 4) == 14 ? 3
                          : (c >> 3) == 30 ? 4
                                           : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    }
    i += n;
  }
  return true;
}

// Cuts `s` at character boundaries only, as the server's deltas are valid UTF-8.
std::vector<std::string> split(const std::string& s, std::mt19937* rng, bool one_char) {
  std::vector<std::string> parts;
  std::size_t want = 0;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = 1;
    while (i + n < s.size() && (static_cast<unsigned char>(s[i + n]) >> 6) == 2) ++n;
    if (parts.empty() || want == 0) {
      parts.emplace_back();
      want = one_char ? 1 : std::uniform_int_distribution<std::size_t>(1, 8)(*rng);
    }
    parts.back() += s.substr(i, n);
    --want;
    i += n;
  }
  return parts;
}

Result feed(const std::vector<std::string>& parts, const std::string& prefix = "t") {
  ToolCallParser parser(prefix);
  Result r;
  auto add = [&r](ToolDelta d) {
    r.utf8_ok = r.utf8_ok && valid_utf8(d.content);
    r.content += d.content;
    for (auto& c : d.calls) r.calls.push_back(std::move(c));
  };
  for (const auto& p : parts) add(parser.push(p));
  add(parser.finish());
  EXPECT_EQ(parser.call_count(), r.calls.size());
  return r;
}

Result feed_whole(const std::string& s) {
  return feed({s});
}

void expect_same(const Result& a, const Result& b) {
  EXPECT_EQ(a.content, b.content);
  ASSERT_EQ(a.calls.size(), b.calls.size());
  for (std::size_t i = 0; i < a.calls.size(); ++i) {
    EXPECT_EQ(a.calls[i].id, b.calls[i].id);
    EXPECT_EQ(a.calls[i].name, b.calls[i].name);
    EXPECT_EQ(a.calls[i].arguments, b.calls[i].arguments);
  }
}

const std::string kWeather =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
const std::string kTime =
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>";

TEST(ToolCallParser, PlainTextPassesThrough) {
  const auto r = feed_whole("Hello, world! 1 < 2 and <b>bold</b>.");
  EXPECT_EQ(r.content, "Hello, world! 1 < 2 and <b>bold</b>.");
  EXPECT_TRUE(r.calls.empty());
}

TEST(ToolCallParser, OneCall) {
  const auto r = feed_whole(kWeather);
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, "{\"city\":\"Paris\"}");
}

TEST(ToolCallParser, TwoCallsWithNewlinesBetween) {
  const auto r = feed_whole(kWeather + "\n\n" + kTime + "\n");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[1].name, "get_time");
  EXPECT_EQ(r.calls[1].arguments, "{\"tz\":\"CET\"}");
}

TEST(ToolCallParser, TextBeforeCall) {
  const auto r = feed_whole("Let me check.\n" + kWeather);
  EXPECT_EQ(r.content, "Let me check.\n");
  ASSERT_EQ(r.calls.size(), 1u);
}

TEST(ToolCallParser, TextAfterCallIsContent) {
  const auto r = feed_whole(kWeather + "\nDone.");
  EXPECT_EQ(r.content, "\nDone.");
  ASSERT_EQ(r.calls.size(), 1u);
}

TEST(ToolCallParser, PartialTagHeldThenReleasedByFinish) {
  ToolCallParser parser("p");
  EXPECT_EQ(parser.push("Hi <tool").content, "Hi ");
  EXPECT_EQ(parser.push("_ca").content, "");
  const auto d = parser.finish();
  EXPECT_EQ(d.content, "<tool_ca");
  EXPECT_TRUE(d.calls.empty());
}

TEST(ToolCallParser, PartialTagFollowedByOtherTextIsContent) {
  ToolCallParser parser("p");
  EXPECT_EQ(parser.push("a <tool").content, "a ");
  EXPECT_EQ(parser.push("box> b").content, "<toolbox> b");
  EXPECT_EQ(parser.finish().content, "");
}

TEST(ToolCallParser, InvalidJsonBlockStaysContentVerbatim) {
  const std::string bad = "<tool_call>\n{\"name\": get_weather}\n</tool_call>";
  EXPECT_EQ(feed_whole(bad).content, bad);
  const std::string no_name = "<tool_call> {\"arguments\": {}} </tool_call>";
  EXPECT_EQ(feed_whole(no_name).content, no_name);
  const std::string bad_args = "<tool_call>{\"name\": \"f\", \"arguments\": 3}</tool_call>";
  EXPECT_EQ(feed_whole(bad_args).content, bad_args);
  EXPECT_TRUE(feed_whole(bad).calls.empty());
}

TEST(ToolCallParser, UnterminatedBlockIsContentAtFinish) {
  const std::string s = "ok " + kWeather.substr(0, 30);
  const auto r = feed_whole(s);
  EXPECT_EQ(r.content, s);
  EXPECT_TRUE(r.calls.empty());
}

TEST(ToolCallParser, ArgumentsAsJsonString) {
  const auto r = feed_whole(
      "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>"
      "<tool_call>{\"name\": \"g\"}</tool_call>");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].arguments, "{\"x\": 1}");
  EXPECT_EQ(r.calls[1].arguments, "{}");
}

TEST(ToolCallParser, ChineseTextAroundCalls) {
  const auto r = feed_whole(
      "我来查一下天气。\n<tool_call>\n{\"name\": \"天气\", \"arguments\": {\"城市\": \"北京\"}}\n"
      "</tool_call>\n好的，北京");
  EXPECT_EQ(r.content, "我来查一下天气。\n\n好的，北京");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "天气");
  EXPECT_EQ(r.calls[0].arguments, "{\"城市\":\"北京\"}");
  EXPECT_TRUE(r.utf8_ok);
}

TEST(ToolCallParser, IdsCountUp) {
  ToolCallParser parser("ab12");
  auto d = parser.push(kWeather + "\n" + kTime);
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].id, "call_ab12_0");
  EXPECT_EQ(d.calls[1].id, "call_ab12_1");
  EXPECT_EQ(parser.call_count(), 2u);
}

TEST(ToolCallParser, SplitsNeverChangeTheResult) {
  const std::vector<std::string> inputs = {
      "plain text only",
      kWeather,
      "Sure!\n" + kWeather + "\n\n" + kTime + "\n",
      "<tool_call>\n{\"name\": oops}\n</tool_call>\n" + kWeather,
      kWeather + "\n<tool_call>\n{\"name\": \"f\", \"argu",
      "北京 <tool <tool_ca <tool_call> 北 </tool_call> 京",
      kWeather + "  \n" + "<tool_call>bad</tool_call>\n\n" + kTime + "\n\t",
      "<<<tool_call>{\"name\":\"x\"}</tool_call></tool_call>",
  };
  std::mt19937 rng(12345);
  for (const auto& in : inputs) {
    SCOPED_TRACE(in);
    const auto whole = feed_whole(in);
    const auto by_char = feed(split(in, &rng, true));
    expect_same(whole, by_char);
    EXPECT_TRUE(by_char.utf8_ok);
    // Raw single bytes too: the parser cuts only at ASCII tags, so even mid-character pieces
    // must add up to the same result.
    std::vector<std::string> bytes;
    for (char c : in) bytes.emplace_back(1, c);
    expect_same(whole, feed(bytes));
    for (int k = 0; k < 50; ++k) {
      const auto random = feed(split(in, &rng, false));
      expect_same(whole, random);
      EXPECT_TRUE(random.utf8_ok);
    }
  }
}

TEST(ToolCallParser, FuzzNoThrowNoLoss) {
  // Whole call bodies and blocks among the fragments make many inputs hold real calls, so the
  // split check also covers parsed blocks and the dropped whitespace around them.
  // clang-format off
  const std::vector<std::string> frags = {
      "<tool_call>", "</tool_call>", "{", "}", "\"name\"", ":", "\"f\"", "<", "x", "北", "\n",
      " ", "<tool", "_call>", "{\"name\": \"f\"}", "<tool_call>{\"name\": \"g\"}</tool_call>"};
  // clang-format on
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::size_t> pick(0, frags.size() - 1), len(0, 24);
  for (int iter = 0; iter < 4000; ++iter) {
    std::string in;
    for (std::size_t n = len(rng); n > 0; --n) in += frags[pick(rng)];
    SCOPED_TRACE(in);
    Result r;
    ASSERT_NO_THROW(r = feed(split(in, &rng, false)));
    EXPECT_TRUE(r.utf8_ok);
    expect_same(feed_whole(in), r);
    if (r.calls.empty()) {
      EXPECT_EQ(r.content, in);
    }
  }
}

}  // namespace
}  // namespace ls::server
