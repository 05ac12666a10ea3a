// PtyTransport: open + termios set-up; all I/O is FdTransport's.

#include "device/pty_transport.h"

#include <errno.h>
#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/os_error.h"
#include "base/status_macros.h"

namespace benchfarm::device {
namespace {

// The speeds Linux termios can set by constant (termios2/BOTHER arbitrary rates are not used:
// a pty ignores the speed, and real ports go through SerialTransport).
std::optional<speed_t> TermiosSpeed(int baud) {
  static constexpr struct {
    int baud;
    speed_t speed;
  } kSpeeds[] = {
      {50, B50},           {75, B75},           {110, B110},         {134, B134},
      {150, B150},         {200, B200},         {300, B300},         {600, B600},
      {1200, B1200},       {1800, B1800},       {2400, B2400},       {4800, B4800},
      {9600, B9600},       {19200, B19200},     {38400, B38400},     {57600, B57600},
      {115200, B115200},   {230400, B230400},   {460800, B460800},   {500000, B500000},
      {576000, B576000},   {921600, B921600},   {1000000, B1000000}, {1152000, B1152000},
      {1500000, B1500000}, {2000000, B2000000}, {2500000, B2500000}, {3000000, B3000000},
      {3500000, B3500000}, {4000000, B4000000},
  };
  for (const auto& s : kSpeeds) {
    if (s.baud == baud) return s.speed;
  }
  return std::nullopt;
}

}  // namespace

PtyTransport::PtyTransport(std::string path, PtyOptions options)
    : path_(std::move(path)), options_(options), io_(absl::StrCat("pty:", path_)) {}

absl::Status PtyTransport::Open() {
  if (io_.is_open()) return absl::OkStatus();
  const std::string name = Name();
  std::optional<speed_t> speed;
  if (options_.baud != 0) {
    speed = TermiosSpeed(options_.baud);
    if (!speed) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": baud ", options_.baud, " is not a termios speed"));
    }
  }
  int fd;
  do {
    fd = open(path_.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return base::OpenErrorToStatus(errno, absl::StrCat(name, ": open"));

  auto fail = [&](absl::string_view what) {
    const int err = errno;
    close(fd);
    if (err == ENOTTY) {
      return absl::InternalError(absl::StrCat(name, ": ", what, ": not a terminal"));
    }
    return base::OpenErrorToStatus(err, absl::StrCat(name, ": ", what));
  };
  struct termios tio;
  if (tcgetattr(fd, &tio) != 0) return fail("tcgetattr");
  cfmakeraw(&tio);
  // Reads never block in the kernel (O_NONBLOCK + ppoll), so VMIN/VTIME only need to ask for "as
  // soon as one byte is there".
  tio.c_cc[VMIN] = 1;
  tio.c_cc[VTIME] = 0;
  tio.c_cflag |= CREAD | CLOCAL;
  if (speed && (cfsetispeed(&tio, *speed) != 0 || cfsetospeed(&tio, *speed) != 0)) {
    return fail("cfsetspeed");
  }
  if (tcsetattr(fd, TCSANOW, &tio) != 0) return fail("tcsetattr");
  return io_.Attach(fd, fd, FdTransport::Ownership::kOwned);
}

}  // namespace benchfarm::device
