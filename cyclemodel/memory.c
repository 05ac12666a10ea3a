/*
 * memory.c: wait states and the ART accelerator (memory.h).
 */
#include "memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bf_memory_init(bf_memory* m) {
  memset(m, 0, sizeof(*m));
  memset(m->icache_bucket, -1, sizeof(m->icache_bucket));
}

void bf_memory_reset(bf_memory* m) {
  m->icache_inserts++; /* every line is absent now: hints taken before say nothing */
  m->icache_used = 0;
  m->icache_clock = 0;
  memset(m->icache_bucket, -1, sizeof(m->icache_bucket));
  m->dcache_used = 0;
  m->have_line = 0;
  m->line = 0;
  m->line_since = 0;
  memset(&m->counters, 0, sizeof(m->counters));
}

static int ParseNumber(const char* text, const char** end, uint64_t* out) {
  char* stop = NULL;
  unsigned long long v;
  if (*text < '0' || *text > '9') return -1;
  v = strtoull(text, &stop, 0);
  if (stop == text) return -1;
  *out = v;
  *end = stop;
  return 0;
}

int bf_memory_add_region(bf_memory* m, const char* text, char* error, size_t error_len) {
  uint64_t base, size, ws;
  const char* p = text;
  bf_region r;
  int i;
  if (ParseNumber(p, &p, &base) != 0 || *p++ != ':' || ParseNumber(p, &p, &size) != 0 ||
      *p++ != ':' || ParseNumber(p, &p, &ws) != 0 || (*p != '\0' && strcmp(p, ":art") != 0)) {
    snprintf(error, error_len, "region \"%s\": expected BASE:SIZE:WAIT_STATES[:art]", text);
    return -1;
  }
  if (ws > 15u || size == 0u || base > 0xFFFFFFFFull || base + size > 0x100000000ull) {
    snprintf(error, error_len,
             "region \"%s\": wait states must be 0..15 and the region non-empty within 4 GiB",
             text);
    return -1;
  }
  if (m->nregions >= BF_MEMORY_MAX_REGIONS) {
    snprintf(error, error_len, "region \"%s\": more than %d regions", text, BF_MEMORY_MAX_REGIONS);
    return -1;
  }
  for (i = 0; i < m->nregions; i++) {
    const bf_region* o = &m->regions[i];
    if (base < (uint64_t)o->base + o->size && (uint64_t)o->base < base + size) {
      snprintf(error, error_len, "region \"%s\" overlaps another", text);
      return -1;
    }
  }
  r.base = (uint32_t)base;
  r.size = (uint32_t)(size - 1u) + 1u;
  r.wait_states = (uint8_t)ws;
  r.art = *p != '\0';
  m->regions[m->nregions++] = r;
  return 0;
}

const bf_region* bf_memory_region(const bf_memory* m, uint32_t address) {
  int i;
  for (i = 0; i < m->nregions; i++) {
    if (address - m->regions[i].base < m->regions[i].size) return &m->regions[i];
  }
  return NULL;
}

int bf_memory_has_wait_states(const bf_memory* m) {
  int i;
  for (i = 0; i < m->nregions; i++) {
    if (m->regions[i].wait_states > 0u) return 1;
  }
  return 0;
}

/* Looks `line` up in a most-recently-used list: on a hit moves it to the front and returns 1. */
static int Lookup(uint32_t* list, int used, uint32_t line) {
  int i;
  for (i = 0; i < used; i++) {
    if (list[i] == line) {
      if (i > 0) {
        memmove(&list[1], &list[0], (size_t)i * sizeof(list[0]));
        list[0] = line;
      }
      return 1;
    }
  }
  return 0;
}

/* Puts `line` (not in the list) at the front, dropping the least recently used when full. */
static void Insert(uint32_t* list, int* used, int capacity, uint32_t line) {
  if (*used < capacity) (*used)++;
  memmove(&list[1], &list[0], (size_t)(*used - 1) * sizeof(list[0]));
  list[0] = line;
}

static unsigned Bucket(uint32_t line) { return (line ^ (line >> 8)) & 0xFFu; }

/* The slot holding `line` in the instruction cache (then the most recently used), or -1. */
static int ICacheLookup(bf_memory* m, uint32_t line) {
  int slot;
  for (slot = m->icache_bucket[Bucket(line)]; slot >= 0; slot = m->icache_next[slot]) {
    if (m->icache[slot] == line) {
      m->icache_used_at[slot] = ++m->icache_clock;
      return slot;
    }
  }
  return -1;
}

/* Puts `line` (not cached) in a free slot, or in the least recently used one's place: the slot. */
static int ICacheInsert(bf_memory* m, uint32_t line) {
  int slot, k;
  if (m->icache_used < BF_ART_ICACHE_LINES) {
    slot = m->icache_used++;
  } else {
    int8_t* link;
    slot = 0;
    for (k = 1; k < BF_ART_ICACHE_LINES; k++) {
      if (m->icache_used_at[k] < m->icache_used_at[slot]) slot = k;
    }
    for (link = &m->icache_bucket[Bucket(m->icache[slot])]; *link != slot;
         link = &m->icache_next[*link]) {
    }
    *link = m->icache_next[slot]; /* out of its bucket */
  }
  m->icache[slot] = line;
  m->icache_used_at[slot] = ++m->icache_clock;
  m->icache_next[slot] = m->icache_bucket[Bucket(line)];
  m->icache_bucket[Bucket(line)] = (int8_t)slot;
  m->icache_inserts++;
  return slot;
}

uint32_t bf_memory_fetch(bf_memory* m, uint32_t address, uint64_t now) {
  const bf_region* r = bf_memory_region(m, address);
  return bf_memory_fetch_line(m, address / BF_ART_LINE_BYTES, r != NULL ? r->wait_states : 0u,
                              r != NULL ? r->art : 0u, now, NULL);
}

uint32_t bf_memory_fetch_new_line(bf_memory* m, uint32_t line, uint8_t wait_states, uint8_t art,
                                  uint64_t now, bf_icache_hint* hint) {
  int slot;
  if (wait_states == 0u) {
    m->have_line = 0;
    return 0;
  }
  if (m->have_line && line == m->line) return 0;
  if (!art) {
    m->counters.line_misses++;
    return bf_memory_enter_line_(m, line, now, wait_states);
  }
  slot = ICacheLookup(m, line);
  if (slot >= 0) {
    if (hint != NULL) hint->slot = (uint8_t)slot;
    m->counters.line_hits++;
    return bf_memory_enter_line_(m, line, now, 0);
  }
  if (hint != NULL) hint->absent_at = m->icache_inserts;
  if (m->have_line && line == m->line + 1u) return bf_memory_prefetched_(m, line, wait_states, now);
  slot = ICacheInsert(m, line);
  if (hint != NULL) hint->slot = (uint8_t)slot;
  m->counters.line_misses++;
  return bf_memory_enter_line_(m, line, now, wait_states);
}

uint32_t bf_memory_read(bf_memory* m, uint32_t address) {
  const bf_region* r = bf_memory_region(m, address);
  uint32_t stall;
  if (r == NULL || r->wait_states == 0u) return 0;
  if (r->art) {
    uint32_t line = address / BF_ART_LINE_BYTES;
    if (Lookup(m->dcache, m->dcache_used, line)) {
      m->counters.data_hits++;
      return 0;
    }
    Insert(m->dcache, &m->dcache_used, BF_ART_DCACHE_LINES, line);
  }
  stall = r->wait_states;
  m->counters.data_misses++;
  m->counters.data_stall_cycles += stall;
  return stall;
}
