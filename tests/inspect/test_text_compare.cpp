// Unit tests of two models on one text (inspect/text_compare.h) with hand-computed values: the
// window plan, KL(A||B), delta-p and argmax of one position, percentiles, mean and standard
// error, the summary over a few positions, and the driver over scripted logits sources (fresh
// sequence per window, context fed first, rows matched to their positions across chunks).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "core/error.h"
#include "inspect/text_compare.h"

namespace ls::inspect {
namespace {

void expect_windows(const std::vector<TextWindow>& got, const std::vector<TextWindow>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].start, want[i].start) << "window " << i;
    EXPECT_EQ(got[i].scored_from, want[i].scored_from) << "window " << i;
    EXPECT_EQ(got[i].end, want[i].end) << "window " << i;
  }
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TextWindows, OverlapAndScoredOnce) {
  // 150 tokens: positions 0..148; stride 30.
  expect_windows(plan_text_windows(150, 40, 10),
                 {{0, 0, 40}, {30, 40, 70}, {60, 70, 100}, {90, 100, 130}, {120, 130, 149}});
  expect_windows(plan_text_windows(10, 100, 25), {{0, 0, 9}});  // fits one window
  expect_windows(plan_text_windows(2, 1, 0), {{0, 0, 1}});
  expect_windows(plan_text_windows(7, 3, 0), {{0, 0, 3}, {3, 3, 6}});
  expect_windows(plan_text_windows(6, 2, 1), {{0, 0, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 5}});
  // 41 tokens, window 40: the second window holds only the last position.
  expect_windows(plan_text_windows(42, 40, 10), {{0, 0, 40}, {30, 40, 41}});
}

TEST(TextWindows, Errors) {
  EXPECT_NE(error_of([] { plan_text_windows(1, 10, 0); }).find("1 token"), std::string::npos);
  EXPECT_NE(error_of([] { plan_text_windows(0, 10, 0); }).find("at least 2"), std::string::npos);
  EXPECT_NE(error_of([] { plan_text_windows(10, 0, 0); }).find("--window"), std::string::npos);
  EXPECT_NE(error_of([] { plan_text_windows(10, 4, -1); }).find("--overlap"), std::string::npos);
  EXPECT_NE(error_of([] { plan_text_windows(10, 4, 4); }).find("--overlap 4 must be smaller"),
            std::string::npos);
  EXPECT_NE(error_of([] { plan_text_windows(10, 4, 9); }).find("--window 4"), std::string::npos);
}

TEST(CompareToken, KlDeltaPAndTop) {
  // A uniform over 3; B = (1/2, 1/4, 1/4). KL(A||B) = (1/3) ln(32/27).
  const std::vector<float> a = {0, 0, 0};
  const std::vector<float> b = {static_cast<float>(std::log(2.0)), 0, 0};
  const TokenComparison c = compare_token(a, b, 0);
  EXPECT_NEAR(c.kld, std::log(32.0 / 27.0) / 3, 1e-7);
  EXPECT_NEAR(c.logprob_a, -std::log(3.0), 1e-7);
  EXPECT_NEAR(c.logprob_b, std::log(0.5), 1e-7);
  EXPECT_NEAR(c.dp, 0.5 - 1.0 / 3, 1e-7);
  EXPECT_EQ(c.target, 0);
  EXPECT_EQ(c.top_a, 0);  // a three-way tie: the lowest id
  EXPECT_EQ(c.top_b, 0);
  const TokenComparison d = compare_token(b, a, 2);  // KL(B||A) = ln 3 - H(B) = ln 3 - 1.5 ln 2
  EXPECT_NEAR(d.kld, std::log(3.0) - 1.5 * std::log(2.0), 1e-7);
  EXPECT_NEAR(d.dp, 1.0 / 3 - 0.25, 1e-7);
  const std::vector<float> tie = {1, 3, 3, 2};
  EXPECT_EQ(compare_token(tie, tie, 3).top_a, 1);
  const TokenComparison same = compare_token(tie, tie, 3);
  EXPECT_EQ(same.kld, 0.0);
  EXPECT_EQ(same.dp, 0.0);
}

TEST(CompareToken, Errors) {
  const std::vector<float> three = {0, 1, 2}, four = {0, 1, 2, 3};
  EXPECT_NE(error_of([&] { compare_token(three, four, 0); }).find("vocabularies must match"),
            std::string::npos);
  EXPECT_NE(error_of([&] { compare_token(three, three, 3); }).find("outside the vocabulary"),
            std::string::npos);
  const std::vector<float> bad = {0, NAN, 1};
  EXPECT_NE(error_of([&] { compare_token(three, bad, 0); }).find("model B"), std::string::npos);
}

