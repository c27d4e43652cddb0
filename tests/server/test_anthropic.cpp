// Anthropic's Messages API without HTTP (src/server/anthropic_*.cpp): every content block type
// translated to the chat messages the template renders, the same prompt as the equivalent chat
// request, count_tokens equal to it, each bad field refused naming it, a chat response and its
// streamed chunks turned into a Message and into Anthropic's events, and damaged bodies raising
// ApiError only.
#include <gtest/gtest.h>

#include <random>

#include "server/anthropic_request.h"
#include "server/anthropic_response.h"
#include "server/response.h"
#include "server_fixture.h"

namespace ls::server {
namespace {

using nlohmann::json;
using ordered = nlohmann::ordered_json;

class AnthropicTest : public test::ServerFixture<test::TinyModel> {
 protected:
  ServerLimits limits() { return ServerFixture::limits(512); }
  static ordered body(ordered extra = ordered::object()) {
    ordered b = {{"model", "tiny"},
                 {"max_tokens", 8},
                 {"messages", ordered::array({{{"role", "user"}, {"content", "Hello"}}})}};
    for (auto& [k, v] : extra.items()) b[k] = v;
    return b;
  }
  // The ApiError `b` raises: its param, and a check that the message names it too.
  std::string param_of(const ordered& b) {
    try {
      parse_messages_request(b, limits());
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status == 404 ? 404 : 400, e.status) << b.dump();
      EXPECT_NE(std::string(e.what()).find(e.param), std::string::npos)
          << "the message does not name " << e.param << ": " << e.what();
      return e.param;
    }
    ADD_FAILURE() << "accepted: " << b.dump();
    return "";
  }
};

const ordered kTools = ordered::array(
    {{{"name", "get_weather"},
      {"description", "Weather of a city"},
      {"input_schema",
       {{"type", "object"},
        {"properties", {{"city", {{"type", "string"}}}, {"days", {{"type", "integer"}}}}},
        {"required", {"city"}}}}}});

// A conversation with every block type: system blocks, user text blocks, an assistant's text
// and tool_use, the user's tool_results (one an error) followed by text.
ordered conversation() {
  return ordered::array(
      {{{"role", "user"},
        {"content",
         {{{"type", "text"}, {"text", "Weather?"}}, {{"type", "text"}, {"text", "In Paris."}}}}},
       {{"role", "assistant"},
        {"content",
         {{{"type", "thinking"}, {"thinking", "dropped"}, {"signature", "s"}},
          {{"type", "text"}, {"text", "Let me look."}},
          {{"type", "tool_use"},
           {"id", "toolu_1"},
           {"name", "get_weather"},
           {"input", {{"city", "Paris"}}}},
          {{"type", "tool_use"},
           {"id", "toolu_2"},
           {"name", "get_weather"},
           {"input", ordered::object()}}}}},
       {{"role", "user"},
        {"content",
         {{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "20 C"}},
          {{"type", "tool_result"},
           {"tool_use_id", "toolu_2"},
           {"content", {{{"type", "text"}, {"text", "no city"}}}},
           {"is_error", true}},
          {{"type", "text"}, {"text", "Thanks"}}}}}});
}

TEST_F(AnthropicTest, EveryBlockTypeBecomesChatMessages) {
  ordered b =
      body({{"system",
             {{{"type", "text"}, {"text", "Be brief."}}, {{"type", "text"}, {"text", "Be kind."}}}},
            {"messages", conversation()},
            {"tools", kTools}});
  const MessagesTranslation t = translate_messages(b, false);
  const ordered want = ordered::array(
      {{{"role", "system"}, {"content", "Be brief.\nBe kind."}},
       {{"role", "user"}, {"content", "Weather?\nIn Paris."}},
       {{"role", "assistant"},
        {"content", "Let me look."},
        {"tool_calls",
         {{{"id", "toolu_1"},
           {"type", "function"},
           {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}},
          {{"id", "toolu_2"},
           {"type", "function"},
           {"function", {{"name", "get_weather"}, {"arguments", ordered::object()}}}}}}},
       {{"role", "tool"}, {"tool_call_id", "toolu_1"}, {"content", "20 C"}},
       {{"role", "tool"}, {"tool_call_id", "toolu_2"}, {"content", "Error: no city"}},
       {{"role", "user"}, {"content", "Thanks"}}});
  EXPECT_EQ(want, t.chat["messages"]) << t.chat["messages"].dump(1);
  // Tools in OpenAI's form, the schema's properties in their written order.
  const ordered& fn = t.chat["tools"][0]["function"];
  EXPECT_EQ("function", t.chat["tools"][0]["type"]);
  EXPECT_EQ("get_weather", fn["name"]);
  EXPECT_EQ("Weather of a city", fn["description"]);
  EXPECT_EQ(R"({"city":{"type":"string"},"days":{"type":"integer"}})",
            fn["parameters"]["properties"].dump());
  // The template renders the calls and the results.
  const ParsedRequest r = parse_messages_request(b, limits());
  const std::string& p = r.prompt_texts[0];
  for (const char* piece : {"Be brief.\nBe kind.", "<tool_call>", "\"city\": \"Paris\"",
                            "<tool_response>\n20 C\n</tool_response>", "Error: no city", "Thanks"})
    EXPECT_NE(p.find(piece), std::string::npos) << piece << " not in " << p;
  EXPECT_EQ(p.find("dropped"), std::string::npos) << "a thinking block reached the prompt";
  EXPECT_TRUE(r.parse_tools);
}

