// Routes, errors and the server's own handlers of `logitscope serve` (see http_server.h); the
// generation routes are in generate_route.cpp, the shared helpers in http_util.h.
#include "server/http_server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>

#include <chrono>
#include <optional>
#include <regex>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "server/anthropic_request.h"
#include "server/anthropic_response.h"
#include "server/connections.h"
#include "server/http_util.h"
#include "server/inside.h"
#include "server/microscope.h"
#include "server/responses_request.h"
#include "server/side_by_side.h"

namespace ls::server {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The path patterns of the routes and the methods each answers: httplib only knows that no
// handler matched, so a known path asked with another method would be a 404 without it.
class RouteTable {
 public:
  void add(const std::string& method, const std::string& pattern) {
    routes_.push_back({method, std::regex(pattern)});
  }
  // The Allow header for `path` ("POST"; "GET, HEAD": httplib answers HEAD with the GET
  // handler), or "" when no route has that path.
  std::string allowed(const std::string& path) const {
    std::string allow;
    for (const auto& [method, pattern] : routes_) {
      if (!std::regex_match(path, pattern)) continue;
      const std::string methods = method == "GET" ? "GET, HEAD" : method;
      if (allow.find(methods) == std::string::npos) allow += (allow.empty() ? "" : ", ") + methods;
    }
    return allow;
  }

 private:
  std::vector<std::pair<std::string, std::regex>> routes_;
};

namespace {

// cpp-httplib 0.11 listens with a backlog of 5, compiled into Debian's library: a burst of
// clients (16 streams connecting at once) overflows it, and the extra connects wait for a SYN
// retry, a second later. Linux lets listen() be called again on a listening socket to change
// its backlog, so find ours by its port and widen it.
void widen_backlog(int port) {
  for (int fd = 3; fd < 4096; ++fd) {
    int listening = 0;
    socklen_t len = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening == 0)
      continue;
    sockaddr_storage addr{};
    socklen_t alen = sizeof addr;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) continue;
    int bound = -1;
    if (addr.ss_family == AF_INET) bound = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    if (addr.ss_family == AF_INET6)
      bound = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    if (bound == port) ::listen(fd, SOMAXCONN);
  }
}

}  // namespace

HttpServer::HttpServer(const engine::LoadedModel& model, Scheduler& scheduler,
                       GenerationStore& store, ServerLimits limits, HttpOptions options)
    : model_(model),
      scheduler_(scheduler),
      store_(store),
      limits_(std::move(limits)),
      options_(std::move(options)),
      http_(std::make_unique<httplib::Server>()),
      route_table_(std::make_shared<RouteTable>()) {
  limits_.template_mutex = &template_mutex_;
  routes();
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
  } else {
    port_ = http_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ <= 0)
    fail("serve: cannot listen on {}:{} (in use, or not an address of this machine)", options_.host,
         options_.port);
  widen_backlog(port_);
  return port_;
}

void HttpServer::run() {
  http_->listen_after_bind();
}

void HttpServer::stop() {
  http_->stop();
}

