/*
 * memory.h: the memory a core fetches instructions and reads data from, as wait states per
 * address region, and ST's ART accelerator in front of an STM32F4's flash.
 *
 * A region is "BASE:SIZE:WAIT_STATES[:art]" (numbers in C syntax: 0x08000000, 524288), written by
 * crt/boards/build.sh from the package's board.conf (FLASH_ORIGIN, FLASH_LENGTH,
 * FLASH_WAIT_STATES, FLASH_ACCELERATOR). Memory outside every region has zero wait states (the
 * SRAMs, an MPS2's SSRAM, a Cortex-M55's TCMs).
 *
 * Without an accelerator every 128-bit line fetched from a region with wait states stalls the
 * core WAIT_STATES cycles (one flash access of WAIT_STATES + 1 cycles where zero-wait memory
 * takes 1), and so does every data read.
 *
 * The ART accelerator (STM32F405/407 reference manual RM0090, 3.5.2; README.md):
 *   - flash is read 128 bits (a line, 16 bytes) at a time: code running inside the current line
 *     never waits;
 *   - prefetch: while the core runs from a line, the next sequential line is read; entering it
 *     stalls only for what is left of that read (WAIT_STATES + 1 cycles after the current line
 *     began, less the cycles spent in it);
 *   - instruction cache: 64 lines, least recently used replaced; a line that was neither the
 *     current, the prefetched nor cached (a branch target) stalls WAIT_STATES cycles and is put in
 *     the cache (prefetched lines are not: the cache holds branch targets);
 *   - data cache: 8 lines for data read from flash (literal pools, constant tables): a hit is
 *     free, a miss stalls WAIT_STATES cycles and is cached.
 *
 * Not thread-safe: one per emulated core.
 */
#ifndef BENCHFARM_CYCLEMODEL_MEMORY_H_
#define BENCHFARM_CYCLEMODEL_MEMORY_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BF_MEMORY_MAX_REGIONS 8
#define BF_ART_LINE_BYTES 16u
#define BF_ART_ICACHE_LINES 64
#define BF_ART_DCACHE_LINES 8

typedef struct {
  uint32_t base;
  uint32_t size;
  uint8_t wait_states;
  uint8_t art;
} bf_region;

typedef struct {
  uint64_t fetch_stall_cycles; /* instruction fetches */
  uint64_t line_hits;          /* new lines found in the I-cache */
  uint64_t line_misses;        /* new lines read from flash at a branch */
  uint64_t prefetched;         /* new lines that were the prefetched one */
  uint64_t data_stall_cycles;  /* data reads */
  uint64_t data_hits, data_misses;
} bf_memory_counters;

typedef struct {
  bf_region regions[BF_MEMORY_MAX_REGIONS];
  int nregions;
  /* ART state. The instruction cache: 64 lines with the time each was last used, found through
   * a hash of the line (buckets of slot chains): looked up on every new line fetched, so O(1);
   * the least recently used is searched for only when a miss replaces it. */
  uint32_t icache[BF_ART_ICACHE_LINES];
  uint64_t icache_used_at[BF_ART_ICACHE_LINES];
  int8_t icache_next[BF_ART_ICACHE_LINES]; /* the next slot in its bucket, -1: none */
  int8_t icache_bucket[256];               /* the first slot of each bucket, -1: none */
  int icache_used;
  uint64_t icache_clock;
  uint64_t icache_inserts; /* lines put in the cache so far (never reset: hints compare it) */
  /* The data cache, 8 lines in most-recently-used order (entry 0 the newest). */
  uint32_t dcache[BF_ART_DCACHE_LINES];
  int dcache_used;
  int have_line;       /* the core is fetching from `line` (a region with wait states) */
  uint32_t line;       /* address >> 4 */
  uint64_t line_since; /* model time when it began */
  bf_memory_counters counters;
} bf_memory;

/* Empty map (no wait states anywhere), caches empty. */
void bf_memory_init(bf_memory* m);
/* Parses "BASE:SIZE:WAIT_STATES[:art]" and adds it. 0 on success; -1 with a message in `error`
 * (bad syntax, WAIT_STATES over 15, SIZE 0 or wrapping past 4 GiB, overlap with a region added
 * before, more than BF_MEMORY_MAX_REGIONS). */
