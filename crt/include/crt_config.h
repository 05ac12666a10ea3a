/*
 * crt_config.h: every capacity of benchfarm's crt, in one place.
 *
 * Each value is a macro with a default; a board project overrides any of them
 * with -D on the compiler line, or by naming its own header in
 * TVM_CRT_CONFIG_USER_HEADER, which is included first. Each value is checked
 * at compile time, so a bad override fails the build rather than the board.
 *
 * Names follow TVM's CRT where it had the same setting.
 */
#ifndef TVM_RUNTIME_CRT_CONFIG_H_
#define TVM_RUNTIME_CRT_CONFIG_H_

#ifdef TVM_CRT_CONFIG_USER_HEADER
#include TVM_CRT_CONFIG_USER_HEADER
#endif

/* Log level, 0..4 (TVM_CRT_LOG_LEVEL_*). */
#ifndef TVM_CRT_LOG_LEVEL
#define TVM_CRT_LOG_LEVEL 2
#endif

/* Most arguments a packed function call may carry. */
#ifndef TVM_CRT_MAX_ARGS
#define TVM_CRT_MAX_ARGS 16
#endif

/* Most dimensions a tensor may have. */
#ifndef TVM_CRT_MAX_NDIM
#define TVM_CRT_MAX_NDIM 6
#endif

/* Bytes of the global (mutable) function registry. */
#ifndef TVM_CRT_GLOBAL_FUNC_REGISTRY_SIZE_BYTES
#define TVM_CRT_GLOBAL_FUNC_REGISTRY_SIZE_BYTES 512
#endif

/* Module slots (the system library takes the first). */
#ifndef TVM_CRT_MAX_REGISTERED_MODULES
#define TVM_CRT_MAX_REGISTERED_MODULES 2
#endif

/* Average function name length the mutable registry plans for. */
#ifndef TVM_CRT_AVERAGE_FUNCTION_NAME_STRLEN_BYTES
#define TVM_CRT_AVERAGE_FUNCTION_NAME_STRLEN_BYTES 10
#endif

/* Longest function name, including the NUL. */
#ifndef TVM_CRT_MAX_FUNCTION_NAME_LENGTH_BYTES
#define TVM_CRT_MAX_FUNCTION_NAME_LENGTH_BYTES 80
#endif

/* Largest MinRPC packet the board receives in one piece (bytes). */
#ifndef TVM_CRT_MAX_PACKET_SIZE_BYTES
#define TVM_CRT_MAX_PACKET_SIZE_BYTES 2048
#endif

/* Longest string argument (name, DeviceInfo line) kept on the board, including the NUL. */
#ifndef TVM_CRT_MAX_STRLEN_FUNCTION_NAME
#define TVM_CRT_MAX_STRLEN_FUNCTION_NAME TVM_CRT_MAX_FUNCTION_NAME_LENGTH_BYTES
#endif

/* Bytes of the memory pool behind TVMPlatformMemoryAllocate. */
#ifndef TVM_CRT_MEMORY_POOL_SIZE_BYTES
#define TVM_CRT_MEMORY_POOL_SIZE_BYTES (64 * 1024)
#endif

/* Page size of the memory pool (bytes, a power of two). */
#ifndef TVM_CRT_PAGE_BYTES
#define TVM_CRT_PAGE_BYTES 64
#endif

/* Time evaluators that may be live at once. */
#ifndef TVM_CRT_MAX_TIME_EVALUATORS
#define TVM_CRT_MAX_TIME_EVALUATORS 4
#endif

/* Tensors the MinRPC server may have allocated for the host at once. */
#ifndef TVM_CRT_MAX_RPC_ALLOCATIONS
#define TVM_CRT_MAX_RPC_ALLOCATIONS 16
#endif

/* Compile-time checks. A negative array size fails the build in C99 and C++. */
/* Entries of the CRC-16 lookup table (crt/link/crc16.c): 256 (512 bytes, a byte per step: the
 * host's choice) or 16 (32 bytes, a nibble per step: half the speed, for small flash). */
#ifndef TVM_CRT_CRC16_TABLE_ENTRIES
#define TVM_CRT_CRC16_TABLE_ENTRIES 256
#endif

#define TVM_CRT_STATIC_CHECK(cond, name) typedef char tvm_crt_static_check_##name[(cond) ? 1 : -1]

TVM_CRT_STATIC_CHECK(TVM_CRT_LOG_LEVEL >= 0 && TVM_CRT_LOG_LEVEL <= 4, log_level);
TVM_CRT_STATIC_CHECK(TVM_CRT_CRC16_TABLE_ENTRIES == 256 || TVM_CRT_CRC16_TABLE_ENTRIES == 16,
                     crc16_table_entries);
TVM_CRT_STATIC_CHECK(TVM_CRT_MAX_ARGS >= 1 && TVM_CRT_MAX_ARGS <= 255, max_args);
TVM_CRT_STATIC_CHECK(TVM_CRT_MAX_NDIM >= 1 && TVM_CRT_MAX_NDIM <= 32, max_ndim);
TVM_CRT_STATIC_CHECK(TVM_CRT_GLOBAL_FUNC_REGISTRY_SIZE_BYTES >= 64 &&
                         TVM_CRT_GLOBAL_FUNC_REGISTRY_SIZE_BYTES <= 65535,
                     global_func_registry_size);
TVM_CRT_STATIC_CHECK(TVM_CRT_MAX_REGISTERED_MODULES >= 1 && TVM_CRT_MAX_REGISTERED_MODULES < 0x7fff,
                     max_registered_modules);
TVM_CRT_STATIC_CHECK(TVM_CRT_AVERAGE_FUNCTION_NAME_STRLEN_BYTES >= 1, average_name_length);
TVM_CRT_STATIC_CHECK(TVM_CRT_MAX_FUNCTION_NAME_LENGTH_BYTES >= 8 &&
                         TVM_CRT_MAX_FUNCTION_NAME_LENGTH_BYTES <= 1024,
                     max_function_name_length);
TVM_CRT_STATIC_CHECK(TVM_CRT_MAX_PACKET_SIZE_BYTES >= 128, max_packet_size);
TVM_CRT_STATIC_CHECK(TVM_CRT_PAGE_BYTES >= 8 && (TVM_CRT_PAGE_BYTES & (TVM_CRT_PAGE_BYTES - 1)) == 0,
                     page_bytes_power_of_two);
TVM_CRT_STATIC_CHECK(TVM_CRT_MEMORY_POOL_SIZE_BYTES >= 4 * TVM_CRT_PAGE_BYTES, memory_pool_size);
TVM_CRT_STATIC_CHECK(TVM_CRT_MAX_TIME_EVALUATORS >= 1 && TVM_CRT_MAX_TIME_EVALUATORS <= 64,
                     max_time_evaluators);
TVM_CRT_STATIC_CHECK(TVM_CRT_MAX_RPC_ALLOCATIONS >= 1 && TVM_CRT_MAX_RPC_ALLOCATIONS <= 1024,
                     max_rpc_allocations);

#endif /* TVM_RUNTIME_CRT_CONFIG_H_ */
