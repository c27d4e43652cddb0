// `logitscope serve`: the OpenAI-compatible HTTP server (docs/server-api.md). Parses the flags,
// opens the model once, starts the scheduler and the HTTP server, and on SIGINT/SIGTERM stops
// accepting, lets running requests finish (cancelling them after 10 s) and exits 0.
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "app/commands.h"
#include "app/common.h"
#include "app/model_source.h"
#include "app/prompt.h"
#include "core/error.h"
#include "engine/engine.h"
#include "server/http_server.h"

namespace ls::app {

namespace {

struct ServeOptions {
  ModelOptions model;
  server::HttpOptions http;
  server::SchedulerOptions scheduler;
  int ctx = 4096;
  std::size_t keep_mib = 512;
  std::string served_name;
  std::string model_b;  // --model-b: a second model the page compares at kept steps
};

std::string default_name(const std::string& path) {
  std::filesystem::path p(path);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();  // "dir/" -> "dir"
  std::string name = p.filename().string();
  if (p.extension() == ".gguf") name = p.stem().string();
  return name.empty() ? path : name;
}

void run_serve(ServeOptions& o) {
  // Block the stop signals before any thread starts, so only the waiting thread sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const LoadedModel lm = load_model(o.model);
  lm.require_tokenizer("serve");
  const int model_ctx = static_cast<int>(lm.model().config().max_position_embeddings);
  if (o.ctx < 2) fail("--ctx must be at least 2, got {}", o.ctx);
  server::ServerLimits limits;
  limits.model = &lm;
  // A model id serves under its repo id (as vLLM names a model it loaded from the Hub).
  limits.served_name = !o.served_name.empty()      ? o.served_name
                       : !o.model.model_id.empty() ? o.model.model_id
                                                   : default_name(o.model.model);
  limits.ctx = std::min(o.ctx, model_ctx);
  limits.parallel = o.scheduler.parallel;
  limits.defaults = server::server_defaults(lm);
  (void)lm.chat_template();  // read once here: handler threads then only render it
  std::optional<LoadedModel> lm_b;
  if (!o.model_b.empty()) {
    const std::string path = resolve_model_spec(o.model_b, "main", o.model.pull, "--model-b");
    lm_b.emplace(LoadedModel::open(path, load_options(o.model)));
    if (lm_b->model().config().vocab_size != lm.model().config().vocab_size)
      fail(
          "--model-b {}: vocab_size {} differs from --model {} ({}); the two models must share "
          "the vocabulary",
          o.model_b, lm_b->model().config().vocab_size, o.model.model,
          lm.model().config().vocab_size);
    limits.model_b = &*lm_b;
    limits.model_b_name = default_name(o.model_b);
  }

  ThreadPool pool(o.model.threads);
  engine::Engine engine(lm.model(), pool);
  server::GenerationStore store(o.keep_mib << 20);  // before the scheduler: its jobs point here
  server::Scheduler scheduler(engine, pool, lm, o.scheduler);
  server::HttpServer http(lm, scheduler, store, limits, o.http);
  const int port = http.bind();
  std::thread serving([&] { http.run(); });
  fmt::print(stderr,
             "logitscope serve: model {} ({}), context {} per sequence, {} in parallel, "
             "{} threads\n",
             limits.served_name, o.model.model, limits.ctx, o.scheduler.parallel, pool.size());
  fmt::print(stderr, "the logit microscope (the web page): http://{}:{}/\n", o.http.host, port);
  fmt::print("listening on http://{}:{}\n", o.http.host, port);
  std::fflush(stdout);

  int signal = 0;
  sigwait(&stop_signals, &signal);
  fmt::print(stderr, "logitscope serve: {} received, finishing running requests\n",
             signal == SIGINT ? "SIGINT" : "SIGTERM");
  http.begin_shutdown();
  scheduler.shutdown(std::chrono::seconds(10));
  http.drain(std::chrono::seconds(2));  // cut streams send their error event and [DONE]
  http.stop();
  serving.join();
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd =
      app.add_subcommand("serve", "An OpenAI-compatible HTTP server (docs/server-api.md)");
  o->model.huge_pages = true;  // long-running: decode speed over load time
  add_model_options(*cmd, o->model);
  cmd->add_option("--host", o->http.host, "Address to bind (loopback unless told otherwise)")
      ->capture_default_str();
  cmd->add_option("--port", o->http.port, "Port (0: any free port)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", o->http.api_key,
                  "Require 'Authorization: Bearer KEY' on /v1 routes");
  cmd->add_option("--parallel", o->scheduler.parallel, "Sequences generated at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--queue", o->scheduler.queue, "Requests that may wait for room (then 503)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--ctx", o->ctx,
                  "Positions per sequence, prompt + generated (capped at the "
                  "model's max_position_embeddings)")
      ->capture_default_str();
  cmd->add_option("--step-tokens", o->scheduler.step_tokens,
                  "Tokens per batched step: running streams first, prompt chunks from the rest")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--prefix-cache", o->scheduler.prefix_cache_tokens,
                  "Prompt positions kept so later prompts that start the same way reuse their "
                  "KV (0: off)")
      ->capture_default_str();
  cmd->add_option("--keep-mib", o->keep_mib,
                  "MiB of kept generations' logits (logitscope.keep: the page's replay), least "
                  "recently used dropped first")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 20));
  cmd->add_option("--max-body", o->http.max_body, "Largest request body in bytes (413 above)")
      ->capture_default_str();
  cmd->add_option("--max-connections", o->http.max_connections,
                  "Client connections served at once, each on its own thread (more: closed)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{65536}));
  cmd->add_option("--header-timeout-ms", o->http.header_timeout_ms,
                  "A connection that has not sent a complete request line and headers this long "
                  "after it opened is closed (slow clients)")
      ->capture_default_str()
      ->check(CLI::Range(100, 3600000));
  cmd->add_option("--model-b", o->model_b,
                  "A second model with the same vocabulary (a directory, .gguf or id): the page "
                  "compares it with the first at every step of a kept generation "
                  "(POST /v1/logitscope/side_by_side)");
  cmd->add_option("--served-model-name", o->served_name,
                  "The model id in /v1/models and responses (default: the file or folder name)");
  cmd->callback([o] { run_serve(*o); });
}

}  // namespace ls::app
