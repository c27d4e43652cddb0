// POST /v1/chat/completions, /v1/completions, /v1/messages, /v1/responses and /completion: the
// request parsed for its API, its jobs submitted to the scheduler, and its events turned into
// that API's answer or event stream; a client that goes away cancels its jobs.
#include <httplib.h>

#include <chrono>
#include <optional>

#include "server/anthropic_request.h"
#include "server/anthropic_response.h"
#include "server/connections.h"
#include "server/http_server.h"
#include "server/http_util.h"
#include "server/native_request.h"
#include "server/native_response.h"
#include "server/response.h"
#include "server/responses_request.h"
#include "server/responses_response.h"

namespace ls::server {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

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
      const bool logprobs = r.parsed.logprobs.wanted;
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