int bf_memory_add_region(bf_memory* m, const char* text, char* error, size_t error_len);
/* The region holding `address`, or NULL (zero wait states). */
const bf_region* bf_memory_region(const bf_memory* m, uint32_t address);
/* Whether any region has wait states (else the model needs no memory callbacks). */
int bf_memory_has_wait_states(const bf_memory* m);

/* The core starts fetching instructions from the line holding `address` at model time `now`
 * (cycles): the stall in cycles. Call once per new line, in execution order. */
uint32_t bf_memory_fetch(bf_memory* m, uint32_t address, uint64_t now);

/* What the instruction cache held for a line last time (model.h keeps one per block line): the
 * slot it was found in (lines are unique in the cache, so a slot holding the line is the line's,
 * however old the hint; BF_ICACHE_NO_SLOT: none), or that it was absent when `icache_inserts` was
 * `absent_at` (still absent while no line has been put in since). */
typedef struct {
  uint8_t slot;
  uint64_t absent_at;
} bf_icache_hint;
#define BF_ICACHE_NO_SLOT 0xFFu
#define BF_ICACHE_HINT_NONE \
  { BF_ICACHE_NO_SLOT, UINT64_MAX }

/* bf_memory_fetch_line for what the inline part does not answer. */
uint32_t bf_memory_fetch_new_line(bf_memory* m, uint32_t line, uint8_t wait_states, uint8_t art,
                                  uint64_t now, bf_icache_hint* hint);

/* The core moves on to `line`, found with a stall of `stall` cycles (counted by the caller). */
static inline uint32_t bf_memory_enter_line_(bf_memory* m, uint32_t line, uint64_t now,
                                             uint32_t stall) {
  m->have_line = 1;
  m->line = line;
  m->line_since = now + stall;
  m->counters.fetch_stall_cycles += stall;
  return stall;
}

/* `line` is the prefetched one (the line after the current, not cached): its read began when the
 * current line's did. */
static inline uint32_t bf_memory_prefetched_(bf_memory* m, uint32_t line, uint8_t wait_states,
                                             uint64_t now) {
  const uint64_t ready = m->line_since + wait_states + 1u;
  m->counters.prefetched++;
  return bf_memory_enter_line_(m, line, now, ready > now ? (uint32_t)(ready - now) : 0u);
}

/* The same as bf_memory_fetch for a line whose region the caller looked up already (model.h's
 * blocks do it once): `line` = address / 16, its region's wait states (0: none) and accelerator;
 * `hint` may be NULL. Inline: the current line, a cached line found through its hint and the
 * prefetched line known absent from the cache are the common cases (a loop running from the
 * ART) and cost no call. */
static inline uint32_t bf_memory_fetch_line(bf_memory* m, uint32_t line, uint8_t wait_states,
                                            uint8_t art, uint64_t now, bf_icache_hint* hint) {
  if (wait_states == 0u) {
    m->have_line = 0;
    return 0;
  }
  if (m->have_line && line == m->line) return 0;
  if (art && hint != NULL) {
    if (hint->slot < m->icache_used && m->icache[hint->slot] == line) {
      m->icache_used_at[hint->slot] = ++m->icache_clock;
      m->counters.line_hits++;
      return bf_memory_enter_line_(m, line, now, 0);
    }
    if (hint->absent_at == m->icache_inserts && m->have_line && line == m->line + 1u) {
      return bf_memory_prefetched_(m, line, wait_states, now);
    }
  }
  return bf_memory_fetch_new_line(m, line, wait_states, art, now, hint);
}

/* A data read at `address`: the stall in cycles. */
uint32_t bf_memory_read(bf_memory* m, uint32_t address);
/* Forgets the fetch position and empties the caches (a reset). Keeps the regions. */
void bf_memory_reset(bf_memory* m);

#ifdef __cplusplus
}
#endif

#endif /* BENCHFARM_CYCLEMODEL_MEMORY_H_ */
