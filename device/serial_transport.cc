// SerialTransport and serial port enumeration: libserialport for opening, configuring and
// enumerating; FdTransport for the bytes.
//
// libserialport reports errors as sp_return codes; only SP_ERR_FAIL carries an OS error, which
// must be fetched (sp_last_error_code is errno) before anything else can change errno. The
// library also rejects some inputs with SP_ERR_ARG and no message (a path it does not know as a
// serial port, such as a pty or a missing file), so existence and pty-ness are checked here to
// give those failures a useful message.

#include "device/serial_transport.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/os_error.h"
#include "base/status_macros.h"

namespace benchfarm::device {
namespace {

// Linux device majors of pseudo-terminals (Documentation/admin-guide/devices.txt).
constexpr unsigned kBsdPtyMasterMajor = 2;
constexpr unsigned kBsdPtySlaveMajor = 3;
constexpr unsigned kTtyAuxMajor = 5;  // minor 2 is /dev/ptmx
constexpr unsigned kPtmxMinor = 2;
constexpr unsigned kUnix98PtySlaveMajorFirst = 136;
constexpr unsigned kUnix98PtySlaveMajorLast = 143;

std::string OrEmpty(const char* s) { return s != nullptr ? std::string(s) : std::string(); }

// The status for a failed libserialport call `call` on `path`, for the transport called `name`.
// Must run right after the failing call (it reads errno through sp_last_error_code).
absl::Status LibraryError(sp_return r, absl::string_view name, absl::string_view call,
                          absl::string_view path) {
  int code = 0;
  std::string what;
  switch (r) {
    case SP_ERR_FAIL: {
      code = sp_last_error_code();
      char* message = sp_last_error_message();
      what = message != nullptr ? std::string(message) : base::ErrnoText(code);
      sp_free_error_message(message);
      break;
    }
    case SP_ERR_ARG:
      what = "invalid argument (SP_ERR_ARG)";
      break;
    case SP_ERR_SUPP:
      what = "not supported by this port or platform (SP_ERR_SUPP)";
      break;
    case SP_ERR_MEM:
      what = "out of memory (SP_ERR_MEM)";
      break;
    default:
      what = absl::StrCat("libserialport error ", static_cast<int>(r));
      break;
  }
  if (IsPseudoTerminal(path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": ", path, " is a pseudo-terminal, which Debian's libserialport 0.1.1 cannot open (",
        call, " failed: ", what, "); use PtyTransport for ptys"));
  }
  const std::string message = absl::StrCat(name, ": ", call, "(", path, "): ", what);
  switch (r) {
    case SP_ERR_FAIL:
      switch (code) {
        case ENOENT:
        case ENOTDIR:
          return absl::NotFoundError(message);
        case EACCES:
        case EPERM:
        case EROFS:
          return absl::PermissionDeniedError(message);
        case ENXIO:
        case ENODEV:
        case EIO:
        case EBUSY:
          return absl::UnavailableError(message);
        default:
          return absl::InternalError(message);
      }
    case SP_ERR_ARG:
    case SP_ERR_SUPP:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

// Applies `config` (already validated) to the open `port`.
absl::Status Configure(sp_port* port, const SerialConfig& config, absl::string_view name,
                       absl::string_view path) {
  ASSIGN_OR_RETURN(const sp_parity parity, ToSpParity(config.parity));
  ASSIGN_OR_RETURN(const sp_flowcontrol flow, ToSpFlowControl(config.flow_control));
  sp_port_config* sp_config = nullptr;
  sp_return r = sp_new_config(&sp_config);
  if (r != SP_OK) return LibraryError(r, name, "sp_new_config", path);
  struct Step {
    const char* call;
    sp_return result;
  };
  // sp_new_config leaves every field "unchanged"; each setter fills one in. Flow control goes
  // last: it sets the RTS/CTS/DTR/DSR/XON-XOFF fields together.
  const Step steps[] = {
      {"sp_set_config_baudrate", sp_set_config_baudrate(sp_config, config.baud)},
      {"sp_set_config_bits", sp_set_config_bits(sp_config, config.data_bits)},
      {"sp_set_config_parity", sp_set_config_parity(sp_config, parity)},
      {"sp_set_config_stopbits", sp_set_config_stopbits(sp_config, config.stop_bits)},
      {"sp_set_config_flowcontrol", sp_set_config_flowcontrol(sp_config, flow)},
  };
  absl::Status status;
  for (const Step& step : steps) {
    if (step.result != SP_OK) {
      status = LibraryError(step.result, name, step.call, path);
      break;
    }
  }
  if (status.ok()) {
    r = sp_set_config(port, sp_config);
    if (r != SP_OK) status = LibraryError(r, name, "sp_set_config", path);
  }
  sp_free_config(sp_config);
  return status;
}

SerialPortKind KindOf(sp_transport transport) {
  switch (transport) {
    case SP_TRANSPORT_NATIVE:
      return SerialPortKind::kNative;
    case SP_TRANSPORT_USB:
      return SerialPortKind::kUsb;
    case SP_TRANSPORT_BLUETOOTH:
      return SerialPortKind::kBluetooth;
  }
  return SerialPortKind::kUnknown;
}

}  // namespace

absl::StatusOr<sp_parity> ToSpParity(Parity parity) {
  switch (parity) {
    case Parity::kNone:
      return SP_PARITY_NONE;
    case Parity::kOdd:
      return SP_PARITY_ODD;
    case Parity::kEven:
      return SP_PARITY_EVEN;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("SerialConfig.parity = ", static_cast<int>(parity), ": not a Parity"));
}

absl::StatusOr<sp_flowcontrol> ToSpFlowControl(FlowControl flow_control) {
  switch (flow_control) {
    case FlowControl::kNone:
      return SP_FLOWCONTROL_NONE;
    case FlowControl::kXonXoff:
      return SP_FLOWCONTROL_XONXOFF;
    case FlowControl::kRtsCts:
      return SP_FLOWCONTROL_RTSCTS;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "SerialConfig.flow_control = ", static_cast<int>(flow_control), ": not a FlowControl"));
}

absl::Status ValidateSerialConfig(const SerialConfig& config) {
  if (config.port.empty()) return absl::InvalidArgumentError("SerialConfig.port is empty");
  if (config.baud < 1 || config.baud > kMaxSerialBaud) {
    return absl::InvalidArgumentError(
        absl::StrCat("SerialConfig.baud = ", config.baud, ": must be in 1..", kMaxSerialBaud));
  }
  if (config.data_bits < 5 || config.data_bits > 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("SerialConfig.data_bits = ", config.data_bits, ": must be in 5..8"));
  }
  if (config.stop_bits != 1 && config.stop_bits != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("SerialConfig.stop_bits = ", config.stop_bits, ": must be 1 or 2"));
  }
  RETURN_IF_ERROR(ToSpParity(config.parity));
  RETURN_IF_ERROR(ToSpFlowControl(config.flow_control));
  return absl::OkStatus();
}

