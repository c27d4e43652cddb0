// Routes, errors and SSE streaming of `logitscope serve` (see http_server.h).
#include "server/http_server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>

#include <bit>
#include <chrono>
#include <optional>
#include <random>
#include <regex>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "server/anthropic_request.h"
#include "server/anthropic_response.h"
#include "server/connections.h"
#include "server/inside.h"
#include "server/microscope.h"
#include "server/native_request.h"
#include "server/native_response.h"
#include "server/response.h"
#include "server/responses_request.h"
#include "server/responses_response.h"
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

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json error_json(const std::string& message, const std::string& type, const std::string& param,
                const std::string& code) {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", code.empty() ? json(nullptr) : json(code)}}}};
}

// The Messages routes answer errors in Anthropic's shape, every other route in OpenAI's.
bool anthropic_route(const std::string& path) {
  return path.rfind("/v1/messages", 0) == 0;
}

void send_error(httplib::Response& res, const ApiError& e, bool anthropic = false) {
  res.status = e.status;
  if (e.status == 503) res.set_header("Retry-After", "1");
  res.set_content(dump(anthropic ? anthropic_error(e.status, e.what())
                                 : error_json(e.what(), e.type, e.param, e.code)),
                  "application/json");
}

void send_json(httplib::Response& res, const json& j) {
  res.status = 200;
  res.set_content(dump(j), "application/json");
}

// nlohmann's text without its "[json.exception.parse_error.101] parse error at line 1, column
// 12: " prefix (the byte offset is given instead): "syntax error while parsing value - ...".
std::string json_error_reason(const json::exception& e) {
  std::string_view what = e.what();
  if (const std::size_t tag = what.find("] "); tag != std::string_view::npos)
    what.remove_prefix(tag + 2);
  if (what.starts_with("parse error"))
    if (const std::size_t colon = what.find(": "); colon != std::string_view::npos)
      what.remove_prefix(colon + 2);
  return std::string(what);
}

json parse_body(const httplib::Request& req) {
  json body;
  try {
    body = json::parse(req.body);
  } catch (const json::parse_error& e) {
    // The byte offset lets a client find the fault in a long body (invalid UTF-8 in a string,
    // a bare NaN, a trailing comma); nlohmann's own text says what it expected there.
    throw ApiError(400,
                   fmt::format("the request body is not valid JSON at byte {}: {}", e.byte,
                               json_error_reason(e)),
                   "", "invalid_json");
  } catch (const json::exception& e) {
    // A number past double's range (1e999) is out_of_range, which carries no position.
    throw ApiError(400, fmt::format("the request body is not valid JSON: {}", json_error_reason(e)),
                   "", "invalid_json");
  }
  if (!body.is_object())
    throw ApiError(400, "the request body must be a JSON object", "", "invalid_json");
  return body;
}

std::string random_id(const char* prefix) {
  static std::mutex mutex;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard lock(mutex);
  return fmt::format("{}{:016x}{:08x}", prefix, rng(), static_cast<std::uint32_t>(rng()));
}

std::int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

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

// Runs a handler body, turning ApiError and other failures into OpenAI (or Anthropic) errors.
template <typename F>
void guarded(httplib::Response& res, bool anthropic, F&& body) {
  try {
    body();
  } catch (const ApiError& e) {
    send_error(res, e, anthropic);
  } catch (const Error& e) {
    // The library's refusals of what was asked (a lens step mirostat cannot re-run alone, ...).
    send_error(res, ApiError(400, e.what()), anthropic);
  } catch (const std::exception& e) {
    send_error(res, ApiError(500, e.what(), "", "internal_error", "server_error"), anthropic);
  }
}

template <typename F>
void guarded(httplib::Response& res, F&& body) {
  guarded(res, false, std::forward<F>(body));
}

