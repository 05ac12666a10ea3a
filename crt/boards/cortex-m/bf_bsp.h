/*
 * bf_bsp.h: the contract between the shared Cortex-M firmware (crt/boards/cortex-m/) and a board
 * package (crt/boards/<package>/). C99, no heap, no stdio.
 *
 * Configuration: crt/boards/build.sh turns every numeric KEY=VALUE of the package's board.conf into
 * -DBF_CONF_<KEY>=<VALUE> (pins written PA9, PB6, ... become (port << 4) | pin, port A = 0), so
 * board code reads BF_CONF_CPU_HZ, BF_CONF_UART_BASE, ... ; the keys this header needs are checked
 * below, each package's driver checks its own.
 *
 * What a package provides (the sources board.conf's SOURCES names):
 *   - a UART driver: bf_bsp_uart_init, bf_bsp_uart_put, bf_bsp_uart_drain,
 *     bf_bsp_uart_rx_irq_enable and its interrupt handler bf_bsp_uart_irq_handler, which the shared
 *     vector table installs at IRQ BF_CONF_UART_IRQ;
 *   - optionally bf_bsp_clock_init (board.conf CLOCK_INIT=1): clocks, flash wait states, run
 *     before anything else in main.
 * What the shared code provides to it: the receive ring (bf_bsp_rx_*), register access helpers.
 */
#ifndef BF_BOARDS_CORTEX_M_BF_BSP_H_
#define BF_BOARDS_CORTEX_M_BF_BSP_H_

#include <stddef.h>
#include <stdint.h>

#ifndef BF_CONF_CPU_HZ
#error "BF_CONF_CPU_HZ is not set: build with crt/boards/build.sh (board.conf CPU_HZ)"
#endif
#ifndef BF_CONF_NUM_IRQS
#error "BF_CONF_NUM_IRQS is not set (board.conf NUM_IRQS: external interrupts of the part)"
#endif
#ifndef BF_CONF_UART_IRQ
#error "BF_CONF_UART_IRQ is not set (board.conf UART_IRQ: the UART's receive interrupt number)"
#endif
#ifndef BF_CONF_FLASH_ORIGIN
#error "BF_CONF_FLASH_ORIGIN is not set (board.conf FLASH_ORIGIN)"
#endif
/* Bytes at address 0 the MPU makes inaccessible (NULL dereferences fault); 0 = no guard. A power
 * of two >= 32. */
#ifndef BF_CONF_NULL_GUARD_BYTES
#define BF_CONF_NULL_GUARD_BYTES 1024
#endif
/* 1 for an ARMv8-M core (PMSAv8 MPU, SecureFault), 0 for ARMv7-M. */
#ifndef BF_CONF_ARMV8M
#define BF_CONF_ARMV8M 0
#endif
/* Bytes of the UART receive ring (a power of two). */
#ifndef BF_CONF_RX_RING_BYTES
#define BF_CONF_RX_RING_BYTES 2048
#endif

typedef char bf_bsp_check_ring_pow2[(BF_CONF_RX_RING_BYTES & (BF_CONF_RX_RING_BYTES - 1)) == 0 &&
                                            BF_CONF_RX_RING_BYTES >= 16
                                        ? 1
                                        : -1];
typedef char
    bf_bsp_check_irq[BF_CONF_UART_IRQ >= 0 && BF_CONF_UART_IRQ < BF_CONF_NUM_IRQS ? 1 : -1];

/* A memory-mapped 32-bit register. (This macro, the barriers and the interrupt mask below may be
 * defined before this header by a host test of the shared code, e.g. with fake registers.) */
#ifndef BF_BSP_REG32
#define BF_BSP_REG32(addr) (*(volatile uint32_t*)(uintptr_t)(addr))
#endif

/* ---- System control space (ARMv7-M / ARMv8-M, identical where used here) ----------------------
 */
#define BF_BSP_SCB_ICSR 0xE000ED04u
#define BF_BSP_SCB_VTOR 0xE000ED08u
#define BF_BSP_SCB_AIRCR 0xE000ED0Cu
#define BF_BSP_SCB_CCR 0xE000ED14u
#define BF_BSP_SCB_SHPR3 0xE000ED20u
#define BF_BSP_SCB_SHCSR 0xE000ED24u
#define BF_BSP_SCB_CFSR 0xE000ED28u
#define BF_BSP_SCB_HFSR 0xE000ED2Cu
#define BF_BSP_SCB_MMFAR 0xE000ED34u
#define BF_BSP_SCB_BFAR 0xE000ED38u
#define BF_BSP_SCB_CPACR 0xE000ED88u
#define BF_BSP_NVIC_ISER(n) (0xE000E100u + 4u * (uint32_t)(n))
#define BF_BSP_NVIC_ICER(n) (0xE000E180u + 4u * (uint32_t)(n))
#define BF_BSP_NVIC_ISPR(n) (0xE000E200u + 4u * (uint32_t)(n))
#define BF_BSP_NVIC_IPR_BYTE(irq) (0xE000E400u + (uint32_t)(irq))

/* Data and instruction synchronisation barriers. */
#ifndef BF_BSP_DSB
#define BF_BSP_DSB() __asm__ volatile("dsb" ::: "memory")
#endif
#ifndef BF_BSP_ISB
#define BF_BSP_ISB() __asm__ volatile("isb" ::: "memory")
#endif
/* The markers of a timed interval for an emulated board's cycle model (cyclemodel/, README.md
 * "Emulated boards"): 32-bit hints the architecture leaves unallocated (HINT.W #0xC0, #0xC1),
 * which a Cortex-M executes as NOPs and QEMU's cycle-model plugin sees. TVMPlatformTimerStart
 * ends with START and TVMPlatformTimerStop begins with STOP, so the model counts exactly what the
 * board's timer times. */
