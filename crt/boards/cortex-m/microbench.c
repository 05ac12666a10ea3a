/*
 * microbench.c: one assembly loop per instruction timing rule, so the cycle model of an emulated
 * board (cyclemodel/) can be checked against silicon of the same core: the same loops run on both,
 * timed by each board's timer (DWT cycles on a real Cortex-M, the model's cycles on an emulated
 * one), and `farmctl board check-model` prints them side by side.
 *
 *   benchfarm.Microbenchmarks() -> str       the names, comma-separated, in index order
 *   benchfarm.Microbench(int64 index, int64 iterations) -> float64 seconds
 *                                            runs loop `index` `iterations` times (1..2^32 - 1)
 *                                            between TVMPlatformTimerStart and Stop
 *
 * Each loop is `body; subs n, #1; bne` — the body repeats its instruction a few times so the loop's
 * own 3 cycles are a small share; timing two iteration counts and taking the difference removes
 * the timer calls and leaves the cycles of one iteration. What each body should cost by the
 * Technical Reference Manuals is written beside it (the loop adds 3: SUBS 1, BNE 1 + refill 1);
 * tests/cycle_model_test.cc checks the model against exactly these numbers.
 *
 * The loops use r2-r5 (and s0-s15) and a static buffer; the counter and the buffer's address are
 * in low registers the compiler picks. Floating-point and DSP loops exist only where the core has
 * them. The art_* loops are about a flash with wait states behind ST's ART accelerator (64-line
 * instruction cache, prefetch): on memory without wait states they cost what their instructions do.
 */
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/crt.h>
#include <tvm/runtime/crt/platform.h>

#include "bf_bsp.h"

static uint32_t g_bf_mb_buffer[8] __attribute__((aligned(8)));
static uint32_t g_bf_mb_self; /* holds its own address: a chain of dependent loads */

#define BF_MB_CLOBBERS "r2", "r3", "r4", "r5", "cc", "memory"
#define BF_MB_FP_CLOBBERS                                                                        \
  "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", \
      "s15"

/* One loop: SETUP once, then BODY; SUBS; BNE, `n` times (n >= 1). */
#define BF_MB_LOOP(setup, body, ...)                                                \
  __asm__ volatile(setup "\n.balign 4\n1:\n" body "\nsubs %[n], %[n], #1\nbne 1b\n" \
                   : [n] "+l"(n)                                                    \
                   : [buf] "l"(g_bf_mb_buffer), [self] "l"(&g_bf_mb_self)           \
                   : __VA_ARGS__)

#define BF_MB(name, setup, body) \
  static void BfMb_##name(uint32_t n) { BF_MB_LOOP(setup, body, BF_MB_CLOBBERS); }
#define BF_MB_FP(name, setup, body)                             \
  static void BfMb_##name(uint32_t n) {                         \
    BF_MB_LOOP(setup, body, BF_MB_CLOBBERS, BF_MB_FP_CLOBBERS); \
  }

/* 8 x ADDS: 8. */
BF_MB(alu, "", ".rept 8\nadds r2, r2, #1\n.endr")
/* 8 x MUL: 8. */
BF_MB(mul, "movs r3, #3\nmovs r4, #5", ".rept 8\nmul r2, r3, r4\n.endr")
/* 8 x MLA: M3 2 each (16), M4 1 (8). */
BF_MB(mla, "movs r3, #3\nmovs r4, #5", ".rept 8\nmla r2, r3, r4, r2\n.endr")
/* Long multiplies of full-width operands (no early termination), 4 each:
 * M3 UMULL 4, SMULL 5, UMLAL 6, SMLAL 7 (16, 20, 24, 28); M4 1 (4). */
#define BF_MB_WIDE "movw r4, #0x5678\nmovt r4, #0x1234\nmovw r5, #0x4321\nmovt r5, #0x7654"
BF_MB(umull, BF_MB_WIDE, ".rept 4\numull r2, r3, r4, r5\n.endr")
BF_MB(smull, BF_MB_WIDE, ".rept 4\nsmull r2, r3, r4, r5\n.endr")
BF_MB(umlal, BF_MB_WIDE, ".rept 4\numlal r2, r3, r4, r5\n.endr")
BF_MB(smlal, BF_MB_WIDE, ".rept 4\nsmlal r2, r3, r4, r5\n.endr")
/* 4 x UDIV/SDIV of 1000 by 7: 2 to 12 each by the TRMs; the model's estimate is 7 (28). */
BF_MB(udiv, "movw r4, #1000\nmovs r5, #7", ".rept 4\nudiv r2, r4, r5\n.endr")
BF_MB(sdiv, "movw r4, #1000\nmovs r5, #7", ".rept 4\nsdiv r2, r4, r5\n.endr")
/* 8 independent LDRs: the first 2, each next one pipelined 1 (9). */
BF_MB(load_independent, "",
      ".rept 2\nldr r2, [%[buf]]\nldr r3, [%[buf], #4]\nldr r4, [%[buf], #8]\n"
      "ldr r5, [%[buf], #12]\n.endr")
