/*
 * dlpack.h: the DLPack tensor structures, written for benchfarm's crt.
 *
 * Layout-compatible with DLPack version 70 (the version TVM v0.18's CRT was
 * built against), so tensors exchanged over MinRPC and with TVM-generated
 * operator code have the same bytes. C99; no functions, only types.
 */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
#else
#define DLPACK_EXTERN_C
#endif

#define DLPACK_VERSION 70
#define DLPACK_ABI_VERSION 1
#define DLPACK_DLL

#ifdef __cplusplus
extern "C" {
#endif

/* Where a tensor's memory lives. Numbers are DLPack's. */
typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16
} DLDeviceType;

/* A device: its type and its index among devices of that type. */
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

/* The kind of number in a tensor. Numbers are DLPack's. */
typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U
} DLDataTypeCode;

/* An element type: code, bits per lane, lanes. 4 bytes on the wire. */
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

/* A tensor view. data + byte_offset is the first element; strides NULL means compact row-major. */
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* DLPACK_DLPACK_H_ */
