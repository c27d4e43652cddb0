// Hub requests and their errors in plain words (see hub_api.h).
#include "hub/hub_api.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hub/cache.h"

namespace ls::hub {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

bool env_true(const char* name) {
  std::string v = env(name);
  for (char& c : v) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

long env_seconds(const char* name, long fallback) {
  const std::string v = env(name);
  if (v.empty()) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0' || !(d > 0) || d > 86400)
    fail("{}='{}': expected a number of seconds in (0, 86400]", name, v);
  return std::max(1L, static_cast<long>(std::ceil(d)));
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  const auto start = s.find_first_not_of(" \t\r\n");
  return start == std::string::npos ? "" : s.substr(start);
}

// A short excerpt of an error answer for the message: the Hub's X-Error-Message, else the body.
std::string server_says(const HttpResponse& r) {
  std::string m = r.header("x-error-message");
  if (m.empty()) {
    m = trim(r.body.substr(0, 200));
    try {
      const auto j = nlohmann::json::parse(r.body);
      if (j.is_object() && j.contains("error") && j["error"].is_string())
        m = j["error"].get<std::string>();
    } catch (const nlohmann::json::exception&) {
    }
  }
  return m.empty() ? "" : fmt::format(" (the server says: {})", m);
}

}  // namespace

HubSettings HubSettings::from_env() {
  HubSettings s;
  if (!env("HF_ENDPOINT").empty()) s.endpoint = env("HF_ENDPOINT");
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  s.token = trim(env("HF_TOKEN"));
  if (s.token.empty()) {
    const std::string path = env("HF_TOKEN_PATH").empty() ? (hf_home_from_env() / "token").string()
                                                          : env("HF_TOKEN_PATH");
    std::ifstream in(path);
    if (in) std::getline(in, s.token), s.token = trim(s.token);
  }
  s.offline = env_true("HF_HUB_OFFLINE");
  s.metadata.connect = s.metadata.stall = env_seconds("HF_HUB_ETAG_TIMEOUT", 10);
  s.download.connect = s.download.stall = env_seconds("HF_HUB_DOWNLOAD_TIMEOUT", 10);
  return s;
}

std::string url_origin(const std::string& url) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return "";
  const std::string scheme = url.substr(0, scheme_end);
  const auto host_start = scheme_end + 3;
  std::string hostport = url.substr(host_start, url.find_first_of("/?#", host_start) - host_start);
  hostport = hostport.substr(hostport.find('@') == std::string::npos ? 0 : hostport.find('@') + 1);
  const bool has_port =
      hostport.find(':', hostport.rfind(']') == std::string::npos ? 0 : hostport.rfind(']')) !=
      std::string::npos;
  if (!has_port) hostport += scheme == "https" ? ":443" : ":80";
  std::string out = scheme + "://" + hostport;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string normalize_etag(const std::string& etag) {
  std::string e = trim(etag);
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

std::vector<std::string> HubClient::headers_for(const std::string& url) const {
  std::vector<std::string> h = {"Accept-Encoding: identity"};
  if (!s_.token.empty() && url_origin(url) == url_origin(s_.endpoint))
    h.push_back("Authorization: Bearer " + s_.token);
  return h;
}

std::string HubClient::resolve_url(const std::string& repo, const std::string& revision,
                                   const std::string& path) const {
  return fmt::format("{}/{}/resolve/{}/{}", s_.endpoint, repo, url_quote(revision, ""),
                     url_quote(path));
}

void HubClient::fail_status(const HttpResponse& r, const std::string& repo,
                            const std::string& revision, const std::string& path) const {
  const std::string code = r.header("x-error-code");
  const std::string page = fmt::format("{}/{}", s_.endpoint, repo);
  const std::string what = path.empty() ? repo : fmt::format("{} in {}", path, repo);
  if (r.status == 401 || r.status == 403 || code == "GatedRepo") {
    const std::string token_note =
        s_.token.empty() ? "No token was sent: set HF_TOKEN to an access token of an account that "
                           "can read it"
                         : "The token in HF_TOKEN was sent and is refused: use one of an account "
                           "that can read it";
    fail(
        "{} answered {} for {}: the repository is gated or private{}. {}, and accept the "
        "model's license on its page, {} (a gated model); or check the name{}",
        s_.endpoint, r.status, what, code == "RepoNotFound" ? " (or does not exist)" : "",
        token_note, page, server_says(r));
  }
  if (r.status == 404) {
    if (code == "RevisionNotFound")
      fail("revision '{}' not found in {} at {}{}", revision, repo, s_.endpoint, server_says(r));
    if (code == "EntryNotFound" || (!path.empty() && code != "RepoNotFound"))
      fail("file '{}' not found in {} at revision '{}'{}", path, repo, revision, server_says(r));
    if (code == "RepoNotFound")
      fail("repository '{}' not found at {} (check the name; a private one needs HF_TOKEN){}", repo,
           s_.endpoint, server_says(r));
    fail("repository '{}' or its revision '{}' not found at {}{}", repo, revision, s_.endpoint,
         server_says(r));
  }
  if (r.status == 429)
    throw TransferError(
        fmt::format("{}: 429 Too Many Requests (rate limited){}", r.url, server_says(r)));
  if (r.status >= 500)
    throw TransferError(fmt::format("{}: server error {}{}", r.url, r.status, server_says(r)));
  fail("{}: unexpected HTTP status {} for {}{}", r.url, r.status, what, server_says(r));
}

RepoRevision HubClient::revision(Http& http, const std::string& repo,
                                 const std::string& revision) const {
  const std::string url = fmt::format("{}/api/models/{}/revision/{}?blobs=true", s_.endpoint, repo,
                                      url_quote(revision, ""));
  const HttpResponse r = http.get_small(url, headers_for(url));
  if (r.status != 200) fail_status(r, repo, revision, "");
  RepoRevision out;
  try {
    const auto j = nlohmann::json::parse(r.body);
    out.commit = j.at("sha").get<std::string>();
    for (const auto& f : j.at("siblings")) {
      RepoFile file{f.at("rfilename").get<std::string>(), std::nullopt};
      if (f.contains("size") && f["size"].is_number_unsigned())
        file.size = f["size"].get<std::uint64_t>();
      out.files.push_back(std::move(file));
    }
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not the Hub's revision answer (expected JSON with \"sha\" and \"siblings\"): {}", url,
         e.what());
  }
  if (!is_commit_hash(out.commit))
    fail("{}: \"sha\" is '{}', expected a 40-digit commit hash", url, out.commit);
  return out;
}

FileMetadata HubClient::file_metadata(Http& http, const std::string& repo,
                                      const std::string& commit, const std::string& path) const {
  std::string url = resolve_url(repo, commit, path);
  HttpResponse r = http.head(url, headers_for(url));
  // A relative redirect is the Hub's own (a renamed repository): follow it, token and all.
  for (int hops = 0; r.status >= 300 && r.status < 400 && r.header("location").rfind("/", 0) == 0;
       ++hops) {
    if (hops == 5) fail("{}: too many redirects", url);
    const auto host_end = s_.endpoint.find('/', s_.endpoint.find("://") + 3);
    url = s_.endpoint.substr(0, host_end) + r.header("location");
    r = http.head(url, headers_for(url));
  }
  if (r.status >= 400 || r.status < 200) fail_status(r, repo, commit, path);
  FileMetadata m;
  m.commit = r.header("x-repo-commit");
  m.lfs = !r.header("x-linked-etag").empty();
  m.etag = normalize_etag(m.lfs ? r.header("x-linked-etag") : r.header("etag"));
  m.location = r.status >= 300 ? r.header("location") : url;
  const std::string size = m.lfs ? r.header("x-linked-size") : r.header("content-length");
  if (m.commit.empty())
    fail(
        "{}: the answer has no X-Repo-Commit header, so it is not the Hub's (is HF_ENDPOINT "
        "'{}' right? a proxy or firewall may be answering instead)",
        url, s_.endpoint);
  if (m.etag.empty()) fail("{}: the answer has no ETag, so the file cannot be verified", url);
  if (m.etag.find('/') != std::string::npos || m.etag.find("..") != std::string::npos)
    fail("{}: the ETag '{}' is not a file name", url, m.etag);
  if (m.location.empty()) fail("{}: a redirect without a Location header", url);
  char* end = nullptr;
  m.size = std::strtoull(size.c_str(), &end, 10);
  if (size.empty() || *end != '\0') fail("{}: the answer gives no file size", url);
  return m;
}

}  // namespace ls::hub