/* 8 LDRs each addressed with the previous one's result: 2, then 2 + 1 each (23). */
BF_MB(load_dependent, "mov r2, %[self]", ".rept 8\nldr r2, [r2]\n.endr")
/* 4 x (ADDS r2; LDR [r2]): the address waits a cycle for the ALU result, 1 + 3 (16). */
BF_MB(load_after_alu, "mov r2, %[buf]", ".rept 4\nadds r2, r2, #0\nldr r3, [r2]\n.endr")
/* 8 STRs with an immediate offset: 1 each (8). */
BF_MB(store, "", ".rept 4\nstr r2, [%[buf]]\nstr r3, [%[buf], #4]\n.endr")
/* 8 STRs with a register offset: 2 each (16). */
BF_MB(store_register_offset, "movs r3, #0", ".rept 8\nstr r2, [%[buf], r3]\n.endr")
/* 4 x (STR; LDR): the load waits for the store's data phase, 1 + 3 (16). */
BF_MB(store_then_load, "", ".rept 4\nstr r2, [%[buf]]\nldr r3, [%[buf], #4]\n.endr")
/* 4 x LDRD: 3 each (12). */
BF_MB(load_dual, "", ".rept 4\nldrd r2, r3, [%[buf]]\n.endr")
/* 4 x LDM of 2 and of 4 registers: 1 + N each (12, 20). */
BF_MB(ldm2, "", ".rept 4\nldmia.w %[buf], {r2, r3}\n.endr")
BF_MB(ldm4, "", ".rept 4\nldmia.w %[buf], {r2, r3, r4, r5}\n.endr")
/* 2 x (PUSH; POP) of 4 registers: 5 + 5 each (20). */
BF_MB(push_pop, "", ".rept 2\npush {r2, r3, r4, r5}\npop {r2, r3, r4, r5}\n.endr")
/* CMP, then 4 taken BEQs over a NOP to a 16-bit instruction: 1 + 4 x (1 + P = 1) (9). */
BF_MB(branch_taken, "", "cmp r2, r2\n.rept 4\nbeq 2f\nnop\n2:\n.endr")
/* CMP, then 8 BNEs not taken: 1 + 8 x 1 (9). */
BF_MB(branch_not_taken, "", "cmp r2, r2\n.rept 8\nbne 2f\n.endr\n2:")
/* 4 x (B.N to a 32-bit ADD.W on an odd halfword; NOP): 1 + (P = 2) + 1 + 1 (20). */
BF_MB(branch_to_unaligned_wide, "", ".rept 4\nb.n 2f\n2: add.w r2, r2, #1\nnop\n.endr")
/* 4 x (BL to a BX LR): BL 1 + P 1, BX 1 + P 1 (16). The callee is after the loop. */
static void BfMb_call_return(uint32_t n) {
  __asm__ volatile(
      ".balign 4\n1:\n.rept 4\nbl 3f\n.endr\nsubs %[n], %[n], #1\nbne 1b\nb 4f\n3: bx lr\n4:\n"
      : [n] "+l"(n)
      :
      : "lr", BF_MB_CLOBBERS);
}
/* The ART accelerator (the loop starts a 32-byte block):
 *   art_branch_chain_warm  48 B.W, each to the next 32-byte block: 48 x (1 + P 1) (99); after the
 *                          first iteration all 49 target lines are in the 64-line cache: no stall;
 *   art_branch_chain_cold  the same with 80: 81 target lines cycle through 64, so every one misses:
 *                          + 81 x WAIT_STATES (F4 at 5: 163 + 405 = 568);
 *   art_sequential         62 ADD.W (4 per 128-bit line), SUBS, BNE: 16 lines, 15 of them
 *                          reached sequentially, each waiting for the prefetch: WS + 1 - 4 cycles
 *                          (F4: 65 + 15 x 2 = 95). */
