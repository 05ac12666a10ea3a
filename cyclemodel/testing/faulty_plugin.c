/*
 * faulty_plugin.c: a QEMU plugin that speaks the cycle model's protocol (cyclemodel/plugin.c)
 * wrongly, so tests can show what the agent does with a stream it cannot trust. Test-only.
 *
 *   -plugin libfaulty_MODE.so,core=...,fd=N   (built once per MODE: -DBF_FAULTY_MODE="MODE")
 *     mute     greets, then reports no interval
 *     double   reports every interval the firmware marks twice
 *     garbage  reports "interval x y" for every interval
 *     close    reports the first interval, then closes its descriptor
 *     stranger writes something other than the greeting first
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cyclemodel/qemu_plugin_api.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = BF_QEMU_PLUGIN_VERSION;

static int g_fd = -1;
static const char g_mode[] = BF_FAULTY_MODE;
static unsigned g_stops;

static void Say(const char* text) {
  if (g_fd >= 0) (void)!write(g_fd, text, strlen(text));
}

static void OnStop(unsigned int vcpu, void* userdata) {
  (void)vcpu;
  (void)userdata;
  g_stops++;
  if (strcmp(g_mode, "double") == 0) {
    Say("interval 100 100\ninterval 100 100\n");
  } else if (strcmp(g_mode, "garbage") == 0) {
    Say("interval x y\n");
  } else if (strcmp(g_mode, "close") == 0) {
    if (g_stops == 1) {
      Say("interval 100 100\n");
    } else if (g_fd >= 0) {
      close(g_fd);
      g_fd = -1;
    }
  }
}

static void OnTranslate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  size_t n = qemu_plugin_tb_n_insns(tb);
  size_t i;
  (void)id;
  for (i = 0; i < n; i++) {
    struct qemu_plugin_insn* insn = qemu_plugin_tb_get_insn(tb, i);
    const unsigned char* b = (const unsigned char*)qemu_plugin_insn_data(insn);
    if (qemu_plugin_insn_size(insn) == 4 && b[0] == 0xaf && b[1] == 0xf3 && b[2] == 0xc1 &&
        b[3] == 0x80) {
      qemu_plugin_register_vcpu_insn_exec_cb(insn, OnStop, QEMU_PLUGIN_CB_NO_REGS, NULL);
    }
  }
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info, int argc,
                                           char** argv) {
  int i;
  (void)info;
  for (i = 0; i < argc; i++) {
    if (strncmp(argv[i], "fd=", 3) == 0) g_fd = atoi(argv[i] + 3);
  }
  Say(strcmp(g_mode, "stranger") == 0 ? "hello\n"
                                      : "benchfarm-cycle-model 1 core=faulty regions=0\n");
  qemu_plugin_register_vcpu_tb_trans_cb(id, OnTranslate);
  return 0;
}
