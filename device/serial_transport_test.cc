// Tests of SerialTransport and port enumeration on a machine without serial hardware: the pure
// config validation and enum mapping, path resolution, serial-number lookup over a fixed port
// list, and every Open() failure a missing device, a dangling by-id link or a pty produces.

#include "device/serial_transport.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace benchfarm::device {
namespace {

SerialConfig Config(std::string port) {
  SerialConfig c;
  c.port = std::move(port);
  return c;
}

std::string TmpDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

TEST(ValidateSerialConfig, AcceptsGoodConfigs) {
  EXPECT_TRUE(ValidateSerialConfig(Config("/dev/ttyACM0")).ok());
  for (int bits = 5; bits <= 8; ++bits) {
    SerialConfig c = Config("/dev/ttyUSB0");
    c.data_bits = bits;
    c.stop_bits = 2;
    c.parity = Parity::kEven;
    c.flow_control = FlowControl::kRtsCts;
    EXPECT_TRUE(ValidateSerialConfig(c).ok()) << bits;
  }
  SerialConfig slow = Config("/dev/ttyS0");
  slow.baud = 1;
  EXPECT_TRUE(ValidateSerialConfig(slow).ok());
  SerialConfig fast = Config("/dev/ttyS0");
  fast.baud = kMaxSerialBaud;
  EXPECT_TRUE(ValidateSerialConfig(fast).ok());
}

TEST(ValidateSerialConfig, RejectsBadFieldsNamingThem) {
  struct Case {
    const char* field;
    void (*mutate)(SerialConfig*);
  };
  const Case cases[] = {
      {"port", [](SerialConfig* c) { c->port.clear(); }},
      {"baud", [](SerialConfig* c) { c->baud = 0; }},
      {"baud", [](SerialConfig* c) { c->baud = -9600; }},
      {"baud", [](SerialConfig* c) { c->baud = kMaxSerialBaud + 1; }},
      {"data_bits", [](SerialConfig* c) { c->data_bits = 4; }},
      {"data_bits", [](SerialConfig* c) { c->data_bits = 9; }},
      {"stop_bits", [](SerialConfig* c) { c->stop_bits = 0; }},
      {"stop_bits", [](SerialConfig* c) { c->stop_bits = 3; }},
      {"parity", [](SerialConfig* c) { c->parity = static_cast<Parity>(7); }},
      {"flow_control", [](SerialConfig* c) { c->flow_control = static_cast<FlowControl>(9); }},
  };
  for (const Case& tc : cases) {
    SerialConfig c = Config("/dev/ttyACM0");
    tc.mutate(&c);
    absl::Status s = ValidateSerialConfig(c);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << tc.field << ": " << s;
    EXPECT_TRUE(absl::StrContains(s.message(), absl::StrCat("SerialConfig.", tc.field))) << s;
  }
}

TEST(SerialEnumMapping, ParityTable) {
  const struct {
    Parity in;
    sp_parity out;
  } table[] = {
      {Parity::kNone, SP_PARITY_NONE},
      {Parity::kOdd, SP_PARITY_ODD},
      {Parity::kEven, SP_PARITY_EVEN},
  };
  for (const auto& row : table) {
    auto got = ToSpParity(row.in);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, row.out);
  }
  EXPECT_TRUE(absl::IsInvalidArgument(ToSpParity(static_cast<Parity>(-1)).status()));
}

TEST(SerialEnumMapping, FlowControlTable) {
  const struct {
    FlowControl in;
    sp_flowcontrol out;
  } table[] = {
      {FlowControl::kNone, SP_FLOWCONTROL_NONE},
      {FlowControl::kXonXoff, SP_FLOWCONTROL_XONXOFF},
      {FlowControl::kRtsCts, SP_FLOWCONTROL_RTSCTS},
  };
  for (const auto& row : table) {
    auto got = ToSpFlowControl(row.in);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, row.out);
  }
  EXPECT_TRUE(absl::IsInvalidArgument(ToSpFlowControl(static_cast<FlowControl>(3)).status()));
}

TEST(SerialPortKindName, NamesEveryKind) {
  EXPECT_EQ(SerialPortKindName(SerialPortKind::kNative), "native");
  EXPECT_EQ(SerialPortKindName(SerialPortKind::kUsb), "usb");
  EXPECT_EQ(SerialPortKindName(SerialPortKind::kBluetooth), "bluetooth");
  EXPECT_EQ(SerialPortKindName(SerialPortKind::kUnknown), "unknown");
}