BF_MB(art_branch_chain_warm, ".balign 32", ".rept 48\nb.w .+32\n.balign 32\n.endr")
BF_MB(art_branch_chain_cold, ".balign 32", ".rept 80\nb.w .+32\n.balign 32\n.endr")
BF_MB(art_sequential, ".balign 16", ".rept 62\nadd.w r2, r2, #1\n.endr")
#if defined(__ARM_FEATURE_DSP)
/* 8 x SMLAD: 1 each (8). */
BF_MB(smlad, "movs r3, #3\nmovs r4, #5", ".rept 8\nsmlad r2, r3, r4, r2\n.endr")
#endif
#if defined(__ARM_FP)
#define BF_MB_FP_SETUP "vmov.f32 s8, #1.0\nvmov.f32 s9, #1.5"
/* 8 independent VADDs: 1 each (8); 8 VADDs each using the previous result: 1 + 7 x 2 (15). */
BF_MB_FP(vadd, BF_MB_FP_SETUP,
         "vadd.f32 s0, s8, s9\nvadd.f32 s1, s8, s9\nvadd.f32 s2, s8, s9\nvadd.f32 s3, s8, s9\n"
         "vadd.f32 s4, s8, s9\nvadd.f32 s5, s8, s9\nvadd.f32 s6, s8, s9\nvadd.f32 s7, s8, s9")
BF_MB_FP(vadd_dependent, BF_MB_FP_SETUP, ".rept 8\nvadd.f32 s0, s0, s9\n.endr")
/* 8 VMLAs into 8 accumulators, and 8 into one (the addend comes a cycle late): 3 each (24). */
BF_MB_FP(vmla, BF_MB_FP_SETUP,
         "vmla.f32 s0, s8, s9\nvmla.f32 s1, s8, s9\nvmla.f32 s2, s8, s9\nvmla.f32 s3, s8, s9\n"
         "vmla.f32 s4, s8, s9\nvmla.f32 s5, s8, s9\nvmla.f32 s6, s8, s9\nvmla.f32 s7, s8, s9")
BF_MB_FP(vmla_accumulate, BF_MB_FP_SETUP, ".rept 8\nvmla.f32 s0, s8, s9\n.endr")
/* 8 VFMAs into one accumulator: 3 each (24). */
BF_MB_FP(vfma, BF_MB_FP_SETUP, ".rept 8\nvfma.f32 s0, s8, s9\n.endr")
/* 4 VDIVs and 4 VSQRTs, independent: 14 each (56). */
BF_MB_FP(vdiv, BF_MB_FP_SETUP,
         "vdiv.f32 s0, s8, s9\nvdiv.f32 s1, s8, s9\nvdiv.f32 s2, s8, s9\nvdiv.f32 s3, s8, s9")
BF_MB_FP(vsqrt, BF_MB_FP_SETUP,
         "vsqrt.f32 s0, s9\nvsqrt.f32 s1, s9\nvsqrt.f32 s2, s9\nvsqrt.f32 s3, s9")
/* 8 VLDRs: the first 2, each next one pipelined 1 (9: single FP loads are taken to pipeline as
 * LDRs do); 4 VLDMs of 4 registers: 1 + 4 each (20); 8 VMOVs to a core register: 2 each (16). */
BF_MB_FP(vldr, "", ".rept 4\nvldr s0, [%[buf]]\nvldr s1, [%[buf], #4]\n.endr")
BF_MB_FP(vldm4, "", ".rept 4\nvldmia %[buf], {s0-s3}\n.endr")
BF_MB_FP(vmov_to_core, BF_MB_FP_SETUP, ".rept 8\nvmov r2, s8\n.endr")
#endif

typedef struct {
  const char* name;
  void (*run)(uint32_t n);
} BfMicrobenchEntry;

