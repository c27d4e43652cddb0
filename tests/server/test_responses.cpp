// OpenAI's Responses API requests without HTTP (responses_request.cpp, response_store.cpp): input
// items as the chat messages the template renders, the chat route's prompt for the same turns,
// tools, tool_choice, text.format and include as chat fields, previous_response_id over the store,
// each bad or unsupported field named, damaged bodies raising ApiError only. The answers are
// test_responses_stream.cpp's.
#include <gtest/gtest.h>

#include <random>

#include "server/responses_request.h"
#include "server_fixture.h"

namespace ls::server {
namespace {

using nlohmann::json;
using ordered = nlohmann::ordered_json;

class ResponsesTest : public test::ServerFixture<test::TinyModel> {
 protected:
  static ordered body(ordered extra = ordered::object()) {
    ordered b = {{"model", "tiny"}, {"max_output_tokens", 8}, {"input", "Hello"}};
    for (auto& [k, v] : extra.items()) b[k] = v;
    return b;
  }
  // The ApiError `b` raises: its param, and a check that the message names it too.
  std::string param_of(const ordered& b, std::string* code = nullptr) {
    try {
      parse_responses_request(b, limits(512), &store_);
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status == 404 ? 404 : 400, e.status) << b.dump();
      EXPECT_NE(std::string(e.what()).find(e.param), std::string::npos)
          << "the message does not name " << e.param << ": " << e.what();
      if (code != nullptr) *code = e.code;
      return e.param;
    }
    ADD_FAILURE() << "accepted: " << b.dump();
    return "";
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

// Every item type: a developer message with parts, a user message, an assistant's message and
// two calls, their outputs (a string, input_text parts), reasoning (dropped), a user message.
ordered conversation() {
  return ordered::array(
      {{{"role", "developer"},
        {"content",
         {{{"type", "input_text"}, {"text", "Be "}}, {{"type", "input_text"}, {"text", "kind."}}}}},
       {{"type", "message"}, {"role", "user"}, {"content", "Weather in Paris?"}},
       {{"type", "reasoning"}, {"id", "rs_1"}, {"summary", ordered::array()}},
       {{"type", "message"},
        {"role", "assistant"},
        {"id", "msg_1"},
        {"status", "completed"},
        {"content", {{{"type", "output_text"}, {"text", "Let me look."}, {"annotations", {}}}}}},
       {{"type", "function_call"},
        {"id", "fc_1"},
        {"call_id", "call_1"},
        {"name", "get_weather"},
        {"arguments", "{\"city\":\"Paris\"}"}},
       {{"type", "function_call"},
        {"call_id", "call_2"},
        {"name", "get_weather"},
        {"arguments", "{}"}},
       {{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "20 C"}},
       {{"type", "function_call_output"},
        {"call_id", "call_2"},
        {"output", {{{"type", "input_text"}, {"text", "no city"}}}}},
       {{"role", "user"}, {"content", "Thanks"}}});
}

TEST_F(ResponsesTest, EveryItemTypeBecomesChatMessages) {
  const ordered b =
      body({{"instructions", "Be brief."}, {"input", conversation()}, {"tools", kTools}});
  const ResponsesTranslation t = translate_responses(b, &store_);
  const ordered calls = {
      {{"id", "call_1"},
       {"type", "function"},
       {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Paris\"}"}}}},
      {{"id", "call_2"},
       {"type", "function"},
       {"function", {{"name", "get_weather"}, {"arguments", "{}"}}}}};
  const ordered want = ordered::array(
      {{{"role", "system"}, {"content", "Be brief."}},
       {{"role", "developer"},
        {"content", {{{"type", "text"}, {"text", "Be "}}, {{"type", "text"}, {"text", "kind."}}}}},
       {{"role", "user"}, {"content", "Weather in Paris?"}},
       {{"role", "assistant"},
        {"content", {{{"type", "text"}, {"text", "Let me look."}}}},
        {"tool_calls", calls}},
       {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "20 C"}},
       {{"role", "tool"}, {"tool_call_id", "call_2"}, {"content", "no city"}},
       {{"role", "user"}, {"content", "Thanks"}}});
  EXPECT_EQ(want, t.chat["messages"]) << t.chat["messages"].dump(1);
  // The conversation kept for the store: the same without the instructions.
  EXPECT_EQ(want.size() - 1, t.conversation.size());
  EXPECT_EQ(want[1], t.conversation[0]);
  // Flat tools in the chat form, the schema's properties in their written order.
  const ordered& fn = t.chat["tools"][0]["function"];
  EXPECT_EQ("get_weather", fn["name"]);
  EXPECT_EQ("Weather of a city", fn["description"]);
  EXPECT_EQ(R"({"city":{"type":"string"},"days":{"type":"integer"}})",
            fn["parameters"]["properties"].dump());
  EXPECT_EQ(true, t.echo["tools"][0]["strict"]);
  EXPECT_EQ("Be brief.", t.echo["instructions"]);
  // The template renders the calls and their outputs.
  const ResponsesRequest r = parse_responses_request(b, limits(512), &store_);
  const std::string& p = r.parsed.prompt_texts[0];
  for (const char* piece : {"Be brief.", "Be kind.", "<tool_call>", "\"city\": \"Paris\"",
                            "<tool_response>\n20 C\n</tool_response>", "no city", "Thanks"})
    EXPECT_NE(p.find(piece), std::string::npos) << piece << " not in " << p;
  EXPECT_TRUE(r.parsed.parse_tools);
  EXPECT_TRUE(r.parsed.stream);  // chunks are made either way
  EXPECT_FALSE(r.t.stream);
}

