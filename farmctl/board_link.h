// OpenBoard: the one board a `farmctl board ...` command talks to, described by flags and brought
// up through device::Board (the same unit the agent uses): a serial port or pty, a host-process
// board started for the purpose, or an emulated microcontroller (QEMU) started with an image.
//
// Thread-safety: none.

#ifndef BENCHFARM_FARMCTL_BOARD_LINK_H_
#define BENCHFARM_FARMCTL_BOARD_LINK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "device/board.h"
#include "proto/config.pb.h"

namespace benchfarm::farmctl {

struct BoardLinkOptions {
  // Exactly one of `port`, `host_process` and `qemu_machine` selects the board.
  std::string port;               // a serial port (/dev/ttyACM0, /dev/serial/by-id/...) or a pty
  int baud = 115200;              // for serial ports
  bool host_process = false;      // start //crt/host:board as a child process
  bool host_process_pty = false;  // ...and reach it through its pseudo-terminal
  std::string board_binary;       // the host-process board executable
  std::string qemu_machine;       // start qemu-system-arm -M this with `image`
  // ...timed by "cycles" (the cycle model; the default when empty), "instructions" (-icount) or
  // "host" (host time): QemuMachine.timing.
  std::string qemu_timing;
  std::string cycle_model_plugin;  // ...its plugin, for "cycles" (device::BoardOptions)
  std::string image;               // the firmware for a QEMU board (an ELF: ./farm firmware)
  absl::Duration connect_timeout = absl::Seconds(10);
};

// The BoardConfig the options describe. InvalidArgument for options naming no board or two, a
// QEMU board without an image, or an unknown qemu_timing.
absl::StatusOr<v1::BoardConfig> BoardConfigFromOptions(const BoardLinkOptions& options);

// The board, started if it must be (host process, QEMU), connected and handshaken. Errors:
// InvalidArgument as above; Unavailable for a board that cannot be flashed or reached, with why.
absl::StatusOr<std::unique_ptr<device::Board>> OpenBoard(const BoardLinkOptions& options);

}  // namespace benchfarm::farmctl

#endif  // BENCHFARM_FARMCTL_BOARD_LINK_H_