#define BF_MB_ENTRY(name) \
  { #name, BfMb_##name }
static const BfMicrobenchEntry kBfMicrobenchmarks[] = {
    BF_MB_ENTRY(alu),
    BF_MB_ENTRY(mul),
    BF_MB_ENTRY(mla),
    BF_MB_ENTRY(umull),
    BF_MB_ENTRY(smull),
    BF_MB_ENTRY(umlal),
    BF_MB_ENTRY(smlal),
    BF_MB_ENTRY(udiv),
    BF_MB_ENTRY(sdiv),
    BF_MB_ENTRY(load_independent),
    BF_MB_ENTRY(load_dependent),
    BF_MB_ENTRY(load_after_alu),
    BF_MB_ENTRY(store),
    BF_MB_ENTRY(store_register_offset),
    BF_MB_ENTRY(store_then_load),
    BF_MB_ENTRY(load_dual),
    BF_MB_ENTRY(ldm2),
    BF_MB_ENTRY(ldm4),
    BF_MB_ENTRY(push_pop),
    BF_MB_ENTRY(branch_taken),
    BF_MB_ENTRY(branch_not_taken),
    BF_MB_ENTRY(branch_to_unaligned_wide),
    BF_MB_ENTRY(call_return),
    BF_MB_ENTRY(art_branch_chain_warm),
    BF_MB_ENTRY(art_branch_chain_cold),
    BF_MB_ENTRY(art_sequential),
#if defined(__ARM_FEATURE_DSP)
    BF_MB_ENTRY(smlad),
#endif
#if defined(__ARM_FP)
    BF_MB_ENTRY(vadd),
    BF_MB_ENTRY(vadd_dependent),
    BF_MB_ENTRY(vmla),
    BF_MB_ENTRY(vmla_accumulate),
    BF_MB_ENTRY(vfma),
    BF_MB_ENTRY(vdiv),
    BF_MB_ENTRY(vsqrt),
    BF_MB_ENTRY(vldr),
    BF_MB_ENTRY(vldm4),
    BF_MB_ENTRY(vmov_to_core),
#endif
};
#define BF_MB_COUNT ((int)(sizeof(kBfMicrobenchmarks) / sizeof(kBfMicrobenchmarks[0])))

/* "alu,mul,...": built once at registration (at most 32 bytes a name). */
static char g_bf_mb_names[BF_MB_COUNT * 32];

static const char kBfMbArgs[] = "benchfarm.Microbench: expects (int64 index, int64 iterations)";
static const char kBfMbRange[] =
    "benchfarm.Microbench: index outside benchfarm.Microbenchmarks, or iterations not 1..2^32-1";
static const char kBfMbTimer[] = "benchfarm.Microbench: the platform timer failed";

static int BfMicrobench(TVMValue* args, int* type_codes, int num_args, TVMValue* ret,
                        int* ret_tcode, void* resource_handle) {
  double seconds = 0.0;
  tvm_crt_error_t err;
  (void)resource_handle;
  if (num_args != 2 || type_codes[0] != kTVMArgInt || type_codes[1] != kTVMArgInt) {
    TVMAPISetLastError(kBfMbArgs);
    return kTvmErrorFunctionCallInvalidArg;
  }
  if (args[0].v_int64 < 0 || args[0].v_int64 >= BF_MB_COUNT || args[1].v_int64 < 1 ||
      args[1].v_int64 > (int64_t)0xFFFFFFFF) {
    TVMAPISetLastError(kBfMbRange);
    return kTvmErrorFunctionCallInvalidArg;
  }
  g_bf_mb_self = (uint32_t)(uintptr_t)&g_bf_mb_self;
  err = TVMPlatformTimerStart();
  if (err == kTvmErrorNoError) {
    kBfMicrobenchmarks[args[0].v_int64].run((uint32_t)args[1].v_int64);
    err = TVMPlatformTimerStop(&seconds);
  }
  if (err != kTvmErrorNoError) {
    TVMAPISetLastError(kBfMbTimer);
    return err;
  }
  ret->v_float64 = seconds;
  *ret_tcode = kTVMArgFloat;
  return 0;
}

static int BfMicrobenchmarks(TVMValue* args, int* type_codes, int num_args, TVMValue* ret,
                             int* ret_tcode, void* resource_handle) {
  (void)args;
  (void)type_codes;
  (void)num_args;
  (void)resource_handle;
  ret->v_str = g_bf_mb_names;
  *ret_tcode = kTVMStr;
  return 0;
}

int bf_bsp_microbench_register(void) {
  size_t at = 0;
  int i;
  for (i = 0; i < BF_MB_COUNT; i++) {
    const char* s = kBfMicrobenchmarks[i].name;
    if (i > 0) g_bf_mb_names[at++] = ',';
    while (*s != '\0' && at + 1u < sizeof(g_bf_mb_names)) g_bf_mb_names[at++] = *s++;
  }
  g_bf_mb_names[at] = '\0';
  if (TVMCrtFuncRegisterGlobal("benchfarm.Microbench", BfMicrobench, 0) != 0) return -1;
  return TVMCrtFuncRegisterGlobal("benchfarm.Microbenchmarks", BfMicrobenchmarks, 0) != 0 ? -1 : 0;
}
