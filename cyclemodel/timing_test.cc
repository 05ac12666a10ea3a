// The timing tables and pairing rules (timing.h), each rule on the assembler's encodings: the
// cycles of a short sequence, instruction by instruction, as the Cortex-M3/M4 TRMs give them.

#include "cyclemodel/timing.h"

#include <string>
#include <vector>

#include "cyclemodel/testing/assemble.h"
#include "gtest/gtest.h"

namespace benchfarm::cyclemodel {
namespace {

constexpr char kM4F[] = "-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard";

// Cycles of each instruction of `source`, each paired with the one before it.
std::vector<int> Cycles(const char* core_name, const std::string& source) {
  const bf_core* core = bf_core_find(core_name);
  EXPECT_NE(core, nullptr);
  absl::StatusOr<std::vector<AsmInsn>> insns = Assemble(source, kM4F);
  EXPECT_TRUE(insns.ok()) << insns.status();
  std::vector<int> out;
  if (!insns.ok() || core == nullptr) return out;
  bf_insn prev;
  for (size_t i = 0; i < insns->size(); ++i) {
    bf_insn d;
    bf_thumb_decode((*insns)[i].bytes.data(), (*insns)[i].bytes.size(), (*insns)[i].address, &d);
    out.push_back(bf_core_cycles(core, &d, i > 0 ? &prev : nullptr));
    prev = d;
  }
  return out;
}

using V = std::vector<int>;

TEST(Timing, DataProcessingAndMultiplies) {
  EXPECT_EQ(Cycles("cortex-m3",
                   "adds r0, #1\nmul r0, r1, r2\nmla r0, r1, r2, r3\n"
                   "umull r0, r1, r2, r3\nsmull r0, r1, r2, r3\n"
                   "umlal r0, r1, r2, r3\nsmlal r0, r1, r2, r3\nudiv r0, r1, r2\n"),
            (V{1, 1, 2, 4, 5, 6, 7, 7}));
  EXPECT_EQ(Cycles("cortex-m4",
                   "adds r0, #1\nmul r0, r1, r2\nmla r0, r1, r2, r3\n"
                   "umull r0, r1, r2, r3\nsmull r0, r1, r2, r3\n"
                   "umlal r0, r1, r2, r3\nsmlal r0, r1, r2, r3\nsdiv r0, r1, r2\n"
                   "smlad r0, r1, r2, r3\nsadd16 r0, r1, r2\n"),
            (V{1, 1, 1, 1, 1, 1, 1, 7, 1, 1}));
}

TEST(Timing, LoadsPipelineAfterALoadUnlessTheyAddressWithItsResult) {
  // LDR R0,[R1]; LDR R1,[R2]: three cycles (TRM example); a third independent one: four.
  EXPECT_EQ(Cycles("cortex-m4", "ldr r0, [r1]\nldr r1, [r2]\nldr r2, [r3, #4]\n"), (V{2, 1, 1}));
  // The second load addresses with the first's result: no pipelining, and it waits a cycle.
  EXPECT_EQ(Cycles("cortex-m4", "ldr r0, [r1]\nldr r2, [r0]\n"), (V{2, 3}));
  // LDR then STR of what it loaded: pipelined (three cycles); a register-offset STR too.
  EXPECT_EQ(Cycles("cortex-m4", "ldr r0, [r1, r2]\nstr r0, [r3, #20]\n"), (V{2, 1}));
  EXPECT_EQ(Cycles("cortex-m4", "ldr r0, [r1, r2]\nstr r1, [r3, r2]\n"), (V{2, 1}));
  // Post-indexed loads on one base do not chain.
  EXPECT_EQ(Cycles("cortex-m4", "ldr r0, [r1], #4\nldr r2, [r1], #4\n"), (V{2, 2}));
}

TEST(Timing, Stores) {
  EXPECT_EQ(Cycles("cortex-m4", "str r0, [r1, #4]\nstr r0, [r1, r2]\nnop\n"), (V{1, 2, 1}));
  // A load right after a store waits for the store's data phase.
  EXPECT_EQ(Cycles("cortex-m4", "str r0, [r1]\nldr r2, [r3]\n"), (V{1, 3}));
  // A store whose base the previous store wrote back does not chain.
  EXPECT_EQ(Cycles("cortex-m4", "str r0, [r1], #4\nstr r2, [r1], #4\n"), (V{1, 2}));
}

TEST(Timing, AddressFromThePreviousResultWaitsACycle) {
  EXPECT_EQ(Cycles("cortex-m4", "adds r0, r0, #4\nldr r1, [r0]\n"), (V{1, 3}));
  EXPECT_EQ(Cycles("cortex-m4", "adds r0, r0, #4\nstr r1, [r0]\n"), (V{1, 2}));
  EXPECT_EQ(Cycles("cortex-m4", "adds r2, r2, #4\nldr r1, [r0]\n"), (V{1, 2}));
}

TEST(Timing, MultipleAndDual) {
  EXPECT_EQ(Cycles("cortex-m4", "ldrd r0, r1, [r2]\nstrd r0, r1, [r3]\n"), (V{3, 3}));
  EXPECT_EQ(Cycles("cortex-m4", "ldmia r0!, {r1, r2, r3}\npush {r4, r5, r6, r7, lr}\n"), (V{4, 6}));
  // An LDM is not pipelined with a load before it.
  EXPECT_EQ(Cycles("cortex-m4", "ldr r5, [r6]\nldmia r0, {r1, r2}\n"), (V{2, 3}));
}

TEST(Timing, BranchesAndRefills) {
  EXPECT_EQ(Cycles("cortex-m4", "1: subs r0, #1\nbne 1b\nb 1b\nbx lr\ncbz r0, 2f\n2: nop\n"),
            (V{1, 1, 1, 1, 1, 1}));
  const bf_core* m4 = bf_core_find("cortex-m4");
  absl::StatusOr<std::vector<AsmInsn>> t = Assemble("nop\nnop\nadd.w r0, r0, #1\n", kM4F);
  ASSERT_TRUE(t.ok()) << t.status();
  bf_insn narrow, wide;
  bf_thumb_decode((*t)[0].bytes.data(), 2, (*t)[0].address, &narrow);
  bf_thumb_decode((*t)[2].bytes.data(), 4, (*t)[2].address, &wide);
  EXPECT_EQ(bf_core_refill(m4, BF_REFILL_DIRECT, &narrow, (*t)[0].address), 1);
  EXPECT_EQ(bf_core_refill(m4, BF_REFILL_DIRECT, &wide, 0x1000), 1);  // word-aligned
  EXPECT_EQ(bf_core_refill(m4, BF_REFILL_DIRECT, &wide, 0x1002), 2);  // odd halfword
  EXPECT_EQ(bf_core_refill(m4, BF_REFILL_LOADED, &narrow, 0x1000), 3);
  // TBB: 2 (load) + 1 (add) + 3 (refill) = 6; LDR pc: 2 + 3; POP {r4, pc}: 1 + 2 + 3.
  EXPECT_EQ(Cycles("cortex-m4", "tbb [r0, r1]\nldr pc, [r0]\npop {r4, pc}\n"), (V{3, 2, 3}));
}

TEST(Timing, TheCalibrationLoopCostsWhatBoardConfSays) {
  // crt/boards/*/board.conf CALIBRATION_CYCLES_PER_ITERATION = 3 for the Cortex-M3 and M4:
  // SUBS (1) + BNE (1) + the refill of the taken BNE (P = 1).
  for (const char* core : {"cortex-m3", "cortex-m4f"}) {
    std::vector<int> c = Cycles(core, "1: subs r0, r0, #1\nbne 1b\n");
    const bf_core* k = bf_core_find(core);
    bf_insn subs;
    const uint8_t bytes[] = {0x01, 0x38};  // subs r0, #1
    bf_thumb_decode(bytes, 2, 0, &subs);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0] + c[1] + bf_core_refill(k, BF_REFILL_DIRECT, &subs, 0), 3) << core;
  }
}

