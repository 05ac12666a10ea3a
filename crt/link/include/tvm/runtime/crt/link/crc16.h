/*
 * crc16.h: CRC-16/CCITT-FALSE, the checksum of microTVM's framing layer.
 *
 * Polynomial 0x1021, initial value 0xFFFF, not reflected (MSB first), no final
 * XOR; also called CRC-16/IBM-3740. The check value of "123456789" is 0x29B1,
 * and Python's binascii.crc_hqx(data, 0xFFFF) computes the same function.
 *
 * The functions are pure: no state, no errors, safe to call from any context.
 * The lookup table is const, so a board places it in flash.
 */
#ifndef TVM_RUNTIME_CRT_LINK_CRC16_H_
#define TVM_RUNTIME_CRT_LINK_CRC16_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The value a CRC starts from. */
#define CRT_CRC16_INIT ((uint16_t)0xFFFFu)

/*
 * Continues crc over data[0..n). Feeding a buffer in pieces gives the same
 * result as feeding it whole. data may be NULL when n is 0.
 */
uint16_t crt_crc16_update(uint16_t crc, const uint8_t* data, size_t n);

/* One byte of crt_crc16_update. */
uint16_t crt_crc16_update_byte(uint16_t crc, uint8_t byte);

/* The CRC of data[0..n) from CRT_CRC16_INIT. */
uint16_t crt_crc16(const uint8_t* data, size_t n);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_LINK_CRC16_H_ */
