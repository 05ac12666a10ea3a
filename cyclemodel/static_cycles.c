/*
 * static_cycles: what the cycle model charges per iteration of a loop whose body is one straight
 * run of instructions ending in a branch back to its start, run over and over (steady state: the
 * caches warm). For comparing the model with other models (llvm-mca) and by hand.
 *
 *   static_cycles [--core NAME] [--region SPEC]... ADDRESS HALFWORD...
 *
 *   --core     a timing table (default cortex-m4f; timing.h)
 *   --region   memory with wait states, BASE:SIZE:WAIT_STATES[:art] (memory.h)
 *   ADDRESS    the body's first address (hex), then its instructions as hex halfwords in the order
 *              arm-none-eabi-objdump prints them ("f8d3 2004 4413 ...")
 *
 * Prints "cycles_per_iteration=C instructions=N unmodeled=U" (C with one decimal). Exits 2 on bad
 * arguments or a body that is not a loop of one block.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static int Usage(const char* why) {
  fprintf(stderr, "static_cycles: %s\nusage: static_cycles [--core NAME] [--region SPEC]... "
          "ADDRESS HALFWORD...\n", why);
  return 2;
}

int main(int argc, char** argv) {
  const bf_core* core = bf_core_find("cortex-m4f");
  bf_memory memory;
  uint8_t bytes[4096];
  size_t nbytes = 0;
  uint32_t start = 0;
  int have_start = 0;
  char error[160];
  uint32_t addresses[1024];
  const uint8_t* ptrs[1024];
  uint8_t sizes[1024];
  uint32_t n = 0;
  size_t off = 0;
  int i;
  bf_block* b;
  bf_model m;
  uint64_t c1, i1;
  const int kWarm = 8, kRuns = 64;
  bf_memory_init(&memory);
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--core") == 0 && i + 1 < argc) {
      core = bf_core_find(argv[++i]);
      if (core == NULL) return Usage("unknown core");
    } else if (strcmp(argv[i], "--region") == 0 && i + 1 < argc) {
      if (bf_memory_add_region(&memory, argv[++i], error, sizeof(error)) != 0) return Usage(error);
    } else {
      char* end = NULL;
      unsigned long v = strtoul(argv[i], &end, 16);
      if (end == argv[i] || *end != '\0') return Usage("not a hex number");
      if (!have_start) {
        start = (uint32_t)v;
        have_start = 1;
      } else {
        if (v > 0xFFFFu || nbytes + 2u > sizeof(bytes)) return Usage("bad halfword");
        bytes[nbytes++] = (uint8_t)(v & 0xFFu);
        bytes[nbytes++] = (uint8_t)(v >> 8);
      }
    }
  }
  if (!have_start || nbytes == 0u) return Usage("no instructions");
  while (off < nbytes && n < 1024u) {
    bf_insn d;
    int size = bf_thumb_decode(bytes + off, nbytes - off, start + (uint32_t)off, &d);
    if (size == 0) return Usage("the last instruction is cut short");
    if ((d.flags & BF_INSN_WRITES_PC) && off + (size_t)size < nbytes) {
      return Usage("a branch inside the body: not one block");
    }
    addresses[n] = start + (uint32_t)off;
    ptrs[n] = bytes + off;
    sizes[n] = (uint8_t)size;
    n++;
    off += (size_t)size;
  }
  b = bf_block_build(core, n, addresses, ptrs, sizes);
  if (b == NULL) return Usage("out of memory");
  if (!b->exit_direct || b->exit_target != start) {
    bf_block_free(b);
    return Usage("the body does not end in a branch to its start");
  }
  bf_model_init(&m, core, &memory, NULL, NULL);
  for (i = 0; i < kWarm; i++) bf_model_enter(&m, b);
  c1 = m.cycles;
  i1 = m.instructions;
  for (i = 0; i < kRuns; i++) bf_model_enter(&m, b);
  printf("cycles_per_iteration=%.1f instructions=%u unmodeled=%u\n",
         (double)(m.cycles - c1) / kRuns, (unsigned)((m.instructions - i1) / (uint64_t)kRuns),
         b->unknown);
  bf_block_free(b);
  return 0;
}
