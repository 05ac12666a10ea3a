// PtyTransport: a Transport over a terminal device opened by path — in practice the slave side of
// a pseudo-terminal such as the one `board --pty` serves its link on, but any tty works.
//
// Open() opens the path with O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC and sets the line raw
// (cfmakeraw: no echo, no line editing, no CR/LF translation, 8 data bits), and sets the line
// speed if PtyOptions::baud asks for one. It never flushes what is already waiting, so bytes the
// board sent before Open() (its boot signature) are still read. Read/Write go through FdTransport.
//
// Real serial ports with USB metadata belong to SerialTransport; this class exists because
// Debian's libserialport 0.1.1 cannot open pseudo-terminals.
//
// Errors: as FdTransport for Read/Write (names are "pty:<path>"). Open():
//   NotFound           the path does not exist (ENOENT, ENOTDIR) — e.g. the pty's master closed.
//   PermissionDenied   EACCES, EPERM, EROFS.
//   Unavailable        ENXIO, ENODEV, EIO, EBUSY (device gone, pty locked, or held exclusively).
//   InvalidArgument    PtyOptions::baud is not a speed termios knows (see the list in the .cc).
//   Internal           the path is not a terminal, or any other OS error.
//
// Thread-safety: as Transport (one reader plus one writer), and Close() may come from any thread
// (it wakes pending operations). Open() must not race with Read/Write or Close().

#ifndef BENCHFARM_DEVICE_PTY_TRANSPORT_H_
#define BENCHFARM_DEVICE_PTY_TRANSPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "device/fd_transport.h"
#include "device/transport.h"

namespace benchfarm::device {

struct PtyOptions {
  // Line speed to set, in bits per second; 0 leaves the speed as the device has it (a pty
  // ignores the speed anyway).
  int baud = 0;
};

class PtyTransport final : public Transport {
 public:
  // Does not open anything yet; call Open().
  explicit PtyTransport(std::string path, PtyOptions options = {});

  // Closes.
  ~PtyTransport() override = default;

  PtyTransport(const PtyTransport&) = delete;
  PtyTransport& operator=(const PtyTransport&) = delete;

  // Opens the path (again, after Close()); OK and no-op when already open. Errors: see above.
  absl::Status Open() override;
  void Close() override { io_.Close(); }
  absl::Status Write(absl::string_view data, absl::Time deadline) override {
    return io_.Write(data, deadline);
  }
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> out, absl::Time deadline) override {
    return io_.Read(out, deadline);
  }
  // "pty:<path>".
  std::string Name() const override { return io_.Name(); }

  const std::string& path() const { return path_; }

 private:
  const std::string path_;
  const PtyOptions options_;
  FdTransport io_;
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_PTY_TRANSPORT_H_