void HttpServer::drain(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (open_streams_ > 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void HttpServer::on_get(const std::string& pattern, Handler handler) {
  route_table_->add("GET", pattern);
  http_->Get(pattern, std::move(handler));
}

void HttpServer::on_post(const std::string& pattern, Handler handler) {
  route_table_->add("POST", pattern);
  http_->Post(pattern, std::move(handler));
}

void HttpServer::routes() {
  httplib::Server& s = *http_;
  // One thread per connection, and a deadline for each connection's first request: slow
  // clients hold only their own threads (connections.h). httplib owns the queue and deletes it
  // when listen() returns; handlers only run while it lives.
  s.new_task_queue = [this] {
    auto* c = new Connections(
        port_, {options_.max_connections, std::chrono::milliseconds(options_.header_timeout_ms)});
    connections_ = c;
    return c;
  };
  s.set_payload_max_length(options_.max_body);
  s.set_keep_alive_timeout(2);
  s.set_read_timeout(30);
  s.set_write_timeout(30);

  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // The request line and headers are in: the header deadline no longer applies (a body is
    // read with the per-read timeout, up to --max-body).
    if (connections_ != nullptr) connections_->request_seen(req.remote_addr, req.remote_port);
    if (options_.api_key.empty() || req.path.rfind("/v1/", 0) != 0)
      return httplib::Server::HandlerResponse::Unhandled;
    // The scheme is case-insensitive (RFC 9110: "bearer" is as good as "Bearer"); the key is not.
    const std::string auth = req.get_header_value("Authorization");
    if (auth.size() >= 7 && strncasecmp(auth.c_str(), "bearer ", 7) == 0 &&
        std::string_view(auth).substr(7) == options_.api_key)
      return httplib::Server::HandlerResponse::Unhandled;
    // Anthropic's clients send the key as x-api-key.
    const bool anthropic = anthropic_route(req.path);
    if (anthropic && req.has_header("x-api-key") &&
        req.get_header_value("x-api-key") == options_.api_key)
      return httplib::Server::HandlerResponse::Unhandled;
    const char* how =
        anthropic ? "x-api-key: KEY or Authorization: Bearer KEY" : "Authorization: Bearer KEY";
    send_error(
        res,
        ApiError(401, fmt::format("a valid API key is required: {}", how), "", "invalid_api_key"),
        anthropic);
    return httplib::Server::HandlerResponse::Handled;
  });
  // Errors httplib raises itself (no route, body too large) get an OpenAI error object too.
  // A path that has routes but none for the request's method is 405 with Allow (RFC 9110).
  s.set_error_handler(httplib::Server::HandlerWithResponse(
      [table = route_table_](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        const std::string allow = res.status == 404 ? table->allowed(req.path) : "";
        if (res.status == 413) {
          send_error(res, ApiError(413, "the request body is larger than --max-body", "",
                                   "body_too_large"));
        } else if (!allow.empty()) {
          res.set_header("Allow", allow);
          send_error(res, ApiError(405,
                                   fmt::format("method {} is not allowed on {} (allowed: {})",
                                               req.method, req.path, allow),
                                   "", "method_not_allowed"));
        } else if (res.status == 404) {
          send_error(res, ApiError(404, fmt::format("no route {} {}", req.method, req.path), "",
                                   "not_found"));
        } else {
          send_error(res, ApiError(res.status, fmt::format("HTTP {}", res.status), "", ""));
        }
        if (anthropic_route(req.path))  // the same error in Anthropic's shape
          res.set_content(
              dump(anthropic_error(res.status, json::parse(res.body)["error"]["message"])),
              "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }));
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send_error(res, ApiError(500, "internal error", "", "internal_error", "server_error"));
  });

  on_get("/health", [](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"status", "ok"}});
  });
  on_get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"object", "list"},
                    {"data", json::array({{{"id", limits_.served_name},
                                           {"object", "model"},
                                           {"created", unix_time()},
                                           {"owned_by", "logitscope"},
                                           {"max_model_len", limits_.ctx}}})}});
  });
  on_get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    if (connections_ != nullptr)
      metrics_.set_connections(connections_->closed_by_deadline(), connections_->open());
    res.set_content(metrics_.render(scheduler_.stats()), "text/plain; version=0.0.4");
  });
  on_post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    generate(req, res, Api::chat);
  });
  on_post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    generate(req, res, Api::completions);
  });
  // llama-server's native completion API, under both of its names.
  for (const char* path : {"/completion", "/completions"})
    on_post(path, [this](const httplib::Request& req, httplib::Response& res) {
      generate(req, res, Api::native);
    });
  on_post("/v1/messages", [this](const httplib::Request& req, httplib::Response& res) {
    generate(req, res, Api::messages);
  });
  on_post("/v1/responses", [this](const httplib::Request& req, httplib::Response& res) {
    generate(req, res, Api::responses);
  });
  // The prompt's token count of a Responses body: exactly what it would prefill.
  on_post("/v1/responses/input_tokens",
          [this](const httplib::Request& req, httplib::Response& res) {
            guarded(res, [&] {
              parse_body(req);  // the JSON error messages; then again with keys in written order
              const auto r = parse_responses_request(nlohmann::ordered_json::parse(req.body),
                                                     limits_, &responses_);
              send_json(res, {{"object", "response.input_tokens"},
                              {"input_tokens", r.parsed.jobs.at(0).prompt.size()}});
            });
          });
  const auto unknown = [](const std::string& id) {
    return ApiError(404, fmt::format("no stored response '{}'", id), "response_id", "not_found");
  };
  on_get(R"(/v1/responses/([^/]+))",
         [this, unknown](const httplib::Request& req, httplib::Response& res) {
           guarded(res, [&] {
             const std::optional<StoredResponse> r = responses_.find(req.matches[1]);
             if (!r) throw unknown(req.matches[1]);
             send_json(res, r->response);
           });
         });
  route_table_->add("DELETE", R"(/v1/responses/([^/]+))");
  http_->Delete(R"(/v1/responses/([^/]+))", [this, unknown](const httplib::Request& req,
                                                            httplib::Response& res) {
    guarded(res, [&] {
      if (!responses_.erase(req.matches[1])) throw unknown(req.matches[1]);
      send_json(res, {{"id", req.matches[1].str()}, {"object", "response"}, {"deleted", true}});
    });
  });
  on_post("/v1/messages/count_tokens",
          [this](const httplib::Request& req, httplib::Response& res) { count_tokens(req, res); });
  on_post("/tokenize",
          [this](const httplib::Request& req, httplib::Response& res) { tokenize(req, res); });
  on_post("/detokenize",
          [this](const httplib::Request& req, httplib::Response& res) { detokenize(req, res); });
  on_post("/apply-template", [this](const httplib::Request& req, httplib::Response& res) {
    apply_template(req, res);
  });
  microscope_routes();
}

