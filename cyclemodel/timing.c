/*
 * timing.c: the cores' timing tables and pairing rules (timing.h; sources in README.md).
 */
#include "timing.h"

#include <stddef.h>
#include <string.h>

struct bf_core {
  const char* name;
  uint8_t cost[BF_OP_COUNT]; /* base cycles by class (LDM/STM and VLDM/VSTM: 1 + N on top) */
  uint8_t smull_extra;       /* SMULL/SMLAL over UMULL/UMLAL */
  uint8_t refill_direct;     /* P of a branch whose target the core fetched early */
  uint8_t refill_loaded;     /* P after the PC was loaded from memory */
  uint8_t refill_loop_end;   /* what a taken LE adds (low-overhead loops) */
  uint8_t fp_result_stall;   /* the next instruction uses an FP result */
};

/* Classes with their cost; anything not listed costs 1. */
#define BF_M_COMMON                                                                             \
  [BF_OP_UNKNOWN] = 1, [BF_OP_ALU] = 1, [BF_OP_DSP_ALU] = 1, [BF_OP_DIV] = 7, [BF_OP_LOAD] = 2, \
  [BF_OP_STORE] = 1, [BF_OP_LOAD_DUAL] = 3, [BF_OP_STORE_DUAL] = 3, [BF_OP_LOAD_MULTI] = 1,     \
  [BF_OP_STORE_MULTI] = 1, [BF_OP_BRANCH] = 1, [BF_OP_BRANCH_COND] = 1, [BF_OP_BRANCH_REG] = 1, \
  [BF_OP_TABLE_BRANCH] = 3, [BF_OP_IT] = 1, [BF_OP_NOP] = 1, [BF_OP_MARK] = 1,                  \
  [BF_OP_BARRIER] = 1, [BF_OP_SYSTEM] = 1, [BF_OP_WAIT] = 1, [BF_OP_EXCEPTION] = 1,             \
  [BF_OP_LOOP_END] = 1

#define BF_FPV4                                                                               \
  [BF_OP_FP_ALU] = 1, [BF_OP_FP_MAC] = 3, [BF_OP_FP_FMA] = 3, [BF_OP_FP_DIV] = 14,            \
  [BF_OP_FP_SQRT] = 14, [BF_OP_FP_LOAD] = 2, [BF_OP_FP_STORE] = 2, [BF_OP_FP_LOAD_MULTI] = 1, \
  [BF_OP_FP_STORE_MULTI] = 1, [BF_OP_FP_MOV_CORE] = 2, [BF_OP_FP_MOV_CORE2] = 2,              \
  [BF_OP_FP_SYSTEM] = 1

static const bf_core kCores[] = {
    {"cortex-m3",
     {BF_M_COMMON, [BF_OP_MUL] = 1, [BF_OP_MLA] = 2, [BF_OP_MULL] = 4, [BF_OP_MLAL] = 6,
      [BF_OP_DSP_MUL] = 1, [BF_OP_DSP_MLAL] = 1, BF_FPV4},
     1,
     1,
     3,
     1,
     1},
    {"cortex-m4",
     {BF_M_COMMON, [BF_OP_MUL] = 1, [BF_OP_MLA] = 1, [BF_OP_MULL] = 1, [BF_OP_MLAL] = 1,
      [BF_OP_DSP_MUL] = 1, [BF_OP_DSP_MLAL] = 1, BF_FPV4},
     0,
     1,
     3,
     1,
     1},
    {"cortex-m4f",
     {BF_M_COMMON, [BF_OP_MUL] = 1, [BF_OP_MLA] = 1, [BF_OP_MULL] = 1, [BF_OP_MLAL] = 1,
      [BF_OP_DSP_MUL] = 1, [BF_OP_DSP_MLAL] = 1, BF_FPV4},
     0,
     1,
     3,
     1,
     1},
    /* Approximate: the Cortex-M4's table (README.md). LE: a low-overhead loop's end costs no
     * refill once the loop is running (the core keeps the loop's start). */
    {"cortex-m55",
     {BF_M_COMMON, [BF_OP_MUL] = 1, [BF_OP_MLA] = 1, [BF_OP_MULL] = 1, [BF_OP_MLAL] = 1,
      [BF_OP_DSP_MUL] = 1, [BF_OP_DSP_MLAL] = 1, BF_FPV4},
     0,
     1,
     3,
     0,
     1},
};

const bf_core* bf_core_find(const char* name) {
  size_t i;
  if (name == NULL) return NULL;
  for (i = 0; i < sizeof(kCores) / sizeof(kCores[0]); i++) {
    if (strcmp(kCores[i].name, name) == 0) return &kCores[i];
  }
  return NULL;
}

const char* bf_core_name(const bf_core* core) { return core->name; }

const char* bf_core_names(void) { return "cortex-m3 cortex-m4 cortex-m4f cortex-m55"; }

/* Single loads and stores, integer and floating point: the load/store unit pipelines them alike
 * (README.md: the TRMs state the rules for LDR/STR; FP single transfers are taken to follow them).
 */
static int IsSingleLoad(const bf_insn* i) {
  return (i->op == BF_OP_LOAD && !(i->flags & BF_INSN_LOADS_PC)) ||
         (i->op == BF_OP_FP_LOAD && !(i->flags & BF_INSN_DOUBLE));
}

static int IsLoadOrStoreSingle(const bf_insn* i) {
  return i->op == BF_OP_LOAD || i->op == BF_OP_STORE ||
         ((i->op == BF_OP_FP_LOAD || i->op == BF_OP_FP_STORE) && !(i->flags & BF_INSN_DOUBLE));
}

