// llama-server's native completion responses from scheduler events: one object per prompt
// ({content, tokens, stop_type, stopping_word, completion_probabilities, generation_settings,
// timings, ...}; a list of them for several prompts) or, streamed, one chunk per piece of text
// ({content, tokens, stop: false}) and the final object with stop: true. Probabilities are the
// model's softmax, or with post_sampling_probs the distribution the token was drawn from.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/loaded_model.h"
#include "server/native_request.h"
#include "server/scheduler.h"

namespace ls::server {

class NativeResponse {
 public:
  // `request` must outlive the response.
  NativeResponse(const ParsedRequest& request, NativeOptions options,
                 const engine::LoadedModel& model, std::string model_name, int ctx);

  // One event of job `job`; streamed chunks to send are appended.
  void apply(std::size_t job, const Event& event, std::vector<nlohmann::json>& chunks);
  bool done() const { return jobs_done_ == request_.jobs.size(); }
  const std::optional<std::string>& error() const { return error_; }
  std::size_t completion_tokens() const;
  nlohmann::json response() const;  // the whole non-streamed body: an object, or a list

 private:
  using Clock = std::chrono::steady_clock;
  struct Result {
    std::string content;
    std::vector<std::int32_t> tokens;
    std::vector<nlohmann::json> probs;  // completion_probabilities entries
    std::size_t sent_tokens = 0;        // streamed: tokens and probs already in a chunk
    std::string stop_type = "none";
    std::string stopping_word;
    std::size_t cached = 0;
    std::uint64_t seed = 0;  // the seed in force (drawn when the request gave none)
    std::string chain;       // the decode chain, described
    bool context_full = false;
    Clock::time_point start = Clock::now(), first{}, end{};
  };

  nlohmann::json prob_entry(const TokenLogprob& t) const;
  nlohmann::json timings(const Result& r, std::size_t job) const;
  nlohmann::json final_object(std::size_t job, bool streamed) const;
  nlohmann::json partial(std::size_t job, std::string content);

  const ParsedRequest& request_;
  NativeOptions options_;
  const engine::LoadedModel& model_;
  std::string model_name_;
  int ctx_;  // positions per sequence (generation_settings.n_ctx)
  std::vector<Result> results_;
  std::size_t jobs_done_ = 0;
  std::optional<std::string> error_;
};

}  // namespace ls::server