TEST(Timing, ItFoldsOntoAPrecedingNarrowInstruction) {
  EXPECT_EQ(Cycles("cortex-m4", "cmp r0, #1\nit eq\nmoveq r1, #2\n"), (V{1, 0, 1}));
  EXPECT_EQ(Cycles("cortex-m4", "cmp.w r0, #1\nit eq\nmoveq r1, #2\n"), (V{1, 1, 1}));
}

TEST(Timing, FloatingPointOfTheCortexM4) {
  EXPECT_EQ(Cycles("cortex-m4f",
                   "vadd.f32 s0, s1, s2\nvmul.f32 s3, s4, s5\n"
                   "vmla.f32 s6, s7, s8\nvfma.f32 s9, s10, s11\n"
                   "vdiv.f32 s12, s13, s14\nvsqrt.f32 s15, s16\n"
                   "vldr s17, [r0]\nnop\nvstr s18, [r0]\nnop\nvldr d5, [r0]\n"
                   "vldmia r0, {s20-s23}\nvmov r1, s24\nvmov r1, r2, d6\n"
                   "vmrs APSR_nzcv, fpscr\n"),
            (V{1, 1, 3, 3, 14, 14, 2, 1, 2, 1, 3, 5, 2, 2, 1}));
  // Single FP loads and stores pipeline as LDR and STR do (README.md: an inference; the TRM
  // states the rules for the integer ones).
  EXPECT_EQ(Cycles("cortex-m4f", "vldr s0, [r0]\nvldr s1, [r0, #4]\nvstr s2, [r1]\n"),
            (V{2, 1, 1}));
  EXPECT_EQ(Cycles("cortex-m4f", "vstr s2, [r1]\nvldr s0, [r0]\n"), (V{2, 3}));
  // The next instruction using a result waits one cycle...
  EXPECT_EQ(Cycles("cortex-m4f", "vadd.f32 s0, s1, s2\nvadd.f32 s3, s0, s2\n"), (V{1, 2}));
  EXPECT_EQ(Cycles("cortex-m4f", "vmul.f32 s0, s1, s2\nvstr s0, [r0]\n"), (V{1, 3}));
  // ...except a multiply-accumulate taking it as its addend.
  EXPECT_EQ(Cycles("cortex-m4f", "vmul.f32 s0, s1, s2\nvmla.f32 s0, s3, s4\n"), (V{1, 3}));
  EXPECT_EQ(Cycles("cortex-m4f", "vmul.f32 s3, s1, s2\nvmla.f32 s0, s3, s4\n"), (V{1, 4}));
}

TEST(Timing, CoreNames) {
  for (const char* name : {"cortex-m3", "cortex-m4", "cortex-m4f", "cortex-m55"}) {
    const bf_core* c = bf_core_find(name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_STREQ(bf_core_name(c), name);
  }
  EXPECT_EQ(bf_core_find("cortex-m7"), nullptr);
  EXPECT_EQ(bf_core_find(nullptr), nullptr);
}

}  // namespace
}  // namespace benchfarm::cyclemodel
