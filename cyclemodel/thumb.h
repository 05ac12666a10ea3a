/*
 * thumb.h: decodes one Thumb instruction (ARMv7-M, ARMv7E-M DSP, FPv4/FPv5 floating point, and the
 * ARMv8-M instructions a Cortex-M55 scalar build emits) into what a timing model needs: its size,
 * its timing class, the registers it reads, writes and forms an address from, the length of a
 * register list, and a direct branch target. It does not execute anything and never reads past
 * the bytes it is given.
 *
 * Used by the cycle model (cyclemodel/model.h) inside QEMU (cyclemodel/plugin.c), where every
 * instruction is decoded once, when QEMU translates it, and by the host-side tools and tests.
 *
 * Encodings follow the ARMv7-M Architecture Reference Manual (ARM DDI 0403), chapter A5 ("The Thumb
 * instruction set encoding") and A6 (floating point). An encoding this decoder does not know (MVE,
 * coprocessors other than the FPU, ...) decodes as BF_OP_UNKNOWN with its size; the model costs it
 * one cycle and counts it, so a report can say how much it did not model.
 *
 * C99, no heap, no globals: safe to call from any thread.
 */
#ifndef BENCHFARM_CYCLEMODEL_THUMB_H_
#define BENCHFARM_CYCLEMODEL_THUMB_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Timing classes. The cost of each class per core is in timing.c. */
typedef enum {
  BF_OP_UNKNOWN = 0,
  BF_OP_ALU,      /* data processing, moves, shifts, extends, bit fields, saturate, CLZ, REV, ADR */
  BF_OP_MUL,      /* MUL (32 x 32 -> 32) */
  BF_OP_MLA,      /* MLA, MLS */
  BF_OP_MULL,     /* UMULL, SMULL */
  BF_OP_MLAL,     /* UMLAL, SMLAL, UMAAL */
  BF_OP_DSP_MUL,  /* ARMv7E-M multiplies: SMLA<x><y>, SMUL<x><y>, SMLAD, SMUAD, SMMLA, SMLAW, ... */
  BF_OP_DSP_MLAL, /* SMLAL<x><y>, SMLALD, SMLSLD */
  BF_OP_DSP_ALU,  /* ARMv7E-M single-cycle DSP: parallel add/sub, QADD, SEL, USAD8, PKH, SXTAB16 */
  BF_OP_DIV,      /* SDIV, UDIV */
  BF_OP_LOAD,     /* LDR, LDRB, LDRH, LDRSB, LDRSH (immediate, register, literal), LDREX* */
  BF_OP_STORE,    /* STR, STRB, STRH, STREX* */
  BF_OP_LOAD_DUAL,    /* LDRD */
  BF_OP_STORE_DUAL,   /* STRD */
  BF_OP_LOAD_MULTI,   /* LDM, POP */
  BF_OP_STORE_MULTI,  /* STM, PUSH */
  BF_OP_BRANCH,       /* B, BL: direct, always taken */
  BF_OP_BRANCH_COND,  /* B<cond>, CBZ, CBNZ: direct, taken or not */
  BF_OP_BRANCH_REG,   /* BX, BLX (register) */
  BF_OP_TABLE_BRANCH, /* TBB, TBH */
  BF_OP_IT,
  BF_OP_NOP,       /* NOP, YIELD, SEV, DBG, unallocated hints, PLD/PLI */
  BF_OP_MARK,      /* benchfarm's interval markers: HINT.W #0xC0..0xDF (a NOP on silicon) */
  BF_OP_BARRIER,   /* DMB, DSB, ISB */
  BF_OP_SYSTEM,    /* MRS, MSR, CPS, CLREX */
  BF_OP_WAIT,      /* WFI, WFE */
  BF_OP_EXCEPTION, /* SVC, BKPT, UDF */
  /* Floating point (FPv4-SP / FPv5). */
  BF_OP_FP_ALU,   /* VADD, VSUB, VMUL, VNMUL, VABS, VNEG, VCMP, VCVT, VMOV (immediate, register) */
  BF_OP_FP_MAC,   /* VMLA, VMLS, VNMLA, VNMLS (chained) */
  BF_OP_FP_FMA,   /* VFMA, VFMS, VFNMA, VFNMS (fused) */
  BF_OP_FP_DIV,   /* VDIV */
  BF_OP_FP_SQRT,  /* VSQRT */
  BF_OP_FP_LOAD,  /* VLDR */
  BF_OP_FP_STORE, /* VSTR */
  BF_OP_FP_LOAD_MULTI,  /* VLDM, VPOP */
  BF_OP_FP_STORE_MULTI, /* VSTM, VPUSH */
  BF_OP_FP_MOV_CORE,    /* VMOV between one core register and one S register (or a D half) */
  BF_OP_FP_MOV_CORE2,   /* VMOV between two core registers and two S registers or one D */
  BF_OP_FP_SYSTEM,      /* VMRS, VMSR */
  BF_OP_LOOP_END,       /* ARMv8.1-M LE, LETP: back to the loop's start while iterations remain */
  BF_OP_COUNT
} bf_op;

