/*
 * model.c: blocks and the running model (model.h).
 */
#include "model.h"

#include <stdlib.h>
#include <string.h>

static int ReadsData(const bf_insn* i) {
  switch (i->op) {
    case BF_OP_LOAD:
    case BF_OP_LOAD_DUAL:
    case BF_OP_LOAD_MULTI:
    case BF_OP_TABLE_BRANCH:
    case BF_OP_FP_LOAD:
    case BF_OP_FP_LOAD_MULTI:
      return 1;
    default:
      return 0;
  }
}

void bf_block_free(bf_block* b) {
  if (b == NULL) return;
  free(b->marks);
  free(b); /* the arrays are in the same allocation */
}

/* Records where the block starts fetching a new line, with the line's region. */
static void AddLine(bf_block* b, const bf_memory* memory, uint32_t address, uint32_t first) {
  const bf_region* r = memory != NULL ? bf_memory_region(memory, address) : NULL;
  bf_block_line* l = &b->lines[b->nlines++];
  l->line = address / BF_ART_LINE_BYTES;
  l->first = first;
  l->before = b->insns[first].before;
  l->wait_states = r != NULL ? r->wait_states : 0u;
  l->art = r != NULL ? r->art : 0u;
  l->hint = (bf_icache_hint)BF_ICACHE_HINT_NONE;
  if (l->wait_states > 0u) b->fetch_waits = 1;
}

bf_block* bf_block_build(const bf_core* core, const bf_memory* memory, uint32_t n,
                         const uint32_t* addresses, const uint8_t* const* bytes,
                         const uint8_t* sizes) {
  /* One allocation for the block and its arrays (entered on every executed block: kept close).
   * At most one line per instruction, plus one for a 32-bit instruction across a line. */
  const size_t lines_at = sizeof(bf_block);
  const size_t insns_at = lines_at + 2u * n * sizeof(bf_block_line);
  const size_t loads_at = insns_at + n * sizeof(bf_block_insn);
  char* mem = (char*)calloc(1, loads_at + n);
  bf_block* b = (bf_block*)mem;
  bf_insn prev, cur;
  int have_prev = 0;
  int it_left = 0;
  uint32_t i;
  uint32_t marks = 0;
  if (b == NULL) return NULL;
  b->lines = (bf_block_line*)(mem + lines_at);
  b->insns = (bf_block_insn*)(mem + insns_at);
  b->loads = (uint8_t*)(mem + loads_at);
  b->ninsns = n;
  b->start = addresses[0];
  for (i = 0; i < n; i++) {
    uint32_t last_line = b->nlines > 0 ? b->lines[b->nlines - 1].line : 0;
    uint32_t a = addresses[i];
    int in_it = it_left > 0;
    int cycles;
    bf_thumb_decode(bytes[i], sizes[i], a, &cur);
    /* QEMU 7.2 hands an instruction that ends a page with the next halfword appended (it peeked
     * at it): the decoder's instruction, shorter, is the one that runs. Any other disagreement:
     * QEMU's split, costed as unknown. */
    if (cur.size != sizes[i] && !(cur.size != 0 && cur.size < sizes[i])) {
      memset(&cur, 0, sizeof(cur));
      cur.size = sizes[i];
    }
    if (in_it) {
      cur.flags |= BF_INSN_IN_IT;
      it_left--;
    }
    if (cur.op == BF_OP_IT) it_left = cur.it_mask;
    if (i == 0) {
      b->first = cur;
      b->entry_extra = (uint8_t)(bf_core_refill(core, BF_REFILL_DIRECT, &cur, a) -
                                 bf_core_refill(core, BF_REFILL_DIRECT, NULL, a));
    }
    cycles = bf_core_cycles(core, &cur, have_prev ? &prev : NULL);
    b->insns[i].address = a;
    b->insns[i].before = b->static_cycles;
    b->static_cycles += (uint32_t)cycles;
    if (cur.op == BF_OP_UNKNOWN) b->unknown++;
    if (cur.op == BF_OP_MARK) marks++;
    b->loads[i] = (uint8_t)ReadsData(&cur);
    if (b->nlines == 0 || a / BF_ART_LINE_BYTES != last_line) AddLine(b, memory, a, i);
    if ((a + cur.size - 1u) / BF_ART_LINE_BYTES != a / BF_ART_LINE_BYTES) {
      AddLine(b, memory, a + cur.size - 1u, i); /* a 32-bit instruction across two lines */
    }
    if (i == n - 1) {
      bf_refill_kind kind = bf_refill_kind_of(&cur);
      b->end = a + cur.size;
      b->last = cur;
      b->exit_refill = (uint8_t)kind;
      b->refill_base = (uint8_t)bf_core_refill(core, kind, NULL, 0);
      if (kind != BF_REFILL_NONE) {
        b->exit_conditional = (uint8_t)(cur.op == BF_OP_BRANCH_COND || cur.op == BF_OP_LOOP_END ||
                                        (cur.flags & BF_INSN_IN_IT) != 0u);
        b->exit_direct = (uint8_t)(cur.op == BF_OP_BRANCH || cur.op == BF_OP_BRANCH_COND ||
                                   cur.op == BF_OP_LOOP_END);
        b->exit_target = cur.target;
      }
    }
    prev = cur;
    have_prev = 1;
  }
  if (marks > 0u) {
    uint32_t k = 0;
    b->marks = (bf_block_mark*)calloc(marks, sizeof(*b->marks));
    if (b->marks == NULL) {
      bf_block_free(b);
      return NULL;
    }
    for (i = 0; i < n; i++) {
      bf_insn d;
      bf_thumb_decode(bytes[i], sizes[i], addresses[i], &d);
      if (d.op == BF_OP_MARK && k < marks) {
        b->marks[k].block = b;
        b->marks[k].index = i;
        b->marks[k].mark = d.mark;
        k++;
      }
    }
    b->nmarks = k;
  }
  return b;
}

