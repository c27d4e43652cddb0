// The logit microscope's routes without HTTP (docs/server-api.md, "The logit microscope"): the page's
// model info, a kept generation as JSON, and replay (every step re-scored under other settings
// from the kept logits, one step traced in full), plus the page's embedded files.
#pragma once

#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/generation_store.h"
#include "server/request.h"

namespace ls::server {

// GET /v1/logitscope/info.
nlohmann::json info_json(const ServerLimits& limits);
// GET /v1/logitscope/generations/ID.
nlohmann::json generation_json(const KeptGeneration::Snapshot& g, std::int32_t vocab);
// POST /v1/logitscope/replay over `g` (the body's "generation" already resolved). Throws
// ApiError naming the field for a bad step, top_n or setting.
nlohmann::json replay_json(const KeptGeneration::Snapshot& g, const nlohmann::json& body,
                           const ServerLimits& limits);

// One file of the page (web/, built by Vite and embedded by CMake: web_assets.cpp).
struct WebAsset {
  std::string_view path;  // "/index.html", "/assets/index.js", ...
  std::string_view content_type;
  std::string_view body;
};
std::span<const WebAsset> web_assets();
// The asset served at `path` ("/" is /index.html), or null.
const WebAsset* find_web_asset(std::string_view path);

}  // namespace ls::server
