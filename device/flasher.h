// Flasher: puts a firmware image on a board, so that the board runs it — one interface for every
// way benchfarm does that:
//   HostProcessFlasher  the "board" is a Linux process: flashing (re)starts the image as a child.
//   CommandFlasher      a configured tool (OpenOCD, pyOCD, esptool, a script) writes the image to a
//                       real board; the command line is data, not code.
//   FakeFlasher         (device/testing/) records what it was asked to flash.
// The agent's worker calls Flash() at most once per trial, and skips it when the board already
// reports the image's content hash (benchfarm.DeviceInfo.firmware_hash).
//
// Errors every implementation uses the same way (messages start with Name()):
//   NotFound            the image file does not exist.
//   DeadlineExceeded    flashing did not finish by the deadline (or the flasher's own time limit);
//                       any process the flasher started for it has been killed.
//   FailedPrecondition  the flasher cannot flash as configured (tool missing, the image is not
//                       something this flasher can run), or, for a fake, a scripted failure.
//   PermissionDenied    the image (or tool) exists but may not be read or executed.
//   Unknown             the flash tool ran and reported failure (non-zero exit, killed by a
//   signal),
//                       or the board process ended while it was being started; the message carries
//                       how it ended and the tail of its output.
//   InvalidArgument     the flasher's configuration is unusable (e.g. an empty command line).
//   Internal            an OS error the flasher could not attribute to the image or the tool.
// Implementations may document more. After any error, the board's state is unknown: flash again
// before trusting it.
//
// Thread-safety: Name() may be called from any thread at any time. Flash() calls on one flasher
// must not overlap unless the implementation says otherwise (all in benchfarm serialize them).

#ifndef BENCHFARM_DEVICE_FLASHER_H_
#define BENCHFARM_DEVICE_FLASHER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace benchfarm::device {

// A built firmware image on the local disk.
struct FirmwareImage {
  // Where the image file is: an executable for the host-process board, an ELF/hex/bin for a tool.
  std::string path;
  // The firmware id the board reports (DeviceInfo.firmware_hash), 16 lowercase hex digits: see
  // FirmwareImageFromFile.
  // May be empty when unknown; flashers that need it compute it.
  std::string content_hash;
};

// A FirmwareImage for the file at `path` with its identity: the 16 hex digits in `path`.hash when
// that file exists — a cross-compiled firmware cannot hash its own image, so its build embeds an
// id of everything that made it and writes it there (crt/boards/build.sh) — else the file's
// content hash, which is what the host-process board reports for itself. Errors: as HashFile().
absl::StatusOr<FirmwareImage> FirmwareImageFromFile(const std::string& path);

class Flasher {
 public:
  virtual ~Flasher() = default;

  // Puts `image` on the board; when it returns OK, the board runs that image (booting; the link
  // may still have to be opened or connected). Returns by `deadline` at the latest, give or take
  // the few hundred milliseconds a killed flash process may take to go away. Errors: see above.
  virtual absl::Status Flash(const FirmwareImage& image, absl::Time deadline) = 0;

  // For logs and errors, e.g. "host-process", "command:openocd".
  virtual std::string Name() const = 0;
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_FLASHER_H_