/* Flags. */
#define BF_INSN_WRITES_PC 0x0001u /* a branch: PC written (B, BX, POP {pc}, LDR pc, MOV pc) */
#define BF_INSN_LOADS_PC 0x0002u  /* PC loaded from memory (LDR pc, LDM/POP with pc) */
#define BF_INSN_LITERAL 0x0004u   /* PC-relative load: its address is `target` */
#define BF_INSN_STORE_REG_OFFSET 0x0008u /* a store with a register offset */
#define BF_INSN_WRITEBACK 0x0010u        /* base register written back (pre/post-index, LDM !) */
#define BF_INSN_DOUBLE 0x0020u           /* a floating-point instruction on doubles (size 64) */
#define BF_INSN_IN_IT 0x0040u            /* set by the caller's IT tracking, not by the decoder */
#define BF_INSN_LINK 0x0080u             /* BL, BLX: writes LR */
#define BF_INSN_SIGNED 0x0100u           /* SMULL, SMLAL (a cycle more than unsigned on an M3) */

typedef struct {
  uint8_t size;  /* 2 or 4 bytes; 0 when not decodable (too few bytes) */
  uint8_t op;    /* bf_op */
  uint8_t nregs; /* LDM/STM/PUSH/POP: registers in the list; VLDM/VSTM: words (S registers) */
  uint8_t mark;  /* BF_OP_MARK: the hint's immediate (0xC0..0xDF) */
  uint16_t flags;
  uint16_t reads;     /* core registers read, bit n = Rn (r15 = pc) */
  uint16_t writes;    /* core registers written */
  uint16_t addr;      /* core registers an address is formed from (loads, stores, TBB/TBH) */
  uint32_t target;    /* direct branches: the target address; literal loads: the address read */
  uint32_t fp_reads;  /* S registers read (a D register sets both of its S bits; D16+ ignored) */
  uint32_t fp_writes; /* S registers written */
  uint8_t it_mask;    /* BF_OP_IT: how many instructions the block covers (1..4) */
} bf_insn;

/* The markers benchfarm's firmware places around each timed interval (crt/boards/cortex-m). They
 * are 32-bit unallocated hints, HINT.W #imm (encoding 0xF3AF80xx), which ARMv7-M and ARMv8-M
 * execute as NOPs. */
#define BF_MARK_INTERVAL_START 0xC0u
#define BF_MARK_INTERVAL_STOP 0xC1u

/* Decodes the instruction at `bytes` (little-endian halfwords, `avail` bytes readable) at address
 * `address`. Returns its size (2 or 4), or 0 if `avail` is too short for it (out is then zeroed).
 * Every encoding decodes to something; unknown ones are BF_OP_UNKNOWN. */
int bf_thumb_decode(const uint8_t* bytes, size_t avail, uint32_t address, bf_insn* out);

/* The class's name ("alu", "load", "fp_mac", ...), for reports and tests. */
const char* bf_op_name(int op);

#ifdef __cplusplus
}
#endif

#endif /* BENCHFARM_CYCLEMODEL_THUMB_H_ */
