// The Thumb decoder against Debian's assembler: every instruction class the timing tables cost,
// in the encodings arm-none-eabi-as produces, decodes to its class, size, registers, register
// list length and branch target. The whole text of the firmware images is also decoded with no
// unknown instruction in tests/cycle_model_test.cc.

#include "cyclemodel/thumb.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cyclemodel/testing/assemble.h"
#include "gtest/gtest.h"

namespace benchfarm::cyclemodel {
namespace {

constexpr char kM4F[] = "-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard";
constexpr char kM55[] = "-march=armv8.1-m.main+mve.fp+fp.dp";

struct Case {
  const char* source;
  bf_op op;
  int size;
};

bf_insn Decode(const AsmInsn& a) {
  bf_insn d;
  EXPECT_EQ(bf_thumb_decode(a.bytes.data(), a.bytes.size(), a.address, &d),
            static_cast<int>(a.bytes.size()))
      << a.text;
  return d;
}

// Assembles the cases for the Cortex-M4F and checks each one's class and size; the decoded
// instructions (none when the assembler failed).
std::vector<bf_insn> ExpectClasses(const std::vector<Case>& cases) {
  std::string source;
  for (const Case& c : cases) absl::StrAppend(&source, c.source, "\n");
  absl::StatusOr<std::vector<AsmInsn>> insns = Assemble(source, kM4F);
  EXPECT_TRUE(insns.ok()) << insns.status();
  if (!insns.ok()) return {};
  EXPECT_EQ(insns->size(), cases.size());
  std::vector<bf_insn> decoded;
  for (size_t i = 0; i < cases.size() && i < insns->size(); ++i) {
    decoded.push_back(Decode((*insns)[i]));
    EXPECT_STREQ(bf_op_name(decoded[i].op), bf_op_name(cases[i].op)) << cases[i].source;
    EXPECT_EQ(decoded[i].size, cases[i].size) << cases[i].source;
  }
  return decoded;
}

TEST(ThumbDecode, EveryClassInTheAssemblersEncodings) {
  const std::vector<Case> cases = {
      {"adds r0, r1, #1", BF_OP_ALU, 2},
      {"add.w r0, r1, r2, lsl #3", BF_OP_ALU, 4},
      {"movw r3, #0x1234", BF_OP_ALU, 4},
      {"movt r3, #0x1234", BF_OP_ALU, 4},
      {"ubfx r1, r2, #3, #5", BF_OP_ALU, 4},
      {"clz r1, r2", BF_OP_ALU, 4},
      {"lsl.w r1, r2, r3", BF_OP_ALU, 4},
      {"uxtb r1, r2", BF_OP_ALU, 2},
      {"cmp r1, #3", BF_OP_ALU, 2},
      {"rev r1, r2", BF_OP_ALU, 2},
      {"muls r0, r1, r0", BF_OP_MUL, 2},
      {"mul r0, r1, r2", BF_OP_MUL, 4},
      {"mla r0, r1, r2, r3", BF_OP_MLA, 4},
      {"mls r0, r1, r2, r3", BF_OP_MLA, 4},
      {"umull r0, r1, r2, r3", BF_OP_MULL, 4},
      {"smull r0, r1, r2, r3", BF_OP_MULL, 4},
      {"umlal r0, r1, r2, r3", BF_OP_MLAL, 4},
      {"smlal r0, r1, r2, r3", BF_OP_MLAL, 4},
      {"sdiv r0, r1, r2", BF_OP_DIV, 4},
      {"udiv r0, r1, r2", BF_OP_DIV, 4},
      {"smlad r0, r1, r2, r3", BF_OP_DSP_MUL, 4},
      {"smulbb r0, r1, r2", BF_OP_DSP_MUL, 4},
      {"smmla r0, r1, r2, r3", BF_OP_DSP_MUL, 4},
      {"smlalbb r0, r1, r2, r3", BF_OP_DSP_MLAL, 4},
      {"umaal r0, r1, r2, r3", BF_OP_DSP_MLAL, 4},
      {"sadd16 r0, r1, r2", BF_OP_DSP_ALU, 4},
      {"qadd r0, r1, r2", BF_OP_DSP_ALU, 4},
      {"sxtab r0, r1, r2", BF_OP_DSP_ALU, 4},
      {"pkhbt r0, r1, r2, lsl #16", BF_OP_DSP_ALU, 4},
      {"ldr r0, [r1, #4]", BF_OP_LOAD, 2},
      {"ldr.w r0, [r1, #400]", BF_OP_LOAD, 4},
      {"ldr r0, [r1, r2]", BF_OP_LOAD, 2},
      {"ldrb.w r0, [r1, r2, lsl #2]", BF_OP_LOAD, 4},
      {"ldrsh r0, [r1, r2]", BF_OP_LOAD, 2},
      {"ldr r0, [r1], #4", BF_OP_LOAD, 4},
      {"ldr r0, [sp, #8]", BF_OP_LOAD, 2},
      {"ldrex r0, [r1]", BF_OP_LOAD, 4},
      {"str r0, [r1, #4]", BF_OP_STORE, 2},
      {"str.w r0, [r1, r2, lsl #2]", BF_OP_STORE, 4},
      {"strb r0, [r1, #-4]!", BF_OP_STORE, 4},
      {"strex r0, r1, [r2]", BF_OP_STORE, 4},
      {"ldrd r0, r1, [r2, #8]", BF_OP_LOAD_DUAL, 4},
      {"strd r0, r1, [r2, #8]", BF_OP_STORE_DUAL, 4},
      {"ldmia r0!, {r1, r2, r3}", BF_OP_LOAD_MULTI, 2},
      {"ldmia.w r0, {r1, r2, r3, r4, r5}", BF_OP_LOAD_MULTI, 4},
      {"stmdb sp!, {r4, r5, r6, lr}", BF_OP_STORE_MULTI, 4},
      {"push {r4, lr}", BF_OP_STORE_MULTI, 2},
      {"pop {r4, pc}", BF_OP_LOAD_MULTI, 2},
      {"bx lr", BF_OP_BRANCH_REG, 2},
      {"blx r3", BF_OP_BRANCH_REG, 2},
      {"mov pc, r3", BF_OP_BRANCH_REG, 2},
      {"tbb [r0, r1]", BF_OP_TABLE_BRANCH, 4},
      {"tbh [r0, r1, lsl #1]", BF_OP_TABLE_BRANCH, 4},
      {"it eq", BF_OP_IT, 2},
      {"nop", BF_OP_NOP, 2},
      {"nop.w", BF_OP_NOP, 4},
      {"pld [r0]", BF_OP_NOP, 4},
      {"wfi", BF_OP_WAIT, 2},
      {"dmb", BF_OP_BARRIER, 4},
      {"isb", BF_OP_BARRIER, 4},
      {"mrs r0, primask", BF_OP_SYSTEM, 4},
      {"msr basepri, r0", BF_OP_SYSTEM, 4},
      {"cpsid i", BF_OP_SYSTEM, 2},
      {"svc #1", BF_OP_EXCEPTION, 2},
      {"bkpt #0", BF_OP_EXCEPTION, 2},
      {".inst.w 0xf3af80c0", BF_OP_MARK, 4},
      {".inst.w 0xf3af80c1", BF_OP_MARK, 4},
      {".inst.w 0xf3af80e0", BF_OP_NOP, 4},
  };
  ExpectClasses(cases);
}

TEST(ThumbDecode, FloatingPoint) {
  const std::vector<Case> cases = {
      {"vadd.f32 s0, s1, s2", BF_OP_FP_ALU, 4},
      {"vmul.f32 s0, s1, s2", BF_OP_FP_ALU, 4},
      {"vabs.f32 s0, s1", BF_OP_FP_ALU, 4},
      {"vneg.f32 s0, s1", BF_OP_FP_ALU, 4},
      {"vcmp.f32 s0, s1", BF_OP_FP_ALU, 4},
      {"vcvt.s32.f32 s0, s1", BF_OP_FP_ALU, 4},
      {"vmov.f32 s0, #1.0", BF_OP_FP_ALU, 4},
      {"vmov.f32 s0, s1", BF_OP_FP_ALU, 4},
      {"vmla.f32 s0, s1, s2", BF_OP_FP_MAC, 4},
      {"vnmls.f32 s0, s1, s2", BF_OP_FP_MAC, 4},
      {"vfma.f32 s0, s1, s2", BF_OP_FP_FMA, 4},
      {"vfnms.f32 s0, s1, s2", BF_OP_FP_FMA, 4},
      {"vdiv.f32 s0, s1, s2", BF_OP_FP_DIV, 4},
      {"vsqrt.f32 s0, s1", BF_OP_FP_SQRT, 4},
      {"vldr s0, [r0, #4]", BF_OP_FP_LOAD, 4},
      {"vstr s0, [r0, #4]", BF_OP_FP_STORE, 4},
      {"vldmia r0!, {s0-s3}", BF_OP_FP_LOAD_MULTI, 4},
      {"vpush {s16-s17}", BF_OP_FP_STORE_MULTI, 4},
      {"vmov r0, s1", BF_OP_FP_MOV_CORE, 4},
      {"vmov s1, r0", BF_OP_FP_MOV_CORE, 4},
      {"vmov r0, r1, d1", BF_OP_FP_MOV_CORE2, 4},
      {"vmrs APSR_nzcv, fpscr", BF_OP_FP_SYSTEM, 4},
  };
  const std::vector<bf_insn> d = ExpectClasses(cases);
  ASSERT_EQ(d.size(), cases.size());
  // Registers: vmla s0, s1, s2 reads s0 (the addend), s1, s2 and writes s0.
  const bf_insn& mla = d[8];
  EXPECT_EQ(mla.fp_reads, 0x7u);
  EXPECT_EQ(mla.fp_writes, 0x1u);
  const bf_insn& vldm = d[16];
  EXPECT_EQ(vldm.nregs, 4);
  EXPECT_EQ(vldm.fp_writes, 0xFu);
  EXPECT_TRUE(vldm.flags & BF_INSN_WRITEBACK);
  const bf_insn& to_core = d[18];
  EXPECT_EQ(to_core.writes, 1u << 0);
  EXPECT_EQ(to_core.fp_reads, 1u << 1);
}

TEST(ThumbDecode, RegistersAndAddresses) {
  absl::StatusOr<std::vector<AsmInsn>> insns = Assemble(
      "ldr r0, [r1, r2]\n"
      "ldr r3, [r4], #4\n"
      "str r5, [r6, #8]\n"
      "ldmia r0!, {r1, r2, r3}\n"
      "ldmia r1, {r1, r2}\n"
      "pop {r4, r5, pc}\n"
      "push {r4, r5, r6, r7, lr}\n"
      "adds r2, r2, r3\n"
      "umlal r0, r1, r2, r3\n"
      "ldrd r2, r3, [r0], #8\n",
      kM4F);
  ASSERT_TRUE(insns.ok()) << insns.status();
  bf_insn d = Decode((*insns)[0]);
  EXPECT_EQ(d.addr, (1u << 1) | (1u << 2));
  EXPECT_EQ(d.writes, 1u << 0);
  d = Decode((*insns)[1]);
  EXPECT_EQ(d.addr, 1u << 4);
  EXPECT_EQ(d.writes, (1u << 3) | (1u << 4));
  EXPECT_TRUE(d.flags & BF_INSN_WRITEBACK);
  d = Decode((*insns)[2]);
  EXPECT_EQ(d.reads, (1u << 5) | (1u << 6));
  EXPECT_EQ(d.writes, 0u);
  d = Decode((*insns)[3]);
  EXPECT_EQ(d.nregs, 3);
  EXPECT_EQ(d.writes, 0xFu);
  d = Decode((*insns)[4]);  // loads its base: no writeback
  EXPECT_EQ(d.nregs, 2);
  EXPECT_FALSE(d.flags & BF_INSN_WRITEBACK);
  d = Decode((*insns)[5]);
  EXPECT_EQ(d.nregs, 3);
  EXPECT_TRUE(d.flags & BF_INSN_LOADS_PC);
  EXPECT_TRUE(d.flags & BF_INSN_WRITES_PC);
  d = Decode((*insns)[6]);
  EXPECT_EQ(d.nregs, 5);
  d = Decode((*insns)[7]);
  EXPECT_EQ(d.reads, (1u << 2) | (1u << 3));
  EXPECT_EQ(d.writes, 1u << 2);
  d = Decode((*insns)[8]);
  EXPECT_EQ(d.reads, 0xFu);
  EXPECT_EQ(d.writes, 0x3u);
  d = Decode((*insns)[9]);
  EXPECT_EQ(d.writes, 0xDu);
  EXPECT_EQ(d.nregs, 2);
}

TEST(ThumbDecode, BranchTargetsAndLiterals) {
  absl::StatusOr<std::vector<AsmInsn>> insns = Assemble(
      "1: nop\n"
      "  bne 1b\n"
      "  beq.w 2f\n"
      "  b 1b\n"
      "  b.w 2f\n"
      "  bl 2f\n"
      "  cbz r0, 2f\n"
      "  cbnz r1, 2f\n"
      "  ldr r0, 3f\n"
      "  ldr.w r1, 3f\n"
      "  nop\n"
      "2: nop\n"
      "  .balign 4\n"
      "3: .word 0\n",
      kM4F);
  ASSERT_TRUE(insns.ok()) << insns.status();
  const uint32_t one = (*insns)[0].address;
  const uint32_t two = (*insns)[11].address;
  EXPECT_EQ(Decode((*insns)[1]).target, one);
  EXPECT_EQ(Decode((*insns)[1]).op, BF_OP_BRANCH_COND);
  EXPECT_EQ(Decode((*insns)[2]).target, two);
  EXPECT_EQ(Decode((*insns)[3]).target, one);
  EXPECT_EQ(Decode((*insns)[3]).op, BF_OP_BRANCH);
  EXPECT_EQ(Decode((*insns)[4]).target, two);
  bf_insn bl = Decode((*insns)[5]);
  EXPECT_EQ(bl.target, two);
  EXPECT_TRUE(bl.flags & BF_INSN_LINK);
  EXPECT_EQ(Decode((*insns)[6]).target, two);
  EXPECT_EQ(Decode((*insns)[7]).op, BF_OP_BRANCH_COND);
  const uint32_t three = (two + 2 + 3) & ~3u;
  bf_insn lit = Decode((*insns)[8]);
  EXPECT_TRUE(lit.flags & BF_INSN_LITERAL);
  EXPECT_EQ(lit.target, three);
  EXPECT_EQ(Decode((*insns)[9]).target, three);
}

TEST(ThumbDecode, LowOverheadLoopsOfArmv81M) {
  absl::StatusOr<std::vector<AsmInsn>> insns = Assemble(
      "1: dls lr, r3\n"
      "2: adds r0, #1\n"
      "  le lr, 2b\n"
      "  wls lr, r2, 3f\n"
      "  nop\n"
      "3: nop\n",
      kM55);
  ASSERT_TRUE(insns.ok()) << insns.status();
  EXPECT_EQ(Decode((*insns)[0]).op, BF_OP_ALU);
  bf_insn le = Decode((*insns)[2]);
  EXPECT_EQ(le.op, BF_OP_LOOP_END);
  EXPECT_EQ(le.target, (*insns)[1].address);
  bf_insn wls = Decode((*insns)[3]);
  EXPECT_EQ(wls.op, BF_OP_BRANCH_COND);
  EXPECT_EQ(wls.target, (*insns)[5].address);
}

TEST(ThumbDecode, ShortInputIsNotRead) {
  const uint8_t wide[] = {0x4f, 0xf0};  // first half of a 32-bit instruction
  bf_insn d;
  EXPECT_EQ(bf_thumb_decode(wide, 2, 0, &d), 0);
  EXPECT_EQ(bf_thumb_decode(wide, 0, 0, &d), 0);
  const uint8_t narrow[] = {0x00, 0xbf};  // nop
  EXPECT_EQ(bf_thumb_decode(narrow, 2, 0, &d), 2);
  EXPECT_EQ(d.op, BF_OP_NOP);
}

}  // namespace
}  // namespace benchfarm::cyclemodel
