// BoardLink: one connected board for a command-line tool — the transport (a real serial port, a
// pseudo-terminal, or a host-process board started for the purpose), the host session on it and
// the RPC client, opened and handshaken in one call.
//
// Thread-safety: none.

#ifndef BENCHFARM_FARMCTL_BOARD_LINK_H_
#define BENCHFARM_FARMCTL_BOARD_LINK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "device/host_session.h"
#include "device/rpc_client.h"
#include "device/transport.h"

namespace benchfarm::farmctl {

struct BoardLinkOptions {
  // Exactly one of `port` and `host_process` selects the board.
  std::string port;          // a serial port (/dev/ttyACM0, /dev/serial/by-id/...) or a pty path
  int baud = 115200;         // for serial ports
  bool host_process = false;  // start //crt/host:board as a child process
  bool host_process_pty = false;  // ...and reach it through its pseudo-terminal
  std::string board_binary;  // the host-process board executable
  absl::Duration connect_timeout = absl::Seconds(10);
};

class BoardLink {
 public:
  // Opens the transport and runs the session handshake. Errors: InvalidArgument for options
  // naming no board or two; the transport's and the handshake's errors.
  static absl::StatusOr<std::unique_ptr<BoardLink>> Open(const BoardLinkOptions& options);
  ~BoardLink();

  device::RpcClient& rpc() { return *rpc_; }
  device::HostSession& session() { return *session_; }
  const std::string& name() const { return name_; }

 private:
  BoardLink() = default;

  std::unique_ptr<device::Transport> process_;  // the host-process board, if started here
  std::unique_ptr<device::Transport> link_;     // what the session talks over
  std::unique_ptr<device::HostSession> session_;
  std::unique_ptr<device::RpcClient> rpc_;
  std::string name_;
};

}  // namespace benchfarm::farmctl

#endif  // BENCHFARM_FARMCTL_BOARD_LINK_H_
