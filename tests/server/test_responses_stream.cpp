// OpenAI's Responses API answers without HTTP (src/server/responses_response.cpp): chat chunks of
// replies given as text pieces turned into the Response and its SSE events (text with logprobs,
// function calls and their argument deltas, reasoning, cut and failed replies, no text), the
// output rebuilt from the events as the SDK accumulates it equal to the Response's, and the
// output stored as chat messages that a function_call_output then answers.
#include <gtest/gtest.h>

#include "server/response.h"
#include "server/responses_request.h"
#include "server/responses_response.h"
#include "server_fixture.h"

namespace ls::server {
namespace {

using nlohmann::json;
using ordered = nlohmann::ordered_json;

class ResponsesStreamTest : public test::ServerFixture<test::TinyModel> {
 protected:
  static ordered body(ordered extra = ordered::object()) {
    ordered b = {{"model", "tiny"}, {"max_output_tokens", 8}, {"input", "Hello"}};
    for (auto& [k, v] : extra.items()) b[k] = v;
    return b;
  }
  ResponseStore store_{4};
};

const ordered kTools = ordered::array(
    {{{"type", "function"},
      {"name", "get_weather"},
      {"description", "Weather of a city"},
      {"parameters",
       {{"type", "object"},
        {"properties", {{"city", {{"type", "string"}}}, {"days", {{"type", "integer"}}}}},
        {"required", {"city"}}}},
      {"strict", true}}});

// The events (SSE text) and the final Response of a reply given as text pieces.
struct Reply {
  json response;
  std::string events;
  nlohmann::ordered_json messages;  // output_messages()
};

Reply run(const ResponsesRequest& request, const engine::LoadedModel& model,
          const std::vector<std::string>& pieces, decode::FinishReason reason,
          std::optional<std::string> error = std::nullopt) {
  ResponseBuilder b(request.parsed, model, "resp_00000000abcdef12", "tiny", 0);
  ResponsesStream s("resp_00000000abcdef12", "tiny", 5, request.t.echo,
                    request.parsed.logprobs.wanted);
  std::vector<json> chunks;
  HeaderEvent h;
  h.cached_tokens = 2;
  b.apply(0, h, chunks);
  Reply out;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    TokenEvent t{0, {static_cast<std::int32_t>(100 + i), -0.5, {{1, -0.25}}}, false};
    b.apply(0, t, chunks);
    b.apply(0, TextEvent{0, pieces[i]}, chunks);
    out.events += s.events(chunks);  // piece by piece, as the server sends them
    chunks.clear();
  }
  if (error) b.apply(0, ErrorEvent{*error}, chunks);
  b.apply(0, FinishEvent{0, reason, "", pieces.size(), ""}, chunks);
  b.apply(0, DoneEvent{}, chunks);
  out.events += s.events(chunks);
  out.events += s.finish(b.usage_chunk()["usage"], b.reasoning_tokens(), b.error(), 9);
  out.response = s.response();
  out.messages = s.output_messages();
  return out;
}

// The events of an SSE text: each "event: T" names the type its data carries, and the
// sequence numbers count from 0.
std::vector<json> parse_sse(const std::string& text) {
  std::vector<json> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find("\n\n", at);
    EXPECT_NE(end, std::string::npos) << text.substr(at);
    if (end == std::string::npos) break;
    const std::string ev = text.substr(at, end - at);
    const std::size_t nl = ev.find('\n');
    EXPECT_EQ(0u, ev.rfind("event: ", 0)) << ev;
    const json data = json::parse(ev.substr(nl + 7));
    EXPECT_EQ(ev.substr(7, nl - 7), data["type"]) << ev;
    EXPECT_EQ(out.size(), data["sequence_number"]) << ev;
    out.push_back(data);
    at = end + 2;
  }
  return out;
}

std::vector<std::string> types_of(const std::vector<json>& events) {
  std::vector<std::string> out;
  for (const json& e : events) out.push_back(e["type"]);
  return out;
}

// The output rebuilt from the events as the SDK's accumulator does; checks the indexes.
json accumulate(const std::vector<json>& events) {
  json output = json::array();
  for (const json& e : events) {
    const std::string type = e["type"];
    if (type == "response.output_item.added") {
      EXPECT_EQ(output.size(), e["output_index"]);
      output.push_back(e["item"]);
    } else if (type == "response.output_item.done") {
      output[e["output_index"].get<std::size_t>()] = e["item"];
    } else if (type == "response.output_text.delta" || type == "response.reasoning_text.delta") {
      EXPECT_EQ(output.size() - 1, e["output_index"]);
      EXPECT_EQ(output.back()["id"], e["item_id"]);
    } else if (type == "response.function_call_arguments.delta") {
      EXPECT_EQ(output.back()["id"], e["item_id"]);
      output.back()["arguments"] =
          output.back()["arguments"].get<std::string>() + e["delta"].get<std::string>();
    }
  }
  return output;
}

