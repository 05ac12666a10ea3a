/*
 * qemu_plugin_api.h: the part of QEMU's TCG plugin interface (API version 1, QEMU 7.2's
 * include/qemu/qemu-plugin.h) that benchfarm's cycle model uses, declared from QEMU's
 * documentation ("QEMU TCG Plugins", docs/devel/tcg-plugins.rst) because Debian ships QEMU's
 * plugin loader but not its header. The functions are exported by qemu-system-arm itself and
 * resolved when QEMU dlopen()s the plugin.
 *
 * Only what the plugin calls is declared; types are QEMU's own (opaque handles, the callback
 * signatures, and the enum values of version 1).
 */
#ifndef BENCHFARM_CYCLEMODEL_QEMU_PLUGIN_API_H_
#define BENCHFARM_CYCLEMODEL_QEMU_PLUGIN_API_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))
/* The API version this plugin was written against; QEMU refuses a plugin whose version is
 * outside [min, cur] of its own (7.2: min 0, cur 1). */
#define BF_QEMU_PLUGIN_VERSION 1

typedef uint64_t qemu_plugin_id_t;

/* What QEMU tells the plugin about the guest at install. */
typedef struct {
  const char* target_name; /* "arm" for qemu-system-arm */
  struct {
    int min;
    int cur;
  } version;
  bool system_emulation;
  union {
    struct {
      int smp_vcpus;
      int max_vcpus;
    } system;
  };
} qemu_info_t;

struct qemu_plugin_tb;
struct qemu_plugin_insn;

enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
typedef uint32_t qemu_plugin_meminfo_t;

typedef void (*qemu_plugin_simple_cb_t)(qemu_plugin_id_t id);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void* userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void* userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb* tb);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
                                          uint64_t vaddr, void* userdata);

/* Called once when QEMU loads the plugin; non-zero makes QEMU report the failure and exit. */
QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info, int argc,
                                           char** argv);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb* tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void* userdata);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn* insn,
                                            qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void* userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn* insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
                                      void* userdata);
void qemu_plugin_register_flush_cb(qemu_plugin_id_t id, qemu_plugin_simple_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void* userdata);

size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb* tb);
struct qemu_plugin_insn* qemu_plugin_tb_get_insn(const struct qemu_plugin_tb* tb, size_t idx);
/* Version 1: a pointer to the instruction's bytes, valid during the translation callback. */
const void* qemu_plugin_insn_data(const struct qemu_plugin_insn* insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn* insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn* insn);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);

#endif /* BENCHFARM_CYCLEMODEL_QEMU_PLUGIN_API_H_ */
