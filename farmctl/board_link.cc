// BoardLink: see board_link.h.
#include "farmctl/board_link.h"

#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "device/pipe_transport.h"
#include "device/pty_transport.h"
#include "device/serial_transport.h"
#include "device/status_macros.h"

namespace benchfarm::farmctl {
namespace {

// Reads the host-process board's first stdout line, "pty: <path>".
absl::StatusOr<std::string> ReadPtyPath(device::Transport* process, absl::Time deadline) {
  std::string line;
  while (line.empty() || line.back() != '\n') {
    uint8_t c;
    ASSIGN_OR_RETURN(size_t n, process->Read(absl::MakeSpan(&c, 1), deadline));
    if (n == 1) line.push_back(static_cast<char>(c));
    if (line.size() > 4096) break;
  }
  if (!absl::StartsWith(line, "pty: ")) {
    return absl::InternalError(absl::StrCat("host-process board printed \"", line,
                                            "\" instead of its pty path"));
  }
  return line.substr(5, line.size() - 6);
}

}  // namespace

BoardLink::~BoardLink() {
  rpc_.reset();
  session_.reset();
  if (link_) link_->Close();
  if (process_) process_->Close();
}

absl::StatusOr<std::unique_ptr<BoardLink>> BoardLink::Open(const BoardLinkOptions& options) {
  if (options.host_process == !options.port.empty()) {
    return absl::InvalidArgumentError("name one board: --port PATH or --host-process");
  }
  std::unique_ptr<BoardLink> link(new BoardLink());
  absl::Time deadline = absl::Now() + options.connect_timeout;
  if (options.host_process) {
    if (options.board_binary.empty()) {
      return absl::InvalidArgumentError("--board_binary: the host-process board's path is unknown");
    }
    std::vector<std::string> argv = {options.board_binary};
    if (options.host_process_pty) argv.push_back("--pty");
    auto process = std::make_unique<device::ChildProcessTransport>(argv);
    RETURN_IF_ERROR(process->Open());
    if (options.host_process_pty) {
      ASSIGN_OR_RETURN(std::string pty, ReadPtyPath(process.get(), deadline));
      link->link_ = std::make_unique<device::PtyTransport>(pty);
      link->process_ = std::move(process);
    } else {
      link->link_ = std::move(process);
    }
    link->name_ = options.host_process_pty ? "host-process (pty)" : "host-process";
  } else if (device::IsPseudoTerminal(options.port)) {
    link->link_ = std::make_unique<device::PtyTransport>(options.port);
    link->name_ = options.port;
  } else {
    device::SerialConfig config;
    config.port = options.port;
    config.baud = options.baud;
    link->link_ = std::make_unique<device::SerialTransport>(config);
    link->name_ = options.port;
  }
  RETURN_IF_ERROR(link->link_->Open());
  device::SessionOptions session_options;
  session_options.board_id = link->name_;
  session_options.start_timeout = options.connect_timeout;
  link->session_ = std::make_unique<device::HostSession>(link->link_.get(), session_options);
  RETURN_IF_ERROR(link->session_->Connect(deadline));
  link->rpc_ = std::make_unique<device::RpcClient>(link->session_.get());
  return link;
}

}  // namespace benchfarm::farmctl