TEST_F(ResponsesStreamTest, TextReplyAsResponseAndEvents) {
  const ResponsesRequest r =
      parse_responses_request(body({{"include", {"message.output_text.logprobs"}},
                                    {"top_logprobs", 1},
                                    {"metadata", {{"k", "v"}}}}),
                              limits(), &store_);
  const Reply got = run(r, *model_, {"Hel", "lo", " there"}, decode::FinishReason::eos);
  const json& o = got.response;
  EXPECT_EQ("resp_00000000abcdef12", o["id"]);
  EXPECT_EQ("response", o["object"]);
  EXPECT_EQ("completed", o["status"]);
  EXPECT_EQ(9, o["completed_at"]);
  EXPECT_EQ(5, o["created_at"]);
  EXPECT_EQ(nullptr, o["error"]);
  EXPECT_EQ(nullptr, o["incomplete_details"]);
  EXPECT_EQ((json{{"k", "v"}}), o["metadata"]);
  EXPECT_TRUE(o["logitscope"].contains("header"));
  ASSERT_EQ(1u, o["output"].size()) << o["output"].dump();
  const json& m = o["output"][0];
  EXPECT_EQ("message", m["type"]);
  EXPECT_EQ("assistant", m["role"]);
  EXPECT_EQ("completed", m["status"]);
  EXPECT_EQ("msg_00000000abcdef12_0", m["id"]);
  ASSERT_EQ(1u, m["content"].size());
  EXPECT_EQ("output_text", m["content"][0]["type"]);
  EXPECT_EQ("Hello there", m["content"][0]["text"]);
  EXPECT_EQ(json::array(), m["content"][0]["annotations"]);
  ASSERT_EQ(3u, m["content"][0]["logprobs"].size());  // one per token
  EXPECT_EQ(-0.5, m["content"][0]["logprobs"][0]["logprob"]);
  EXPECT_EQ(1u, m["content"][0]["logprobs"][0]["top_logprobs"].size());
  const std::size_t prompt = r.parsed.jobs[0].prompt.size();
  EXPECT_EQ((json{{"input_tokens", prompt},
                  {"input_tokens_details", {{"cached_tokens", 2}}},
                  {"output_tokens", 3},
                  {"output_tokens_details", {{"reasoning_tokens", 0}}},
                  {"total_tokens", prompt + 3}}),
            o["usage"]);

  const auto events = parse_sse(got.events);
  EXPECT_EQ(
      (std::vector<std::string>{
          "response.created", "response.in_progress", "response.output_item.added",
          "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
          "response.output_text.delta", "response.output_text.done", "response.content_part.done",
          "response.output_item.done", "response.completed"}),
      types_of(events));
  EXPECT_EQ("in_progress", events[0]["response"]["status"]);
  EXPECT_EQ(json::array(), events[0]["response"]["output"]);
  EXPECT_EQ(nullptr, events[0]["response"]["usage"]);
  std::string text;
  std::size_t entries = 0;
  for (const json& e : events)
    if (e["type"] == "response.output_text.delta") {
      text += e["delta"].get<std::string>();
      entries += e["logprobs"].size();
    }
  EXPECT_EQ("Hello there", text);
  EXPECT_EQ(3u, entries);
  EXPECT_EQ(o, events.back()["response"]);
  EXPECT_EQ(o["output"], accumulate(events));
  EXPECT_EQ((nlohmann::ordered_json::array({{{"role", "assistant"}, {"content", "Hello there"}}})),
            got.messages);
}