TEST(ListSerialPorts, Succeeds) {
  auto ports = ListSerialPorts();
  ASSERT_TRUE(ports.ok()) << ports.status();
  for (const SerialPortInfo& p : *ports) {
    EXPECT_FALSE(p.path.empty());
    if (p.kind != SerialPortKind::kUsb) {
      EXPECT_EQ(p.usb_vid, -1) << p.path;
      EXPECT_TRUE(p.usb_serial.empty()) << p.path;
    }
  }
}

TEST(FindPortBySerialNumber, OverAFixedList) {
  std::vector<SerialPortInfo> ports(4);
  ports[0].path = "/dev/ttyS0";
  ports[0].kind = SerialPortKind::kNative;
  ports[0].usb_serial = "ABC";  // not USB: ignored even if set
  ports[1].path = "/dev/ttyACM0";
  ports[1].kind = SerialPortKind::kUsb;
  ports[1].usb_serial = "ABC";
  ports[2].path = "/dev/ttyACM1";
  ports[2].kind = SerialPortKind::kUsb;
  ports[2].usb_serial = "TWIN";
  ports[3].path = "/dev/ttyACM2";
  ports[3].kind = SerialPortKind::kUsb;
  ports[3].usb_serial = "TWIN";

  auto abc = FindPortBySerialNumberIn(ports, "ABC");
  ASSERT_TRUE(abc.ok()) << abc.status();
  EXPECT_EQ(*abc, "/dev/ttyACM0");
  auto none = FindPortBySerialNumberIn(ports, "XYZ");
  EXPECT_TRUE(absl::IsNotFound(none.status())) << none.status();
  EXPECT_TRUE(absl::StrContains(none.status().message(), "XYZ")) << none.status();
  auto twin = FindPortBySerialNumberIn(ports, "TWIN");
  EXPECT_TRUE(absl::IsFailedPrecondition(twin.status())) << twin.status();
  EXPECT_TRUE(absl::StrContains(twin.status().message(), "/dev/ttyACM1, /dev/ttyACM2"));
  EXPECT_TRUE(absl::IsInvalidArgument(FindPortBySerialNumberIn(ports, "").status()));
}

TEST(FindPortBySerialNumber, NotFoundOnThisMachine) {
  auto r = FindPortBySerialNumber("BENCHFARM-NO-SUCH-SERIAL-0000");
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
}

TEST(SerialTransport, MissingPortIsNotFound) {
  SerialTransport t(Config("/dev/ttyBENCHFARM_NONE"));
  EXPECT_EQ(t.Name(), "serial:/dev/ttyBENCHFARM_NONE@115200");
  absl::Status s = t.Open();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "/dev/ttyBENCHFARM_NONE")) << s;
  uint8_t buf[1];
  EXPECT_TRUE(absl::IsFailedPrecondition(
      t.Read(absl::MakeSpan(buf), absl::Now() + absl::Seconds(1)).status()));
  t.Close();  // harmless when never opened
}

TEST(SerialTransport, InvalidConfigFailsOpen) {
  SerialConfig c = Config("/dev/ttyBENCHFARM_NONE");
  c.data_bits = 9;
  absl::Status s = SerialTransport(c).Open();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StartsWith(s.message(), "serial:/dev/ttyBENCHFARM_NONE@115200: ")) << s;
}

TEST(SerialTransport, DanglingByIdLinkNamesLinkAndTarget) {
  const std::string link = TmpDir() + "/usb-BENCHFARM_Board_0001-if00";
  const std::string target = "/dev/ttyBENCHFARM_GONE";
  unlink(link.c_str());
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  absl::Status s = SerialTransport(Config(link)).Open();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), link)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), target)) << s;
}

TEST(ResolvePortPath, FollowsSymlinks) {
  const std::string link = TmpDir() + "/link-to-null";
  unlink(link.c_str());
  ASSERT_EQ(symlink("/dev/null", link.c_str()), 0);
  auto resolved = ResolvePortPath(link);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(*resolved, "/dev/null");
}

TEST(SerialTransport, PseudoTerminalIsRefusedWithAHint) {
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(master, 0);
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  const std::string path = ptsname(master);
  EXPECT_TRUE(IsPseudoTerminal(path));
  EXPECT_FALSE(IsPseudoTerminal("/dev/null"));

  SerialTransport t(Config(path));
  absl::Status s = t.Open();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "pseudo-terminal")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "libserialport")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "PtyTransport")) << s;
  close(master);
}

TEST(SerialTransport, NonSerialDeviceIsRefused) {
  absl::Status s = SerialTransport(Config("/dev/null")).Open();
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "/dev/null")) << s;
}

}  // namespace
}  // namespace benchfarm::device
