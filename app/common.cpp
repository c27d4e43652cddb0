// Shared option handling and formatting for the subcommands.
#include "app/common.h"

#include <fmt/format.h>

#include <charconv>

#include "core/error.h"
#include "decode/trace_text.h"

namespace ls::app {

CLI::Validator integer_in(std::int64_t lo, std::int64_t hi) {
  // CLI::Range says "Value abc not in range" for a word as for 2000: say what a value must be.
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        std::int64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [p, ec] = std::from_chars(text.data(), end, v);
        if (ec == std::errc() && p == end && v >= lo && v <= hi) return "";
        return fmt::format("expected an integer in [{}, {}], got '{}'", lo, hi, text);
      },
      fmt::format("INT in [{} - {}]", lo, hi));
}

std::size_t parse_experts_shown(const std::string& text) {
  if (text == "all") return decode::kAllExperts;
  std::size_t n = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, n);
  if (text.empty() || ec != std::errc() || p != end)
    fail("--experts takes a number of experts per layer or 'all', got '{}'", text);
  return n;
}

void add_model_options(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("-m,--model", o.model,
                 "Model: a Hugging Face model directory, a .gguf file, or a model id in the "
                 "Hugging Face cache (Qwen/Qwen2.5-0.5B-Instruct, REPO-GGUF:q4_k_m)")
      ->required();
  cmd.add_option("--revision", o.revision,
                 "With a model id: the branch, tag or commit in the cache")
      ->capture_default_str();
  cmd.add_flag("--pull", o.pull,
               "With a model id: download it first (logitscope pull) if the cache lacks it");
  cmd.add_option("--threads", o.threads, "Worker threads (0 = one per hardware thread)")
      ->check(integer_in(0, 1024));
  cmd.add_option("--kv-type", o.kv_type,
                 "KV cache element type: f32, f16 or bf16 (f16/bf16 halve its memory)")
      ->capture_default_str();
  cmd.add_flag("--no-validate", o.no_validate,
               "Skip the load-time scan that norm weights, biases and GGML block scales are "
               "finite (it reads every page of a quantized file once)");
  cmd.add_flag("--debug-nonfinite", o.debug_nonfinite,
               "Check every layer's outputs for NaN/inf and name the first layer and step where "
               "one appears (one extra pass over each activation)");
  cmd.add_flag("--bf16-activations", o.bf16_activations,
               "BF16 weights: round the activations to BF16 before each matrix product and "
               "multiply as vdpbf16ps does (llama.cpp's and torch's bf16 arithmetic): about 1.5x "
               "prefill on CPUs with AVX512_BF16; the logits move by a few hundredths from the "
               "exact float32-activation results that are the default");
  cmd.add_flag("--no-repack", o.no_repack,
               "Read the weight matrices in place from the file's memory map instead of moving "
               "them at load into huge-page memory, Q8_0/Q4_0/Q5_0/Q5_1/IQ4_NL ones interleaved in "
               "groups of 8 rows, Q4_K/Q5_K/Q6_K ones by blocks on CPUs with AVX-512 VNNI "
               "(same results, bit for bit; decode slower, about 2x for those "
               "types; the moved copy replaces the mapped file's pages, so memory stays one copy)");
  // Two flags, not "--huge-pages,!--no-huge-pages": CLI11 shows that one as
  // "--huge-pages,--no-huge-pages{false}", which reads as a default of off where it is on.
  // Triggered as parsed, so the last of the two on the command line wins.
  const std::string shown_default = o.huge_pages ? "on" : "off";
  cmd.add_flag_callback(
         "--huge-pages", [&o] { o.huge_pages = true; },
         "Move the other matrices (float; K-quant where not interleaved) too into huge-page "
         "memory at load (their bytes unchanged): decode 10-20% faster, load slower (a copy, "
         "and fresh 2 MiB pages to zero: up to seconds per GB in a VM). Default here: " +
             shown_default + " (on for serve, chat and bench)")
      ->trigger_on_parse();
  cmd.add_flag_callback(
         "--no-huge-pages", [&o] { o.huge_pages = false; },
         "Keep those matrices in the file's memory map (see --huge-pages)")
      ->trigger_on_parse();
}

model::LoadOptions load_options(const ModelOptions& o) {
  model::LoadOptions l{.validate = !o.no_validate,
                       .debug_nonfinite = o.debug_nonfinite,
                       .repack = !o.no_repack,
                       .huge_pages = o.huge_pages,
                       .bf16_activations = o.bf16_activations};
  if (o.kv_type == "f32")
    l.kv_type = DType::F32;
  else if (o.kv_type == "f16")
    l.kv_type = DType::F16;
  else if (o.kv_type == "bf16")
    l.kv_type = DType::BF16;
  else
    fail("--kv-type must be f32, f16 or bf16, got '{}'", o.kv_type);
  return l;
}

std::vector<std::int32_t> parse_token_list(const std::string& text, const char* flag) {
  // Strict: ids separated by single commas (spaces around them allowed); an empty item
  // ("1,,2", a leading or trailing comma) is an error, not skipped.
  std::vector<std::int32_t> ids;
  const auto bad = [&](const std::string& why) {
    fail("{} must be a comma-separated list of non-negative token ids ({}), got '{}'", flag, why,
         text);
  };
  std::size_t i = 0;
  if (text.find_first_not_of(' ') == std::string::npos)
    fail("{} is empty: give at least one token id", flag);
  while (true) {
    while (i < text.size() && text[i] == ' ') ++i;
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(text.data() + i, text.data() + text.size(), v);
    if (ec != std::errc())
      bad(i >= text.size() || text[i] == ',' ? "an empty item" : "a non-number");
    if (v < 0 || v > INT32_MAX) bad("out of range");
    ids.push_back(static_cast<std::int32_t>(v));
    i = static_cast<std::size_t>(p - text.data());
    while (i < text.size() && text[i] == ' ') ++i;
    if (i == text.size()) break;
    if (text[i] != ',') bad("a non-number");
    ++i;
  }
  return ids;
}

std::string printable(const std::string& s) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n') {
      out += "\\n";
      ++i;
      continue;
    }
    if (c == '\t') {
      out += "\\t";
      ++i;
      continue;
    }
    if (c == '\r') {
      out += "\\r";
      ++i;
      continue;
    }
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02X}", c);
      ++i;
      continue;
    }
    // Length of a valid UTF-8 sequence starting here, or 0.
    std::size_t len = c < 0x80         ? 1
                      : (c >> 5) == 6  ? 2
                      : (c >> 4) == 14 ? 3
                      : (c >> 3) == 30 ? 4
                                       : 0;
    if (len == 0 || i + len > s.size()) len = 0;
    for (std::size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) len = 0;
    if (len == 0) {
      out += fmt::format("\\x{:02X}", c);
      ++i;
      continue;
    }
    out.append(s, i, len);
    i += len;
  }
  return out;
}

}  // namespace ls::app
