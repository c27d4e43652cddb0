// Request checking of the server (src/server/request.cpp) without HTTP: each bad field gives an
// ApiError naming it, good bodies become the expected jobs, and randomly damaged bodies never
// throw anything but ApiError (the HTTP body fuzzer).
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "server/request.h"
#include "server_fixture.h"

namespace ls::server {
namespace {

using nlohmann::json;

class RequestTest : public test::ServerFixture<test::TinyModel> {
 protected:
  static json chat(json extra) {
    json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hello"}}})}};
    for (auto& [k, v] : extra.items()) body[k] = v;
    return body;
  }
  // The param of the ApiError `body` raises (fails the test when it raises none).
  std::string param_of(const json& body, bool is_chat = true, int ctx = 256) {
    try {
      const ServerLimits l = limits(ctx);
      if (is_chat)
        parse_chat_request(body, l);
      else
        parse_completion_request(body, l);
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status == 404 ? 404 : 400, e.status) << body.dump();
      return e.param;
    }
    ADD_FAILURE() << "accepted: " << body.dump();
    return "";
  }
};

TEST_F(RequestTest, EachBadFieldIsNamed) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"temperature", "hot"}}, "temperature"},
      {{{"temperature", 2.5}}, "temperature"},
      {{{"top_p", 0}}, "top_p"},
      {{{"top_p", 2}}, "top_p"},
      {{{"top_k", -2}}, "top_k"},
      {{{"min_p", 1.5}}, "min_p"},
      {{{"repetition_penalty", 0}}, "repetition_penalty"},
      {{{"presence_penalty", 3}}, "presence_penalty"},
      {{{"frequency_penalty", -2.5}}, "frequency_penalty"},
      {{{"logit_bias", {{"5", 500}}}}, "logit_bias.5"},
      {{{"logit_bias", {{"x", 1}}}}, "logit_bias.x"},
      {{{"logit_bias", {{"999999", 1}}}}, "logit_bias.999999"},
      {{{"n", 0}}, "n"},
      {{{"n", 5}}, "n"},                      // above --parallel 4
      {{{"n", 2}, {"temperature", 0}}, "n"},  // greedy gives one sequence
      {{{"stop", json::array({"a", "b", "c", "d", "e"})}}, "stop"},
      {{{"stop", json::array({"a", ""})}}, "stop[1]"},
      {{{"stop", 5}}, "stop"},
      {{{"seed", -1}}, "seed"},
      {{{"seed", "x"}}, "seed"},
      {{{"max_tokens", 0}}, "max_tokens"},
      {{{"max_tokens", -1}}, "max_tokens"},
      {{{"max_tokens", 1.5}}, "max_tokens"},
      {{{"max_tokens", 100000}}, "max_tokens"},  // cannot fit --ctx 256
      {{{"max_completion_tokens", 100000}}, "max_completion_tokens"},
      {{{"min_tokens", 300}}, "min_tokens"},
      {{{"top_logprobs", 5}}, "top_logprobs"},  // without logprobs
      {{{"logprobs", true}, {"top_logprobs", 21}}, "top_logprobs"},
      {{{"logprobs", 1}}, "logprobs"},
      {{{"logprobs_mode", "bogus"}}, "logprobs_mode"},
      {{{"stream", "yes"}}, "stream"},
      {{{"stream_options", {{"include_usage", 1}}}}, "stream_options.include_usage"},
      {{{"ignore_eos", 1}}, "ignore_eos"},
      {{{"stop_token_ids", json::array({-1})}}, "stop_token_ids[0]"},
      {{{"bad_words", json::array({""})}}, "bad_words[0]"},
      {{{"tool_choice", "required"}}, "tool_choice"},
      {{{"tools", json::array({{{"type", "function"}}})}}, "tools[0]"},
      {{{"logitscope", {{"trace", 21}}}}, "logitscope.trace"},
      {{{"logitscope", {{"sequence_bias", json::array({json::array({json::array(), 1})})}}}},
       "logitscope.sequence_bias[0][0]"},
      {{{"logitscope", {{"order_preset", "x"}}}}, "logitscope.order_preset"},
      {{{"model", "nope"}}, "model"},
      {{{"messages", json::array()}}, "messages"},
      {{{"messages", "hi"}}, "messages"},
      {{{"messages", json::array({{{"role", "wizard"}, {"content", "x"}}})}}, "messages[0].role"},
      {{{"messages", json::array({{{"content", "x"}}})}}, "messages[0].role"},
      {{{"messages", json::array({{{"role", "user"}, {"content", 5}}})}}, "messages[0].content"},
      {{{"messages", json::array({{{"role", "user"}}})}}, "messages[0].content"},
      {{{"messages",
         json::array({{{"role", "user"}, {"content", json::array({{{"type", "image_url"}}})}}})}},
       "messages[0].content[0]"},
      // Found by fuzz/fuzz_request.cpp: a non-string "type" was a json type_error (a 500).
      {{{"messages", json::array({{{"role", "user"},
                                   {"content", json::array({{{"type", 5}, {"text", "a"}}})}}})}},
       "messages[0].content[0]"},
      {{{"tools", json::array({{{"type", 1}}})}}, "tools[0]"},
      {{{"tools", json::array({{{"type", nullptr}, {"function", {{"name", "f"}}}}})}}, "tools[0]"},
  };
  for (const auto& [extra, param] : cases) EXPECT_EQ(param, param_of(chat(extra))) << extra.dump();
}

