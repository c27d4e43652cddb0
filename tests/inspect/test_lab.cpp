// Unit tests of the inspection lab's pure functions, with hand-computed expectations: the
// repetition-loop rule, seed statistics, comparison summary buckets, golden-file parsing errors,
// the .npy reader (round trip with the writer and malformed files) and SVG escaping.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/npy.h"
#include "inspect/compare.h"
#include "inspect/eval.h"
#include "inspect/npy_read.h"
#include "inspect/seeds.h"
#include "inspect/svg.h"

namespace ls::inspect {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("ls_lab_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(LoopRule, FindsTheLeftmostShortestRun) {
  const LoopRule rule{8, 3};
  EXPECT_FALSE(find_loop({1, 2, 3, 4, 5}, rule));
  EXPECT_FALSE(find_loop({7, 7}, rule));           // two repeats are not a loop
  EXPECT_FALSE(find_loop({1, 2, 1, 2, 1}, rule));  // the third block is incomplete
  const auto a = find_loop({9, 7, 7, 7}, rule);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->start, 1u);
  EXPECT_EQ(a->ngram, 1);
  EXPECT_EQ(a->repeats, 3);
  const auto b = find_loop({5, 1, 2, 1, 2, 1, 2, 1, 2, 6}, rule);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->start, 1u);
  EXPECT_EQ(b->ngram, 2);
  EXPECT_EQ(b->repeats, 4);
  EXPECT_FALSE(find_loop({1, 2, 3, 1, 2, 3, 1, 2, 3}, LoopRule{2, 3}));  // block longer than 2
  EXPECT_TRUE(find_loop({1, 2, 3, 1, 2, 3}, LoopRule{3, 2}));
}

TEST(SeedSummary, CountsDivergenceAndSpread) {
  std::vector<SeedRun> runs = {{0, {1, 2, 3}, "a", -1.0, "length"},
                               {1, {1, 2, 4}, "b", -3.0, "length"},
                               {2, {1, 2, 3}, "a", -1.0, "length"},
                               {3, {1, 5, 5, 5, 5}, "c", -5.0, "length"}};
  const SeedSummary s = summarize_seeds(runs, LoopRule{});
  ASSERT_EQ(s.distinct.size(), 3u);
  EXPECT_EQ(s.distinct[0].count, 2);
  EXPECT_EQ(s.distinct[0].seeds, (std::vector<std::uint64_t>{0, 2}));
  EXPECT_EQ(s.distinct[1].tokens, (std::vector<std::int32_t>{1, 2, 4}));  // first seen first
  ASSERT_TRUE(s.first_divergence);
  EXPECT_EQ(*s.first_divergence, 1);
  EXPECT_DOUBLE_EQ(s.mean_logprob, -2.5);
  EXPECT_DOUBLE_EQ(s.std_logprob, std::sqrt((2.25 + 0.25 + 2.25 + 6.25) / 4));
  EXPECT_DOUBLE_EQ(s.mean_length, 3.5);
  EXPECT_EQ(s.loops, 1);
  EXPECT_DOUBLE_EQ(s.loop_rate, 0.25);
  // All identical: no divergence; one run being a prefix of another diverges where it ends.
  EXPECT_FALSE(summarize_seeds({runs[0], runs[2]}, LoopRule{}).first_divergence);
  runs = {{0, {1, 2}, "", 0, ""}, {1, {1, 2, 3}, "", 0, ""}};
  EXPECT_EQ(*summarize_seeds(runs, LoopRule{}).first_divergence, 2);
}

TEST(CompareSummary, BucketsFlipsByMargin) {
  const std::vector<float> a = {3.0f, 2.95f, 0.0f}, b = {2.0f, 2.5f, 0.0f};
  PositionComparison p = compare_position(a, b);
  EXPECT_FALSE(p.agree);
  EXPECT_EQ(p.top_a, 0);
  EXPECT_EQ(p.top_b, 1);
  EXPECT_NEAR(p.margin_a, 0.05, 1e-6);
  PositionComparison same = compare_position(a, a);
  EXPECT_TRUE(same.agree);
  EXPECT_EQ(same.kl, 0.0);
  const ComparisonSummary s = summarize({p, same});
  EXPECT_EQ(s.flips, 1);
  EXPECT_DOUBLE_EQ(s.agreement_rate, 0.5);
  EXPECT_EQ(s.buckets[0].positions, 2);  // both gaps are 0.05
  EXPECT_EQ(s.buckets[0].flips, 1);
  EXPECT_THROW(compare_position(a, std::vector<float>{1.0f, 2.0f}), Error);
}

