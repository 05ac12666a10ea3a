// OpenBoard: see board_link.h.
#include "farmctl/board_link.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "device/flasher.h"

namespace benchfarm::farmctl {

absl::StatusOr<v1::BoardConfig> BoardConfigFromOptions(const BoardLinkOptions& options) {
  const int chosen = !options.port.empty() + options.host_process + !options.qemu_machine.empty();
  if (chosen != 1) {
    return absl::InvalidArgumentError(
        "name one board: --port PATH, --host-process or --qemu MACHINE --image FIRMWARE.elf");
  }
  v1::BoardConfig config;
  config.set_id("board");
  if (options.host_process) {
    if (options.board_binary.empty()) {
      return absl::InvalidArgumentError("--board_binary: the host-process board's path is unknown");
    }
    config.set_kind("host-process");
    config.mutable_host_process()->set_use_pty(options.host_process_pty);
  } else if (!options.qemu_machine.empty()) {
    if (options.image.empty()) {
      return absl::InvalidArgumentError(
          "--image: a QEMU board needs its firmware (build one with ./farm firmware KIND DIR)");
    }
    config.set_kind(absl::StrCat("qemu-", options.qemu_machine));
    config.mutable_serial();
    config.mutable_qemu()->set_machine(options.qemu_machine);
    v1::QemuMachine::Timing timing = v1::QemuMachine::CYCLES;
    if (!options.qemu_timing.empty() &&
        !v1::QemuMachine::Timing_Parse(absl::AsciiStrToUpper(options.qemu_timing), &timing)) {
      return absl::InvalidArgumentError(absl::StrCat("--timing: \"", options.qemu_timing,
                                                     "\" is not cycles, instructions or host"));
    }
    if (timing == v1::QemuMachine::TIMING_UNSPECIFIED) timing = v1::QemuMachine::CYCLES;
    config.mutable_qemu()->set_timing(timing);
  } else {
    config.set_kind("serial");
    config.mutable_serial()->set_port(options.port);
    config.mutable_serial()->set_baud(options.baud);
  }
  return config;
}

absl::StatusOr<std::unique_ptr<device::Board>> OpenBoard(const BoardLinkOptions& options) {
  absl::StatusOr<v1::BoardConfig> config = BoardConfigFromOptions(options);
  if (!config.ok()) return config.status();
  device::BoardOptions bo;
  bo.config = *std::move(config);
  bo.connect_timeout = options.connect_timeout;
  bo.cycle_model_plugin = options.cycle_model_plugin;
  absl::StatusOr<std::unique_ptr<device::Board>> board = device::Board::Create(std::move(bo));
  if (!board.ok()) return board.status();
  const absl::Time deadline = absl::Now() + options.connect_timeout;
  std::optional<device::BoardFailure> failure;
  if ((*board)->can_flash()) {
    const std::string image = options.host_process ? options.board_binary : options.image;
    absl::StatusOr<device::FirmwareImage> fw = device::FirmwareImageFromFile(image);
    if (!fw.ok()) return fw.status();
    failure = (*board)->EnsureImage(*fw, deadline).failure;
  } else {
    failure = (*board)->Connect(deadline);
  }
  if (failure) {
    return absl::UnavailableError(absl::StrCat((*board)->Description(), ": ", failure->message));
  }
  return board;
}

}  // namespace benchfarm::farmctl
