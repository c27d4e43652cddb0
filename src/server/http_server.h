// The HTTP front of `logitscope serve` on cpp-httplib: routes (docs/server-api.md), the API key,
// body limits, OpenAI error objects (Anthropic's on /v1/messages), and SSE streaming. Each
// generation request becomes scheduler jobs; its handler thread turns their events into a response
// or a stream of chunks, and a client that goes away cancels its jobs.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "engine/loaded_model.h"
#include "server/generation_store.h"
#include "server/metrics.h"
#include "server/request.h"
#include "server/response_store.h"
#include "server/scheduler.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace ls::server {

class Connections;
class RouteTable;

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;      // 0: any free port
  std::string api_key;  // "" : no key
  std::size_t max_body = 8u << 20;
  std::size_t max_connections = 1024;
  int header_timeout_ms = 10000;  // accept to the first complete request, then closed
};

class HttpServer {
 public:
  // `store` keeps the generations requests ask to keep (logitscope.keep).
  HttpServer(const engine::LoadedModel& model, Scheduler& scheduler, GenerationStore& store,
             ServerLimits limits, HttpOptions options);
  ~HttpServer();

  int bind();  // binds host:port; returns the port; throws when it cannot
  void run();  // serves until stop()
  void begin_shutdown() { shutting_down_ = true; }  // new generation requests get 503
  // Waits up to `timeout` for the streams still open to write their last events (after the
  // scheduler cancelled them: the error event and [DONE]) before stop() closes them.
  void drain(std::chrono::milliseconds timeout);
  void stop();

 private:
  void routes();
  // OpenAI chat / completions / responses, Anthropic messages, llama-server native completion
  enum class Api { chat, completions, messages, native, responses };
  void generate(const httplib::Request& req, httplib::Response& res, Api api);
  void count_tokens(const httplib::Request& req, httplib::Response& res);
  void tokenize(const httplib::Request& req, httplib::Response& res);
  void detokenize(const httplib::Request& req, httplib::Response& res);
  void apply_template(const httplib::Request& req, httplib::Response& res);
  void microscope_routes();  // the page and /v1/logitscope/*
  // Register a route with httplib and in route_table_ (for 405 and its Allow header).
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  void on_get(const std::string& pattern, Handler handler);
  void on_post(const std::string& pattern, Handler handler);

  const engine::LoadedModel& model_;
  Scheduler& scheduler_;
  GenerationStore& store_;
  ResponseStore responses_;  // the Responses API's stored responses (previous_response_id)
  ServerLimits limits_;
  HttpOptions options_;
  std::unique_ptr<httplib::Server> http_;
  std::shared_ptr<RouteTable> route_table_;
  Metrics metrics_;
  std::mutex template_mutex_;
  std::atomic<bool> shutting_down_{false};
  std::atomic<int> open_streams_{0};
  int port_ = 0;
  Connections* connections_ = nullptr;  // httplib's task queue, while it listens
};

}  // namespace ls::server
