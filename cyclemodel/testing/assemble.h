// Assemble: Thumb source through Debian's arm-none-eabi-as, back as the instructions
// arm-none-eabi-objdump sees (address, bytes, text), for the cycle model's tests. Test-only.

#ifndef BENCHFARM_CYCLEMODEL_TESTING_ASSEMBLE_H_
#define BENCHFARM_CYCLEMODEL_TESTING_ASSEMBLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace benchfarm::cyclemodel {

struct AsmInsn {
  uint32_t address = 0;
  std::vector<uint8_t> bytes;  // 2 or 4, little-endian halfwords as in memory
  std::string text;            // "ldr r0, [r1, #4]"
};

// Assembles `source` (unified syntax, Thumb, `.text` at `origin`) for `arch_flags` (e.g.
// "-mcpu=cortex-m4 -mfpu=fpv4-sp-d16"). Errors: the assembler's output (Internal), or
// FailedPrecondition when arm-none-eabi-as is not installed.
absl::StatusOr<std::vector<AsmInsn>> Assemble(const std::string& source,
                                              const std::string& arch_flags,
                                              uint32_t origin = 0x1000);

}  // namespace benchfarm::cyclemodel

#endif  // BENCHFARM_CYCLEMODEL_TESTING_ASSEMBLE_H_
