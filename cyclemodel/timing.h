/*
 * timing.h: the cores' instruction timing — what one instruction costs in core clock cycles,
 * given the instruction before it, at zero wait states. Memory wait states are memory.h's;
 * putting instructions and memory together per executed block is model.h's.
 *
 * The tables and rules, and where each comes from, are in cyclemodel/README.md ("Timing
 * tables"). In short, for the Cortex-M3 and Cortex-M4 (Technical Reference Manuals, "Instruction
 * timings" and "Load/store timings"; the M4's floating-point table):
 *   - one cycle for data processing; multiplies per core (M3: MLA 2, UMULL/SMULL 4/5, UMLAL/SMLAL
 *     6/7 for full-width operands; M4: all single cycle); SDIV/UDIV 7 (an estimate: the TRMs say
 *     2 to 12 by the operands, which a QEMU 7.2 plugin cannot read);
 *   - LDR 2, pipelined to 1 after an LDR whose result it does not address with; STR 1 with an
 *     immediate offset, 2 with a register offset (1 after an LDR); a load right after a store one
 *     more; LDRD/STRD 3; LDM/STM/PUSH/POP 1+N; an address formed from the previous instruction's
 *     result one more;
 *   - branches: 1, plus a pipeline refill when taken (charged by the model when it sees where
 *     execution went): P = 1, 2 for a 32-bit target on an odd halfword, 3 after a PC loaded from
 *     memory (LDR pc, POP {pc}, TBB/TBH);
 *   - FPv4-SP: VADD/VSUB/VMUL/VABS/VNEG/VCVT/VCMP/VMOV 1, VMLA/VFMA families 3, VDIV/VSQRT 14,
 *     VLDR/VSTR 2 (3 for doubles), VLDM/VSTM 1+N, VMOV with core registers 2, VMRS/VMSR 1, and one
 *     more when the next instruction uses the result (not as a multiply-accumulate's addend).
 * The Cortex-M55 has no published cycle tables: it gets the Cortex-M4's, which is approximate
 * (it dual-issues some 16-bit pairs, predicts branches, and its MVE instructions are not modeled).
 *
 * C99, no globals that change: safe from any thread.
 */
#ifndef BENCHFARM_CYCLEMODEL_TIMING_H_
#define BENCHFARM_CYCLEMODEL_TIMING_H_

#include <stdint.h>

#include "thumb.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bf_core bf_core;

/* The core with this name: "cortex-m3", "cortex-m4", "cortex-m4f" (the M4 with its FPU: the same
 * table), "cortex-m55". NULL for any other. */
const bf_core* bf_core_find(const char* name);
const char* bf_core_name(const bf_core* core);
/* The names bf_core_find knows, space-separated (for error messages). */
const char* bf_core_names(void);

/* Cycles `insn` takes when executed right after `prev` (NULL: after a taken branch, or at the
 * start of what the model sees, so no pairing). A branch's cost here is when not taken; a taken
 * branch adds bf_core_refill(). Never less than 0. */
int bf_core_cycles(const bf_core* core, const bf_insn* insn, const bf_insn* prev);

/* What a taken branch adds, by how the branch found its target. */
typedef enum {
  BF_REFILL_NONE = 0, /* not a branch */
  BF_REFILL_DIRECT,   /* B, BL, B<cond>, CBZ/CBNZ, BX/BLX, MOV/ADD pc, WLS */
  BF_REFILL_LOADED,   /* LDR pc, LDM/POP {..pc}, TBB/TBH: the PC came from memory */
  BF_REFILL_LOOP_END  /* ARMv8.1-M LE */
} bf_refill_kind;
bf_refill_kind bf_refill_kind_of(const bf_insn* insn);
/* Cycles a taken branch of this kind adds when its target is the instruction `target` at
 * `target_address` (a 32-bit instruction on an odd halfword costs one more; NULL: unknown). */
int bf_core_refill(const bf_core* core, bf_refill_kind kind, const bf_insn* target,
                   uint32_t target_address);

#ifdef __cplusplus
}
#endif

#endif /* BENCHFARM_CYCLEMODEL_TIMING_H_ */