// One generation in flight: the parsed request, its responses and its events.
struct Generation {
  Generation(ParsedRequest r, const engine::LoadedModel& model, std::string id, std::string name)
      : request(std::move(r)),
        builder(request, model, std::move(id), std::move(name), unix_time()),
        channel(std::make_shared<JobChannel>()),
        sse(request.stream) {}
  // llama-server's native API: its response shapes instead of OpenAI's.
  Generation(NativeRequest r, const engine::LoadedModel& model, std::string id, std::string name,
             int ctx)
      : Generation(std::move(r.parsed), model, std::move(id), name) {
    native.emplace(request, std::move(r.options), model, std::move(name), ctx);
  }
  ParsedRequest request;
  ResponseBuilder builder;
  std::optional<NativeResponse> native;
  std::optional<ResponsesStream> responses;            // the Responses API: its items and events
  std::optional<nlohmann::ordered_json> conversation;  // with store: kept with the Response
  std::shared_ptr<JobChannel> channel;
  bool sse;  // the answer is an event stream
  Clock::time_point received = Clock::now();
  Clock::time_point first_token{};
  bool finished = false;

  // Applies waiting events; streamed chunks are appended to `chunks`.
  void pump(std::chrono::milliseconds timeout, std::vector<json>& chunks) {
    for (auto& [job, event] : channel->wait(timeout)) {
      if (native)
        native->apply(job, event, chunks);
      else
        builder.apply(job, event, chunks);
      if (first_token == Clock::time_point{} && completion_tokens() > 0) first_token = Clock::now();
    }
  }
  bool done() const { return native ? native->done() : builder.done(); }
  const std::optional<std::string>& error() const {
    return native ? native->error() : builder.error();
  }
  std::size_t completion_tokens() const {
    return native ? native->completion_tokens() : builder.first_token_count();
  }
  double seconds_since(Clock::time_point t) const {
    return std::chrono::duration<double>((t == Clock::time_point{} ? Clock::now() : t) - received)
        .count();
  }
};

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
    const Tokenizer& tok = model_.require_tokenizer("/tokenize");
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