void bf_model_init(bf_model* m, const bf_core* core, const bf_memory* memory,
                   bf_interval_fn on_interval, void* ctx) {
  memset(m, 0, sizeof(*m));
  m->core = core;
  if (memory != NULL) {
    m->memory = *memory;
    bf_memory_reset(&m->memory);
  } else {
    bf_memory_init(&m->memory);
  }
  m->on_interval = on_interval;
  m->ctx = ctx;
  m->has_wait_states = bf_memory_has_wait_states(&m->memory);
}

void bf_model_forget_blocks(bf_model* m) { m->current = NULL; }

/* The index of the instruction at `address` in `b`, or -1. */
static int IndexOf(const bf_block* b, uint32_t address) {
  uint32_t lo = 0, hi = b->ninsns;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2u;
    if (b->insns[mid].address < address) {
      lo = mid + 1u;
    } else {
      hi = mid;
    }
  }
  return (lo < b->ninsns && b->insns[lo].address == address) ? (int)lo : -1;
}

/* What the current block charged for its lines entered after instruction `index`. */
static uint64_t StallsAfter(const bf_model* m, const bf_block* b, uint32_t index) {
  uint64_t sum = 0;
  uint32_t k;
  if (!b->fetch_waits) return 0;
  for (k = 0; k < b->nlines && k < 64u; k++) {
    if (b->lines[k].first > index) sum += m->line_stall[k];
  }
  return sum;
}

void bf_model_enter(bf_model* m, const bf_block* b) {
  const bf_block* p = m->current;
  uint64_t entry;
  uint32_t k;
  if (p != NULL) {
    /* b starts strictly inside p, and not as p's own branch target: p was cut short. */
    const int inside = b->start - p->start - 1u < p->end - p->start - 1u &&
                       !(p->exit_direct && p->exit_target == b->start);
    if (inside) {
      int index = IndexOf(p, b->start);
      if (index > 0) {
        /* p stopped before b->start and runs its rest again as b: take that back. */
        m->cycles -= (uint64_t)(p->static_cycles - p->insns[index].before) +
                     (m->has_wait_states ? StallsAfter(m, p, (uint32_t)index - 1u) : 0u);
        m->instructions -= p->ninsns - (uint32_t)index;
      }
    } else if (p->exit_refill != BF_REFILL_NONE) {
      int taken;
      if (!p->exit_conditional) {
        taken = 1;
      } else if (p->exit_direct) {
        taken = b->start == p->exit_target && p->exit_target != p->end;
      } else {
        taken = b->start != p->end;
      }
      if (taken) {
        m->cycles += p->refill_base + (p->exit_refill == BF_REFILL_LOOP_END ? 0u : b->entry_extra);
      }
    } else if (b->start == p->end) {
      /* Straight-line code QEMU translated as two blocks (a block's size limit, -icount's
       * budget): the first instruction pairs with the one before it as if they were one block. */
      m->cycles += (uint64_t)bf_core_cycles(m->core, &b->first, &p->last);
      m->cycles -= (uint64_t)bf_core_cycles(m->core, &b->first, NULL);
    }
  }
  entry = m->cycles;
  m->cycles += b->static_cycles;
  m->instructions += b->ninsns;
  m->unknown += b->unknown;
  m->current = b;
  if (!b->fetch_waits) {
    if (m->has_wait_states) m->memory.have_line = 0; /* left the flash */
    return;
  }
  for (k = 0; k < b->nlines; k++) {
    bf_block_line* l = &b->lines[k];
    uint32_t stall = bf_memory_fetch_line(&m->memory, l->line, l->wait_states, l->art,
                                          entry + l->before, &l->hint);
    entry += stall;
    m->cycles += stall;
    if (k < 64u) m->line_stall[k] = stall;
  }
}

void bf_model_read(bf_model* m, uint64_t address) {
  if (address > 0xFFFFFFFFull) return;
  m->cycles += bf_memory_read(&m->memory, (uint32_t)address);
}

void bf_model_mark(bf_model* m, const bf_block_mark* mark) {
  const bf_block* b = mark->block;
  uint32_t i = mark->index;
  uint64_t cycles, instructions;
  if (b != m->current) return; /* not the block the model is in: cannot place it */
  if (mark->mark == BF_MARK_INTERVAL_START) {
    /* Just after the marker. */
    uint32_t after = i + 1u;
    uint64_t suffix = after < b->ninsns ? b->static_cycles - b->insns[after].before : 0u;
    m->open = 1;
    m->open_cycles = m->cycles - suffix - StallsAfter(m, b, i);
    m->open_instructions = m->instructions - (b->ninsns - after);
    return;
  }
  if (mark->mark != BF_MARK_INTERVAL_STOP) return;
  if (!m->open) {
    m->stray_stops++;
    return;
  }
  /* Just before the marker. */
  cycles =
      m->cycles - (b->static_cycles - b->insns[i].before) - StallsAfter(m, b, i > 0 ? i - 1u : 0u);
  if (i == 0u && b->fetch_waits) cycles -= m->line_stall[0];
  instructions = m->instructions - (b->ninsns - i);
  m->open = 0;
  m->intervals++;
  if (m->on_interval != NULL) {
    m->on_interval(m->ctx, cycles - m->open_cycles, instructions - m->open_instructions);
  }
}