void HttpServer::microscope_routes() {
  // The page: its own files only; the policy keeps it from loading anything from elsewhere.
  on_get(R"(/|/index\.html|/assets/.+|/favicon\.svg)",
         [](const httplib::Request& req, httplib::Response& res) {
           const WebAsset* a = find_web_asset(req.path);
           if (a == nullptr) {
             send_error(res, ApiError(404, fmt::format("no file {}", req.path), "", "not_found"));
             return;
           }
           std::string type(a->content_type);
           if (type.rfind("text/", 0) == 0) type += "; charset=utf-8";
           res.set_header("Content-Security-Policy",
                          "default-src 'self'; img-src 'self' data: blob:; style-src 'self' "
                          "'unsafe-inline'");
           res.set_header("X-Content-Type-Options", "nosniff");
           res.set_header("Cache-Control", "no-cache");
           res.set_content(std::string(a->body), type);
         });
  on_get("/v1/logitscope/info", [this](const httplib::Request&, httplib::Response& res) {
    guarded(res, [&] { send_json(res, info_json(limits_)); });
  });
  const auto kept = [this](const std::string& id) {
    auto g = store_.find(id);
    if (!g)
      throw ApiError(404,
                     fmt::format("no kept generation '{}' (never kept, or dropped to stay within "
                                 "--keep-mib)",
                                 id),
                     "generation", "not_found");
    return g->snapshot();
  };
  const auto vocab = model_.model().config().vocab_size;
  on_get(R"(/v1/logitscope/generations/([^/]+))",
         [kept, vocab](const httplib::Request& req, httplib::Response& res) {
           guarded(res, [&] { send_json(res, generation_json(kept(req.matches[1]), vocab)); });
         });
  on_get(R"(/v1/logitscope/generations/([^/]+)/logits/([0-9]+))",
         [kept](const httplib::Request& req, httplib::Response& res) {
           guarded(res, [&] {
             const KeptGeneration::Snapshot g = kept(req.matches[1]);
             const std::string k = req.matches[2];
             const std::size_t step = k.size() > 9 ? g.rows.size() : std::stoul(k);
             if (step >= g.rows.size())
               throw ApiError(404,
                              fmt::format("generation {} keeps the logits of steps 0..{}, not {}",
                                          g.id, static_cast<long>(g.rows.size()) - 1, k),
                              "step", "not_found");
             static_assert(std::endian::native == std::endian::little);  // the wire format
             const std::vector<float>& row = *g.rows[step];
             res.set_content(
                 std::string(reinterpret_cast<const char*>(row.data()), row.size() * sizeof(float)),
                 "application/octet-stream");
           });
         });
  on_post(
      "/v1/logitscope/replay", [this, kept](const httplib::Request& req, httplib::Response& res) {
        guarded(res, [&] {
          const json body = parse_body(req);
          if (!body.contains("generation") || !body["generation"].is_string())
            throw ApiError(400, "'generation' (a kept generation's id) is required", "generation");
          send_json(res, replay_json(kept(body["generation"].get<std::string>()), body, limits_));
        });
      });
  // The lens, attribution and tree run the model: parsed here, run between two batched steps.
  on_post("/v1/logitscope/lens", [this, kept](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] {
      const LensQuery q = parse_lens(parse_body(req), limits_, kept);
      json out;
      scheduler_.run_between_steps([&](ThreadPool& pool) { out = run_lens(q, limits_, pool); });
      send_json(res, out);
    });
  });
  on_post("/v1/logitscope/side_by_side", [this, kept](const httplib::Request& req,
                                                      httplib::Response& res) {
    guarded(res, [&] {
      const json body = parse_body(req);
      if (!body.is_object() || !body.contains("generation") || !body["generation"].is_string())
        throw ApiError(400, "'generation' (a kept generation's id) is required", "generation");
      const SideBySideQuery q =
          parse_side_by_side(body, limits_, kept(body["generation"].get<std::string>()));
      json out;
      scheduler_.run_between_steps(
          [&](ThreadPool& pool) { out = run_side_by_side(q, limits_, pool); });
      send_json(res, out);
    });
  });
  on_post("/v1/logitscope/tree", [this, kept](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] {
      const TreeQuery q = parse_tree(parse_body(req), limits_, kept);
      json out;
      scheduler_.run_between_steps([&](ThreadPool& pool) { out = run_tree(q, limits_, pool); });
      send_json(res, out);
    });
  });
  on_post("/v1/logitscope/attribute",
          [this, kept](const httplib::Request& req, httplib::Response& res) {
            guarded(res, [&] {
              const AttributeQuery q = parse_attribute(parse_body(req), limits_, kept);
              json out;
              scheduler_.run_between_steps(
                  [&](ThreadPool& pool) { out = run_attribute(q, limits_, pool); });
              send_json(res, out);
            });
          });
}