TEST_F(ResponsesTest, SamePromptAndSettingsAsTheChatRoute) {
  const ordered b = body({{"instructions", "Be brief."},
                          {"tools", kTools},
                          {"temperature", 0.5},
                          {"top_p", 0.9},
                          {"top_k", 5},
                          {"seed", 7},
                          {"dry_multiplier", 0.8},
                          {"repeat_last_n", 16},
                          {"parallel_tool_calls", false},
                          {"metadata", {{"k", "v"}}},
                          {"user", "u"},
                          {"service_tier", "auto"},
                          {"prompt_cache_key", "x"},
                          {"truncation", "disabled"},
                          {"background", false},
                          {"text", {{"format", {{"type", "text"}}}, {"verbosity", "medium"}}}});
  const ResponsesRequest m = parse_responses_request(b, limits(), &store_);
  const json chat = {
      {"messages",
       {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hello"}}}},
      {"tools", json::parse(translate_responses(b, &store_).chat["tools"].dump())},
      {"max_tokens", 8}};
  const ParsedRequest c = parse_chat_request(chat, limits());
  EXPECT_EQ(c.jobs[0].prompt, m.parsed.jobs[0].prompt);
  const decode::GenerationConfig& cfg = m.parsed.jobs[0].config;
  EXPECT_EQ(8, cfg.max_new_tokens);
  EXPECT_EQ(0.5, cfg.temperature);
  EXPECT_EQ(5, cfg.top_k);
  EXPECT_EQ(7u, cfg.seed);
  EXPECT_EQ(0.8, cfg.dry_multiplier);  // the chat route's extensions pass through
  EXPECT_EQ(16, cfg.repeat_last_n);
  EXPECT_EQ(nullptr, cfg.constraint);
  EXPECT_FALSE(m.parsed.logprobs.wanted);
  const json& e = m.t.echo;
  EXPECT_EQ(0.5, e["temperature"]);
  EXPECT_EQ(0.9, e["top_p"]);
  EXPECT_EQ(8, e["max_output_tokens"]);
  EXPECT_EQ(false, e["parallel_tool_calls"]);
  EXPECT_EQ((json{{"k", "v"}}), e["metadata"]);
  EXPECT_EQ("auto", e["tool_choice"]);
  EXPECT_EQ((json{{"format", {{"type", "text"}}}}), e["text"]);
  // Without temperature and top_p: the values in force (generation_config.json's) are echoed.
  ordered plain = body();
  plain.erase("max_output_tokens");
  const ResponsesRequest d = parse_responses_request(plain, limits(), &store_);
  EXPECT_EQ(d.parsed.jobs[0].config.temperature, d.t.echo["temperature"]);
  EXPECT_EQ(d.parsed.jobs[0].config.top_p, d.t.echo["top_p"]);
  EXPECT_EQ(nullptr, d.t.echo["max_output_tokens"]);
  EXPECT_TRUE(d.t.store);
}

TEST_F(ResponsesTest, ToolChoiceTextFormatAndLogprobsMapToTheChatFields) {
  for (const ordered& choice :
       {ordered("required"), ordered{{"type", "function"}, {"name", "get_weather"}}}) {
    const ResponsesRequest r = parse_responses_request(
        body({{"tools", kTools}, {"tool_choice", choice}}), limits(), &store_);
    ASSERT_NE(nullptr, r.parsed.jobs[0].config.constraint) << choice.dump();
    EXPECT_NE(r.parsed.jobs[0].config.constraint->description.find("tool_choice"),
              std::string::npos);
    EXPECT_EQ(json::parse(choice.dump()), r.t.echo["tool_choice"]);
  }
  const ResponsesRequest none = parse_responses_request(
      body({{"tools", kTools}, {"tool_choice", "none"}}), limits(), &store_);
  const ResponsesRequest with =
      parse_responses_request(body({{"tools", kTools}}), limits(), &store_);
  EXPECT_LT(none.parsed.jobs[0].prompt.size(), with.parsed.jobs[0].prompt.size());
  EXPECT_FALSE(none.parsed.parse_tools);

  const ordered schema = {
      {"type", "object"},
      {"properties", {{"b", {{"type", "integer"}}}, {"a", {{"type", "string"}}}}},
      {"required", {"b", "a"}}};
  const ordered js = {{"type", "json_schema"}, {"name", "x"}, {"schema", schema}, {"strict", true}};
  const ResponsesTranslation t = translate_responses(body({{"text", {{"format", js}}}}), &store_);
  EXPECT_EQ("json_schema", t.chat["response_format"]["type"]);
  EXPECT_EQ(schema.dump(), t.chat["response_format"]["json_schema"]["schema"].dump());
  EXPECT_EQ(json::parse(js.dump()), t.echo["text"]["format"]);
  const ResponsesRequest s =
      parse_responses_request(body({{"text", {{"format", js}}}}), limits(), &store_);
  ASSERT_NE(nullptr, s.parsed.jobs[0].config.constraint);
  EXPECT_EQ("json_schema", s.parsed.jobs[0].config.constraint->description);
  const ResponsesRequest o = parse_responses_request(
      body({{"text", {{"format", {{"type", "json_object"}}}}}}), limits(), &store_);
  ASSERT_NE(nullptr, o.parsed.jobs[0].config.constraint);

  const ResponsesRequest l = parse_responses_request(
      body({{"include", {"message.output_text.logprobs"}}, {"top_logprobs", 3}}), limits(),
      &store_);
  EXPECT_TRUE(l.parsed.logprobs.wanted);
  EXPECT_EQ(3, l.parsed.logprobs.top);
  EXPECT_EQ(3, l.parsed.jobs[0].logprobs.top);
  // top_logprobs alone is echoed but returns nothing: include asks for the logprobs.
  const ResponsesRequest alone =
      parse_responses_request(body({{"top_logprobs", 3}}), limits(), &store_);
  EXPECT_FALSE(alone.parsed.logprobs.wanted);
  EXPECT_EQ(3, alone.t.echo["top_logprobs"]);
}

TEST_F(ResponsesTest, PreviousResponseIdContinuesAStoredConversation) {
  StoredResponse prior;
  prior.response = {{"id", "resp_1"}};
  prior.messages = ordered::array(
      {{{"role", "user"}, {"content", "Weather?"}},
       {{"role", "assistant"},
        {"content", ""},
        {"tool_calls",
         {{{"id", "call_9"},
           {"type", "function"},
           {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Oslo\"}"}}}}}}}});
  store_.put("resp_1", prior);
  const ordered b = body(
      {{"previous_response_id", "resp_1"},
       {"instructions", "New rules."},
       {"tools", kTools},
       {"input", {{{"type", "function_call_output"}, {"call_id", "call_9"}, {"output", "-3 C"}}}}});
  const ResponsesTranslation t = translate_responses(b, &store_);
  ASSERT_EQ(4u, t.chat["messages"].size()) << t.chat["messages"].dump(1);
  EXPECT_EQ("system", t.chat["messages"][0]["role"]);  // this request's instructions first
  EXPECT_EQ(prior.messages[0], t.chat["messages"][1]);
  EXPECT_EQ(prior.messages[1], t.chat["messages"][2]);
  EXPECT_EQ("tool", t.chat["messages"][3]["role"]);
  EXPECT_EQ(3u, t.conversation.size());
  EXPECT_EQ("resp_1", t.echo["previous_response_id"]);
  const ResponsesRequest r = parse_responses_request(b, limits(), &store_);
  EXPECT_NE(r.parsed.prompt_texts[0].find("<tool_response>\n-3 C\n</tool_response>"),
            std::string::npos);

  std::string code;
  EXPECT_EQ("previous_response_id", param_of(body({{"previous_response_id", "resp_x"}}), &code));
  EXPECT_EQ("previous_response_not_found", code);
  // The store keeps the last 4 here: the oldest is dropped, a use counts as recent.
  for (int i = 2; i <= 5; ++i) {
    EXPECT_TRUE(store_.find("resp_1"));
    store_.put("resp_" + std::to_string(i), prior);
  }
  EXPECT_EQ(4u, store_.size());
  EXPECT_TRUE(store_.find("resp_1"));
  EXPECT_FALSE(store_.find("resp_2"));
  EXPECT_TRUE(store_.erase("resp_1"));
  EXPECT_FALSE(store_.find("resp_1"));
}

