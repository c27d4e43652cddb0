// `logitscope quantize`: convert a Hugging Face model directory into one GGUF file that
// llama.cpp can load (standard tensor names and metadata, tokenizer and chat template inside),
// with the 2-D matrices in F32, F16, BF16 or a GGML block type and norms/biases in F32.
#include <fmt/format.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include "app/commands.h"
#include "app/model_source.h"
#include "app/progress.h"
#include "convert/gguf_quantize.h"
#include "core/error.h"

namespace ls::app {

namespace {

// A GGML type for every matrix, or one of llama-quantize's mixes (q2_k is llama-quantize's Q2_K,
// itself a mix).
void parse_type(const std::string& s, convert::QuantizeOptions* q) {
  static const std::map<std::string, DType> kTypes = {
      {"f32", DType::F32},   {"f16", DType::F16},       {"bf16", DType::BF16},
      {"q8_0", DType::Q8_0}, {"q4_0", DType::Q4_0},     {"q4_k", DType::Q4_K},
      {"q6_k", DType::Q6_K}, {"q5_0", DType::Q5_0},     {"q5_1", DType::Q5_1},
      {"q4_1", DType::Q4_1}, {"iq4_nl", DType::IQ4_NL}, {"q5_k", DType::Q5_K},
      {"q3_k", DType::Q3_K}};
  if (const auto mix = convert::quant_mix_from_name(s)) {
    q->mix = mix;
    q->type = convert::quant_mix_default_type(*mix);
    return;
  }
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto it = kTypes.find(lower);
  if (it == kTypes.end())
    fail(
        "--type '{}' is not supported (expected q8_0, q6_k, q5_k, q5_0, q5_1, q4_k, q4_0, "
        "q4_1, iq4_nl, q3_k, the mixes q5_k_m, q4_k_m, q3_k_m, q2_k, or f16, bf16, f32)",
        s);
  q->type = it->second;
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  struct Opts {
    convert::QuantizeOptions q;
    std::string type = "q8_0";
    std::string revision = "main";
    bool pull = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "quantize", "Write a Hugging Face model directory as one GGUF file (llama.cpp layout)");
  // The details go below the options, paragraph by paragraph, not into the command list.
  cmd->footer(
      "Norms and biases stay F32. Matrices whose rows are not whole blocks of the type fall back "
      "as llama-quantize does (Q2_K, Q3_K to IQ4_NL, Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0; "
      "F16 when not even whole 32-blocks), and are listed.\n\n"
      "The mixes q5_k_m, q4_k_m, q3_k_m and q2_k choose each matrix's type as llama-quantize "
      "does:\n"
      "  all: the output matrix (or the tied token embedding) Q6_K, Q8_0 for rows that are not "
      "whole 256-blocks\n"
      "  q4_k_m, q5_k_m: attn_v and ffn_down of the first and last eighth of the layers and "
      "every third between them Q6_K\n"
      "  q3_k_m: attn_v Q5_K in layers 0-1 else Q4_K, ffn_down Q5_K in the first sixteenth else "
      "Q4_K, attn_output Q4_K\n"
      "  q2_k: attn_v Q4_K (Q3_K below 4 query heads per key-value head), ffn_down and "
      "attn_output Q3_K\n"
      "  everything else: the mix's K-quant\n\n" +
      app.get_footer());
  cmd->add_option("--model", o->q.model_dir,
                  "Hugging Face model directory, or a model id in the Hugging Face cache")
      ->required();
  cmd->add_option("--revision", o->revision, "With a model id: the branch, tag or commit")
      ->capture_default_str();
  cmd->add_flag("--pull", o->pull, "With a model id: download it first if the cache lacks it");
  cmd->add_option(
         "--type", o->type,
         "Matrix type: q8_0|q6_k|q5_k|q5_0|q5_1|q4_k|q4_0|q4_1|iq4_nl|q3_k|f16|bf16|f32, or a "
         "llama-quantize mix: q5_k_m|q4_k_m|q3_k_m|q2_k")
      ->capture_default_str();
  cmd->add_option("--out", o->q.out, "Output .gguf file")->required();
  cmd->add_option("--name", o->q.name, "general.name (default: the directory's name)");
  cmd->add_option("--threads", o->q.threads,
                  "Threads converting rows (0 = one per hardware thread; the file is the same "
                  "bytes for any count)")
      ->check(integer_in(0, 1024));
  cmd->callback([o] {
    parse_type(o->type, &o->q);
    std::string repo;
    o->q.model_dir = resolve_model_spec(o->q.model_dir, o->revision, o->pull, "--model", &repo);
    // A snapshot folder is named by its commit: name the GGUF after the repo instead.
    if (o->q.name.empty() && !repo.empty()) o->q.name = repo.substr(repo.find('/') + 1);
    if (!convert::gguf_can_write(o->q.type))
      fail("--type {}: not available in this build (the quantization kernels are missing)",
           o->type);
    const auto t0 = std::chrono::steady_clock::now();
    std::optional<Progress> progress;
    o->q.on_tensor = [&progress](std::size_t done, std::size_t total) {
      if (!progress) progress.emplace("quantize", total, "tensors");
      progress->advance(done - progress->done());
    };
    const convert::QuantizeResult r = convert::quantize_to_gguf(o->q);
    progress.reset();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // Fallbacks grouped by (wanted type, type, row length) so a 24-layer model gives a few
    // lines, not 100.
    std::map<std::tuple<std::string, std::string, std::int64_t>, std::vector<std::string>> groups;
    for (const auto& f : r.fallbacks)
      groups[{std::string(dtype_name(f.wanted)), std::string(dtype_name(f.type)), f.shape.back()}]
          .push_back(f.tensor);
    for (const auto& [key, names] : groups)
      fmt::print(
          "note: {} matri{} with rows of {} elements (not a multiple of the {} block) "
          "written as {}, e.g. {}\n",
          names.size(), names.size() == 1 ? "x" : "ces", std::get<2>(key), std::get<0>(key),
          std::get<1>(key), names.front());
    if (!r.tokenizer)
      fmt::print("note: {} has no tokenizer.json; the GGUF has no tokenizer metadata\n",
                 o->q.model_dir);
    fmt::print("wrote {} ({} tensors, {}, {:.1f} MiB of tensor data) in {:.1f} s\n", o->q.out,
               r.tensors, o->q.mix ? convert::quant_mix_name(*o->q.mix) : dtype_name(o->q.type),
               static_cast<double>(r.bytes) / (1 << 20), secs);
  });
}

}  // namespace ls::app