TEST_F(RequestTest, CompletionFieldsAreNamed) {
  EXPECT_EQ("prompt", param_of(json::object(), false));
  EXPECT_EQ("prompt", param_of({{"prompt", json::array()}}, false));
  EXPECT_EQ("prompt", param_of({{"prompt", ""}}, false));
  EXPECT_EQ("prompt[1]", param_of({{"prompt", json::array({1, 999999})}}, false));
  EXPECT_EQ("prompt[0]", param_of({{"prompt", json::array({-1})}}, false));
  EXPECT_EQ("logprobs", param_of({{"prompt", "a"}, {"logprobs", 21}}, false));
  EXPECT_EQ("echo", param_of({{"prompt", "a"}, {"echo", "yes"}}, false));
  // A prompt longer than the context names the limit.
  try {
    parse_completion_request({{"prompt", json(std::vector<int>(300, 11))}}, limits(256));
    ADD_FAILURE() << "a 300-token prompt passed --ctx 256";
  } catch (const ApiError& e) {
    EXPECT_EQ("prompt", e.param);
    EXPECT_EQ("context_length_exceeded", e.code);
    EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
  }
}

// Every uint64 is a seed, and the refusal says so (issue 47: it stated [0, 2^63-1]).
TEST_F(RequestTest, SeedTakesTheWholeUint64Range) {
  const std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
  for (const json& seed : {json(top), json(0), json(3.0)}) {
    const ParsedRequest r = parse_chat_request(chat({{"seed", seed}}), limits());
    EXPECT_EQ(seed.get<std::uint64_t>(), r.jobs[0].config.seed.value_or(1)) << seed.dump();
  }
  for (const json& seed : {json(-1), json(1.5), json(18446744073709551616.0), json("x")}) {
    try {
      parse_chat_request(chat({{"seed", seed}}), limits());
      ADD_FAILURE() << "accepted seed " << seed.dump();
    } catch (const ApiError& e) {
      EXPECT_EQ("seed", e.param);
      EXPECT_NE(std::string(e.what()).find("[0, 18446744073709551615]"), std::string::npos)
          << e.what();
    }
  }
}

