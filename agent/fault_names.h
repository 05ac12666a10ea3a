// Fault names: a board's fault report names the code it faulted in. Reports give addresses — a
// Cortex-M fault line "fault: MemManage (data access violation) pc=0x00000418 lr=0x00000301 ...",
// a host-process board's "fault: SIGSEGV (address not mapped) pc=0x11b9 caller=0x1f30 addr=0x0" —
// and NameFaultAddresses adds the function, file and line of each (of the faulting instruction,
// and of the call the return address in lr or caller comes back to) from the image's debug
// information (Image::debug_path), with the toolchain's addr2line:
//   pc=0x00000418 in dwconv_s8 (dwconv.c:42) lr=0x00000301 in TVMFuncCall (crt_runtime_api.c:287)
// An address of inlined code names the function it is in and where that was inlined
// ("in clamp (dwconv.c:12) inlined into dwconv_s8 (dwconv.c:40)"). What addr2line cannot name
// (an EXC_RETURN value in lr, an address outside the image) stays as it was.
//
// The image was built from a trial's code, so its debug sections are not trusted: addr2line runs
// in the sandbox (process/sandbox.h) with the one file bound read-only and a time limit. The tool
// is chosen by the ELF's machine: arm-none-eabi-addr2line for Arm (Debian's
// binutils-arm-none-eabi, which firmware builds need anyway), the host's addr2line (binutils)
// otherwise.
//
// Thread-safety: functions may be called from any thread.

#ifndef BENCHFARM_AGENT_FAULT_NAMES_H_
#define BENCHFARM_AGENT_FAULT_NAMES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace benchfarm::agent {

// One address a fault report gives: "pc=0x418", "lr=0x301", "caller=0x1f30" (an address followed
// by " (outside the image)" is not one).
struct ReportAddress {
  std::string key;   // pc, lr, caller
  uint64_t address;  // as written
  size_t end;        // where in the report its token ends
  // The address to look up: the faulting instruction itself (pc), or, for a return address (lr,
  // caller), one byte before it (in the call instruction; a Thumb lr's low bit dropped first).
  uint64_t Lookup() const;
};
std::vector<ReportAddress> FindReportAddresses(absl::string_view report);

// What addr2line says of one address: its function and file:line, innermost first (more than
// one for inlined code). Unknown parts are "??" (function), "??" and 0 (file, line).
struct CodePlace {
  std::string function;
  std::string file;
  int line = 0;
};
// `addr2line -a -f -i -s` output for the addresses asked, in order: one list per address (an
// address line "0x...", then function and file:line lines). Lines the tool writes about itself
// ("addr2line: ...") are skipped.
std::vector<std::vector<CodePlace>> ParseAddr2line(absl::string_view output);

// The report with " in FUNCTION (FILE:LINE)" after each address whose places name a function
// (places[i] for addresses[i]).
std::string WithCodeNames(absl::string_view report, const std::vector<ReportAddress>& addresses,
                          const std::vector<std::vector<CodePlace>>& places);

// The report with its addresses named from `elf` (see the file comment). The report unchanged
// when it gives no address, or `elf` or the tool is missing or fails (then logged, once per tool).
std::string NameFaultAddresses(absl::string_view report, const std::string& elf,
                               absl::Duration time_limit = absl::Seconds(20));

}  // namespace benchfarm::agent

#endif  // BENCHFARM_AGENT_FAULT_NAMES_H_
