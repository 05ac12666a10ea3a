// Every deploy/examples/*.textproto parses, with protobuf's text-format parser, into the message
// its name says — tracker*.textproto as a benchfarm.v1.TrackerConfig, agent*.textproto as a
// benchfarm.v1.AgentConfig — and carries what its daemon requires, so the examples never rot as
// proto/config.proto changes.
#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "device/board.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "proto/config.pb.h"

namespace benchfarm {
namespace {

std::string ExamplesDir() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir ? srcdir : ".", "/", workspace ? workspace : "benchfarm",
                      "/deploy/examples");
}

std::vector<std::string> Examples() {
  std::vector<std::string> names;
  DIR* dir = opendir(ExamplesDir().c_str());
  if (dir == nullptr) return names;
  while (dirent* e = readdir(dir)) {
    if (absl::EndsWith(e->d_name, ".textproto")) names.push_back(e->d_name);
  }
  closedir(dir);
  return names;
}

class Errors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    text += absl::StrCat(line + 1, ":", column + 1, ": ", message, "\n");
  }
  void AddWarning(int line, int column, const std::string& message) override {
    AddError(line, column, message);
  }
  std::string text;
};

// Parses `name` into `message`; failures name the file, line and column.
void Parse(const std::string& name, google::protobuf::Message* message) {
  std::ifstream in(ExamplesDir() + "/" + name);
  ASSERT_TRUE(in) << name;
  std::stringstream text;
  text << in.rdbuf();
  google::protobuf::TextFormat::Parser parser;
  Errors errors;
  parser.RecordErrorsTo(&errors);
  EXPECT_TRUE(parser.ParseFromString(text.str(), message))
      << name << " is not a valid " << message->GetTypeName() << ":\n"
      << errors.text;
  EXPECT_EQ(errors.text, "") << name;
}

void CheckTracker(const v1::TrackerConfig& c) {
  EXPECT_FALSE(c.listen_address().empty());
  EXPECT_FALSE(c.database_path().empty());
  EXPECT_GE(c.lease_seconds(), 1);
  EXPECT_GE(c.heartbeat_seconds(), 1);
  EXPECT_LT(c.heartbeat_seconds(), c.lease_seconds());
  EXPECT_GE(c.retry_budget(), 1);
  EXPECT_GE(c.quarantine_threshold(), 1);
}

void CheckAgent(const v1::AgentConfig& c) {
  EXPECT_FALSE(c.agent_id().empty());
  EXPECT_FALSE(c.tracker_address().empty());
  ASSERT_GT(c.boards_size(), 0);
  std::set<std::string> ids;
  for (const v1::BoardConfig& b : c.boards()) {
    SCOPED_TRACE(b.id());
    EXPECT_FALSE(b.id().empty());
    EXPECT_TRUE(ids.insert(b.id()).second) << "board id used twice";
    EXPECT_FALSE(b.kind().empty());
    EXPECT_FALSE(b.build_template().empty());
    EXPECT_NE(b.transport_case(), v1::BoardConfig::TRANSPORT_NOT_SET)
        << "no serial or host_process";
    if (b.has_qemu()) {
      // An emulated microcontroller: QEMU is its flasher, its UART the pty QEMU makes.
      EXPECT_TRUE(b.has_serial());
      EXPECT_FALSE(b.qemu().machine().empty());
      EXPECT_EQ(b.flasher().argv_size(), 0);
      EXPECT_TRUE(absl::StartsWith(b.build_template(), "agent/templates/qemu-"))
          << b.build_template();
    } else if (b.has_serial()) {
      EXPECT_FALSE(b.serial().port().empty());
      EXPECT_GT(b.serial().baud(), 0);
      ASSERT_GT(b.flasher().argv_size(), 0) << "a serial board needs a flasher";
      bool has_image = false;
      for (const std::string& arg : b.flasher().argv())
        has_image |= absl::StrContains(arg, "{image}");
      EXPECT_TRUE(has_image) << "the flasher command never names {image}";
      EXPECT_GT(b.flasher().time_limit_seconds(), 0);
    }
  }
}

TEST(DeployExamples, EveryFileParsesAsTheMessageItsNameSays) {
  std::vector<std::string> names = Examples();
  ASSERT_FALSE(names.empty()) << "no examples under " << ExamplesDir();
  std::set<std::string> seen(names.begin(), names.end());
  for (const char* expected :
       {"tracker.textproto", "agent-emulated.textproto", "agent-real-board.textproto"}) {
    EXPECT_EQ(seen.count(expected), 1u) << expected;
  }
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    if (absl::StartsWith(name, "tracker")) {
      v1::TrackerConfig config;
      Parse(name, &config);
      CheckTracker(config);
    } else if (absl::StartsWith(name, "agent")) {
      v1::AgentConfig config;
      Parse(name, &config);
      CheckAgent(config);
    } else {
      ADD_FAILURE() << name << ": examples are named tracker*.textproto or agent*.textproto";
    }
  }
}

TEST(DeployExamples, EmulatedAgentHasHostProcessAndQemuBoards) {
  v1::AgentConfig config;
  Parse("agent-emulated.textproto", &config);
  ASSERT_EQ(config.boards_size(), 4);
  EXPECT_TRUE(config.boards(0).host_process().use_pty());
  EXPECT_TRUE(config.boards(1).has_host_process());
  EXPECT_FALSE(config.boards(1).host_process().use_pty());
  EXPECT_EQ(config.boards(0).cpu_affinity(), "auto");  // pinned: quieter timings
  // Emulated microcontrollers: serial boards whose flasher and reset is QEMU.
  EXPECT_TRUE(config.boards(2).has_serial());
  // Both under the cycle model: costs are modeled cycles at the part's clock.
  EXPECT_EQ(config.boards(2).qemu().machine(), "mps2-an385");
  EXPECT_EQ(config.boards(2).qemu().timing(), v1::QemuMachine::CYCLES);
  EXPECT_EQ(config.boards(3).qemu().machine(), "netduinoplus2");
  EXPECT_EQ(config.boards(3).qemu().timing(), v1::QemuMachine::CYCLES);
  for (int i : {2, 3}) EXPECT_TRUE(device::Board::Validate(config.boards(i)).ok()) << i;
  EXPECT_EQ(config.tracker_address(), "localhost:7070");
  EXPECT_EQ(config.metrics_address(), "127.0.0.1:9471");  // loopback, as prometheus.yml scrapes
}

TEST(DeployExamples, ParserReportsAMisspelledField) {
  v1::AgentConfig config;
  google::protobuf::TextFormat::Parser parser;
  Errors errors;
  parser.RecordErrorsTo(&errors);
  EXPECT_FALSE(parser.ParseFromString("agent_id: \"a\"\nboards { kidn: \"x\" }\n", &config));
  EXPECT_TRUE(absl::StrContains(errors.text, "2:")) << errors.text;
  EXPECT_TRUE(absl::StrContains(errors.text, "kidn")) << errors.text;
}

}  // namespace
}  // namespace benchfarm