TEST(Percentile, LinearBetweenRanks) {
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 1), 4);
  EXPECT_DOUBLE_EQ(percentile(v, 0.5), 2.5);        // h = 1.5
  EXPECT_DOUBLE_EQ(percentile(v, 0.1), 1.3);        // h = 0.3
  EXPECT_NEAR(percentile(v, 0.999), 3.997, 1e-12);  // h = 2.997
  const std::vector<double> one = {5};
  EXPECT_DOUBLE_EQ(percentile(one, 0.3), 5);
  EXPECT_THROW(percentile(std::vector<double>{}, 0.5), Error);
  const Percentiles p = percentiles({4, 1, 3, 2});  // sorted first
  EXPECT_DOUBLE_EQ(p.max, 4);
  EXPECT_DOUBLE_EQ(p.min, 1);
  EXPECT_DOUBLE_EQ(p.median, 2.5);
  EXPECT_DOUBLE_EQ(p.p75, 3.25);   // h = 2.25
  EXPECT_DOUBLE_EQ(p.p25, 1.75);   // h = 0.75
  EXPECT_NEAR(p.p90, 3.7, 1e-12);  // h = 2.7
}

TEST(MeanSe, StandardErrorOfTheMean) {
  const MeanSe m = mean_se(std::vector<double>{1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  EXPECT_NEAR(m.se, std::sqrt(1.25 / 3), 1e-15);  // population variance 1.25
  const MeanSe one = mean_se(std::vector<double>{7});
  EXPECT_DOUBLE_EQ(one.mean, 7);
  EXPECT_TRUE(std::isnan(one.se));
}

TEST(SummarizeText, HandComputed) {
  const double l2 = std::log(2.0);
  // p_A(next), p_B(next): (1/2, 1/4), (1/4, 1/2), (1/2, 1/2); tops agree, differ, agree.
  std::vector<TokenComparison> t(3);
  t[0] = {0, 5, -l2, -2 * l2, 0.1, -0.25, 1, 1};
  t[1] = {1, 6, -2 * l2, -l2, 0.3, 0.25, 2, 3};
  t[2] = {2, 7, -l2, -l2, 0.2, 0.0, 4, 4};
  const TextComparisonSummary s = summarize_text(t);
  EXPECT_EQ(s.tokens, 3);
  EXPECT_NEAR(s.ppl_a, std::pow(2.0, 4.0 / 3), 1e-12);  // exp(mean of ln 2, ln 4, ln 2)
  EXPECT_NEAR(s.ppl_b, std::pow(2.0, 4.0 / 3), 1e-12);
  EXPECT_NEAR(s.nll_a.se, l2 / 3, 1e-12);
  EXPECT_NEAR(s.ppl_a_se, std::pow(2.0, 4.0 / 3) * l2 / 3, 1e-12);
  EXPECT_NEAR(s.ln_ppl_ratio.mean, 0, 1e-15);  // per token ln 2, -ln 2, 0
  EXPECT_NEAR(s.ln_ppl_ratio.se, l2 / std::sqrt(3.0), 1e-12);
  EXPECT_NEAR(s.ppl_ratio, 1, 1e-15);
  EXPECT_NEAR(s.ppl_ratio_se, l2 / std::sqrt(3.0), 1e-12);
  EXPECT_NEAR(s.logprob_corr, -0.5, 1e-12);
  EXPECT_NEAR(s.kld.mean, 0.2, 1e-15);
  EXPECT_NEAR(s.kld.se, std::sqrt(0.01 / 3), 1e-12);
  EXPECT_DOUBLE_EQ(s.kld_pct.max, 0.3);
  EXPECT_DOUBLE_EQ(s.kld_pct.min, 0.1);
  EXPECT_DOUBLE_EQ(s.kld_pct.median, 0.2);
  EXPECT_NEAR(s.kld_pct.p90, 0.28, 1e-12);  // h = 1.8 in {0.1, 0.2, 0.3}
  EXPECT_NEAR(s.dp.mean, 0, 1e-15);
  EXPECT_NEAR(s.dp_rms, std::sqrt(1.0 / 24), 1e-12);
  // dp^2 = 1/16, 1/16, 0: se 1/48; the RMS error se / (2 rms).
  EXPECT_NEAR(s.dp_rms_se, (1.0 / 48) / (2 * std::sqrt(1.0 / 24)), 1e-12);
  EXPECT_DOUBLE_EQ(s.dp_pct.max, 0.25);
  EXPECT_DOUBLE_EQ(s.dp_pct.min, -0.25);
  EXPECT_DOUBLE_EQ(s.dp_pct.median, 0);
  EXPECT_DOUBLE_EQ(s.dp_pct.p25, -0.125);
  EXPECT_EQ(s.same_top, 2);
  EXPECT_NEAR(s.same_top1, 2.0 / 3, 1e-15);
  EXPECT_NEAR(s.same_top1_se, 1.0 / 3, 1e-12);  // sqrt((2/3)(1/3) / 2)
}

TEST(SummarizeText, OneTokenHasNoErrors) {
  const std::vector<TokenComparison> t = {{0, 1, -1.0, -2.0, 0.5, 0.1, 3, 3}};
  const TextComparisonSummary s = summarize_text(t);
  EXPECT_NEAR(s.ppl_a, std::exp(1.0), 1e-12);
  EXPECT_NEAR(s.ppl_b, std::exp(2.0), 1e-12);
  EXPECT_TRUE(std::isnan(s.ppl_a_se));
  EXPECT_TRUE(std::isnan(s.kld.se));
  EXPECT_TRUE(std::isnan(s.logprob_corr));
  EXPECT_TRUE(std::isnan(s.same_top1_se));
  EXPECT_DOUBLE_EQ(s.kld_pct.p99_9, 0.5);
  EXPECT_DOUBLE_EQ(s.same_top1, 1);
  EXPECT_THROW(summarize_text(std::vector<TokenComparison>{}), Error);
}

// A scripted model over 6 ids: the logits after token x at position L of its sequence are
// row[v] = -scale (v - x)^2 + 0.1 L (v == (L mod 6)), so every row depends on the token, on the
// position inside the window (fresh sequences restart at 0) and on the model (scale).
struct Scripted final : decode::LogitsSource {
  explicit Scripted(double s) : scale(s) {}
  static constexpr int kVocab = 6;
  double scale;
  std::map<int, std::int64_t> length;
  std::vector<float> rows;
  std::vector<int> released;
  std::int64_t fed_without_rows = 0;

  static std::vector<float> row(double scale, std::int32_t x, std::int64_t pos) {
    std::vector<float> r(kVocab);
    for (int v = 0; v < kVocab; ++v)
      r[static_cast<std::size_t>(v)] =
          static_cast<float>(-scale * (v - x) * (v - x) + (v == pos % kVocab ? 0.1 * pos : 0.0));
    return r;
  }
  std::int32_t vocab_size() const override { return kVocab; }
  std::vector<std::span<const float>> step(std::span<const decode::Feed> feeds) override {
    rows.clear();
    EXPECT_EQ(feeds.size(), 1u);
    const auto& f = feeds[0];
    std::int64_t& len = length[f.seq];
    for (std::size_t k = 0; k < f.tokens.size(); ++k, ++len) {
      if (!f.all_positions && k + 1 < f.tokens.size()) {
        ++fed_without_rows;
        continue;
      }
      const auto r = row(scale, f.tokens[k], len);
      rows.insert(rows.end(), r.begin(), r.end());
    }
    return {std::span<const float>(rows)};
  }
  void fork(int, int) override {}
  void release(int seq) override {
    length.erase(seq);
    released.push_back(seq);
  }
};

TEST(CompareOnText, WindowsAreFreshSequencesAndRowsMatchPositions) {
  const std::vector<std::int32_t> tokens = {0, 3, 1, 5, 2, 2, 4, 0, 1, 3, 5};  // 11 tokens
  const auto windows = plan_text_windows(static_cast<std::int64_t>(tokens.size()), 4, 2);
  Scripted a(0.5), b(0.3);
  std::size_t reported = 0;
  const auto got =
      compare_on_text(a, b, tokens, windows, /*chunk=*/3, [&](std::size_t n) { reported += n; });
  ASSERT_EQ(got.size(), tokens.size() - 1);
  std::size_t fed = 0;
  for (const auto& w : windows) {
    fed += static_cast<std::size_t>(w.end - w.start);
    for (std::int64_t i = w.scored_from; i < w.end; ++i) {
      const auto& c = got[static_cast<std::size_t>(i)];
      const auto ra = Scripted::row(0.5, tokens[static_cast<std::size_t>(i)], i - w.start);
      const auto rb = Scripted::row(0.3, tokens[static_cast<std::size_t>(i)], i - w.start);
      const TokenComparison want = compare_token(ra, rb, tokens[static_cast<std::size_t>(i + 1)]);
      EXPECT_EQ(c.position, i);
      EXPECT_EQ(c.target, tokens[static_cast<std::size_t>(i + 1)]);
      EXPECT_DOUBLE_EQ(c.kld, want.kld) << "position " << i;
      EXPECT_DOUBLE_EQ(c.logprob_a, want.logprob_a) << "position " << i;
      EXPECT_DOUBLE_EQ(c.dp, want.dp) << "position " << i;
      EXPECT_EQ(c.top_a, want.top_a);
      EXPECT_EQ(c.top_b, want.top_b);
    }
  }
  EXPECT_EQ(reported, fed);
  // Windows 1..3 start with 2 context positions each, fed in one step that returns one row.
  EXPECT_EQ(a.fed_without_rows, 3);
  EXPECT_EQ(b.fed_without_rows, 3);
  EXPECT_EQ(a.released.size(), windows.size());
  EXPECT_EQ(b.released.size(), windows.size());
  EXPECT_TRUE(a.length.empty());
}

TEST(CompareOnText, Errors) {
  const std::vector<std::int32_t> tokens = {0, 1, 2, 3};
  Scripted a(0.5), b(0.3);
  const std::vector<TextWindow> past_end = {{0, 0, 4}};  // position 3 has no next token
  EXPECT_NE(error_of([&] { compare_on_text(a, b, tokens, past_end); }).find("does not fit"),
            std::string::npos);
}

}  // namespace
}  // namespace ls::inspect
