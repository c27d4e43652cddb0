// libcurl behind the Http interface (see http.h), loaded with dlopen when the first Http is
// made instead of linked: `pull` alone talks to the network, and a linked libcurl brought ~25
// libraries (GnuTLS, Kerberos, LDAP, libssh2, ...) into every process, ~3.8 MB resident in
// `bench` and `serve` (0.5B Q4_0: 1.4% of the weights, against a 1.10x memory bound).
#include "hub/http.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <exception>

namespace ls::hub {

namespace {

// The libcurl functions this file calls, from the library's soname (the package libcurl4).
struct CurlApi {
  decltype(&curl_global_init) global_init;
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_reset) easy_reset;
  decltype(&curl_easy_setopt) easy_setopt;
  decltype(&curl_easy_perform) easy_perform;
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_slist_append) slist_append;
  decltype(&curl_slist_free_all) slist_free_all;
};

constexpr const char* kCurlLibrary = "libcurl.so.4";

template <typename Fn>
void resolve(void* lib, const char* name, Fn& fn) {
  void* sym = ::dlsym(lib, name);
  if (sym == nullptr)
    fail("{}: has no function {} (libcurl 7.x or 8.x expected)", kCurlLibrary, name);
  fn = reinterpret_cast<Fn>(sym);
}

CurlApi load_curl() {
  // Kept loaded for the process's life: curl's global state must not be unloaded under it.
  void* lib = ::dlopen(kCurlLibrary, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr)
    fail("downloads need libcurl ({}, Debian's package libcurl4), which did not load: {}",
         kCurlLibrary, ::dlerror());
  CurlApi api{};
  resolve(lib, "curl_global_init", api.global_init);
  resolve(lib, "curl_easy_init", api.easy_init);
  resolve(lib, "curl_easy_cleanup", api.easy_cleanup);
  resolve(lib, "curl_easy_reset", api.easy_reset);
  resolve(lib, "curl_easy_setopt", api.easy_setopt);
  resolve(lib, "curl_easy_perform", api.easy_perform);
  resolve(lib, "curl_easy_getinfo", api.easy_getinfo);
  resolve(lib, "curl_easy_strerror", api.easy_strerror);
  resolve(lib, "curl_slist_append", api.slist_append);
  resolve(lib, "curl_slist_free_all", api.slist_free_all);
  if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    fail("libcurl: global initialization failed");
  return api;
}

// Loaded once, by the first caller (a static's initialization is thread-safe; one that throws
// is tried again by the next caller).
const CurlApi& curl() {
  static const CurlApi api = load_curl();
  return api;
}

struct Transfer {
  HttpResponse* response;
  const BodySink* sink;
  std::size_t max_body;
  bool too_big = false;
  bool aborted = false;
  std::exception_ptr error;  // thrown by the sink
};

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line(data, size * count);
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
  // Every response of a redirect chain starts with its status line: keep only the last's headers.
  // Its status decides in on_body whether the bytes are the file or an error page.
  if (line.rfind("HTTP/", 0) == 0) {
    t->response->headers.clear();
    const auto space = line.find(' ');
    t->response->status = space == std::string::npos ? 0 : std::atol(line.c_str() + space + 1);
    return size * count;
  }
  const auto colon = line.find(':');
  if (colon == std::string::npos) return size * count;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string value = line.substr(colon + 1);
  const auto start = value.find_first_not_of(" \t");
  t->response->headers[name] = start == std::string::npos ? "" : value.substr(start);
  return size * count;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  // Only a successful answer is the file; an error page goes to `body` for the message.
  if (t->sink != nullptr && t->response->status >= 200 && t->response->status < 300) {
    // An exception must not unwind through curl's C frames: keep it, rethrow after the transfer.
    try {
      if ((*t->sink)(*t->response, data, n)) return n;
    } catch (...) {
      t->error = std::current_exception();
    }
    t->aborted = true;
    return 0;  // aborts the transfer
  }
  if (t->response->body.size() + n > t->max_body) {
    t->too_big = true;
    return 0;  // aborts the transfer
  }
  t->response->body.append(data, n);
  return n;
}

}  // namespace

std::string HttpResponse::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

Http::Http(HttpTimeouts timeouts) : timeouts_(timeouts) {
  curl_ = curl().easy_init();
  if (curl_ == nullptr) fail("libcurl: cannot create a transfer handle");
}

Http::~Http() {
  curl().easy_cleanup(static_cast<CURL*>(curl_));
}

HttpResponse Http::head(const std::string& url, const std::vector<std::string>& headers) {
  return perform(url, headers, true, false, 0, nullptr, 0);
}

HttpResponse Http::get_small(const std::string& url, const std::vector<std::string>& headers,
                             std::size_t max_body) {
  return perform(url, headers, false, true, 0, nullptr, max_body);
}

HttpResponse Http::get(const std::string& url, const std::vector<std::string>& headers,
                       std::uint64_t from, const BodySink& sink) {
  return perform(url, headers, false, true, from, &sink, std::size_t{1} << 20);
}

HttpResponse Http::perform(const std::string& url, const std::vector<std::string>& headers,
                           bool head, bool follow, std::uint64_t from, const BodySink* sink,
                           std::size_t max_body) {
  const CurlApi& api = curl();
  CURL* c = static_cast<CURL*>(curl_);
  api.easy_reset(c);
  HttpResponse response;
  Transfer t{&response, sink, max_body};
  curl_slist* list = nullptr;
  for (const std::string& h : headers) list = api.slist_append(list, h.c_str());
  api.easy_setopt(c, CURLOPT_URL, url.c_str());
  api.easy_setopt(c, CURLOPT_HTTPHEADER, list);
  api.easy_setopt(c, CURLOPT_USERAGENT, "logitscope/0.1.0");
  api.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for timeouts
  api.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, timeouts_.connect);
  // "Nothing for `stall` seconds": under 1 byte/s for that long, waiting for headers included.
  api.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  api.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, std::max(1L, timeouts_.stall));
  api.easy_setopt(c, CURLOPT_FOLLOWLOCATION, follow ? 1L : 0L);
  api.easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  api.easy_setopt(c, CURLOPT_NOBODY, head ? 1L : 0L);
  api.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  api.easy_setopt(c, CURLOPT_HEADERDATA, &t);
  api.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  api.easy_setopt(c, CURLOPT_WRITEDATA, &t);
  if (from > 0) {
    const std::string range = fmt::format("{}-", from);
    api.easy_setopt(c, CURLOPT_RANGE, range.c_str());
  }
  const CURLcode rc = api.easy_perform(c);
  api.slist_free_all(list);
  api.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  char* effective = nullptr;
  api.easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &effective);
  response.url = effective != nullptr ? effective : url;
  if (t.error) std::rethrow_exception(t.error);
  response.aborted = t.aborted;
  if (t.aborted) return response;
  if (t.too_big) fail("{}: the answer is larger than {} bytes", url, max_body);
  if (rc != CURLE_OK) {
    if (rc == CURLE_OPERATION_TIMEDOUT)
      throw TransferError(
          fmt::format("{}: timed out (nothing received for {} s)", url, timeouts_.stall));
    throw TransferError(fmt::format("{}: {}", url, api.easy_strerror(rc)));
  }
  return response;
}

std::string url_quote(const std::string& s, const std::string& safe) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
        safe.find(static_cast<char>(c)) != std::string::npos)
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

}  // namespace ls::hub
