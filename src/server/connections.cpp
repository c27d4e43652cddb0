// Connections (see connections.h). A new socket is found at enqueue time, on the listening
// thread right after accept(): the one socket connected to our port that is not yet known (or
// whose peer differs from the known one: its number was reused).
#include "server/connections.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

namespace ls::server {

namespace {

// "addr:port" of a socket's peer or local end; "" when it has none (not a connected socket).
std::string endpoint(int fd, bool peer, int* port_out = nullptr) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  auto* a = reinterpret_cast<sockaddr*>(&addr);
  if ((peer ? getpeername(fd, a, &len) : getsockname(fd, a, &len)) != 0) return "";
  char text[INET6_ADDRSTRLEN] = {};
  int port = -1;
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    port = ntohs(in->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* in = reinterpret_cast<sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof text);
    port = ntohs(in->sin6_port);
  } else {
    return "";
  }
  if (port_out != nullptr) *port_out = port;
  return fmt::format("{}:{}", text, port);
}

}  // namespace

Connections::Connections(int port, ConnectionLimits limits)
    : port_(port), limits_(limits), watchdog_([this] { watch(); }) {}

Connections::~Connections() {
  shutdown();
}

int Connections::find_new_socket() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd < 3 || fd == dirfd(dir)) continue;
    int local_port = -1;
    if (endpoint(static_cast<int>(fd), false, &local_port).empty() || local_port != port_) continue;
    const std::string peer = endpoint(static_cast<int>(fd), true);
    if (peer.empty()) continue;  // the listening socket
    const auto known = entries_.find(static_cast<int>(fd));
    if (known != entries_.end() && known->second.peer == peer) continue;
    found = static_cast<int>(fd);
    entries_[found] = Entry{peer, std::chrono::steady_clock::now()};
    break;
  }
  closedir(dir);
  return found;
}

void Connections::enqueue(std::function<void()> fn) {
  std::unique_lock lock(mutex_);
  const int fd = find_new_socket();
  if (stopping_ || running_ >= limits_.max_connections) {
    // Too many: httplib's task reads end of file at once and closes the socket.
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR), entries_.erase(fd);
    lock.unlock();
    fn();
    return;
  }
  ++running_;
  const std::string peer = fd >= 0 ? entries_[fd].peer : "";
  std::thread([this, fn = std::move(fn), fd, peer] {
    fn();  // httplib reads requests, runs handlers, closes the socket
    std::lock_guard guard(mutex_);
    const auto e = entries_.find(fd);
    if (e != entries_.end() && e->second.peer == peer) entries_.erase(e);
    --running_;
    changed_.notify_all();
  }).detach();
}

void Connections::shutdown() {
  std::unique_lock lock(mutex_);
  if (stopping_ && !watchdog_.joinable()) return;
  stopping_ = true;
  // Connections waiting for a request are closed now; the others end with their responses.
  for (auto& [fd, e] : entries_)
    if (!e.request_seen && !e.shut) ::shutdown(fd, SHUT_RDWR), e.shut = true;
  changed_.notify_all();
  changed_.wait(lock, [&] { return running_ == 0; });
  lock.unlock();
  if (watchdog_.joinable()) watchdog_.join();
}

void Connections::watch() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    changed_.wait_for(lock, std::chrono::milliseconds(200));
    const auto now = std::chrono::steady_clock::now();
    for (auto& [fd, e] : entries_) {
      if (e.request_seen || e.shut || now - e.accepted < limits_.header_deadline) continue;
      // Still this connection's socket (httplib may have closed it and the number been reused,
      // the moment before its thread forgets the entry)?
      if (endpoint(fd, true) != e.peer) continue;
      ::shutdown(fd, SHUT_RDWR);  // httplib's read ends; it closes the socket
      e.shut = true;
      ++deadline_closes_;
    }
  }
}

void Connections::request_seen(const std::string& remote_addr, int remote_port) {
  const std::string peer = fmt::format("{}:{}", remote_addr, remote_port);
  std::lock_guard lock(mutex_);
  for (auto& [fd, e] : entries_)
    if (e.peer == peer) e.request_seen = true;
}

int Connections::socket_of(const std::string& remote_addr, int remote_port) {
  const std::string peer = fmt::format("{}:{}", remote_addr, remote_port);
  std::lock_guard lock(mutex_);
  for (const auto& [fd, e] : entries_)
    if (e.peer == peer) return fd;
  return -1;
}

std::size_t Connections::open() const {
  std::lock_guard lock(mutex_);
  return running_;
}

std::size_t Connections::closed_by_deadline() const {
  std::lock_guard lock(mutex_);
  return deadline_closes_;
}

bool peer_closed(int socket) {
  char byte = 0;
  const ssize_t n = ::recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;
  if (n == 0) return true;
  return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

}  // namespace ls::server
