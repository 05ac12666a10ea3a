/*
 * mpu.c: the NULL guard. Address 0 is ordinary memory on these parts (flash, its alias, or RAM),
 * so a NULL dereference would read or write it silently. The MPU makes the first
 * BF_CONF_NULL_GUARD_BYTES at 0 inaccessible — reads, writes and instruction fetches fault
 * (MemManage, reported by fault.c) — and leaves every other address on the default memory map
 * (PRIVDEFENA; the firmware runs privileged).
 *
 *   ARMv7-M (PMSAv7): one region, AP = no access, XN.
 *   ARMv8-M (PMSAv8) has no "no access" permission; instead two regions cover the guard: an
 *     access that hits more than one enabled region always faults (ARMv8-M ARM, "MPU region
 *     overlap"), whatever the permissions.
 *
 * The vector table must not lie in the guard (exception entry reads it through the MPU):
 * startup.c moves it to RAM when flash starts at 0, and the linker script keeps code and
 * constants above the guard.
 */
#include "bf_bsp.h"

#define BF_MPU_TYPE 0xE000ED90u
#define BF_MPU_CTRL 0xE000ED94u
#define BF_MPU_RNR 0xE000ED98u
#define BF_MPU_RBAR 0xE000ED9Cu
#define BF_MPU_RASR 0xE000EDA0u  /* ARMv7-M */
#define BF_MPU_RLAR 0xE000EDA0u  /* ARMv8-M */
#define BF_MPU_MAIR0 0xE000EDC0u /* ARMv8-M */
#define BF_MPU_CTRL_ENABLE 1u
#define BF_MPU_CTRL_PRIVDEFENA 4u

#if BF_CONF_NULL_GUARD_BYTES != 0
typedef char bf_mpu_check_guard[(BF_CONF_NULL_GUARD_BYTES & (BF_CONF_NULL_GUARD_BYTES - 1)) == 0 &&
                                        BF_CONF_NULL_GUARD_BYTES >= 32
                                    ? 1
                                    : -1];
#endif

int bf_bsp_mpu_null_guard(void);

/* Programs the guard and enables the MPU. Returns 0, or -1 when the part has no MPU (or fewer
 * regions than needed) or the guard is configured off; the MPU is then left as it was. */
int bf_bsp_mpu_null_guard(void) {
#if BF_CONF_NULL_GUARD_BYTES == 0
  return -1;
#else
  uint32_t regions = (BF_BSP_REG32(BF_MPU_TYPE) >> 8) & 0xFFu;
  if (regions < 2u) return -1;
  BF_BSP_DSB();
  BF_BSP_REG32(BF_MPU_CTRL) = 0u;
#if BF_CONF_ARMV8M
  {
    uint32_t r;
    /* Attribute 0: Device-nGnRnE (never used: nothing may access the guard). */
    BF_BSP_REG32(BF_MPU_MAIR0) &= ~0xFFu;
    for (r = 0; r < 2u; r++) {
      BF_BSP_REG32(BF_MPU_RNR) = r;
      /* Base 0, non-shareable, AP = read-only privileged (0b10), XN. */
      BF_BSP_REG32(BF_MPU_RBAR) = (2u << 1) | 1u;
      /* Limit: the last 32-byte granule of the guard; AttrIndx 0; enabled. */
      BF_BSP_REG32(BF_MPU_RLAR) = (((uint32_t)BF_CONF_NULL_GUARD_BYTES - 1u) & ~0x1Fu) | 1u;
    }
  }
#else
  BF_BSP_REG32(BF_MPU_RNR) = 0u;
  BF_BSP_REG32(BF_MPU_RBAR) = 0u; /* base 0, region number from RNR */
  /* XN, AP = 000 (no access), TEX/S/C/B = 0, SIZE = log2(bytes) - 1, enabled. */
  BF_BSP_REG32(BF_MPU_RASR) =
      (1u << 28) | ((uint32_t)(__builtin_ctz(BF_CONF_NULL_GUARD_BYTES) - 1) << 1) | 1u;
#endif
  BF_BSP_REG32(BF_MPU_CTRL) = BF_MPU_CTRL_PRIVDEFENA | BF_MPU_CTRL_ENABLE;
  BF_BSP_DSB();
  BF_BSP_ISB();
  return 0;
#endif
}
