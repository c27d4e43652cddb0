// OpenAI responses from scheduler events: chat.completion / text_completion objects, or their
// streamed chunks. Each choice keeps its text, its logprob entries (the OpenAI shapes: chat's
// {token, logprob, bytes, top_logprobs}, legacy {tokens, token_logprobs, top_logprobs,
// text_offset}), its tool calls (Qwen's <tool_call> blocks) and its finish reason. The
// `logitscope` extension carries the run header (settings in force) and the stage traces.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/reasoning.h"
#include "engine/loaded_model.h"
#include "server/request.h"
#include "server/scheduler.h"
#include "server/tool_calls.h"

namespace ls::server {

class ResponseBuilder {
 public:
  ResponseBuilder(const ParsedRequest& request, const engine::LoadedModel& model, std::string id,
                  std::string model_name, std::int64_t created);

  // One event of job `job` (an index into request.jobs); streamed chunks to send are appended.
  void apply(std::size_t job, const Event& event, std::vector<nlohmann::json>& chunks);
  bool done() const { return jobs_done_ == request_.jobs.size(); }
  const std::optional<std::string>& error() const { return error_; }
  std::size_t completion_tokens() const;
  std::size_t first_token_count() const { return tokens_seen_; }  // tokens so far (TTFT)
  // The stop string that ended choice `index` ("" when none did: EOS, length, a tool call).
  const std::string& stop_string(std::size_t index) const { return choices_.at(index).stop; }
  // Tokens of thinking templates' reasoning blocks: those generated before the answer's first
  // character, in choices that wrote reasoning (the Responses API's reasoning_tokens).
  std::size_t reasoning_tokens() const;

  nlohmann::json response() const;     // the whole non-streamed object
  nlohmann::json usage_chunk() const;  // the include_usage chunk

 private:
  struct Choice {
    std::string text;
    std::vector<nlohmann::json> logprobs;  // chat entries, or per token legacy tuples
    std::vector<nlohmann::json> pending;   // streamed: entries not yet sent
    std::vector<ToolCall> calls;
    std::optional<ToolCallParser> parser;
    std::optional<chat::ReasoningSplitter> reasoning_splitter;
    std::string reasoning;  // reasoning_content (thinking templates)
    std::string finish;
    std::string stop;  // the stop string that ended it, if one did
    std::size_t tokens = 0;
    std::size_t text_chars = 0;       // code points so far (legacy text_offset)
    std::size_t thinking_tokens = 0;  // tokens before the answer began (reasoning_tokens)
    bool answered = false;            // the answer (or a tool call) has begun
  };

  nlohmann::json chunk(nlohmann::json choices) const;
  nlohmann::json logprob_entry(const TokenLogprob& t, std::size_t& offset) const;
  nlohmann::json prompt_logprobs_entry(const TokenLogprob& t, int top) const;
  void add_text(std::size_t index, const std::string& text, std::vector<nlohmann::json>& chunks);
  void add_split(std::size_t index, const chat::ReasoningDelta& d,
                 std::vector<nlohmann::json>& chunks);
  void add_content(std::size_t index, const std::string& text, std::vector<nlohmann::json>& chunks);
  nlohmann::json take_logprobs(Choice& c) const;

  const ParsedRequest& request_;
  const engine::LoadedModel& model_;
  std::string id_, model_name_;
  std::int64_t created_;
  std::vector<Choice> choices_;
  std::vector<nlohmann::json> prompt_logprobs_;  // per job: vLLM's prompt_logprobs list
  nlohmann::json header_;                        // the first job's run header
  nlohmann::json trace_ = nlohmann::json::array();
  std::size_t jobs_done_ = 0;
  std::size_t cached_tokens_ = 0;  // prompt tokens reused from a shared prefix
  std::size_t tokens_seen_ = 0;
  std::optional<std::string> error_;
};

}  // namespace ls::server