TEST_F(ResponsesTest, EachBadOrUnsupportedFieldIsNamed) {
  const auto item = [](ordered i) { return ordered::array({std::move(i)}); };
  ordered no_input = body();
  no_input.erase("input");
  const std::vector<std::pair<ordered, std::string>> cases = {
      {no_input, "input"},
      {body({{"input", 5}}), "input"},
      {body({{"input", ordered::array()}}), "input"},
      {body({{"input", {5}}}), "input[0]"},
      {body({{"input", item({{"role", "tool"}, {"content", "x"}})}}), "input[0].role"},
      {body({{"input", item({{"content", "x"}})}}), "input[0].role"},
      {body({{"input", item({{"role", "user"}})}}), "input[0].content"},
      {body({{"input", item({{"role", "user"}, {"content", 5}})}}), "input[0].content"},
      {body({{"input", item({{"role", "user"}, {"content", {{{"type", "input_image"}}}}})}}),
       "input[0].content[0].type"},
      {body({{"input", item({{"role", "user"}, {"content", {{{"type", "input_text"}}}}})}}),
       "input[0].content[0].text"},
      {body({{"input", item({{"type", "item_reference"}, {"id", "msg_1"}})}}), "input[0].type"},
      {body({{"input", item({{"type", "web_search_call"}})}}), "input[0].type"},
      {body({{"input", item({{"type", "function_call"}, {"name", "f"}, {"arguments", "{}"}})}}),
       "input[0].call_id"},
      {body({{"input", item({{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}})}}),
       "input[0].arguments"},
      {body(
           {{"input",
             {{{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", "{}"}},
              {{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", "{}"}}}}}),
       "input[1].call_id"},
      {body({{"input",
              item({{"type", "function_call_output"}, {"call_id", "c"}, {"output", "x"}})}}),
       "input[0].call_id"},  // no call before it
      {body({{"input",
              {{{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", "{}"}},
               {{"type", "function_call_output"}, {"call_id", "c"}, {"output", 5}}}}}),
       "input[1].output"},
      {body({{"instructions", 5}}), "instructions"},
      {body({{"model", "nope"}}), "model"},
      {body({{"max_output_tokens", 0}}), "max_output_tokens"},
      {body({{"max_output_tokens", 100000}}), "max_output_tokens"},  // beyond the context
      {body({{"temperature", 3}}), "temperature"},
      {body({{"top_p", 0}}), "top_p"},
      {body({{"stream", "yes"}}), "stream"},
      {body({{"store", 1}}), "store"},
      {body({{"metadata", "x"}}), "metadata"},
      {body({{"parallel_tool_calls", "no"}}), "parallel_tool_calls"},
      {body({{"tools", "x"}}), "tools"},
      {body({{"tools", {{{"name", "f"}}}}}), "tools[0].type"},
      {body({{"tools", {{{"type", "web_search"}}}}}), "tools[0].type"},
      {body({{"tools", {{{"type", "function"}, {"name", "f"}, {"parameters", 5}}}}}),
       "tools[0].parameters"},
      {body({{"tools", {{{"type", "function"}}}}}), "tools[0].name"},
      {body({{"tools", {{{"type", "function"}, {"name", "f"}, {"defer_loading", true}}}}}),
       "tools[0].defer_loading"},
      {body({{"tools", {kTools[0], kTools[0]}}}), "tools[1].name"},
      {body({{"tool_choice", "required"}}), "tool_choice"},  // no tools
      {body({{"tools", kTools}, {"tool_choice", "sometimes"}}), "tool_choice"},
      {body({{"tools", kTools}, {"tool_choice", {{"type", "file_search"}}}}), "tool_choice.type"},
      {body({{"tools", kTools},
             {"tool_choice",
              {{"type", "allowed_tools"}, {"mode", "auto"}, {"tools", ordered::array()}}}}),
       "tool_choice.type"},
      {body({{"tools", kTools}, {"tool_choice", {{"type", "function"}, {"name", "nope"}}}}),
       "tool_choice.name"},
      {body({{"text", 5}}), "text"},
      {body({{"text", {{"format", {{"type", "yaml"}}}}}}), "text.format.type"},
      {body({{"text", {{"format", {{"type", "json_schema"}, {"schema", {}}}}}}}),
       "text.format.name"},
      {body({{"text", {{"format", {{"type", "json_schema"}, {"name", "x"}}}}}}),
       "text.format.schema"},
      {body({{"text",
              {{"format",
                {{"type", "json_schema"}, {"name", "x"}, {"schema", {{"type", "nope"}}}}}}}}),
       "text.format.schema"},  // the chat route's error, renamed
      {body({{"text", {{"verbosity", "low"}}}}), "text.verbosity"},
      {body({{"reasoning", {{"effort", "high"}}}}), "reasoning.effort"},
      {body({{"reasoning", {{"summary", "auto"}}}}), "reasoning.summary"},
      {body({{"reasoning", 5}}), "reasoning"},
      {body({{"include", "x"}}), "include"},
      {body({{"include", {"message.output_text.logprobs", "file_search_call.results"}}}),
       "include[1]"},
      {body({{"top_logprobs", 21}}), "top_logprobs"},
      {body({{"background", true}}), "background"},
      {body({{"conversation", "conv_1"}}), "conversation"},
      {body({{"prompt", {{"id", "pmpt_1"}}}}), "prompt"},
      {body({{"truncation", "auto"}}), "truncation"},
      {body({{"max_tool_calls", 2}}), "max_tool_calls"},
      {body({{"seed", -1}}), "seed"},  // the chat route's extensions, under their names
      {body({{"logitscope", {{"trace", 99}}}}), "logitscope.trace"},
  };
  for (const auto& [b, param] : cases) EXPECT_EQ(param, param_of(b)) << b.dump();
  // A forced call's schema the grammar cannot take: named as the Responses tool's parameters.
  try {
    parse_responses_request(
        body({{"tools",
               {{{"type", "function"},
                 {"name", "f"},
                 {"parameters",
                  {{"type", "object"}, {"properties", {{"a", {{"type", "nope"}}}}}}}}}},
              {"tool_choice", "required"}}),
        limits(), &store_);
    ADD_FAILURE() << "an unknown schema type passed";
  } catch (const ApiError& e) {
    EXPECT_EQ("tool_choice", e.param);
    EXPECT_NE(std::string(e.what()).find("tools[0].parameters"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("function.parameters"), std::string::npos) << e.what();
  }
  std::string code;
  param_of(body({{"reasoning", {{"effort", "low"}}}}), &code);
  EXPECT_EQ("unsupported_field", code);
}

// Agent clients ask for encrypted reasoning on every request: accepted, and nothing changes (the
// same prompt and settings as without it; logprobs stay off).
TEST_F(ResponsesTest, EncryptedReasoningIsAcceptedAndChangesNothing) {
  const auto plain = parse_responses_request(body(), limits(512), &store_);
  const auto asked = parse_responses_request(body({{"include", {"reasoning.encrypted_content"}}}),
                                             limits(512), &store_);
  EXPECT_EQ(plain.parsed.jobs.at(0).prompt, asked.parsed.jobs.at(0).prompt);
  EXPECT_FALSE(asked.parsed.logprobs.wanted);
  EXPECT_EQ(decode::settings_json(plain.parsed.jobs.at(0).config),
            decode::settings_json(asked.parsed.jobs.at(0).config));
}

// Random damage to a valid body with every item type: only ApiError may come out.
TEST_F(ResponsesTest, FuzzedBodiesOnlyRaiseApiError) {
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
      "function_call",
      ordered::array(),
      ordered::object(),
      ordered::array({1, "a"}),
      ordered{{"type", "input_text"}, {"text", "t"}},
      ordered{{"type", "function_call_output"}, {"call_id", "call_1"}}};
  const ordered base = body({{"instructions", "s"},
                             {"input", conversation()},
                             {"tools", kTools},
                             {"tool_choice", "auto"},
                             {"text", {{"format", {{"type", "text"}}}}},
                             {"temperature", 0.5}});
  const ServerLimits l = limits(512);
  std::mt19937 rng(4321);
  int accepted = 0;
  for (int i = 0; i < 1500; ++i) {
    ordered b = base;
    test::damage(b, rng, values);
    try {
      parse_responses_request(b, l, &store_);
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