TEST(Golden, RejectsBadLinesNamingThem) {
  const std::string path = temp_path("golden.jsonl");
  write_file(path,
             "{\"prompt\": \"a\", \"exact\": \"b\"}\n\n{\"prompt\": \"c\", \"top1\": 5, "
             "\"step\": 2, \"id\": \"t\"}\n");
  const auto cases = read_golden(path);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[1].kind, ExpectKind::top1);
  EXPECT_EQ(*cases[1].expected_id, 5);
  EXPECT_EQ(cases[1].step, 2);
  EXPECT_EQ(cases[1].line, 3);
  const auto no_text = [](std::int32_t) { return std::string(); };
  EXPECT_TRUE(check_case(cases[1], {"", {}, {0, 0, 5}}, no_text).pass);
  EXPECT_FALSE(check_case(cases[1], {"", {}, {5}}, no_text).pass);  // step 2 not reached
  for (const char* bad : {"{\"prompt\": \"a\", \"exact\": \"b\", \"contains\": \"c\"}",
                          "{\"prompt\": 3, \"exact\": \"b\"}", "[1]", "{\"prompt\": \"a\"}"}) {
    write_file(path, std::string("{\"prompt\": \"a\", \"exact\": \"b\"}\n") + bad + "\n");
    try {
      read_golden(path);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    }
  }
  fs::remove(path);
}

TEST(Npy, RoundTripAndMalformed) {
  const std::string path = temp_path("x.npy");
  const std::vector<float> data = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f};
  write_npy_f32(path, data, {2, 3});
  const NpyF32 back = read_npy_f32(path);
  EXPECT_EQ(back.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(back.data, data);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  write_file(path, bytes.substr(0, bytes.size() - 1));  // truncated data
  EXPECT_THROW(read_npy_f32(path), Error);
  write_file(path, "not numpy");
  EXPECT_THROW(read_npy_f32(path), Error);
  fs::remove(path);
}

TEST(Svg, EscapesTextAndCarriesValues) {
  const std::string s =
      bar_panels_svg("a <b> & \"c\"", {{"T=1", {{"<tok>&\x01", 0.25}, {"x", 0.75}}}});
  EXPECT_EQ(s.find("<tok>"), std::string::npos);
  EXPECT_NE(s.find("&lt;tok&gt;&amp; "), std::string::npos);
  EXPECT_NE(s.find("data-value=\"0.25\""), std::string::npos);
  const std::string l = line_chart_svg("t", "x", {"a", "b"}, {{"kl", {0.0, 0.5}, "red", false, {}}},
                                       {{1, "flip"}}, "y", "");
  EXPECT_NE(l.find("data-name=\"kl\""), std::string::npos);
  EXPECT_NE(l.find("class=\"mark\" data-x=\"1\""), std::string::npos);
}

TEST(Svg, TicksAreRoundAndCoverTheRange) {
  EXPECT_EQ(nice_ticks(0.000318),
            (std::vector<double>{0, 5e-05, 0.0001, 0.00015, 0.0002, 0.00025, 0.0003, 0.00035}));
  EXPECT_EQ(nice_ticks(1.0), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1.0}));
  EXPECT_EQ(nice_ticks(7.3).back(), 8.0);
  EXPECT_EQ(nice_ticks(0).back(), 1.0);  // nothing to show: a unit axis
  for (const double hi : {1e-7, 0.0033, 0.99, 1.0, 4.2, 11.5, 987.0}) {
    const std::vector<double> t = nice_ticks(hi);
    EXPECT_GE(t.back(), hi) << hi;
    EXPECT_GE(t.size(), 5u) << hi;
    EXPECT_LE(t.size(), 11u) << hi;
  }
}

TEST(Svg, TokenLabelsShowSpacesAndIsolateTheirDirection) {
  EXPECT_EQ(svg_token_label(" Fahr"), "\u2068\u2423Fahr\u2069");
  EXPECT_EQ(svg_token_label("\u0645\u0631\u062d\u0628\u0627 x"),
            "\u2068\u0645\u0631\u062d\u0628\u0627\u2423x\u2069");
  const std::string l =
      line_chart_svg("t", "x", {"a", "b"}, {{"kl", {0.0, 0.000318}, "red", false, {}}},
                     {{1, "flip"}}, "y", "", "top-1 flip");
  EXPECT_NE(l.find(">5e-05</text>"), std::string::npos);
  EXPECT_EQ(l.find("0.000318</text>"), std::string::npos);
  EXPECT_NE(l.find("class=\"legend-marks\" x=\""), std::string::npos);
  EXPECT_NE(l.find(">top-1 flip</text>"), std::string::npos);
}

}  // namespace
}  // namespace ls::inspect
