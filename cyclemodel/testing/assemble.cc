// Assemble: see assemble.h.

#include "cyclemodel/testing/assemble.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace benchfarm::cyclemodel {
namespace {

absl::StatusOr<std::string> Run(const std::string& command) {
  FILE* p = popen(absl::StrCat(command, " 2>&1").c_str(), "r");
  if (p == nullptr) return absl::InternalError(absl::StrCat("cannot run: ", command));
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int rc = pclose(p);
  if (rc != 0) return absl::InternalError(absl::StrCat(command, " failed:\n", out));
  return out;
}

}  // namespace

absl::StatusOr<std::vector<AsmInsn>> Assemble(const std::string& source,
                                              const std::string& arch_flags, uint32_t origin) {
  if (system("command -v arm-none-eabi-as >/dev/null 2>&1") != 0) {
    return absl::FailedPreconditionError(
        "arm-none-eabi-as is not installed (apt install "
        "binutils-arm-none-eabi)");
  }
  const char* tmp = getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/asm.", getpid(), ".",
                                 reinterpret_cast<uintptr_t>(&source));
  if (auto made = Run(absl::StrCat("mkdir -p ", dir)); !made.ok()) return made.status();
  {
    std::ofstream s(dir + "/t.s");
    s << "  .syntax unified\n  .thumb\n  .text\n" << source << "\n";
  }
  absl::StatusOr<std::string> as =
      Run(absl::StrCat("arm-none-eabi-as ", arch_flags, " -o ", dir, "/t.o ", dir, "/t.s && ",
                       "arm-none-eabi-ld -Ttext=0x", absl::Hex(origin), " -e 0x", absl::Hex(origin),
                       " -o ", dir, "/t.elf ", dir, "/t.o"));
  if (!as.ok()) return as.status();
  absl::StatusOr<std::string> dump =
      Run(absl::StrCat("arm-none-eabi-objdump -d -M force-thumb ", dir, "/t.elf"));
  if (!dump.ok()) return dump.status();
  std::vector<AsmInsn> out;
  static const std::regex kLine(R"(^\s*([0-9a-f]+):\s+([0-9a-f]{4})(?: ([0-9a-f]{4}))?\s+(.*)$)");
  for (absl::string_view line : absl::StrSplit(*dump, '\n')) {
    std::smatch m;
    std::string l(line);
    if (!std::regex_match(l, m, kLine)) continue;
    AsmInsn insn;
    insn.address = static_cast<uint32_t>(std::stoul(m[1].str(), nullptr, 16));
    for (int g = 2; g <= 3; ++g) {
      if (!m[g].matched) continue;
      unsigned hw = std::stoul(m[g].str(), nullptr, 16);
      insn.bytes.push_back(static_cast<uint8_t>(hw & 0xFF));
      insn.bytes.push_back(static_cast<uint8_t>(hw >> 8));
    }
    std::string text = m[4].str();
    const size_t comment = text.find_first_of("@;");
    if (comment != std::string::npos) text.resize(comment);
    while (!text.empty() && isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    for (char& c : text) {
      if (c == '\t') c = ' ';
    }
    insn.text = text;
    out.push_back(std::move(insn));
  }
  if (out.empty()) return absl::InternalError(absl::StrCat("no instructions in:\n", *dump));
  return out;
}

}  // namespace benchfarm::cyclemodel