void HttpServer::tokenize(const httplib::Request& req, httplib::Response& res) {
  guarded(res, [&] {
    const json body = parse_body(req);
    const tok::Tokenizer& tok = model_.require_tokenizer("/tokenize");
    std::string text;
    if (body.contains("messages")) {
      const bool add = body.value("add_generation_prompt", true);
      text = render_chat(body["messages"], body.value("tools", json()), add, limits_);
    } else {
      const char* key = body.contains("prompt") ? "prompt" : "content";
      if (!body.contains(key) || !body[key].is_string())
        throw ApiError(400, "give \"prompt\" (a string) or \"messages\"", "prompt");
      text = body[key].get<std::string>();
    }
    const auto ids = tok.encode(text);
    send_json(res, {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", limits_.ctx}});
  });
}

void HttpServer::detokenize(const httplib::Request& req, httplib::Response& res) {
  guarded(res, [&] {
    const json body = parse_body(req);
    if (!body.contains("tokens")) throw ApiError(400, "'tokens' is required", "tokens");
    const auto ids = token_ids(body["tokens"], "tokens", limits_);
    const std::string text = model_.require_tokenizer("/detokenize").decode(ids);
    send_json(res, {{"prompt", text}, {"content", text}});
  });
}

void HttpServer::apply_template(const httplib::Request& req, httplib::Response& res) {
  guarded(res, [&] {
    const json body = parse_body(req);
    if (!body.contains("messages")) throw ApiError(400, "'messages' is required", "messages");
    const bool add = body.value("add_generation_prompt", true);
    send_json(res, {{"prompt",
                     render_chat(body["messages"], body.value("tools", json()), add, limits_)}});
  });
}

void HttpServer::count_tokens(const httplib::Request& req, httplib::Response& res) {
  guarded(res, true, [&] {
    parse_body(req);  // the JSON error messages; then again with keys in written order
    const auto body = nlohmann::ordered_json::parse(req.body);
    send_json(res, {{"input_tokens", count_message_tokens(body, limits_)}});
  });
}

}  // namespace ls::server
