// `logitscope tokenize`: text to token ids with the model's own tokenizer.json, and the piece of
// text each id stands for.
//
//   logitscope tokenize --model DIR --text "Hello world"          a table: index, id, piece
//   logitscope tokenize --tokenizer tokenizer.json --text T --json one JSON object
//   logitscope tokenize --model DIR --jsonl FILE                   bulk: one JSON string per input
//                                                                  line -> one JSON array of ids
//                                                                  per output line ("-": stdin)
// --split-special tokenizes special-token text ("<|im_end|>") as plain text.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "app/commands.h"
#include "app/common.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "engine/loaded_model.h"
#include "tokenizer/tokenizer.h"

namespace ls::app {

namespace {

struct TokenizeOptions {
  std::string model;
  std::string tokenizer;
  std::string text;
  bool text_given = false;
  std::string jsonl;
  bool json = false;
  bool split_special = false;
};

tok::Tokenizer load_tokenizer(const TokenizeOptions& o) {
  if (!o.tokenizer.empty()) return tok::Tokenizer::load(o.tokenizer);
  if (o.model.empty()) fail("give the tokenizer with --model DIR or --tokenizer FILE");
  if (std::filesystem::is_regular_file(o.model)) {  // a GGUF: the tokenizer in its metadata
    const engine::LoadedModel lm = engine::LoadedModel::tokenizer_only(o.model);
    return lm.require_tokenizer("tokenize");
  }
  const std::filesystem::path path = std::filesystem::path(o.model) / "tokenizer.json";
  if (!std::filesystem::exists(path))
    fail("{}: no tokenizer.json in this model directory", o.model);
  return tok::Tokenizer::load(path.string());
}

void run_jsonl(const TokenizeOptions& o, const tok::Tokenizer& tok) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (o.jsonl != "-") {
    require_regular_file(o.jsonl, kMaxTextFileBytes, "--jsonl");
    file.open(o.jsonl, std::ios::binary);
    if (!file) fail("{}: cannot open (--jsonl)", o.jsonl);
    in = &file;
  }
  std::string line, out;
  std::size_t number = 0;
  while (std::getline(*in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      fail("{}:{}: not a JSON string: {}", o.jsonl, number, e.what());
    }
    if (!value.is_string())
      fail("{}:{}: expected a JSON string, found {}", o.jsonl, number, value.type_name());
    std::vector<std::int32_t> ids;
    try {
      ids = tok.encode(value.get_ref<const std::string&>(), o.split_special);
    } catch (const Error& e) {
      fail("{}:{}: {}", o.jsonl, number, e.what());
    }
    out.clear();
    out.push_back('[');
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (i) out.push_back(',');
      fmt::format_to(std::back_inserter(out), "{}", ids[i]);
    }
    out += "]\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
}

void run_tokenize(const TokenizeOptions& o) {
  if (!o.jsonl.empty() && o.text_given) fail("give either --text or --jsonl, not both");
  if (o.jsonl.empty() && !o.text_given) fail("give the input with --text TEXT or --jsonl FILE");
  const tok::Tokenizer tok = load_tokenizer(o);
  if (!o.jsonl.empty()) {
    run_jsonl(o, tok);
    return;
  }
  const std::vector<std::int32_t> ids = tok.encode(o.text, o.split_special);
  if (o.json) {
    nlohmann::ordered_json j;
    j["tokenizer"] = tok.source();
    j["text"] = o.text;
    j["split_special"] = o.split_special;
    j["n_tokens"] = ids.size();
    j["ids"] = ids;
    j["tokens"] = nlohmann::ordered_json::array();
    for (std::int32_t id : ids) {
      j["tokens"].push_back(
          {{"id", id}, {"piece", tok.token_text(id)}, {"special", tok.is_special(id)}});
    }
    fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  fmt::print("tokenizer  {} ({} ids)\n", tok.source(), tok.size());
  fmt::print("text       \"{}\" ({} bytes)\n", printable(o.text), o.text.size());
  fmt::print("tokens     {}{}\n\n", ids.size(),
             o.split_special ? "   (special-token text split as plain text)" : "");
  fmt::print("{:>6}  {:>7}  {}\n", "#", "id", "piece");
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int32_t id = ids[i];
    fmt::print("{:>6}  {:>7}  \"{}\"{}\n", i, id, printable(tok.token_bytes(id)),
               tok.is_special(id) ? "  (special)" : "");
  }
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto opts = std::make_shared<TokenizeOptions>();
  CLI::App* cmd =
      app.add_subcommand("tokenize", "Text to token ids, and the piece of text each id stands for");
  auto* model =
      cmd->add_option("-m,--model", opts->model, "Model directory (uses DIR/tokenizer.json)");
  auto* file = cmd->add_option("--tokenizer", opts->tokenizer, "A tokenizer.json file");
  model->excludes(file);
  cmd->add_option("-t,--text", opts->text, "The text to tokenize")
      ->each([opts](const std::string&) { opts->text_given = true; });
  cmd->add_option("--jsonl", opts->jsonl,
                  "Bulk mode: FILE (or - for stdin) has one JSON string per line; prints one JSON "
                  "array of ids per line");
  cmd->add_flag("--json", opts->json, "Print one JSON object instead of a table");
  cmd->add_flag("--split-special", opts->split_special,
                "Tokenize special-token text such as <|im_end|> as plain text");
  cmd->callback([opts] { run_tokenize(*opts); });
}

}  // namespace ls::app