#define BF_BSP_CYCLE_MARK_START() __asm__ volatile(".inst.w 0xf3af80c0" ::: "memory")
#define BF_BSP_CYCLE_MARK_STOP() __asm__ volatile(".inst.w 0xf3af80c1" ::: "memory")

/* Masks interrupts, keeping the previous PRIMASK in the uint32_t lvalue `saved`; restores it. */
#ifndef BF_BSP_IRQ_SAVE
#define BF_BSP_IRQ_SAVE(saved) __asm__ volatile("mrs %0, primask\n cpsid i" : "=r"(saved)::"memory")
#endif
#ifndef BF_BSP_IRQ_RESTORE
#define BF_BSP_IRQ_RESTORE(saved) __asm__ volatile("msr primask, %0" ::"r"(saved) : "memory")
#endif

/* Enables / masks / pends interrupt `irq` (0-based external interrupt) at the NVIC; enable also
 * sets its priority byte (0 = most urgent; only the top bits a part implements count). */
void bf_bsp_nvic_enable(int irq, uint8_t priority);
void bf_bsp_nvic_disable(int irq);
void bf_bsp_nvic_pend(int irq);

/* ---- UART driver (package) --------------------------------------------------------------------
 */

/* Sets up the UART (pins, clock, BF_CONF_UART_BAUD 8N1), enables its receive interrupt at the
 * peripheral and at the NVIC. Received bytes go to bf_bsp_rx_push from then on. */
void bf_bsp_uart_init(void);
/* Transmits one byte, polling: returns once the UART has accepted it (it may still be shifting
 * out). Works with interrupts masked and from fault handlers. */
void bf_bsp_uart_put(uint8_t byte);
/* Returns once every byte given to bf_bsp_uart_put has left the transmitter (polled). */
void bf_bsp_uart_drain(void);
/* Enables (on != 0) or masks the UART's receive interrupt at the peripheral. While it is masked,
 * received bytes wait in the UART (QEMU stops delivering; real hardware may overrun). Enabling it
 * with a byte already waiting must make the interrupt run (pend it if the UART will not). */
void bf_bsp_uart_rx_irq_enable(int on);
/* The UART interrupt handler: reads every received byte into the ring; when the ring is full it
 * masks the receive interrupt (bf_bsp_uart_rx_irq_enable(0)) and leaves the rest in the UART. */
void bf_bsp_uart_irq_handler(void);

/* ---- Receive ring (cortex-m/uart_ring.c) ------------------------------------------------------
 */

/* From the UART interrupt only. bf_bsp_rx_full: non-zero when no byte fits. bf_bsp_rx_push:
 * stores one byte (the ring must not be full). bf_bsp_rx_stall: the ring is full and the
 * interrupt leaves further bytes in the UART and masks its receive interrupt; records that, so
 * bf_bsp_uart_read unmasks it (bf_bsp_uart_rx_irq_enable(1)) once there is room. */
int bf_bsp_rx_full(void);
void bf_bsp_rx_push(uint8_t byte);
void bf_bsp_rx_stall(void);
/* From thread mode: moves up to n buffered bytes into buf, returns how many (0 when none; never
 * waits). Unmasks the receive interrupt once there is room again. */
size_t bf_bsp_uart_read(uint8_t* buf, size_t n);
/* Times the ring was full (bytes waited in the UART) since boot. */
uint32_t bf_bsp_rx_stalls(void);

/* ---- Clocks (package, optional) ---------------------------------------------------------------
 */

/* Brings the core to BF_CONF_CPU_HZ (PLL, flash wait states, bus prescalers). Defined by the
 * package when board.conf sets CLOCK_INIT=1; called first thing in main. */
void bf_bsp_clock_init(void);

/* ---- Shared core services (cortex-m/) ---------------------------------------------------------
 */

/* Timer source chosen at boot by bf_bsp_timer_init: "dwt" or "systick". */
const char* bf_bsp_timer_source(void);
/* Starts SysTick (wrap counting) and the DWT cycle counter where it exists and counts. */
void bf_bsp_timer_init(void);
/* Core clock cycles since bf_bsp_timer_init (64 bits, wrap-safe; thread mode or handlers; may
 * spin for up to one timer tick). */
uint64_t bf_bsp_cycles(void);
/* SysTick mode: restarts SysTick's period now, keeping bf_bsp_cycles continuous (to within the
 * few cycles the restart takes), so what is timed next runs at a fixed timer phase. DWT: no-op. */
void bf_bsp_timer_rebase(void);

/* Relocates the vector table if it lies in the NULL guard, enables the configurable fault
 * handlers and divide-by-zero trapping, and programs the MPU's NULL guard. */
void bf_bsp_core_init(void);

/* Registers benchfarm.Microbench and benchfarm.Microbenchmarks (microbench.c). 0 on success. */
int bf_bsp_microbench_register(void);

/* Lets the fault handlers and TVMPlatformAbort log through this MinRPC server (a
 * crt_rpc_server_t*, kept as void* so this header needs no crt include). NULL: reset silently. */
void bf_bsp_fault_set_server(void* server);

/* Logs "fault: <what>" through the server set above (if any), drains the UART and resets the chip
 * (AIRCR SYSRESETREQ). Never returns. */
void bf_bsp_fatal(const char* what) __attribute__((noreturn));

/* Resets the chip after draining the UART. Never returns. */
void bf_bsp_reset(void) __attribute__((noreturn));

/* Identity of the image: from the generated firmware-id source (crt/boards/build.sh). */
extern const char bf_bsp_firmware_hash[];
extern const char bf_bsp_board_kind[];

#endif /* BF_BOARDS_CORTEX_M_BF_BSP_H_ */
