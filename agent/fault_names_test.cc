// Fault names: reports' addresses found (pc, lr, caller; not one outside the image), addr2line's
// answers parsed (inlined code, unknown places, the tool's own complaints), and the whole path on
// real images the test builds — a host executable and a Cortex-M ELF — with the tool in the
// sandbox: the faulting function, file and line named after each address.
#include "agent/fault_names.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/files.h"

namespace benchfarm::agent {
namespace {

// `source` compiled by `compiler` (and its flags) into TEST_TMPDIR/<name>; its path.
std::string Compile(const std::string& name, const std::string& source,
                    const std::string& compiler) {
  const std::string path = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  EXPECT_TRUE(base::WriteFile(path + ".c", source).ok());
  EXPECT_EQ(std::system(absl::StrCat(compiler, " -g -o ", path, " ", path, ".c").c_str()), 0);
  return path;
}

// The command's stdout (its exit status must be 0).
std::string Output(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string out;
  char buffer[4096];
  size_t n;
  while (pipe != nullptr && (n = fread(buffer, 1, sizeof(buffer), pipe.get())) > 0) {
    out.append(buffer, n);
  }
  return out;
}

bool Have(const std::string& tool) {
  return std::system(absl::StrCat("command -v ", tool, " >/dev/null 2>&1").c_str()) == 0;
}

TEST(FaultNames, ReportsGiveTheirAddresses) {
  const std::string report =
      "the board reset during f: fault: MemManage (data access violation) pc=0x00000418 "
      "lr=0x00000301 cfsr=0x00000082 hfsr=0x00000000 addr=0x00000000";
  std::vector<ReportAddress> a = FindReportAddresses(report);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].key, "pc");
  EXPECT_EQ(a[0].address, 0x418u);
  EXPECT_EQ(a[0].Lookup(), 0x418u);
  EXPECT_EQ(report.substr(0, a[0].end), report.substr(0, report.find(" lr=")));
  EXPECT_EQ(a[1].key, "lr");
  EXPECT_EQ(a[1].Lookup(), 0x2ffu);  // in the call: the Thumb bit dropped, one byte back
  // A host board's: caller is a return address; an address outside the image is none.
  a = FindReportAddresses(
      "fault: SIGSEGV (address not mapped) pc=0x7f0012345678 (outside the image) caller=0x1f30 "
      "addr=0x0");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].key, "caller");
  EXPECT_EQ(a[0].Lookup(), 0x1f2fu);
  EXPECT_TRUE(
      FindReportAddresses("fault: TVMPlatformAbort(0x00000101) xpc=0x1 pc=- pc=0x").empty());
}

TEST(FaultNames, Addr2lineAnswersAreParsedAndNamed) {
  const std::string output =
      "0x00000418\n"
      "clamp\n"
      "dwconv.c:12 (discriminator 2)\n"
      "dwconv_s8\n"
      "dwconv.c:40\n"
      "arm-none-eabi-addr2line: DWARF error: something\n"
      "0x000002ff\n"
      "??\n"
      "??:0\n"
      "0x00000500\n"
      "memcpy\n"
      "??:?\n";
  std::vector<std::vector<CodePlace>> places = ParseAddr2line(output);
  ASSERT_EQ(places.size(), 3u);
  ASSERT_EQ(places[0].size(), 2u);
  EXPECT_EQ(places[0][0].function, "clamp");
  EXPECT_EQ(places[0][0].file, "dwconv.c");
  EXPECT_EQ(places[0][0].line, 12);
  EXPECT_EQ(places[0][1].function, "dwconv_s8");
  EXPECT_EQ(places[0][1].line, 40);
  EXPECT_EQ(places[1][0].function, "??");
  EXPECT_EQ(places[2][0].line, 0);
  const std::string report = "fault: x pc=0x00000418 lr=0x00000301 sp=0x2 caller=0x501 addr=-";
  EXPECT_EQ(WithCodeNames(report, FindReportAddresses(report), places),
            "fault: x pc=0x00000418 in clamp (dwconv.c:12) inlined into dwconv_s8 (dwconv.c:40) "
            "lr=0x00000301 sp=0x2 caller=0x501 in memcpy addr=-");
}

TEST(FaultNames, AHostExecutablesFaultIsNamed) {
  if (!Have("cc") || !Have("addr2line")) GTEST_SKIP() << "no cc or addr2line";
  const std::string victim = Compile("victim",
                                     "int victim(volatile int* p) {\n"
                                     "  int x = 1;\n"
                                     "  *p = x;\n"
                                     "  return 0;\n"
                                     "}\n"
                                     "int main(void) { return victim((volatile int*)0); }\n",
                                     "cc -O1");
  // The store's address: the line table's entry for line 3.
  const std::string address = std::string(absl::StripAsciiWhitespace(
      Output(absl::StrCat("objdump --dwarf=decodedline ", victim,
                          " | awk '$1 == \"victim.c\" && $2 == 3 { print $3; exit }'"))));
  ASSERT_TRUE(absl::StartsWith(address, "0x")) << address;
  const std::string named = NameFaultAddresses(
      absl::StrCat("killed by signal 11; its last log: fault: SIGSEGV (address not mapped) pc=",
                   address, " caller=-"),
      victim);
  EXPECT_TRUE(absl::StrContains(named, absl::StrCat("pc=", address, " in victim (victim.c:3)")))
      << named;
  // No image, or not an ELF file: the report as it was.
  EXPECT_EQ(NameFaultAddresses("pc=0x10", victim + ".c"), "pc=0x10");
  EXPECT_EQ(NameFaultAddresses("pc=0x10", victim + ".none"), "pc=0x10");
}

TEST(FaultNames, ACortexMFaultIsNamedWithTheArmTool) {
  if (!Have("arm-none-eabi-gcc") || !Have("arm-none-eabi-addr2line")) {
    GTEST_SKIP() << "no arm-none-eabi toolchain";
  }
  const std::string elf =
      Compile("kernel",
              "__attribute__((noinline)) void kernel(volatile float* p) {\n"
              "  *p = 1.0f;\n"
              "}\n"
              "void start(void) {\n"
              "  kernel((volatile float*)0);\n"
              "  for (;;) {}\n"
              "}\n",
              "arm-none-eabi-gcc -mcpu=cortex-m3 -mthumb -Os -nostdlib -Wl,-e,start");
  const std::string symbols = Output(absl::StrCat("arm-none-eabi-nm ", elf));
  auto address_of = [&](const std::string& name) {
    const size_t at = symbols.find(absl::StrCat(" T ", name, "\n"));
    return at == std::string::npos ? std::string() : symbols.substr(at - 8, 8);
  };
  const std::string kernel = address_of("kernel");
  ASSERT_EQ(kernel.size(), 8u) << symbols;
  // pc at the kernel's store, lr the return address into start (Thumb: odd).
  const unsigned long start = std::stoul(address_of("start"), nullptr, 16);
  const std::string report =
      absl::StrCat("fault: MemManage (data access violation) pc=0x", kernel, " lr=0x",
                   absl::Hex(start + 5, absl::kZeroPad8), " cfsr=0x00000082");
  const std::string named = NameFaultAddresses(report, elf);
  EXPECT_TRUE(absl::StrContains(named, absl::StrCat("pc=0x", kernel, " in kernel (kernel.c:")))
      << named;
  EXPECT_TRUE(absl::StrContains(named, " in start (kernel.c:")) << named;
}

}  // namespace
}  // namespace benchfarm::agent
