/*
 * plugin.c: benchfarm's cycle model as a QEMU TCG plugin (qemu-system-arm 7.2, plugin API 1).
 *
 *   qemu-system-arm ... -icount shift=0,align=off,sleep=on \
 *       -plugin /path/libcyclemodel.so,core=cortex-m4f,region=0x08000000:0x80000:5:art,fd=3
 *
 * Arguments:
 *   core=NAME      the timing table (timing.h: cortex-m3, cortex-m4, cortex-m4f, cortex-m55)
 *   region=SPEC    memory with wait states, "BASE:SIZE:WAIT_STATES[:art]" (memory.h); repeatable
 *   fd=N           an inherited, writable descriptor (a pipe to the agent) for the records below
 *
 * Records, one line each, written to fd as they happen:
 *   benchfarm-cycle-model 1 core=NAME regions=N    once, at install
 *   interval CYCLES INSTRUCTIONS                    each timed interval the firmware marked
 *   end cycles=C instructions=I unmodeled=U intervals=N stray_stops=S fetch_stall_cycles=F
 *       data_stall_cycles=D                         once, when QEMU exits (one line)
 * A bad argument prints "benchfarm cycle model: ..." on stderr and fails the install, which makes
 * QEMU exit with an error before the guest runs.
 *
 * Every translated block is analyzed once (model.h) and gets one execution callback; marker
 * instructions get one more; loads get a memory callback only when some region has wait states.
 * Blocks are freed when QEMU flushes its translations.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "qemu_plugin_api.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = BF_QEMU_PLUGIN_VERSION;

static bf_model g_model;
static int g_fd = -1;
static int g_memory_callbacks;
static bf_block* g_blocks;

static void WriteLine(const char* text, size_t n) {
  while (g_fd >= 0 && n > 0u) {
    ssize_t w = write(g_fd, text, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      g_fd = -1; /* the reader is gone: keep emulating, stop reporting */
      return;
    }
    text += w;
    n -= (size_t)w;
  }
}

static void OnInterval(void* ctx, uint64_t cycles, uint64_t instructions) {
  char line[64];
  int n = snprintf(line, sizeof(line), "interval %llu %llu\n", (unsigned long long)cycles,
                   (unsigned long long)instructions);
  (void)ctx;
  if (n > 0) WriteLine(line, (size_t)n);
}

static void OnBlock(unsigned int vcpu, void* userdata) {
  (void)vcpu;
  bf_model_enter(&g_model, (const bf_block*)userdata);
}

static void OnMark(unsigned int vcpu, void* userdata) {
  (void)vcpu;
  bf_model_mark(&g_model, (const bf_block_mark*)userdata);
}

static void OnRead(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void* userdata) {
  (void)vcpu;
  (void)userdata;
  if (!qemu_plugin_mem_is_store(info)) bf_model_read(&g_model, vaddr);
}

static void OnTranslate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  size_t n = qemu_plugin_tb_n_insns(tb);
  uint32_t* addresses;
  const uint8_t** bytes;
  uint8_t* sizes;
  bf_block* b = NULL;
  size_t i;
  (void)id;
  if (n == 0u) return;
  addresses = (uint32_t*)malloc(n * sizeof(*addresses));
  bytes = (const uint8_t**)malloc(n * sizeof(*bytes));
  sizes = (uint8_t*)malloc(n);
  if (addresses != NULL && bytes != NULL && sizes != NULL) {
    for (i = 0; i < n; i++) {
      struct qemu_plugin_insn* insn = qemu_plugin_tb_get_insn(tb, i);
      addresses[i] = (uint32_t)qemu_plugin_insn_vaddr(insn);
      bytes[i] = (const uint8_t*)qemu_plugin_insn_data(insn);
      sizes[i] = (uint8_t)qemu_plugin_insn_size(insn);
    }
    b = bf_block_build(g_model.core, &g_model.memory, (uint32_t)n, addresses, bytes, sizes);
  }
  free(addresses);
  free((void*)bytes);
  free(sizes);
  if (b == NULL) {
    static const char kOom[] = "benchfarm cycle model: out of memory\n";
    (void)!write(2, kOom, sizeof(kOom) - 1u);
    abort();
  }
  b->next = g_blocks;
  g_blocks = b;
  qemu_plugin_register_vcpu_tb_exec_cb(tb, OnBlock, QEMU_PLUGIN_CB_NO_REGS, b);
  for (i = 0; i < b->nmarks; i++) {
    qemu_plugin_register_vcpu_insn_exec_cb(qemu_plugin_tb_get_insn(tb, b->marks[i].index), OnMark,
                                           QEMU_PLUGIN_CB_NO_REGS, &b->marks[i]);
  }
  if (g_memory_callbacks) {
    for (i = 0; i < n; i++) {
      if (b->loads[i]) {
        qemu_plugin_register_vcpu_mem_cb(qemu_plugin_tb_get_insn(tb, i), OnRead,
                                         QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_R, NULL);
      }
    }
  }
}

