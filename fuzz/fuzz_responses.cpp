// Fuzz target: an OpenAI Responses body (POST /v1/responses) through its translation and the chat
// route's checks (responses_request.h) on server_model.h's model, with a store holding "resp_seed"
// (which called "call_seed"). Only ApiError may escape. An accepted body's reply (its JSON text in
// pieces, then a tool call) runs through the chat builder and ResponsesStream: the events must be
// JSON in order, their text deltas joining into the Response's output_text.
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "server/response.h"
#include "server/responses_request.h"
#include "server/responses_response.h"
#include "server_model.h"

namespace {

using nlohmann::json;

ls::server::ResponseStore& store() {
  static ls::server::ResponseStore s;
  static const bool filled = [] {
    ls::server::StoredResponse r;
    r.response = {{"id", "resp_seed"}};
    r.messages = nlohmann::ordered_json::array(
        {{{"role", "user"}, {"content", "Weather?"}},
         {{"role", "assistant"},
          {"content", ""},
          {"tool_calls",
           {{{"id", "call_seed"},
             {"type", "function"},
             {"function", {{"name", "get_weather"}, {"arguments", "{}"}}}}}}}});
    s.put("resp_seed", std::move(r));
    return true;
  }();
  (void)filled;
  return s;
}

// The events' text: each "event: T\ndata: J\n\n" with J's type T and sequence numbers in order;
// returns the output_text deltas joined.
std::string check_events(const std::string& sse) {
  std::string text;
  std::size_t at = 0;
  std::int64_t sequence = 0;
  while (at < sse.size()) {
    const std::size_t end = sse.find("\n\n", at);
    const std::size_t nl = sse.find('\n', at);
    if (end == std::string::npos || sse.compare(at, 7, "event: ") != 0 || nl >= end)
      ls::fuzz::finding("an event is not \"event: T\\ndata: J\\n\\n\"");
    const json data = json::parse(sse.substr(nl + 7, end - nl - 7), nullptr, false);
    if (data.is_discarded() || data.value("type", "") != sse.substr(at + 7, nl - at - 7) ||
        data.value("sequence_number", -1) != sequence++)
      ls::fuzz::finding("an event's data is not JSON of its type and sequence number");
    if (data["type"] == "response.output_text.delta") text += data["delta"].get<std::string>();
    at = end + 2;
  }
  return text;
}

void run_reply(const ls::server::ResponsesRequest& r, const std::string& reply) {
  using namespace ls::server;
  const auto& model = ls::fuzz::server_model();
  ResponseBuilder b(r.parsed, model, "resp_0000000000000000", "tiny", 0);
  ResponsesStream s("resp_0000000000000000", "tiny", 0, r.t.echo, r.parsed.logprobs.wanted);
  std::vector<json> chunks;
  b.apply(0, HeaderEvent{}, chunks);
  for (std::size_t i = 0; i < reply.size(); i += 5) {
    b.apply(0, TokenEvent{}, chunks);
    b.apply(0, TextEvent{0, reply.substr(i, 5)}, chunks);
  }
  b.apply(0, FinishEvent{0, ls::decode::FinishReason::eos, "", reply.size() / 5, ""}, chunks);
  b.apply(0, DoneEvent{}, chunks);
  std::string sse = s.events(chunks);
  sse += s.finish(b.usage_chunk()["usage"], b.reasoning_tokens(), b.error(), 0);
  std::string output_text;
  for (const json& item : s.response()["output"])
    if (item["type"] == "message")
      for (const json& part : item["content"]) output_text += part["text"].get<std::string>();
  if (check_events(sse) != output_text)
    ls::fuzz::finding("the text deltas do not join into the Response's output_text");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)ls::fuzz::server_limits();
  (void)store();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto body = nlohmann::ordered_json::parse(data, data + size, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return 0;
  ls::server::ResponsesRequest r;
  try {
    r = ls::server::parse_responses_request(body, ls::fuzz::server_limits(), &store());
  } catch (const ls::server::ApiError&) {
    return 0;
  } catch (const std::exception& e) {
    ls::fuzz::finding(std::string("not an ApiError: ") + e.what());
  } catch (...) {
    ls::fuzz::finding("a non-std::exception escaped");
  }
  // ASCII JSON text (ensure_ascii): pieces of it are valid UTF-8.
  const std::string text =
      body.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
  run_reply(r, text.substr(0, 200) +
                   "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>");
  return 0;
}
