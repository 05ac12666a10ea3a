// A board's core from its package's data: every shipped template against the real crt tree (the
// files the agent ships with), and what a broken template or package says.
#include "agent/board_core.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "tests/test_files.h"

namespace benchfarm::agent {
namespace {

using ::benchfarm::testing::Runfiles;
using ::benchfarm::testing::TestDir;

TEST(BoardCore, EveryTemplateNamesItsPackagesCore) {
  const std::string crt = Runfiles("crt");
  const std::map<std::string, std::string> want = {
      {"qemu-mps2-an385", "cortex-m3"},  {"qemu-netduinoplus2", "cortex-m4"},
      {"stm32f4", "cortex-m4"},          {"nucleo-f446re", "cortex-m4"},
      {"qemu-mps3-an547", "cortex-m55"}, {"host-process", ""},
  };
  for (const auto& [kind, core] : want) {
    absl::StatusOr<std::string> got = BoardCore(Runfiles("agent/templates/" + kind), crt);
    ASSERT_TRUE(got.ok()) << kind << ": " << got.status();
    EXPECT_EQ(*got, core) << kind;
  }
}

// The core follows the package's data: another CPU_FLAGS in board.conf is another core, with no
// code naming it.
TEST(BoardCore, ReadFromTheTemplatesPackageFile) {
  const std::string dir = TestDir();
  ASSERT_TRUE(base::MakeDirs(dir + "/crt/boards/m7board").ok());
  ASSERT_TRUE(base::MakeDirs(dir + "/tmpl").ok());
  ASSERT_TRUE(base::WriteFile(dir + "/tmpl/package", "m7board\n").ok());
  ASSERT_TRUE(base::WriteFile(dir + "/crt/boards/m7board/board.conf",
                              "# a comment\n"
                              "\n"
                              "CPU_HZ=216000000  # after a value\n"
                              "CPU_FLAGS=\"-mthumb -mcpu=cortex-m7 -mfloat-abi=hard\"\n")
                  .ok());
  absl::StatusOr<std::string> core = BoardCore(dir + "/tmpl", dir + "/crt");
  ASSERT_TRUE(core.ok()) << core.status();
  EXPECT_EQ(*core, "cortex-m7");
}

TEST(BoardCore, BrokenPackagesAreNamed) {
  const std::string dir = TestDir();
  const std::string crt = dir + "/crt";
  ASSERT_TRUE(base::MakeDirs(crt + "/boards/p").ok());
  ASSERT_TRUE(base::MakeDirs(dir + "/tmpl").ok());
  auto core_with = [&](const std::string& package, const std::string& conf) {
    EXPECT_TRUE(base::WriteFile(dir + "/tmpl/package", package).ok());
    EXPECT_TRUE(base::WriteFile(crt + "/boards/p/board.conf", conf).ok());
    return BoardCore(dir + "/tmpl", crt);
  };
  const std::string good = "CPU_FLAGS=\"-mcpu=cortex-m3\"\n";
  struct Case {
    std::string package, conf, message;
  };
  for (const Case& c : std::vector<Case>{
           {"", good, "is not a board package's name"},
           {"../p", good, "is not a board package's name"},
           {"q", good, "no board package \"q\""},
           {"p", "CPU_HZ=1\n", "no CPU_FLAGS"},
           {"p", "CPU_FLAGS=\"-mthumb\"\n", "no -mcpu="},
           {"p", "CPU_FLAGS=\"-mcpu=cortex-m3 -mcpu=cortex-m4\"\n", "more than one -mcpu="},
           {"p", "CPU_FLAGS=\"-mcpu= -mthumb\"\n", "-mcpu= is empty"},
           {"p", "CPU_FLAGS=\"-mcpu=Cortex-M3\"\n", "is not a core"},
           {"p", "cpu_flags=-mcpu=cortex-m3\n", "line 1: not KEY=VALUE"},
           {"p", "# ok\nCPU_FLAGS=\"-mcpu=cortex-m3\n", "line 2: not KEY=VALUE"},
       }) {
    absl::StatusOr<std::string> core = core_with(c.package, c.conf);
    ASSERT_FALSE(core.ok()) << c.package << " / " << c.conf << ": " << *core;
    EXPECT_EQ(core.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(core.status().message(), c.message))
        << c.package << " / " << c.conf << ": " << core.status();
  }
  // A package line with blanks around the name, as `read -r` takes it.
  absl::StatusOr<std::string> core = core_with("  p \n", good);
  ASSERT_TRUE(core.ok()) << core.status();
  EXPECT_EQ(*core, "cortex-m3");
}

TEST(ParseBoardConf, ReadsWhatBuildShReads) {
  absl::StatusOr<std::map<std::string, std::string>> conf =
      ParseBoardConf("# c\n  \nA=1\nB=\"x y\"  # c\nC=0x10#c\nD=\nE=\"\"\n");
  ASSERT_TRUE(conf.ok()) << conf.status();
  const std::map<std::string, std::string> want = {
      {"A", "1"}, {"B", "x y"}, {"C", "0x10"}, {"D", ""}, {"E", ""}};
  EXPECT_EQ(*conf, want);
  for (const char* bad : {"A=x y\n", " A=1\n", "A=\"x\" y\n", "A\n", "1A=2\n"}) {
    EXPECT_FALSE(ParseBoardConf(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace benchfarm::agent
