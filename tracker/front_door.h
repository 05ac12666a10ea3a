// FrontDoor: the tracker's own TCP listener, in front of gRPC, so that a client refused at the
// TLS handshake is logged with its address (issue 38 §2).
//
// gRPC 1.51 does not name the peer of a handshake that failed. So the tracker accepts its
// connections itself and hands each to gRPC (ServerBuilder's external connection acceptor;
// gRPC takes the peer from the socket, so calls still see it). When the tracker speaks TLS it
// first looks (MSG_PEEK: nothing is consumed) at the first byte the client sends: a TLS client
// opens with a handshake record (0x16); anything else ("PRI * HTTP/2.0", an HTTP/2 client
// without TLS; "GET / HTTP/1.1") is a plain-text client, reported to on_plain_text with its
// peer and first bytes and closed, never handed to gRPC. A connection that closes before
// sending anything is closed. One that sends nothing within first_bytes_timeout is handed to
// gRPC as it is (gRPC's own handshake deadline applies); so are all connections at once when
// the tracker speaks plain text. TLS failures after the first byte (a client that does not
// trust the tracker's certificate) stay gRPC's to report, without the peer (refusal_log.h).
//
// Waiting connections cost an fd and a poll() slot, never a thread: at most max_waiting wait;
// past that the oldest is handed over unexamined.
//
// Thread-safety: Start() once, from any thread; the destructor stops the loop and joins it.
// on_plain_text runs on the front door's thread.

#ifndef BENCHFARM_TRACKER_FRONT_DOOR_H_
#define BENCHFARM_TRACKER_FRONT_DOOR_H_

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/server_builder.h"

namespace benchfarm::tracker {

struct FrontDoorOptions {
  bool expect_tls = true;  // false: hand every connection over at once
  absl::Duration first_bytes_timeout = absl::Seconds(5);
  int max_waiting = 256;
};

class FrontDoor {
 public:
  // (peer as gRPC names it, e.g. "ipv4:10.0.0.7:51234"; up to 16 first bytes the client sent)
  using PlainTextHandler = std::function<void(const std::string& peer, const std::string& sent)>;

  // Listens on address (base::ListenTcp: "HOST:PORT", "[IPv6]:PORT"; port 0 picks one). Errors
  // "cannot listen on ADDRESS: why".
  static absl::StatusOr<std::unique_ptr<FrontDoor>> Listen(const std::string& address,
                                                           FrontDoorOptions options = {});
  ~FrontDoor();
  FrontDoor(const FrontDoor&) = delete;
  FrontDoor& operator=(const FrontDoor&) = delete;

  int port() const { return port_; }

  // Starts accepting, handing connections to `acceptor` (which must outlive this, and whose
  // server must have started: gRPC closes what it is handed before).
  void Start(grpc::experimental::ExternalConnectionAcceptor* acceptor,
             PlainTextHandler on_plain_text);

 private:
  struct Waiting {
    int fd;
    int listener;
    absl::Time deadline;
  };

  FrontDoor(std::vector<int> listeners, int port, int wake, FrontDoorOptions options);
  void Run();
  void Accept(int listener, absl::Time now);
  // Looks at w's first bytes: false once it is handed over or closed.
  bool Examine(const Waiting& w);
  void HandOver(const Waiting& w);
  // poll()'s timeout: until the nearest deadline or the end of a pause in accepting.
  int WaitMillis(absl::Time now) const;

  const std::vector<int> listeners_;
  const int port_;
  const int wake_;  // eventfd: the destructor's stop
  const FrontDoorOptions options_;
  grpc::experimental::ExternalConnectionAcceptor* acceptor_ = nullptr;
  PlainTextHandler on_plain_text_;
  std::deque<Waiting> waiting_;  // in accept order, so by deadline
  absl::Time accept_paused_until_ = absl::InfinitePast();
  bool accept_failing_ = false;
  std::thread thread_;
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_FRONT_DOOR_H_