TEST_F(RequestTest, GoodRequestsBecomeJobs) {
  const ParsedRequest r = parse_chat_request(chat({{"temperature", 0.5},
                                                   {"max_tokens", 7},
                                                   {"n", 2},
                                                   {"stop", "x"},
                                                   {"logprobs", true},
                                                   {"top_logprobs", 3},
                                                   {"logprobs_mode", "processed"},
                                                   {"ignore_eos", true},
                                                   {"stop_token_ids", json::array({42})},
                                                   {"unknown_field", {{"is", "ignored"}}}}),
                                             limits());
  ASSERT_EQ(1u, r.jobs.size());
  const Job& j = r.jobs[0];
  EXPECT_EQ(7, j.config.max_new_tokens);
  EXPECT_EQ(2, j.config.num_return_sequences);
  EXPECT_EQ(0.5, j.config.temperature);
  EXPECT_EQ(std::vector<std::string>{"x"}, j.config.stop_strings);
  EXPECT_EQ(std::vector<std::int32_t>{42}, j.config.eos_token_id);  // ignore_eos, then 42
  EXPECT_TRUE(j.logprobs.wanted);
  EXPECT_EQ(3, j.logprobs.top);
  EXPECT_TRUE(j.logprobs.processed);
  EXPECT_EQ("request", j.config.source_of("temperature"));
  // The prompt is the chat template's rendering, tokenized.
  EXPECT_NE(r.prompt_texts[0].find("<|im_start|>user\nHello<|im_end|>"), std::string::npos);
  EXPECT_EQ(model_->tokenizer()->encode(r.prompt_texts[0]), j.prompt);
  // Without max_tokens a request may fill the context.
  const ParsedRequest fill = parse_chat_request(chat(json::object()), limits(256));
  EXPECT_EQ(256 - static_cast<int>(fill.jobs[0].prompt.size()), fill.jobs[0].config.max_new_tokens);
  // Completions: a list of prompts, one job each.
  const ParsedRequest many = parse_completion_request(
      {{"prompt", json::array({"a b", json::array({1, 2, 3})})}, {"echo", true}, {"logprobs", 2}},
      limits());
  ASSERT_EQ(2u, many.jobs.size());
  EXPECT_EQ((std::vector<std::int32_t>{1, 2, 3}), many.jobs[1].prompt);
  EXPECT_TRUE(many.jobs[0].prompt_logprobs.wanted);
  EXPECT_EQ(2, many.jobs[0].prompt_logprobs.top);
  EXPECT_EQ(limits().ctx - static_cast<int>(many.jobs[0].prompt.size()),
            many.jobs[0].config.max_new_tokens);
  // max_tokens 0 (either name) scores a prompt: the config asks for no new token.
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    const ParsedRequest score = parse_completion_request(
        {{"prompt", "a b"}, {"echo", true}, {"logprobs", 1}, {name, 0}}, limits());
    EXPECT_EQ(0, score.jobs[0].config.max_new_tokens) << name;
  }
}

// Random damage to valid bodies: values swapped for other JSON values, keys dropped. Whatever
// comes out, only ApiError may be thrown.
TEST_F(RequestTest, FuzzedBodiesOnlyRaiseApiError) {
  const std::vector<json> values = {nullptr,
                                    true,
                                    -1,
                                    0,
                                    1,
                                    2.5,
                                    1e300,
                                    -1e300,
                                    "",
                                    "x",
                                    json::array(),
                                    json::object(),
                                    json::array({1, "a"}),
                                    std::uint64_t{18446744073709551615ull},
                                    151935,
                                    151936};
  const json base = chat({{"temperature", 0.5},
                          {"top_p", 0.9},
                          {"top_k", 5},
                          {"max_tokens", 4},
                          {"n", 1},
                          {"stop", json::array({"a"})},
                          {"seed", 3},
                          {"logprobs", true},
                          {"top_logprobs", 2},
                          {"logit_bias", {{"5", 1}}},
                          {"min_p", 0.1},
                          {"tools", json::array()},
                          {"stream", false},
                          {"logitscope", {{"trace", 2}}}});
  const ServerLimits l = limits();
  std::mt19937 rng(1234);
  int accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    json body = base;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      auto it = body.begin();
      std::advance(it, rng() % body.size());
      const std::string key = it.key();
      if (rng() % 5 == 0) {
        body.erase(key);
      } else if (key == "messages" && rng() % 2) {
        body[key][0][rng() % 2 ? "role" : "content"] = values[rng() % values.size()];
      } else {
        body[key] = values[rng() % values.size()];
      }
      if (body.empty()) break;
    }
    try {
      const bool completions = rng() % 4 == 0;
      if (completions) body["prompt"] = values[rng() % values.size()];
      if (completions)
        parse_completion_request(body, l);
      else
        parse_chat_request(body, l);
      ++accepted;
    } catch (const ApiError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an ApiError: " << e.what() << " for " << body.dump();
    }
  }
  EXPECT_GT(accepted, 0);  // the fuzzer also reaches the accepting path
}

}  // namespace
}  // namespace ls::server