absl::StatusOr<std::string> ResolvePortPath(absl::string_view port) {
  const std::string path(port);
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) != nullptr) return std::string(resolved);
  const int err = errno;
  if (err == ENOENT || err == ENOTDIR) {
    struct stat st;
    if (lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
      std::string to = n >= 0 ? std::string(target, static_cast<size_t>(n)) : "?";
      return absl::NotFoundError(absl::StrCat(path, " is a symlink to ", to,
                                              ", which does not exist (device unplugged?)"));
    }
    return absl::NotFoundError(absl::StrCat(path, ": no such device"));
  }
  return base::OpenErrorToStatus(err, absl::StrCat("realpath(", path, ")"));
}

bool IsPseudoTerminal(absl::string_view path) {
  if (absl::StartsWith(path, "/dev/pts/")) return true;
  struct stat st;
  if (stat(std::string(path).c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) return false;
  const unsigned maj = major(st.st_rdev);
  const unsigned min = minor(st.st_rdev);
  return (maj >= kUnix98PtySlaveMajorFirst && maj <= kUnix98PtySlaveMajorLast) ||
         maj == kBsdPtyMasterMajor || maj == kBsdPtySlaveMajor ||
         (maj == kTtyAuxMajor && min == kPtmxMinor);
}

absl::string_view SerialPortKindName(SerialPortKind kind) {
  switch (kind) {
    case SerialPortKind::kNative:
      return "native";
    case SerialPortKind::kUsb:
      return "usb";
    case SerialPortKind::kBluetooth:
      return "bluetooth";
    case SerialPortKind::kUnknown:
      break;
  }
  return "unknown";
}

absl::StatusOr<std::vector<SerialPortInfo>> ListSerialPorts() {
  sp_port** list = nullptr;
  sp_return r = sp_list_ports(&list);
  if (r != SP_OK) return LibraryError(r, "serial ports", "sp_list_ports", "/sys/class/tty");
  std::vector<SerialPortInfo> ports;
  for (sp_port** p = list; *p != nullptr; ++p) {
    SerialPortInfo info;
    info.path = OrEmpty(sp_get_port_name(*p));
    info.description = OrEmpty(sp_get_port_description(*p));
    info.kind = KindOf(sp_get_port_transport(*p));
    if (info.kind == SerialPortKind::kUsb) {
      int vid = -1, pid = -1, bus = -1, address = -1;
      if (sp_get_port_usb_vid_pid(*p, &vid, &pid) == SP_OK) {
        info.usb_vid = vid;
        info.usb_pid = pid;
      }
      if (sp_get_port_usb_bus_address(*p, &bus, &address) == SP_OK) {
        info.usb_bus = bus;
        info.usb_address = address;
      }
      info.usb_serial = OrEmpty(sp_get_port_usb_serial(*p));
      info.usb_manufacturer = OrEmpty(sp_get_port_usb_manufacturer(*p));
      info.usb_product = OrEmpty(sp_get_port_usb_product(*p));
    }
    ports.push_back(std::move(info));
  }
  sp_free_port_list(list);
  std::sort(ports.begin(), ports.end(),
            [](const SerialPortInfo& a, const SerialPortInfo& b) { return a.path < b.path; });
  return ports;
}

absl::StatusOr<std::string> FindPortBySerialNumberIn(absl::Span<const SerialPortInfo> ports,
                                                     absl::string_view serial) {
  if (serial.empty()) return absl::InvalidArgumentError("empty USB serial number");
  std::vector<std::string> matches;
  for (const SerialPortInfo& port : ports) {
    if (port.kind == SerialPortKind::kUsb && port.usb_serial == serial) {
      matches.push_back(port.path);
    }
  }
  if (matches.empty()) {
    return absl::NotFoundError(absl::StrCat("no serial port has USB serial number \"", serial,
                                            "\" (", ports.size(), " port",
                                            ports.size() == 1 ? "" : "s", " present)"));
  }
  if (matches.size() > 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("USB serial number \"", serial, "\" matches several ports (",
                     absl::StrJoin(matches, ", "), "); configure one by path"));
  }
  return matches.front();
}

