/*
 * random_fill.c: tvm.contrib.random.random_fill (random_fill.h).
 *
 * Floats are made from the random bytes without float arithmetic (soft-float
 * on a Cortex-M3): the top 16 bits of each element get the sign and exponent
 * of 1.0 and keep their random mantissa bits. Every target is little-endian
 * (reference section 0), so those are the element's last two bytes.
 */
#include <stddef.h>
#include <stdint.h>

#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/crt.h>
#include <tvm/runtime/crt/platform.h>
#include <tvm/runtime/crt/random_fill.h>

int TVMCrtRandomFill(TVMValue* args, int* type_codes, int num_args, TVMValue* ret_value,
                     int* ret_tcode, void* resource_handle) {
  const DLTensor* t;
  uint8_t* p;
  size_t nbytes;
  size_t width;
  size_t k;
  unsigned one = 0;
  unsigned mask = 0;
  int err;
  (void)ret_value;
  (void)ret_tcode;
  (void)resource_handle;

  if (num_args != 1 || args == NULL || type_codes == NULL) {
    TVMAPISetLastError("random_fill: expects 1 argument, a tensor");
    return kTvmErrorFunctionCallNumArguments;
  }
  t = (const DLTensor*)args[0].v_handle; /* an NDArray handle points at its DLTensor */
  if ((type_codes[0] != kTVMDLTensorHandle && type_codes[0] != kTVMNDArrayHandle) || t == NULL) {
    TVMAPISetLastError("random_fill: expects 1 argument, a tensor");
    return kTvmErrorFunctionCallWrongArgType;
  }
  if (t->data == NULL || t->device.device_type != kDLCPU || t->byte_offset > (uint64_t)SIZE_MAX ||
      TVMCrtCompactTensorBytes(t->ndim, t->shape, t->strides, t->dtype, &nbytes) != 0) {
    TVMAPISetLastError("random_fill: needs a compact CPU tensor with data and a valid shape");
    return kTvmErrorFunctionCallInvalidArg;
  }
  p = (uint8_t*)t->data + (size_t)t->byte_offset;
  err = nbytes == 0u ? 0 : TVMPlatformGenerateRandom(p, nbytes);
  if (err != 0) {
    TVMAPISetLastError("random_fill: TVMPlatformGenerateRandom failed");
    return err;
  }

  /* The top 16 bits of 1.0 in the dtype, and which of them are mantissa. */
  if (t->dtype.code == kDLFloat && t->dtype.bits == 64u) {
    one = 0x3ff0u;
    mask = 0x000fu;
  } else if (t->dtype.code == kDLFloat && t->dtype.bits == 16u) {
    one = 0x3c00u;
    mask = 0x03ffu;
  } else if ((t->dtype.code == kDLFloat && t->dtype.bits == 32u) ||
             (t->dtype.code == kDLBfloat && t->dtype.bits == 16u)) {
    one = 0x3f80u;
    mask = 0x007fu;
  }
  if (one != 0u) {
    /* nbytes is a whole number of width-byte scalars; k walks the top two bytes of each. */
    width = t->dtype.bits / 8u;
    for (k = width - 2u; k < nbytes; k += width) {
      unsigned top = one | (((unsigned)p[k + 1u] << 8 | p[k]) & mask);
      p[k] = (uint8_t)top;
      p[k + 1u] = (uint8_t)(top >> 8);
    }
  }
  return 0;
}