static void OnFlush(qemu_plugin_id_t id) {
  (void)id;
  bf_model_forget_blocks(&g_model);
  while (g_blocks != NULL) {
    bf_block* next = g_blocks->next;
    bf_block_free(g_blocks);
    g_blocks = next;
  }
}

static void OnExit(qemu_plugin_id_t id, void* userdata) {
  char line[256];
  int n = snprintf(line, sizeof(line),
                   "end cycles=%llu instructions=%llu unmodeled=%llu intervals=%llu "
                   "stray_stops=%llu fetch_stall_cycles=%llu data_stall_cycles=%llu\n",
                   (unsigned long long)g_model.cycles, (unsigned long long)g_model.instructions,
                   (unsigned long long)g_model.unknown, (unsigned long long)g_model.intervals,
                   (unsigned long long)g_model.stray_stops,
                   (unsigned long long)g_model.memory.counters.fetch_stall_cycles,
                   (unsigned long long)g_model.memory.counters.data_stall_cycles);
  (void)id;
  (void)userdata;
  if (n > 0) WriteLine(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1u);
}

static int Fail(const char* message, const char* detail) {
  fprintf(stderr, "benchfarm cycle model: %s%s\n", message, detail != NULL ? detail : "");
  return -1;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info, int argc,
                                           char** argv) {
  const bf_core* core = NULL;
  bf_memory memory;
  char error[160];
  char hello[128];
  int fd = -1;
  int i, n;
  bf_memory_init(&memory);
  if (info == NULL || info->target_name == NULL || strcmp(info->target_name, "arm") != 0 ||
      !info->system_emulation) {
    return Fail("needs qemu-system-arm (an Arm system emulator)", NULL);
  }
  if (info->system.max_vcpus != 1) return Fail("models a single core; the machine has more", NULL);
  for (i = 0; i < argc; i++) {
    const char* a = argv[i];
    if (strncmp(a, "core=", 5) == 0) {
      core = bf_core_find(a + 5);
      if (core == NULL) {
        fprintf(stderr, "benchfarm cycle model: unknown core \"%s\" (known: %s)\n", a + 5,
                bf_core_names());
        return -1;
      }
    } else if (strncmp(a, "region=", 7) == 0) {
      if (bf_memory_add_region(&memory, a + 7, error, sizeof(error)) != 0) return Fail(error, NULL);
    } else if (strncmp(a, "fd=", 3) == 0) {
      char* end = NULL;
      long v = strtol(a + 3, &end, 10);
      if (end == a + 3 || *end != '\0' || v < 0 || v > 1024) return Fail("bad fd: ", a);
      fd = (int)v;
    } else {
      return Fail("unknown argument (core=, region=, fd=): ", a);
    }
  }
  if (core == NULL) return Fail("core= is required", NULL);
  if (fd < 0) return Fail("fd= is required", NULL);
  g_fd = fd;
  bf_model_init(&g_model, core, &memory, OnInterval, NULL);
  g_memory_callbacks = bf_memory_has_wait_states(&memory);
  n = snprintf(hello, sizeof(hello), "benchfarm-cycle-model 1 core=%s regions=%d\n",
               bf_core_name(core), memory.nregions);
  WriteLine(hello, (size_t)n);
  if (g_fd < 0) return Fail("cannot write to fd ", argv[argc - 1]);
  qemu_plugin_register_vcpu_tb_trans_cb(id, OnTranslate);
  qemu_plugin_register_flush_cb(id, OnFlush);
  qemu_plugin_register_atexit_cb(id, OnExit, NULL);
  return 0;
}