static int IsStoreSingleOrDual(const bf_insn* i) {
  return i->op == BF_OP_STORE || i->op == BF_OP_STORE_DUAL || i->op == BF_OP_FP_STORE;
}

static int IsLoad(const bf_insn* i) {
  return i->op == BF_OP_LOAD || i->op == BF_OP_LOAD_DUAL || i->op == BF_OP_LOAD_MULTI ||
         i->op == BF_OP_FP_LOAD || i->op == BF_OP_FP_LOAD_MULTI;
}

/* Instructions whose result goes through the ALU path: the register bank has it one cycle after
 * they complete, too late for the address generation of the instruction right after. */
static int IsDataProcessing(const bf_insn* i) {
  switch (i->op) {
    case BF_OP_ALU:
    case BF_OP_DSP_ALU:
    case BF_OP_MUL:
    case BF_OP_MLA:
    case BF_OP_MULL:
    case BF_OP_MLAL:
    case BF_OP_DSP_MUL:
    case BF_OP_DSP_MLAL:
    case BF_OP_DIV:
    case BF_OP_FP_MOV_CORE:
    case BF_OP_FP_MOV_CORE2:
    case BF_OP_FP_SYSTEM:
      return 1;
    default:
      return 0;
  }
}

static int IsFpArithmetic(const bf_insn* i) {
  switch (i->op) {
    case BF_OP_FP_ALU:
    case BF_OP_FP_MAC:
    case BF_OP_FP_FMA:
    case BF_OP_FP_DIV:
    case BF_OP_FP_SQRT:
      return 1;
    default:
      return 0;
  }
}

/* The registers a load or store writes back to (its base), as opposed to the value it loads. */
static uint16_t WrittenBack(const bf_insn* i) {
  return (i->flags & BF_INSN_WRITEBACK) ? (uint16_t)(i->writes & i->addr) : 0u;
}

int bf_core_cycles(const bf_core* core, const bf_insn* insn, const bf_insn* prev) {
  int cycles = core->cost[insn->op];
  switch (insn->op) {
    case BF_OP_LOAD_MULTI:
    case BF_OP_STORE_MULTI:
    case BF_OP_FP_LOAD_MULTI:
    case BF_OP_FP_STORE_MULTI:
      cycles += insn->nregs; /* 1 + N */
      break;
    case BF_OP_STORE:
      if (insn->flags & BF_INSN_STORE_REG_OFFSET) cycles = 2;
      break;
    case BF_OP_FP_LOAD:
    case BF_OP_FP_STORE:
      if (insn->flags & BF_INSN_DOUBLE) cycles += 1;
      break;
    case BF_OP_MULL:
    case BF_OP_MLAL:
      if (insn->flags & BF_INSN_SIGNED) cycles += core->smull_extra;
      break;
    default:
      break;
  }
  if (prev == NULL) return cycles;

  /* IT folds onto a preceding 16-bit instruction. */
  if (insn->op == BF_OP_IT && prev->size == 2) return 0;

  if (IsLoadOrStoreSingle(insn)) {
    uint16_t loaded = (uint16_t)(prev->writes & ~WrittenBack(prev));
    if (IsSingleLoad(prev) && (prev->writes & insn->addr) == 0u) {
      /* Pipelined after an LDR: one cycle less (a register-offset STR takes 1). */
      if (insn->op == BF_OP_LOAD || insn->op == BF_OP_FP_LOAD) cycles -= 1;
      if (insn->op == BF_OP_STORE || insn->op == BF_OP_FP_STORE) cycles = 1;
    } else if (IsSingleLoad(prev) && (loaded & insn->addr) != 0u) {
      cycles += 1; /* addressed with the value just loaded */
    } else if (IsLoadOrStoreSingle(prev) && (WrittenBack(prev) & insn->addr) != 0u &&
               (insn->op == BF_OP_STORE || insn->op == BF_OP_FP_STORE)) {
      cycles += 1; /* a written-back base cannot chain into the next store */
    }
  }
  if (insn->addr != 0u && IsDataProcessing(prev) && (prev->writes & insn->addr) != 0u) {
    cycles += 1; /* address generation waits for the register bank */
  }
  if (IsLoad(insn) && IsStoreSingleOrDual(prev)) {
    cycles += 1; /* a store's data phase is not pipelined with a following load */
  }
  if (IsFpArithmetic(prev) && prev->fp_writes != 0u) {
    uint32_t reads = insn->fp_reads;
    /* A multiply-accumulate takes its addend (its destination) a cycle later. */
    if (insn->op == BF_OP_FP_MAC || insn->op == BF_OP_FP_FMA) reads &= ~insn->fp_writes;
    if ((prev->fp_writes & reads) != 0u) cycles += core->fp_result_stall;
  }
  return cycles < 0 ? 0 : cycles;
}

bf_refill_kind bf_refill_kind_of(const bf_insn* insn) {
  if (insn->op == BF_OP_LOOP_END) return BF_REFILL_LOOP_END;
  if (insn->op == BF_OP_TABLE_BRANCH || (insn->flags & BF_INSN_LOADS_PC)) return BF_REFILL_LOADED;
  if (insn->flags & BF_INSN_WRITES_PC) return BF_REFILL_DIRECT;
  return BF_REFILL_NONE;
}

int bf_core_refill(const bf_core* core, bf_refill_kind kind, const bf_insn* target,
                   uint32_t target_address) {
  int unaligned_wide = target != NULL && target->size == 4 && (target_address & 2u) != 0u;
  switch (kind) {
    case BF_REFILL_DIRECT:
      return core->refill_direct + unaligned_wide;
    case BF_REFILL_LOADED:
      return core->refill_loaded + unaligned_wide;
    case BF_REFILL_LOOP_END:
      return core->refill_loop_end;
    default:
      return 0;
  }
}
