/*
 * startup.c: the vector table and Reset handler shared by every Cortex-M package, and
 * bf_bsp_core_init (vector table relocation, fault enables, the MPU's NULL guard).
 *
 * Reset: enables the FPU when the image is built for one (before any code could use it), copies
 * .data from flash, zeroes .bss, calls main (no C++ constructors, no libc start-up). If main
 * returns, the chip is reset.
 *
 * Vector table: the initial stack pointer, the core exceptions and BF_CONF_NUM_IRQS interrupts.
 * Every entry but Reset, SysTick and the UART's interrupt goes to the fault entry, so an
 * unexpected exception or interrupt is reported like a fault ("fault: IRQ 7 ...") and resets.
 *
 * Linker symbols (cortex-m/link.ld.in): bf_bsp_stack_top, bf_bsp_data_load/start/end,
 * bf_bsp_bss_start/end.
 */
#include "bf_bsp.h"

int main(void);
void bf_bsp_reset_handler(void) __attribute__((noreturn));
void bf_bsp_fault_entry(void);     /* fault.c */
void bf_bsp_systick_handler(void); /* timer.c */
int bf_bsp_mpu_null_guard(void);   /* mpu.c */

extern uint32_t bf_bsp_stack_top[];
extern uint32_t bf_bsp_data_load[];
extern uint32_t bf_bsp_data_start[];
extern uint32_t bf_bsp_data_end[];
extern uint32_t bf_bsp_bss_start[];
extern uint32_t bf_bsp_bss_end[];

typedef void (*bf_bsp_handler_t)(void);

/* The hardware's layout: word 0 the initial SP, then exceptions 1 .. 15 + NUM_IRQS. */
typedef struct {
  const void* initial_sp;
  bf_bsp_handler_t handlers[15 + BF_CONF_NUM_IRQS];
} bf_bsp_vector_table_t;

/* Exception numbers (handlers[] index + 1). */
enum { kBfReset = 1, kBfSysTick = 15, kBfFirstIrq = 16 };

/* Every entry defaults to the fault entry; the three real handlers override theirs. The range
 * initializer is a GNU extension (hence __extension__), the override is intended. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
__extension__ const bf_bsp_vector_table_t bf_bsp_vectors
    __attribute__((section(".bf_vectors"), used)) = {
        bf_bsp_stack_top,
        {
            [0 ... 14 + BF_CONF_NUM_IRQS] = bf_bsp_fault_entry,
            [kBfReset - 1] = bf_bsp_reset_handler,
            [kBfSysTick - 1] = bf_bsp_systick_handler,
            [kBfFirstIrq - 1 + BF_CONF_UART_IRQ] = bf_bsp_uart_irq_handler,
        },
};
#pragma GCC diagnostic pop

/* When flash starts inside the NULL guard (flash at 0, e.g. MPS2), the table the core reads on
 * every exception must move out of it: a RAM copy, placed first in RAM by the linker script and
 * aligned to the table's size rounded up to a power of two (VTOR's rule). */
#if BF_CONF_NULL_GUARD_BYTES > 0 && BF_CONF_FLASH_ORIGIN < BF_CONF_NULL_GUARD_BYTES
#define BF_BSP_RELOCATE_VECTORS 1
#define BF_BSP_VECTOR_BYTES (4 * (16 + BF_CONF_NUM_IRQS))
#define BF_BSP_VECTOR_ALIGN             \
  (BF_BSP_VECTOR_BYTES <= 128    ? 128  \
   : BF_BSP_VECTOR_BYTES <= 256  ? 256  \
   : BF_BSP_VECTOR_BYTES <= 512  ? 512  \
   : BF_BSP_VECTOR_BYTES <= 1024 ? 1024 \
                                 : 2048)
static bf_bsp_vector_table_t bf_bsp_ram_vectors
    __attribute__((section(".bf_ram_vectors"), aligned(BF_BSP_VECTOR_ALIGN)));
#else
#define BF_BSP_RELOCATE_VECTORS 0
#endif

void bf_bsp_reset_handler(void) {
  uint32_t* src;
  uint32_t* dst;
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
  /* CP10 and CP11 full access: the FPU (and MVE) may be used from here on. */
  BF_BSP_REG32(BF_BSP_SCB_CPACR) |= 0xFu << 20;
  BF_BSP_DSB();
  BF_BSP_ISB();
#endif
  for (src = bf_bsp_data_load, dst = bf_bsp_data_start; dst < bf_bsp_data_end;) *dst++ = *src++;
  for (dst = bf_bsp_bss_start; dst < bf_bsp_bss_end;) *dst++ = 0u;
  (void)main();
  bf_bsp_reset();
}

void bf_bsp_core_init(void) {
#if BF_BSP_RELOCATE_VECTORS
  bf_bsp_ram_vectors = bf_bsp_vectors;
  BF_BSP_DSB();
  BF_BSP_REG32(BF_BSP_SCB_VTOR) = (uint32_t)(uintptr_t)&bf_bsp_ram_vectors;
#else
  BF_BSP_REG32(BF_BSP_SCB_VTOR) = (uint32_t)(uintptr_t)&bf_bsp_vectors;
#endif
  BF_BSP_DSB();
  BF_BSP_ISB();
  /* MemManage, BusFault, UsageFault (and SecureFault on ARMv8-M) get their own entry rather than
   * escalating to HardFault, so the report names them. */
  BF_BSP_REG32(BF_BSP_SCB_SHCSR) |= (1u << 16) | (1u << 17) | (1u << 18)
#if BF_CONF_ARMV8M
                                    | (1u << 19)
#endif
      ;
  /* Integer division by zero traps (UsageFault) instead of returning 0. */
  BF_BSP_REG32(BF_BSP_SCB_CCR) |= 1u << 4;
  (void)bf_bsp_mpu_null_guard();
  BF_BSP_DSB();
  BF_BSP_ISB();
}

void bf_bsp_nvic_enable(int irq, uint8_t priority) {
  BF_BSP_REG32(BF_BSP_NVIC_IPR_BYTE(irq) & ~3u) =
      (BF_BSP_REG32(BF_BSP_NVIC_IPR_BYTE(irq) & ~3u) & ~(0xFFu << (8u * ((uint32_t)irq & 3u)))) |
      ((uint32_t)priority << (8u * ((uint32_t)irq & 3u)));
  BF_BSP_REG32(BF_BSP_NVIC_ISER((uint32_t)irq >> 5)) = 1u << ((uint32_t)irq & 31u);
}

void bf_bsp_nvic_disable(int irq) {
  BF_BSP_REG32(BF_BSP_NVIC_ICER((uint32_t)irq >> 5)) = 1u << ((uint32_t)irq & 31u);
  BF_BSP_DSB();
  BF_BSP_ISB();
}

void bf_bsp_nvic_pend(int irq) {
  BF_BSP_REG32(BF_BSP_NVIC_ISPR((uint32_t)irq >> 5)) = 1u << ((uint32_t)irq & 31u);
}
