// Fault names: see fault_names.h.
#include "agent/fault_names.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "process/run_command.h"
#include "process/sandbox.h"
#include "spdlog/spdlog.h"

namespace benchfarm::agent {
namespace {

constexpr char kOutside[] = " (outside the image)";
constexpr char kElfIn[] = "/bf/image.elf";
constexpr int kElfMachineArm = 40;

// Logs `what` once per process for each `key` (a missing tool is said once, not per fault).
void WarnOnce(const std::string& key, const std::string& what) {
  static absl::Mutex mu(absl::kConstInit);
  static std::set<std::string>* said ABSL_GUARDED_BY(mu) = new std::set<std::string>();
  absl::MutexLock lock(&mu);
  if (said->insert(key).second) spdlog::warn("fault names: {}", what);
}

// The addr2line for the ELF's machine, or "" if `elf` is not an ELF file.
std::string ToolFor(const std::string& elf) {
  std::ifstream in(elf, std::ios::binary);
  unsigned char header[20] = {};
  if (!in.read(reinterpret_cast<char*>(header), sizeof(header))) return "";
  if (header[0] != 0x7f || header[1] != 'E' || header[2] != 'L' || header[3] != 'F') return "";
  const int machine = header[5] == 2 ? (header[18] << 8) | header[19]  // big-endian
                                     : header[18] | (header[19] << 8);
  return machine == kElfMachineArm ? "arm-none-eabi-addr2line" : "addr2line";
}

// The tool's path in the sandbox's PATH (/usr/local/bin:/usr/bin:/bin), or "".
std::string FindTool(const std::string& name) {
  for (const char* dir : {"/usr/local/bin", "/usr/bin", "/bin"}) {
    const std::string path = absl::StrCat(dir, "/", name);
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

std::string Place(const CodePlace& p) {
  if (p.file == "??" || p.line <= 0) return p.function;
  return absl::StrCat(p.function, " (", p.file, ":", p.line, ")");
}

}  // namespace

uint64_t ReportAddress::Lookup() const {
  if (key == "pc" || address < 2) return address;
  return (address & ~uint64_t{1}) - 1;
}

std::vector<ReportAddress> FindReportAddresses(absl::string_view report) {
  std::vector<ReportAddress> out;
  for (size_t start = 0; start < report.size();) {
    const size_t eq = report.find('=', start);
    if (eq == absl::string_view::npos) break;
    size_t key_start = eq;
    while (key_start > 0 && absl::ascii_isalpha(static_cast<unsigned char>(report[key_start - 1])))
      --key_start;
    const absl::string_view key = report.substr(key_start, eq - key_start);
    start = eq + 1;
    if (key != "pc" && key != "lr" && key != "caller") continue;
    if (report.substr(eq + 1, 2) != "0x") continue;
    size_t end = eq + 3;
    while (end < report.size() && absl::ascii_isxdigit(static_cast<unsigned char>(report[end])))
      ++end;
    uint64_t address = 0;
    if (end == eq + 3 || end - (eq + 3) > 16 ||
        !absl::SimpleHexAtoi(report.substr(eq + 3, end - (eq + 3)), &address)) {
      continue;
    }
    if (absl::StartsWith(report.substr(end), kOutside)) continue;
    out.push_back({std::string(key), address, end});
    start = end;
  }
  return out;
}

std::vector<std::vector<CodePlace>> ParseAddr2line(absl::string_view output) {
  std::vector<std::vector<CodePlace>> out;
  bool want_location = false;
  for (absl::string_view line : absl::StrSplit(output, '\n', absl::SkipEmpty())) {
    if (absl::StrContains(line, "addr2line: ")) continue;  // the tool about itself
    uint64_t ignored;
    if (!want_location && absl::StartsWith(line, "0x") &&
        absl::SimpleHexAtoi(line.substr(2), &ignored)) {
      out.emplace_back();
      continue;
    }
    if (out.empty()) continue;
    if (!want_location) {
      out.back().push_back({std::string(line), "??", 0});
      want_location = true;
      continue;
    }
    want_location = false;
    // "file.c:42", "file.c:42 (discriminator 3)", "??:0", "??:?".
    absl::string_view location = line.substr(0, line.find(" ("));
    const size_t colon = location.rfind(':');
    if (colon == absl::string_view::npos) continue;
    CodePlace& p = out.back().back();
    p.file = std::string(location.substr(0, colon));
    if (!absl::SimpleAtoi(location.substr(colon + 1), &p.line)) p.line = 0;
  }
  return out;
}

std::string WithCodeNames(absl::string_view report, const std::vector<ReportAddress>& addresses,
                          const std::vector<std::vector<CodePlace>>& places) {
  std::string out;
  size_t copied = 0;
  for (size_t i = 0; i < addresses.size() && i < places.size(); ++i) {
    const std::vector<CodePlace>& at = places[i];
    if (at.empty() || at[0].function == "??" || at[0].function.empty()) continue;
    absl::StrAppend(&out, report.substr(copied, addresses[i].end - copied), " in ", Place(at[0]));
    for (size_t k = 1; k < at.size(); ++k) {
      if (at[k].function != "??") absl::StrAppend(&out, " inlined into ", Place(at[k]));
    }
    copied = addresses[i].end;
  }
  absl::StrAppend(&out, report.substr(copied));
  return out;
}

std::string NameFaultAddresses(absl::string_view report, const std::string& elf,
                               absl::Duration time_limit) {
  const std::vector<ReportAddress> addresses = FindReportAddresses(report);
  if (addresses.empty() || elf.empty()) return std::string(report);
  const std::string tool = ToolFor(elf);
  if (tool.empty()) {
    WarnOnce(elf, absl::StrCat(elf, " is not an ELF file: a fault's addresses stay unnamed"));
    return std::string(report);
  }
  const std::string path = FindTool(tool);
  if (path.empty()) {
    WarnOnce(tool, absl::StrCat(tool, " is not installed (apt install ",
                                tool == "addr2line" ? "binutils" : "binutils-arm-none-eabi",
                                "): faults name addresses only, not their code"));
    return std::string(report);
  }
  process::SandboxOptions sandbox;
  sandbox.binds = {{elf, kElfIn, false}};
  sandbox.new_session = true;
  sandbox.limits.max_processes = 16;
  sandbox.limits.max_cpu_seconds = 30;
  sandbox.limits.max_address_space_bytes = uint64_t{2} << 30;
  std::vector<std::string> command = {path, "-e", kElfIn, "-a", "-f", "-i", "-s"};
  for (const ReportAddress& a : addresses) command.push_back(absl::StrFormat("0x%x", a.Lookup()));
  absl::StatusOr<process::SandboxCommand> sandboxed = process::MakeSandboxCommand(sandbox, command);
  if (!sandboxed.ok()) {
    WarnOnce("sandbox", absl::StrCat("cannot sandbox ", tool, ": ", sandboxed.status().message()));
    return std::string(report);
  }
  process::RunCommandOptions run;
  run.argv = sandboxed->argv;
  run.time_limit = time_limit;
  absl::StatusOr<process::CommandRun> ran =
      process::RunCommand(run, absl::Now() + time_limit, tool);
  if (!ran.ok() || !ran->succeeded()) {
    spdlog::warn("fault names: {} on {} failed: {}", tool, elf,
                 ran.ok() ? process::OutputForError(ran->output, ran->output_bytes)
                          : std::string(ran.status().message()));
    return std::string(report);
  }
  const std::vector<std::vector<CodePlace>> places = ParseAddr2line(ran->output);
  if (places.size() != addresses.size()) {
    spdlog::warn("fault names: {} answered {} addresses of {}", tool, places.size(),
                 addresses.size());
    return std::string(report);
  }
  return WithCodeNames(report, addresses, places);
}

}  // namespace benchfarm::agent