TEST_F(ResponsesStreamTest, FunctionCallsAsItemsAndArgumentDeltas) {
  const ResponsesRequest r = parse_responses_request(body({{"tools", kTools}}), limits(), &store_);
  const std::vector<std::string> pieces = {
      "Sure.", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par",
      "is\"}}\n</tool_call>",
      "\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"};
  const Reply got = run(r, *model_, pieces, decode::FinishReason::eos);
  const json& out = got.response["output"];
  ASSERT_EQ(3u, out.size()) << out.dump();
  EXPECT_EQ("Sure.", out[0]["content"][0]["text"]);
  for (int k : {1, 2}) {
    EXPECT_EQ("function_call", out[k]["type"]);
    EXPECT_EQ("get_weather", out[k]["name"]);
    EXPECT_EQ("completed", out[k]["status"]);
    EXPECT_EQ(0u, out[k]["id"].get<std::string>().rfind("fc_", 0)) << out[k];
    EXPECT_EQ(0u, out[k]["call_id"].get<std::string>().rfind("call_", 0)) << out[k];
  }
  EXPECT_EQ(R"({"city":"Paris"})", out[1]["arguments"]);
  EXPECT_EQ("{}", out[2]["arguments"]);
  EXPECT_NE(out[1]["call_id"], out[2]["call_id"]);
  EXPECT_EQ("completed", got.response["status"]);
  const auto events = parse_sse(got.events);
  EXPECT_EQ(out, accumulate(events));
  std::size_t done = 0;
  for (const json& e : events)
    if (e["type"] == "response.function_call_arguments.done") {
      EXPECT_EQ(out[e["output_index"].get<std::size_t>()]["arguments"], e["arguments"]);
      EXPECT_EQ("get_weather", e["name"]);
      ++done;
    }
  EXPECT_EQ(2u, done);
  // Stored as one assistant message with its calls, which a function_call_output answers.
  ASSERT_EQ(1u, got.messages.size());
  EXPECT_EQ("Sure.", got.messages[0]["content"]);
  ASSERT_EQ(2u, got.messages[0]["tool_calls"].size());
  EXPECT_EQ(out[1]["call_id"].get<std::string>(),
            got.messages[0]["tool_calls"][0]["id"].get<std::string>());
  store_.put("resp_calls", {got.response, got.messages});
  const ResponsesRequest next =
      parse_responses_request(body({{"previous_response_id", "resp_calls"},
                                    {"tools", kTools},
                                    {"input",
                                     {{{"type", "function_call_output"},
                                       {"call_id", out[1]["call_id"]},
                                       {"output", "20 C"}}}}}),
                              limits(), &store_);
  EXPECT_NE(next.parsed.prompt_texts[0].find("<tool_response>\n20 C\n</tool_response>"),
            std::string::npos);
}

TEST_F(ResponsesStreamTest, ReasoningItemCutAndFailedReplies) {
  ResponsesRequest r = parse_responses_request(body(), limits(), &store_);
  r.parsed.reasoning = true;  // as with a thinking template (Qwen3's)
  const Reply got =
      run(r, *model_, {"<think>\nHm", "m.\n</think>", "\n\nHi", "!"}, decode::FinishReason::eos);
  const json& out = got.response["output"];
  ASSERT_EQ(2u, out.size()) << out.dump();
  EXPECT_EQ("reasoning", out[0]["type"]);
  EXPECT_EQ("rs_00000000abcdef12_0", out[0]["id"]);
  EXPECT_EQ((json::array({{{"type", "reasoning_text"}, {"text", "\nHmm.\n"}}})), out[0]["content"]);
  EXPECT_EQ(json::array(), out[0]["summary"]);
  EXPECT_EQ("Hi!", out[1]["content"][0]["text"]);
  // The tokens before the answer's first character: the two of the think block.
  EXPECT_EQ(2, got.response["usage"]["output_tokens_details"]["reasoning_tokens"]);
  const auto events = parse_sse(got.events);
  EXPECT_EQ(out, accumulate(events));
  std::string reasoning;
  for (const json& e : events)
    if (e["type"] == "response.reasoning_text.delta") reasoning += e["delta"].get<std::string>();
  EXPECT_EQ("\nHmm.\n", reasoning);

  const Reply cut = run(r, *model_, {"Hi"}, decode::FinishReason::length);
  EXPECT_EQ("incomplete", cut.response["status"]);
  EXPECT_EQ((json{{"reason", "max_output_tokens"}}), cut.response["incomplete_details"]);
  EXPECT_EQ("incomplete", cut.response["output"][0]["status"]);
  EXPECT_FALSE(cut.response.contains("completed_at"));
  EXPECT_EQ("response.incomplete", parse_sse(cut.events).back()["type"]);

  const Reply failed = run(r, *model_, {"Hi"}, decode::FinishReason::eos, "boom");
  EXPECT_EQ("failed", failed.response["status"]);
  EXPECT_EQ((json{{"code", "server_error"}, {"message", "boom"}}), failed.response["error"]);
  EXPECT_EQ("response.failed", parse_sse(failed.events).back()["type"]);

  // No text at all: no items; the stored conversation gets an empty assistant turn.
  const Reply empty = run(r, *model_, {}, decode::FinishReason::eos);
  EXPECT_EQ(json::array(), empty.response["output"]);
  EXPECT_EQ(
      (std::vector<std::string>{"response.created", "response.in_progress", "response.completed"}),
      types_of(parse_sse(empty.events)));
  EXPECT_EQ("", empty.messages[0]["content"]);
}

}  // namespace
}  // namespace ls::server
