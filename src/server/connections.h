// The server's TCP connections, which cpp-httplib 0.11 keeps to itself: one thread per
// connection (so clients that send slowly tie up only their own threads, never the ones that
// answer /health or run streams), a watchdog that closes a connection whose first request is
// not complete within a deadline (slowloris), and a way for a handler to find its own socket and
// ask whether the client has gone (non-streaming requests are cancelled when it has).
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace ls::server {

struct ConnectionLimits {
  std::size_t max_connections = 1024;                // beyond: new connections are closed at once
  std::chrono::milliseconds header_deadline{10000};  // accept to the first complete request
};

// Given to httplib as its task queue (Server::new_task_queue). `port` is the listening port:
// accepted sockets are recognized by it.
class Connections final : public httplib::TaskQueue {
 public:
  Connections(int port, ConnectionLimits limits);
  ~Connections() override;

  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

  // A complete request arrived on the connection from this peer (the pre-routing handler).
  void request_seen(const std::string& remote_addr, int remote_port);
  // The socket of the connection from this peer; -1 when there is none.
  int socket_of(const std::string& remote_addr, int remote_port);

  std::size_t open() const;
  std::size_t closed_by_deadline() const;

 private:
  struct Entry {
    std::string peer;  // "addr:port"
    std::chrono::steady_clock::time_point accepted;
    bool request_seen = false;
    bool shut = false;
  };
  int find_new_socket();  // under mutex_
  void watch();

  const int port_;
  const ConnectionLimits limits_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int, Entry> entries_;  // by socket
  std::size_t running_ = 0;       // connection threads alive
  std::size_t deadline_closes_ = 0;
  bool stopping_ = false;
  std::thread watchdog_;
};

// True when the peer of `socket` has closed its side (or the socket failed): a read would give
// end of file. Bytes waiting to be read (a pipelined request) count as the client being there.
bool peer_closed(int socket);

}  // namespace ls::server
