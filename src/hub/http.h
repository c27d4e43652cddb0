// HTTP for the Hub client, on libcurl. One Http object per thread (it owns one curl handle and
// reuses its connections). `head` never follows redirects, because the Hub puts a file's
// metadata in the redirect itself; `get` streams a body to a callback from an optional byte
// offset (a Range request) and follows redirects, as does `get_small` (API answers). Timeouts bound
// every request: the connection must open within `connect` seconds, and a request that receives
// nothing for `stall` seconds fails with a TransferError (which the caller may retry).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"

namespace ls::hub {

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased; of the last response only
  std::string body;                            // `get_small` only
  std::string url;                             // the URL that answered (after redirects)
  bool aborted = false;                        // `get`: the sink returned false (stopped)
  // The header's value, or "" when absent.
  std::string header(const std::string& name) const;
};

// No HTTP answer at all: refused, reset, timed out, cut short. Worth retrying.
class TransferError : public Error {
 public:
  using Error::Error;
};

// Receives a body's bytes as they arrive, with the status and headers of the answer they belong
// to (a 200 where a 206 was asked for means the whole file is coming). false stops the transfer.
using BodySink = std::function<bool(const HttpResponse& answer, const char* data, std::size_t n)>;

struct HttpTimeouts {
  long connect = 10;  // seconds to open a connection
  long stall = 10;    // seconds without a byte before a request is abandoned
};

class Http {
 public:
  explicit Http(HttpTimeouts timeouts);
  ~Http();
  Http(const Http&) = delete;
  Http& operator=(const Http&) = delete;

  // `headers` are full lines ("Authorization: Bearer ..."). A HEAD never follows redirects.
  HttpResponse head(const std::string& url, const std::vector<std::string>& headers);
  // A small body (an API answer) kept in memory, redirects followed; more than `max_body` bytes
  // is an error.
  HttpResponse get_small(const std::string& url, const std::vector<std::string>& headers,
                         std::size_t max_body = std::size_t{64} << 20);
  // Streams the body from byte `from` on (a Range request when from > 0) into `sink`; follows
  // redirects, and curl sends no Authorization header to another host or port on the way.
  // Returns the final response's status and headers; throws TransferError when cut short. A
  // sink returning false stops the transfer: the response says `aborted`.
  HttpResponse get(const std::string& url, const std::vector<std::string>& headers,
                   std::uint64_t from, const BodySink& sink);

 private:
  HttpResponse perform(const std::string& url, const std::vector<std::string>& headers, bool head,
                       bool follow, std::uint64_t from, const BodySink* sink, std::size_t max_body);
  void* curl_;  // CURL*, kept out of the header so that only http.cpp sees curl.h
  HttpTimeouts timeouts_;
};

// RFC 3986 percent-encoding of everything but unreserved characters and those in `safe`.
std::string url_quote(const std::string& s, const std::string& safe = "/");

}  // namespace ls::hub