absl::StatusOr<std::string> FindPortBySerialNumber(absl::string_view serial) {
  ASSIGN_OR_RETURN(const std::vector<SerialPortInfo> ports, ListSerialPorts());
  return FindPortBySerialNumberIn(ports, serial);
}

SerialTransport::SerialTransport(SerialConfig config)
    : config_(std::move(config)), io_(absl::StrCat("serial:", config_.port, "@", config_.baud)) {}

SerialTransport::~SerialTransport() { Close(); }

absl::Status SerialTransport::Open() {
  if (io_.is_open()) return absl::OkStatus();
  const std::string name = Name();
  absl::Status valid = ValidateSerialConfig(config_);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", valid.message()));
  }
  absl::StatusOr<std::string> resolved = ResolvePortPath(config_.port);
  if (!resolved.ok()) {
    return absl::Status(resolved.status().code(),
                        absl::StrCat(name, ": ", resolved.status().message()));
  }
  const std::string& path = *resolved;

  sp_port* port = nullptr;
  sp_return r = sp_get_port_by_name(path.c_str(), &port);
  if (r != SP_OK) return LibraryError(r, name, "sp_get_port_by_name", path);
  r = sp_open(port, SP_MODE_READ_WRITE);
  if (r != SP_OK) {
    absl::Status status = LibraryError(r, name, "sp_open", path);
    sp_free_port(port);
    return status;
  }
  absl::Status status = Configure(port, config_, name, path);
  int fd = -1;
  if (status.ok()) {
    r = sp_get_port_handle(port, &fd);
    if (r != SP_OK) status = LibraryError(r, name, "sp_get_port_handle", path);
  }
  // Borrowed: sp_close() closes the descriptor.
  if (status.ok()) status = io_.Attach(fd, fd, FdTransport::Ownership::kBorrowed);
  if (!status.ok()) {
    sp_close(port);
    sp_free_port(port);
    return status;
  }
  absl::MutexLock lock(&port_mu_);
  port_ = port;
  return absl::OkStatus();
}

void SerialTransport::Close() {
  // FdTransport::Close waits for pending reads/writes to leave ppoll() before the descriptor is
  // closed by sp_close().
  io_.Close();
  absl::MutexLock lock(&port_mu_);
  if (port_ == nullptr) return;
  sp_close(port_);
  sp_free_port(port_);
  port_ = nullptr;
}

}  // namespace benchfarm::device
