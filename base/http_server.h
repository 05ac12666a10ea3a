// HttpServer: a small HTTP/1.x server for one resource (the daemons' Prometheus /metrics), on one
// thread running an epoll loop over non-blocking sockets.
//
// It answers GET and HEAD of the resource's path (a query string is ignored) with 200 and the
// resource's body, other paths with 404, other methods with 405, a request it cannot parse with
// 400 and a request head (request line and headers) over kMaxRequestHeadBytes with 431. Every
// response carries Content-Length and "Connection: close": the server closes each connection
// after one response (Prometheus and curl open a new one per scrape). A request's body, if any,
// is read and dropped.
//
// Connections cost an fd and their buffers (the request head so far, at most
// kMaxRequestHeadBytes; the response while it is sent), never a thread, so idle or slow ones
// cannot lock a scrape out:
//   - a connection has request_timeout from its accept to send its whole request head, then
//     request_timeout to take the whole response, then request_timeout to close its end once the
//     server has closed its own (the server reads and drops what it still sends, so that the
//     response is not lost to a reset); past any of these it is closed;
//   - at most max_connections are open (and at most half of RLIMIT_NOFILE's soft limit). A new
//     connection past that closes an open one first: the idle one (waiting for its request, or
//     for the client to close) nearest its deadline, which is the oldest; only when every open
//     connection is being answered, the one of those nearest its deadline. When accept() fails
//     for want of descriptors (EMFILE, ENFILE) or memory while a connection waits, the server
//     closes an open one the same way and accepts it; with none open (or on any other error)
//     it stops accepting for 100 ms, and so never spins.
// The resource's body is made on the server's thread, once per GET or HEAD.
//
// Thread-safety: Start() and the destructor from any thread; port() is safe from any thread. The
// body callback runs on the server's thread only.

#ifndef BENCHFARM_BASE_HTTP_SERVER_H_
#define BENCHFARM_BASE_HTTP_SERVER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace benchfarm::base {

// The longest request head (request line and headers, the blank line included) a server reads.
inline constexpr size_t kMaxRequestHeadBytes = 8 * 1024;

struct HttpServerOptions {
  // How long a connection may take to send its whole request head; then again to take the whole
  // response; then again to close its end. Past any, the server closes it.
  absl::Duration request_timeout = absl::Seconds(5);
  // Open connections at most (never more than half of RLIMIT_NOFILE's soft limit, nor fewer
  // than 1). A new one past it closes the oldest idle one.
  int max_connections = 1024;
};

// What the server serves: GET/HEAD of `path` answer 200 with `content_type` and `body()`.
struct HttpResource {
  std::string path;  // e.g. "/metrics"
  std::string content_type;
  std::function<std::string()> body;
};

class HttpServer {
 public:
  // Listens on address (ListenTcp in tcp_listen.h: "HOST:PORT" or "[IPv6]:PORT", every
  // address HOST resolves to; port 0 picks one) and starts the server's thread. Errors, "cannot
  // listen on ADDRESS: why": InvalidArgument when address is not of that form; Unavailable when it
  // cannot be resolved or bound (e.g. in use); Internal when epoll or eventfd cannot be set up.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const std::string& address,
                                                           HttpResource resource,
                                                           HttpServerOptions options = {});

  // Closes the listener and every connection (a response being sent is cut off) and joins the
  // server's thread.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The port listened on (the one picked, after port 0).
  int port() const;

 private:
  class Loop;

  explicit HttpServer(std::unique_ptr<Loop> loop);

  const std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_HTTP_SERVER_H_
