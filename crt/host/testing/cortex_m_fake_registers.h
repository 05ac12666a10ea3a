/*
 * cortex_m_fake_registers.h: forced ahead of crt/boards/cortex-m/timer.c (-include) when that file
 * is compiled for the host by //crt/host:cortex_m_timer_test. Every register access goes to
 * bf_test_register (cortex_m_timer_test.cc), the barriers are nothing and the interrupt mask is
 * a variable: the Cortex-M timer's wrap handling runs on the host, against registers a test sets.
 */
#ifndef BF_HOST_TESTING_CORTEX_M_FAKE_REGISTERS_H_
#define BF_HOST_TESTING_CORTEX_M_FAKE_REGISTERS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The fake register at `address`; aborts for an address the fake does not model. */
volatile uint32_t* bf_test_register(uint32_t address);
/* 1 while the code under test has interrupts masked. */
extern uint32_t bf_test_primask;

#ifdef __cplusplus
}
#endif

#define BF_BSP_REG32(addr) (*bf_test_register((uint32_t)(addr)))
#define BF_BSP_DSB() ((void)0)
#define BF_BSP_ISB() ((void)0)
#define BF_BSP_IRQ_SAVE(saved) ((saved) = bf_test_primask, bf_test_primask = 1u)
#define BF_BSP_IRQ_RESTORE(saved) (bf_test_primask = (saved))

#endif /* BF_HOST_TESTING_CORTEX_M_FAKE_REGISTERS_H_ */
