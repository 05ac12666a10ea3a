/*
 * static_cycles: what the cycle model charges per iteration of a loop, given the instructions of
 * one iteration's path in execution order (a straight run, or one that jumps: a conditional
 * branch on the path is taken when the next instruction is its target). Run over and over to a
 * steady state (caches warm, the loop's back branch taken). For comparing the model with other
 * models (llvm-mca: cyclemodel/llvm_mca_test.sh) and by hand.
 *
 *   static_cycles [--core NAME] [--region SPEC]... ADDRESS:HALFWORD[,HALFWORD]...
 *
 *   --core     a timing table (default cortex-m4f; timing.h)
 *   --region   memory with wait states, BASE:SIZE:WAIT_STATES[:art] (memory.h)
 *   each instruction of the path: its address and its one or two halfwords in hex, in the order
 *   arm-none-eabi-objdump prints them ("8000472:ebac,0e03"); the last must branch to the first
 *
 * Prints "cycles_per_iteration=C refill_cycles=R instructions=N unmodeled=U": C with one
 * decimal, R the part of C that taken branches' pipeline refills are. Exits 2 on bad arguments or
 * a path that does not loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define MAX_INSNS 1024
#define MAX_BLOCKS 256

static int Usage(const char* why) {
  fprintf(stderr,
          "static_cycles: %s\nusage: static_cycles [--core NAME] [--region SPEC]... "
          "ADDRESS:HALFWORD[,HALFWORD]...\n",
          why);
  return 2;
}

int main(int argc, char** argv) {
  const bf_core* core = bf_core_find("cortex-m4f");
  bf_memory memory;
  static uint8_t bytes[MAX_INSNS][4];
  static uint32_t addresses[MAX_INSNS];
  static uint8_t sizes[MAX_INSNS];
  static const uint8_t* ptrs[MAX_INSNS];
  bf_block* blocks[MAX_BLOCKS];
  uint32_t n = 0, nblocks = 0, first = 0, i;
  uint32_t unknown = 0;
  uint64_t refills = 0;
  char error[160];
  bf_model m;
  uint64_t c1;
  const int kWarm = 8, kRuns = 64;
  int a;
  bf_memory_init(&memory);
  for (a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--core") == 0 && a + 1 < argc) {
      core = bf_core_find(argv[++a]);
      if (core == NULL) return Usage("unknown core");
    } else if (strcmp(argv[a], "--region") == 0 && a + 1 < argc) {
      if (bf_memory_add_region(&memory, argv[++a], error, sizeof(error)) != 0) return Usage(error);
    } else {
      char* end = NULL;
      unsigned long address = strtoul(argv[a], &end, 16);
      unsigned long hw1, hw2;
      if (n >= MAX_INSNS || end == argv[a] || *end != ':') return Usage("not ADDRESS:HALFWORD");
      hw1 = strtoul(end + 1, &end, 16);
      bytes[n][0] = (uint8_t)(hw1 & 0xFFu);
      bytes[n][1] = (uint8_t)(hw1 >> 8);
      sizes[n] = 2;
      if (*end == ',') {
        hw2 = strtoul(end + 1, &end, 16);
        bytes[n][2] = (uint8_t)(hw2 & 0xFFu);
        bytes[n][3] = (uint8_t)(hw2 >> 8);
        sizes[n] = 4;
      }
      if (*end != '\0' || hw1 > 0xFFFFu) return Usage("bad halfword");
      addresses[n] = (uint32_t)address;
      ptrs[n] = bytes[n];
      n++;
    }
  }
  if (n == 0u) return Usage("no instructions");
  /* Blocks as QEMU would translate the path: each ends at a branch, or where the path jumps. */
  for (i = 0; i < n; i++) {
    bf_insn d;
    bf_thumb_decode(ptrs[i], sizes[i], addresses[i], &d);
    if (d.size != sizes[i]) return Usage("an instruction's halfwords do not match its encoding");
    if ((d.flags & BF_INSN_WRITES_PC) || i + 1 == n || addresses[i + 1] != addresses[i] + d.size) {
      if (nblocks >= MAX_BLOCKS) return Usage("too many blocks");
      blocks[nblocks] = bf_block_build(core, &memory, i + 1 - first, &addresses[first],
                                       &ptrs[first], &sizes[first]);
      if (blocks[nblocks] == NULL) return Usage("out of memory");
      unknown += blocks[nblocks]->unknown;
      nblocks++;
      first = i + 1;
    }
  }
  if (!blocks[nblocks - 1]->exit_direct || blocks[nblocks - 1]->exit_target != addresses[0]) {
    return Usage("the path's last instruction does not branch to its first");
  }
  /* The refills of one iteration: every block whose exit is a branch the path takes. */
  for (i = 0; i < nblocks; i++) {
    const bf_block* b = blocks[i];
    const bf_block* next = blocks[(i + 1) % nblocks];
    int taken = b->exit_refill != BF_REFILL_NONE &&
                (!b->exit_conditional ||
                 (b->exit_direct ? next->start == b->exit_target : next->start != b->end));
    if (taken) {
      refills +=
          (uint64_t)bf_core_refill(core, (bf_refill_kind)b->exit_refill, &next->first, next->start);
    }
  }
  bf_model_init(&m, core, &memory, NULL, NULL);
  for (a = 0; a < kWarm; a++) {
    for (i = 0; i < nblocks; i++) bf_model_enter(&m, blocks[i]);
  }
  c1 = m.cycles;
  for (a = 0; a < kRuns; a++) {
    for (i = 0; i < nblocks; i++) bf_model_enter(&m, blocks[i]);
  }
  printf("cycles_per_iteration=%.1f refill_cycles=%llu instructions=%u unmodeled=%u\n",
         (double)(m.cycles - c1) / kRuns, (unsigned long long)refills, n, unknown);
  for (i = 0; i < nblocks; i++) bf_block_free(blocks[i]);
  return 0;
}