void HttpServer::generate(const httplib::Request& req, httplib::Response& res, Api api) {
  const bool anthropic = api == Api::messages;
  guarded(res, anthropic, [&] {
    metrics_.request_received();
    if (shutting_down_)
      throw ApiError(503, "the server is shutting down", "", "overloaded", "server_error");
    const json body = parse_body(req);
    // Schemas are generated in the order their properties were written: parsed again, keys
    // kept in order, only when a request has one (a Messages request is translated whole).
    nlohmann::ordered_json written;
    const bool ordered = anthropic || api == Api::responses || body.contains("response_format") ||
                         body.contains("json_schema") || body.contains("tools");
    if (ordered) written = nlohmann::ordered_json::parse(req.body, nullptr, false);
    const nlohmann::ordered_json* w = ordered && written.is_object() ? &written : nullptr;
    const std::string id = random_id(anthropic               ? "msg_"
                                     : api == Api::responses ? "resp_"
                                     : api == Api::chat      ? "chatcmpl-"
                                                             : "cmpl-");
    std::shared_ptr<Generation> g;
    if (api == Api::native) {
      g = std::make_shared<Generation>(parse_native_request(body, limits_, w), model_, id,
                                       limits_.served_name, limits_.ctx);
    } else if (api == Api::responses) {
      ResponsesRequest r = parse_responses_request(written, limits_, &responses_);
      if (r.parsed.keep)
        r.parsed.jobs[0].keep = store_.create(r.parsed.jobs[0].prompt, r.parsed.jobs[0].config);
      const bool logprobs = r.parsed.logprobs;
      g = std::make_shared<Generation>(std::move(r.parsed), model_, id, limits_.served_name);
      g->sse =
          r.t.stream;  // the builder streams (parsed.stream) either way: items come from chunks
      g->responses.emplace(id, limits_.served_name, unix_time(), std::move(r.t.echo), logprobs);
      if (r.t.store) g->conversation = std::move(r.t.conversation);
    } else {
      ParsedRequest parsed = anthropic          ? parse_messages_request(written, limits_)
                             : api == Api::chat ? parse_chat_request(body, limits_, w)
                                                : parse_completion_request(body, limits_, w);
      if (parsed.keep)
        parsed.jobs[0].keep = store_.create(parsed.jobs[0].prompt, parsed.jobs[0].config);
      g = std::make_shared<Generation>(std::move(parsed), model_, id, limits_.served_name);
    }
    if (!scheduler_.submit(g->request.jobs, g->channel))
      throw ApiError(503, "the server is at capacity (running and queued requests); retry later",
                     "", "overloaded", "server_error");
    const auto finished = [this, g] {
      g->finished = true;
      metrics_.request_finished(
          g->seconds_since(Clock::now()), g->seconds_since(g->first_token),
          g->native ? g->native->completion_tokens() : g->builder.completion_tokens());
    };
    // The Responses API's end: its last events, and the Response stored when asked.
    const auto end_response = [this, g] {
      std::string out =
          g->responses->finish(g->builder.usage_chunk()["usage"], g->builder.reasoning_tokens(),
                               g->builder.error(), unix_time());
      if (g->conversation && !g->builder.error()) {
        nlohmann::ordered_json messages = std::move(*g->conversation);
        for (auto& m : g->responses->output_messages()) messages.push_back(std::move(m));
        responses_.put(g->responses->response()["id"], {g->responses->response(), messages});
      }
      return out;
    };
    if (!g->sse) {
      // A client that has gone cancels its request within a step or two: its sequences and KV
      // blocks go to the requests still waiting.
      const int socket =
          connections_ != nullptr ? connections_->socket_of(req.remote_addr, req.remote_port) : -1;
      std::vector<json> chunks;  // a Responses request's: its items are made from them
      while (!g->done()) {
        g->pump(std::chrono::milliseconds(100), chunks);
        if (g->responses) g->responses->events(chunks);
        chunks.clear();
        if (socket >= 0 && !g->done() && peer_closed(socket)) {
          g->channel->cancel();
          metrics_.request_abandoned();
          return;
        }
      }
      finished();
      if (g->error()) throw ApiError(500, *g->error(), "", "internal_error", "server_error");
      if (g->responses) end_response();
      send_json(res, g->native      ? g->native->response()
                     : g->responses ? g->responses->response()
                     : anthropic
                         ? anthropic_message(g->builder.response(), id, g->builder.stop_string(0))
                         : g->builder.response());
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    ++open_streams_;
    // Anthropic's events are made from the chat chunks.
    auto events = anthropic ? std::make_shared<MessagesStream>(id, limits_.served_name) : nullptr;
    res.set_chunked_content_provider(
        "text/event-stream",
        [g, finished, events, end_response](std::size_t, httplib::DataSink& sink) {
          std::vector<json> chunks;
          g->pump(std::chrono::milliseconds(100), chunks);
          std::string out;
          if (g->responses) {
            out = g->responses->events(chunks);
            if (g->builder.done()) out += end_response();
          } else if (events) {
            const json usage = g->builder.usage_chunk()["usage"];
            out = events->events(chunks, usage);
            if (g->builder.done())
              out += g->builder.error() ? MessagesStream::error(*g->builder.error())
                                        : events->finish(usage, g->builder.stop_string(0));
          } else {
            for (const auto& c : chunks) out += "data: " + dump(c) + "\n\n";
          }
          if (g->native && g->done()) {
            // llama-server ends its native stream with the final object, or an error event.
            if (g->error())
              out +=
                  "error: " + dump(error_json(*g->error(), "server_error", "", "internal_error")) +
                  "\n\n";
          } else if (!events && !g->responses && g->builder.done()) {
            if (g->builder.error()) {
              out += "data: " +
                     dump(error_json(*g->builder.error(), "server_error", "", "internal_error")) +
                     "\n\n";
            } else if (g->request.include_usage) {
              out += "data: " + dump(g->builder.usage_chunk()) + "\n\n";
            }
            out += "data: [DONE]\n\n";
          }
          if (!out.empty() && !sink.write(out.data(), out.size())) {
            g->channel->cancel();  // the client went away: free its sequences
            return false;
          }
          if (g->done()) {
            finished();
            sink.done();
          }
          return true;
        },
        [this, g](bool) {
          if (!g->done()) g->channel->cancel();
          --open_streams_;
        });
  });
}

}  // namespace ls::server
