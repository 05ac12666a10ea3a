// SerialTransport: a Transport over a real serial port (a USB-serial adapter, a board's CDC-ACM
// port, a native UART) through libserialport; plus enumeration of the machine's serial ports with
// their USB identity, so a board can be found by its USB serial number.
//
// libserialport opens and configures the port (sp_open, sp_set_config); the reads and writes
// then go through FdTransport on the port's descriptor (sp_get_port_handle), so that serial
// ports, ptys and pipes share one deadline/error core and Close() can wake a blocked Read. A
// vanished port (USB unplugged) shows up there as EIO/ENXIO or a hang-up: Unavailable naming the
// port. Close() then Open() again once it is back; Open() re-resolves the path each time, so a
// /dev/serial/by-id/ link follows the device to its new ttyACMn.
//
// Pseudo-terminals: Debian's libserialport 0.1.1 cannot open them (it looks the port up in
// sysfs, and needs modem-line ioctls a pty lacks); Open() on a pty fails with InvalidArgument
// saying so. Use PtyTransport for ptys.
//
// Errors (names are "serial:<port as configured>@<baud>"):
//   Open()  InvalidArgument    the config is invalid (ValidateSerialConfig), the path is a
//                              pseudo-terminal, or libserialport rejects the port or a setting
//                              (SP_ERR_ARG, SP_ERR_SUPP).
//           NotFound           the path does not exist; for a symlink (e.g. /dev/serial/by-id/...)
//                              whose device is missing, the message names the link and its target.
//           PermissionDenied   EACCES/EPERM (e.g. not in the dialout group).
//           Unavailable        ENXIO/ENODEV/EIO/EBUSY: the device vanished or is held by someone.
//           Internal           any other OS or library error, with libserialport's message.
//   Read/Write                 as FdTransport.
//
// Thread-safety: as Transport (one reader plus one writer); Close() may come from any thread.
// Open() must not race with Read/Write or Close(). The free functions are thread-safe.

#ifndef BENCHFARM_DEVICE_SERIAL_TRANSPORT_H_
#define BENCHFARM_DEVICE_SERIAL_TRANSPORT_H_

#include <libserialport.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "base/os_error.h"
#include "device/fd_transport.h"
#include "device/transport.h"

namespace benchfarm::device {

enum class Parity { kNone, kOdd, kEven };
enum class FlowControl { kNone, kXonXoff, kRtsCts };

struct SerialConfig {
  // A device path ("/dev/ttyACM0") or a symlink to one ("/dev/serial/by-id/usb-...").
  std::string port;
  int baud = 115200;
  int data_bits = 8;
  Parity parity = Parity::kNone;
  int stop_bits = 1;
  FlowControl flow_control = FlowControl::kNone;
};

// Largest baud rate ValidateSerialConfig accepts (fast USB-serial bridges reach 12 Mbaud).
inline constexpr int kMaxSerialBaud = 12'000'000;

// OK, or InvalidArgument naming the first bad field: empty port; baud outside 1..kMaxSerialBaud;
// data_bits outside 5..8; stop_bits not 1 or 2; parity or flow_control not an enumerator.
// Whether the hardware supports the rate is only known at Open().
absl::Status ValidateSerialConfig(const SerialConfig& config);

// libserialport's value for a parity / flow control setting; InvalidArgument for a value that is
// not an enumerator (e.g. cast from a bad integer).
absl::StatusOr<sp_parity> ToSpParity(Parity parity);
absl::StatusOr<sp_flowcontrol> ToSpFlowControl(FlowControl flow_control);

// Resolves symlinks in `port` (realpath). NotFound if it does not exist — for a dangling symlink
// the message names the link and its target; other errors as OpenErrorToStatus.
absl::StatusOr<std::string> ResolvePortPath(absl::string_view port);

// True if `path` is a pseudo-terminal device (Unix98 /dev/pts/N, /dev/ptmx, or a BSD-style pty).
bool IsPseudoTerminal(absl::string_view path);

enum class SerialPortKind { kUnknown, kNative, kUsb, kBluetooth };

// "native", "usb", "bluetooth", "unknown".
absl::string_view SerialPortKindName(SerialPortKind kind);

struct SerialPortInfo {
  std::string path;         // e.g. "/dev/ttyACM0"
  std::string description;  // libserialport's, e.g. "STM32 STLink - ST-Link VCP Data"
  SerialPortKind kind = SerialPortKind::kUnknown;
  // USB identity; -1 / empty unless kind is kUsb (and the device reports it).
  int usb_vid = -1;
  int usb_pid = -1;
  int usb_bus = -1;
  int usb_address = -1;
  std::string usb_serial;
  std::string usb_manufacturer;
  std::string usb_product;
};

// The machine's serial ports, sorted by path (possibly none). Internal if enumeration fails.
absl::StatusOr<std::vector<SerialPortInfo>> ListSerialPorts();

// The path of the one port in `ports` whose USB serial number is `serial`. InvalidArgument if
// `serial` is empty; NotFound if no port has it; FailedPrecondition if several do (a composite
// device with several serial interfaces: pick one by path).
absl::StatusOr<std::string> FindPortBySerialNumberIn(absl::Span<const SerialPortInfo> ports,
                                                     absl::string_view serial);

// FindPortBySerialNumberIn(ListSerialPorts(), serial), with ListSerialPorts' errors.
absl::StatusOr<std::string> FindPortBySerialNumber(absl::string_view serial);

class SerialTransport final : public Transport {
 public:
  // Does not open anything yet (and does not validate: Open() does).
  explicit SerialTransport(SerialConfig config);

  // Closes.
  ~SerialTransport() override;

  SerialTransport(const SerialTransport&) = delete;
  SerialTransport& operator=(const SerialTransport&) = delete;

  // Validates the config, resolves the path, opens and configures the port. OK and no-op when
  // already open. Errors: see above.
  absl::Status Open() override;
  // Wakes pending reads/writes, then sp_close()s. Idempotent.
  void Close() override;
  absl::Status Write(absl::string_view data, absl::Time deadline) override {
    return io_.Write(data, deadline);
  }
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> out, absl::Time deadline) override {
    return io_.Read(out, deadline);
  }
  // "serial:<port>@<baud>".
  std::string Name() const override { return io_.Name(); }

  const SerialConfig& config() const { return config_; }

 private:
  const SerialConfig config_;
  FdTransport io_;
  absl::Mutex port_mu_;
  sp_port* port_ ABSL_GUARDED_BY(port_mu_) = nullptr;
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_SERIAL_TRANSPORT_H_