TEST_F(AnthropicTest, SamePromptAsTheChatRouteAndCountTokensAgrees) {
  const ordered b = body({{"system", "Be brief."},
                          {"tools", kTools},
                          {"temperature", 0},
                          {"top_k", 5},
                          {"top_n_sigma", 1.5},
                          {"dynatemp_range", 0.25},
                          {"stop_sequences", {"a", "b", "c", "d", "e"}},
                          {"metadata", {{"user_id", "u"}}}});
  const ParsedRequest m = parse_messages_request(b, limits());
  json chat = {
      {"messages",
       {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hello"}}}},
      {"tools", json::parse(translate_messages(b, false).chat["tools"].dump())},
      {"max_tokens", 8}};
  const ParsedRequest c = parse_chat_request(chat, limits());
  EXPECT_EQ(c.jobs[0].prompt, m.jobs[0].prompt);
  EXPECT_EQ(m.jobs[0].prompt.size(), count_message_tokens(b, limits()));
  const decode::GenerationConfig& cfg = m.jobs[0].config;
  EXPECT_EQ(8, cfg.max_new_tokens);
  EXPECT_EQ(0.0, cfg.temperature);
  EXPECT_EQ(5, cfg.top_k);
  EXPECT_EQ(1.5, cfg.top_n_sigma);  // the chat route's extensions pass through
  EXPECT_EQ(0.25, cfg.dynatemp_range);
  EXPECT_EQ((std::vector<std::string>{"a", "b", "c", "d", "e"}), cfg.stop_strings);  // > 4
  EXPECT_EQ(nullptr, cfg.constraint);
  EXPECT_FALSE(m.stream);
  // count_tokens needs no max_tokens; tool_choice none leaves the tools out of the prompt, as
  // the generation does.
  ordered counted = b;
  counted.erase("max_tokens");
  EXPECT_EQ(m.jobs[0].prompt.size(), count_message_tokens(counted, limits()));
  ordered none = b;
  none["tool_choice"] = {{"type", "none"}};
  const std::size_t without = parse_messages_request(none, limits()).jobs[0].prompt.size();
  EXPECT_LT(without, m.jobs[0].prompt.size());
  EXPECT_EQ(without, count_message_tokens(none, limits()));
}

TEST_F(AnthropicTest, ToolChoiceForcesCallsAsTheChatRouteDoes) {
  for (const ordered& choice :
       {ordered{{"type", "any"}}, ordered{{"type", "tool"}, {"name", "get_weather"}},
        ordered{{"type", "any"}, {"disable_parallel_tool_use", true}}}) {
    const ordered b = body({{"tools", kTools}, {"tool_choice", choice}});
    const ParsedRequest r = parse_messages_request(b, limits());
    ASSERT_NE(nullptr, r.jobs[0].config.constraint) << choice.dump();
    EXPECT_NE(r.jobs[0].config.constraint->description.find("tool_choice"), std::string::npos);
    const ordered chat = translate_messages(b, false).chat;
    if (choice["type"] == "any") {
      EXPECT_EQ("required", chat["tool_choice"]);
    }
    if (choice["type"] == "tool") {
      EXPECT_EQ("get_weather", chat["tool_choice"]["function"]["name"]);
    }
    EXPECT_EQ(choice.contains("disable_parallel_tool_use"), chat.contains("parallel_tool_calls"));
  }
  const ParsedRequest a = parse_messages_request(
      body({{"tools", kTools}, {"tool_choice", {{"type", "auto"}}}}), limits());
  EXPECT_EQ(nullptr, a.jobs[0].config.constraint);
  EXPECT_TRUE(a.parse_tools);
}

TEST_F(AnthropicTest, EachBadFieldIsNamed) {
  const auto user = [](ordered content) {
    return ordered::array({{{"role", "user"}, {"content", std::move(content)}}});
  };
  const auto block = [&](ordered b) { return user(ordered::array({std::move(b)})); };
  const ordered call = {
      {"role", "assistant"},
      {"content",
       {{{"type", "tool_use"}, {"id", "t1"}, {"name", "f"}, {"input", ordered::object()}}}}};
  ordered no_max = body();
  no_max.erase("max_tokens");
  const std::vector<std::pair<ordered, std::string>> cases = {
      {no_max, "max_tokens"},
      {body({{"max_tokens", 0}}), "max_tokens"},
      {body({{"max_tokens", "8"}}), "max_tokens"},
      {body({{"max_tokens", 100000}}), "max_tokens"},  // beyond the context
      {body({{"model", "nope"}}), "model"},
      {body({{"model", 5}}), "model"},
      {body({{"temperature", 1.5}}), "temperature"},  // Anthropic's range is [0, 1]
      {body({{"temperature", "hot"}}), "temperature"},
      {body({{"top_p", 2}}), "top_p"},
      {body({{"top_k", -1}}), "top_k"},
      {body({{"stream", "yes"}}), "stream"},
      {body({{"stop_sequences", "x"}}), "stop_sequences"},
      {body({{"stop_sequences", {"a", ""}}}), "stop_sequences[1]"},
      {body({{"stop_sequences", {"a", 5}}}), "stop_sequences[1]"},
      {body({{"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}}}), "thinking"},
      {body({{"thinking", {{"budget_tokens", 1024}}}}), "thinking.type"},
      {body({{"metadata", "x"}}), "metadata"},
      {body({{"system", 5}}), "system"},
      {body({{"system", {{{"type", "image"}}}}}), "system[0].type"},
      {body({{"messages", ordered::array()}}), "messages"},
      {body({{"messages", "hi"}}), "messages"},
      {body({{"messages", {5}}}), "messages[0]"},
      {body({{"messages", {{{"role", "system"}, {"content", "x"}}}}}), "messages[0].role"},
      {body({{"messages", {{{"content", "x"}}}}}), "messages[0].role"},
      {body({{"messages", {{{"role", "user"}}}}}), "messages[0].content"},
      {body({{"messages", user(5)}}), "messages[0].content"},
      {body({{"messages", user(ordered::array())}}), "messages[0].content"},
      {body({{"messages", block({{"type", "image"}, {"source", {}}})}}),
       "messages[0].content[0].type"},
      {body({{"messages", block({{"type", 5}})}}), "messages[0].content[0].type"},
      {body({{"messages", block({{"text", "x"}})}}), "messages[0].content[0].type"},
      {body({{"messages", block({{"type", "text"}})}}), "messages[0].content[0].text"},
      {body({{"messages", block({{"type", "text"}, {"text", 5}})}}), "messages[0].content[0].text"},
      {body({{"messages", block({{"type", "tool_use"},
                                 {"id", "a"},
                                 {"name", "f"},
                                 {"input", ordered::object()}})}}),
       "messages[0].content[0].type"},  // a user message cannot call
      {body({{"messages", block({{"type", "tool_result"}, {"tool_use_id", "t1"}})}}),
       "messages[0].content[0].tool_use_id"},  // no tool_use before it
      {body({{"messages",
              {call,
               {{"role", "user"},
                {"content", {{{"type", "tool_result"}, {"tool_use_id", "t9"}}}}}}}}),
       "messages[1].content[0].tool_use_id"},
      {body({{"messages",
              {call,
               {{"role", "user"},
                {"content",
                 {{{"type", "tool_result"}, {"tool_use_id", "t1"}, {"is_error", 1}}}}}}}}),
       "messages[1].content[0].is_error"},
      {body({{"messages",
              {call,
               {{"role", "user"},
                {"content",
                 {{{"type", "tool_result"},
                   {"tool_use_id", "t1"},
                   {"content", {{{"type", "image"}}}}}}}}}}}),
       "messages[1].content[0].content[0].type"},
      {body({{"messages",
              {{{"role", "user"}, {"content", "hi"}},
               {{"role", "assistant"},
                {"content", {{{"type", "tool_use"}, {"id", "t1"}, {"name", "f"}}}}},
               {{"role", "user"}, {"content", "x"}}}}}),
       "messages[1].content[0].input"},
      {body({{"messages",
              {{{"role", "user"}, {"content", "hi"}},
               {{"role", "assistant"}, {"content", "prefill"}}}}}),
       "messages[1].role"},
      {body({{"tools", "x"}}), "tools"},
      {body({{"tools", {{{"name", "f"}}}}}), "tools[0].input_schema"},
      {body({{"tools", {{{"input_schema", {{"type", "object"}}}}}}}), "tools[0].name"},
      {body({{"tools", {{{"name", "f"}, {"input_schema", 5}}}}}), "tools[0].input_schema"},
      {body({{"tools", {{{"type", "bash_20250124"}, {"name", "bash"}}}}}), "tools[0].type"},
      {body({{"tools", {kTools[0], kTools[0]}}}), "tools[1].name"},
      {body({{"tool_choice", {{"type", "any"}}}}), "tool_choice"},  // no tools
      {body({{"tools", kTools}, {"tool_choice", "any"}}), "tool_choice"},
      {body({{"tools", kTools}, {"tool_choice", {{"type", "some"}}}}), "tool_choice.type"},
      {body({{"tools", kTools}, {"tool_choice", {{"type", "tool"}}}}), "tool_choice.name"},
      {body({{"tools", kTools}, {"tool_choice", {{"type", "tool"}, {"name", "nope"}}}}),
       "tool_choice.name"},
      {body({{"tools", kTools},
             {"tool_choice", {{"type", "any"}, {"disable_parallel_tool_use", "yes"}}}}),
       "tool_choice.disable_parallel_tool_use"},
      {body({{"seed", -1}}), "seed"},  // the chat route's extensions, under their names
      {body({{"logitscope", {{"trace", 99}}}}), "logitscope.trace"},
  };
  for (const auto& [b, param] : cases) EXPECT_EQ(param, param_of(b)) << b.dump();
  // A schema the forced call's grammar cannot take: the chat route's message, renamed to the
  // Messages field (input_schema, not function.parameters).
  try {
    parse_messages_request(
        body({{"tools",
               {{{"name", "f"},
                 {"input_schema",
                  {{"type", "object"}, {"properties", {{"a", {{"type", "nope"}}}}}}}}}},
              {"tool_choice", {{"type", "any"}}}}),
        limits());
    ADD_FAILURE() << "an unknown schema type passed";
  } catch (const ApiError& e) {
    EXPECT_EQ("tool_choice", e.param);
    EXPECT_NE(std::string(e.what()).find("tools[0].input_schema"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("function.parameters"), std::string::npos) << e.what();
  }
}

// The events of a reply given as text pieces, streamed and not.
struct Reply {
  json message;        // anthropic_message of the non-streamed response
  std::string events;  // the SSE text of the streamed one
};

Reply run(const ParsedRequest& parsed, const engine::LoadedModel& model,
          const std::vector<std::string>& pieces, decode::FinishReason reason,
          const std::string& stop) {
  Reply out;
  for (const bool stream : {false, true}) {
    ParsedRequest r = parsed;
    r.stream = stream;
    ResponseBuilder b(r, model, "msg_0000000000000000abcdef12", "tiny", 0);
    std::vector<json> chunks;
    HeaderEvent h;
    h.cached_tokens = 2;
    b.apply(0, h, chunks);
    for (const auto& p : pieces) b.apply(0, TextEvent{0, p}, chunks);
    for (std::size_t i = 0; i < pieces.size(); ++i) b.apply(0, TokenEvent{}, chunks);
    FinishEvent f{0, reason, "", pieces.size(), stop};
    b.apply(0, f, chunks);
    b.apply(0, DoneEvent{}, chunks);
    if (!stream) {
      out.message = anthropic_message(b.response(), "msg_x", b.stop_string(0));
    } else {
      MessagesStream s("msg_x", "tiny");
      const json usage = b.usage_chunk()["usage"];
      out.events = s.events(chunks, usage);  // before finish(): the order of the events
      out.events += s.finish(usage, b.stop_string(0));
    }
  }
  return out;
}

// The event names and data of an SSE text.
std::vector<std::pair<std::string, json>> parse_sse(const std::string& text) {
  std::vector<std::pair<std::string, json>> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find("\n\n", at);
    EXPECT_NE(end, std::string::npos) << text.substr(at);
    if (end == std::string::npos) break;
    const std::string ev = text.substr(at, end - at);
    const std::size_t nl = ev.find('\n');
    EXPECT_EQ(0u, ev.rfind("event: ", 0)) << ev;
    EXPECT_EQ(nl + 1, ev.find("data: ", nl)) << ev;
    out.push_back({ev.substr(7, nl - 7), json::parse(ev.substr(nl + 7))});
    at = end + 2;
  }
  return out;
}

TEST_F(AnthropicTest, TextReplyAsMessageAndEvents) {
  const ParsedRequest r = parse_messages_request(body(), limits());
  const Reply got =
      run(r, *model_, {"Hel", "lo", " there"}, decode::FinishReason::stop_string, "STOP");
  const json& m = got.message;
  EXPECT_EQ("message", m["type"]);
  EXPECT_EQ("assistant", m["role"]);
  EXPECT_EQ("tiny", m["model"]);
  EXPECT_EQ((json::array({{{"type", "text"}, {"text", "Hello there"}}})), m["content"]);
  EXPECT_EQ("stop_sequence", m["stop_reason"]);
  EXPECT_EQ("STOP", m["stop_sequence"]);
  const std::size_t prompt = r.jobs[0].prompt.size();
  EXPECT_EQ(prompt - 2, m["usage"]["input_tokens"]);  // 2 read from the prefix cache
  EXPECT_EQ(2, m["usage"]["cache_read_input_tokens"]);
  EXPECT_EQ(3, m["usage"]["output_tokens"]);
  EXPECT_TRUE(m.contains("logitscope"));

  const auto ev = parse_sse(got.events);
  std::vector<std::string> names;
  std::string text;
  for (const auto& [name, data] : ev) {
    names.push_back(name);
    EXPECT_EQ(name, data["type"]);
    if (name == "content_block_delta") {
      EXPECT_EQ(0, data["index"]);
      EXPECT_EQ("text_delta", data["delta"]["type"]);
      text += data["delta"]["text"].get<std::string>();
    }
  }
  EXPECT_EQ((std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                      "content_block_delta", "content_block_delta",
                                      "content_block_stop", "message_delta", "message_stop"}),
            names);
  EXPECT_EQ("Hello there", text);
  const json& start = ev[0].second["message"];
  EXPECT_EQ(m["id"].get<std::string>().substr(0, 4), "msg_");
  EXPECT_EQ(json::array(), start["content"]);
  EXPECT_EQ(nullptr, start["stop_reason"]);
  EXPECT_EQ(prompt - 2, start["usage"]["input_tokens"]);
  const json& delta = ev[ev.size() - 2].second;
  EXPECT_EQ("stop_sequence", delta["delta"]["stop_reason"]);
  EXPECT_EQ("STOP", delta["delta"]["stop_sequence"]);
  EXPECT_EQ(3, delta["usage"]["output_tokens"]);

  EXPECT_EQ("max_tokens",
            run(r, *model_, {"a"}, decode::FinishReason::length, "").message["stop_reason"]);
  const json eos = run(r, *model_, {"a"}, decode::FinishReason::eos, "").message;
  EXPECT_EQ("end_turn", eos["stop_reason"]);
  EXPECT_EQ(nullptr, eos["stop_sequence"]);
}

// The content blocks rebuilt from a stream's events, as a client accumulates them; each block
// started, stopped, with increasing indexes, and message_delta's stop_reason tool_use.
json streamed_blocks(const std::string& events) {
  json blocks = json::array();
  std::vector<std::string> partial;
  int open = -1;
  for (const auto& [name, data] : parse_sse(events)) {
    if (name == "content_block_start") {
      EXPECT_EQ(-1, open);
      open = data["index"];
      EXPECT_EQ(static_cast<int>(blocks.size()), open);
      blocks.push_back(data["content_block"]);
      partial.emplace_back();
    } else if (name == "content_block_delta") {
      EXPECT_EQ(open, data["index"]);
      if (open < 0) continue;
      const json& d = data["delta"];
      if (d["type"] == "text_delta")
        blocks[open]["text"] =
            blocks[open]["text"].get<std::string>() + d["text"].get<std::string>();
      if (d["type"] == "input_json_delta") partial[open] += d["partial_json"].get<std::string>();
    } else if (name == "content_block_stop") {
      EXPECT_EQ(open, data["index"]);
      if (open < 0) continue;
      if (blocks[open]["type"] == "tool_use") blocks[open]["input"] = json::parse(partial[open]);
      open = -1;
    } else if (name == "message_delta") {
      EXPECT_EQ("tool_use", data["delta"]["stop_reason"]);
    }
  }
  return blocks;
}

TEST_F(AnthropicTest, ToolCallAsToolUseBlocksAndInputJsonDeltas) {
  const ParsedRequest r = parse_messages_request(body({{"tools", kTools}}), limits());
  const std::vector<std::string> pieces = {
      "Sure.", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par",
      "is\"}}\n</tool_call>",
      "\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
      "\"not json\"}\n</tool_call>"};
  const Reply got = run(r, *model_, pieces, decode::FinishReason::eos, "");
  const json& c = got.message["content"];
  ASSERT_EQ(3u, c.size()) << c.dump();
  EXPECT_EQ((json{{"type", "text"}, {"text", "Sure."}}), c[0]);
  EXPECT_EQ("tool_use", c[1]["type"]);
  EXPECT_EQ("get_weather", c[1]["name"]);
  EXPECT_EQ((json{{"city", "Paris"}}), c[1]["input"]);
  EXPECT_EQ(0u, c[1]["id"].get<std::string>().rfind("toolu_", 0)) << c[1]["id"];
  EXPECT_NE(c[1]["id"], c[2]["id"]);
  EXPECT_EQ((json{{"arguments", "not json"}}), c[2]["input"]);  // an object, whatever Qwen wrote
  EXPECT_EQ("tool_use", got.message["stop_reason"]);

  // Streamed: a text block, then one tool_use block per call whose input_json_delta pieces
  // join into the same input.
  EXPECT_EQ(c, streamed_blocks(got.events));
  // A call with no text before it: no text block, streamed or not (the chat stream's first
  // delta holds an empty content).
  const Reply bare = run(r, *model_, {pieces[1], pieces[2]}, decode::FinishReason::eos, "");
  ASSERT_EQ(1u, bare.message["content"].size()) << bare.message.dump();
  EXPECT_EQ("tool_use", bare.message["content"][0]["type"]);
  EXPECT_EQ(bare.message["content"], streamed_blocks(bare.events));
}

TEST_F(AnthropicTest, ErrorShapes) {
  const json e = anthropic_error(400, "'max_tokens' is required");
  EXPECT_EQ((json{{"type", "error"},
                  {"error",
                   {{"type", "invalid_request_error"}, {"message", "'max_tokens' is required"}}}}),
            e);
  EXPECT_EQ("authentication_error", anthropic_error_type(401));
  EXPECT_EQ("not_found_error", anthropic_error_type(404));
  EXPECT_EQ("request_too_large", anthropic_error_type(413));
  EXPECT_EQ("overloaded_error", anthropic_error_type(503));
  EXPECT_EQ("api_error", anthropic_error_type(500));
  const auto ev = parse_sse(MessagesStream::error("boom"));
  ASSERT_EQ(1u, ev.size());
  EXPECT_EQ("error", ev[0].first);
  EXPECT_EQ("boom", ev[0].second["error"]["message"]);
}

// Random damage to a valid body with every block type: only ApiError may come out.
TEST_F(AnthropicTest, FuzzedBodiesOnlyRaiseApiError) {
  const std::vector<ordered> values = {
      nullptr,
      true,
      -1,
      0,
      1,
      2.5,
      1e300,
      "",
      "x",
      ordered::array(),
      ordered::object(),
      ordered::array({1, "a"}),
      ordered{{"type", "text"}, {"text", "t"}},
      ordered{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}}};
  const ordered base = body({{"system", "s"},
                             {"messages", conversation()},
                             {"tools", kTools},
                             {"tool_choice", {{"type", "auto"}}},
                             {"stop_sequences", {"x"}},
                             {"temperature", 0.5}});
  const ServerLimits l = limits();
  std::mt19937 rng(4321);
  int accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    ordered b = base;
    test::damage(b, rng, values);
    try {
      parse_messages_request(b, l);
      count_message_tokens(b, l);
      ++accepted;
    } catch (const ApiError&) {
    } catch (const std::exception& ex) {
      ADD_FAILURE() << "not an ApiError: " << ex.what() << " for " << b.dump();
    }
  }
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace ls::server
