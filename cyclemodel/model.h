/*
 * model.h: the cycle model of one emulated core — blocks of straight-line code analyzed once
 * (when QEMU translates them) and charged each time they run, the branch and memory effects
 * their static cost cannot know, and the intervals benchfarm's firmware marks.
 *
 * How a block is charged (bf_model_enter, once per executed block, in execution order):
 *   1. what the previous block left open: a branch that ended it is resolved by where execution
 *      went now — taken (its target, or anywhere but the next instruction for a register branch)
 *      costs the core's pipeline refill (timing.h); not taken costs nothing more. A previous
 *      block that stopped before its end (QEMU in -icount mode re-executes the rest of a block
 *      after a device access as a block of its own) is given back what it charged for the
 *      instructions that now run again. A previous block that ended without a branch (QEMU
 *      split straight-line code: its size limit, -icount's budget) lends its last instruction to
 *      this one's first for pairing, so where QEMU splits blocks never changes the count;
 *   2. the block's static cycles (timing.h, each instruction paired with the one before it);
 *   3. the instruction fetch of each 16-byte line it runs through (memory.h: wait states, ART).
 * Data reads from memory with wait states are charged as they happen (bf_model_read).
 *
 * Intervals: the firmware's START marker (thumb.h) opens one just after itself, STOP closes it
 * just before itself; the cycles and instructions in between go to the interval callback. The
 * count is exact at the marker: what the block charged for instructions after the marker is
 * not counted.
 *
 * Not thread-safe: one model per emulated core, driven by its vCPU thread.
 */
#ifndef BENCHFARM_CYCLEMODEL_MODEL_H_
#define BENCHFARM_CYCLEMODEL_MODEL_H_

#include <stddef.h>
#include <stdint.h>

#include "memory.h"
#include "thumb.h"
#include "timing.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bf_block bf_block;

/* A marker instruction in a block: what the plugin's instruction callback passes back. */
typedef struct {
  const bf_block* block;
  uint32_t index; /* the marker's instruction index in the block */
  uint8_t mark;   /* BF_MARK_INTERVAL_START or _STOP */
} bf_block_mark;

typedef struct {
  uint32_t address;
  uint32_t before; /* static cycles of the block's instructions before this one */
} bf_block_insn;

typedef struct {
  uint32_t line;       /* address / 16 of the line the block fetches */
  uint32_t first;      /* index of the first instruction in it */
  uint32_t before;     /* static cycles of the block before that instruction */
  uint8_t wait_states; /* of its region (memory.h; 0: none) */
  uint8_t art;         /* its region is behind the ART accelerator */
  bf_icache_hint hint; /* where the ART's cache held it last time */
} bf_block_line;

struct bf_block {
  uint32_t start, end; /* [start, end) */
  uint32_t ninsns;
  uint32_t static_cycles;
  uint32_t unknown;    /* instructions the timing tables do not know (costed 1) */
  bf_insn first;       /* its first instruction (a taken branch's refill depends on it) */
  bf_insn last;        /* its last (what the first of a block straight after it pairs with) */
  uint8_t exit_refill; /* bf_refill_kind of the instruction that ends it (NONE: falls through) */
  uint8_t refill_base; /* the core's refill for that kind, before the target's own extra */
  uint8_t entry_extra; /* what a taken branch into this block adds (a 32-bit first instruction
                        * on an odd halfword) */
  uint8_t exit_conditional;
  uint8_t exit_direct; /* exit_target is the branch's target */
  uint32_t exit_target;
  uint32_t nlines;
  bf_block_line* lines;
  uint8_t fetch_waits; /* some line is in a region with wait states */
  uint32_t nmarks;
  bf_block_mark* marks;
  uint8_t* loads; /* per instruction: 1 if it reads data memory */
  bf_block_insn* insns;
  bf_block* next; /* for the owner's list */
};

/* Analyzes the straight-line instructions of one block: instruction i is at addresses[i], its
 * sizes[i] bytes at bytes[i]; its lines' regions from `memory` (NULL: no wait states). n >= 1.
 * Returns a new block (bf_block_free), or NULL when out of memory. */
bf_block* bf_block_build(const bf_core* core, const bf_memory* memory, uint32_t n,
                         const uint32_t* addresses, const uint8_t* const* bytes,
                         const uint8_t* sizes);
void bf_block_free(bf_block* b);

typedef void (*bf_interval_fn)(void* ctx, uint64_t cycles, uint64_t instructions);

typedef struct {
  const bf_core* core;
  bf_memory memory;
  uint64_t cycles;       /* modeled core cycles so far */
  uint64_t instructions; /* executed instructions so far */
  uint64_t unknown;      /* of which the tables did not know */
  uint64_t intervals;    /* closed so far */
  uint64_t stray_stops;  /* STOP markers without a START */
  int has_wait_states;   /* some region has: instruction fetch is modeled per line */
  const bf_block* current;
  uint32_t line_stall[64]; /* stalls charged for the current block's lines (first 64) */
  int open;
  uint64_t open_cycles, open_instructions;
  bf_interval_fn on_interval;
  void* ctx;
} bf_model;

/* A model of `core` with `memory`'s regions (copied), counters at zero. */
void bf_model_init(bf_model* m, const bf_core* core, const bf_memory* memory,
                   bf_interval_fn on_interval, void* ctx);
/* Block `b` starts executing (see the file comment). */
void bf_model_enter(bf_model* m, const bf_block* b);
/* The marker `mark` of the current block is about to execute. */
void bf_model_mark(bf_model* m, const bf_block_mark* mark);
/* A data read of the current block at `address`. */
void bf_model_read(bf_model* m, uint64_t address);
/* The blocks are gone (QEMU flushed its translations): forget the current one. */
void bf_model_forget_blocks(bf_model* m);

#ifdef __cplusplus
}
#endif

#endif /* BENCHFARM_CYCLEMODEL_MODEL_H_ */
