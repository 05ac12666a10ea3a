/*
 * op_args.c: argument checking for the sample operators (common.h).
 *
 * Packed arguments come off the wire, so every field is checked once here and
 * the kernels then run without checks. Messages are built without stdio.
 */
#include <benchfarm/ops/common.h>
#include <stddef.h>
#include <stdint.h>

/* Longest message built here, including the NUL (the runtime keeps 128 bytes). */
#define BF_OPS_MESSAGE_BYTES 112

/* One checked tensor: its first element and the byte range it covers. */
typedef struct {
  const DLTensor* tensor;
  float* data;
  int32_t elements;
  uintptr_t begin;
  uintptr_t end;
} bf_ops_tensor_t;

/* Stores "fn: what: problem" as the last error and returns code. */
static int Fail(int code, const char* fn, const char* what, const char* problem) {
  char msg[BF_OPS_MESSAGE_BYTES];
  const char* parts[5];
  size_t n = 0;
  size_t p;
  parts[0] = fn != NULL ? fn : "op";
  parts[1] = ": ";
  parts[2] = what;
  parts[3] = ": ";
  parts[4] = problem;
  for (p = 0; p < sizeof(parts) / sizeof(parts[0]); ++p) {
    const char* s = parts[p];
    while (*s != '\0' && n + 1 < sizeof(msg)) {
      msg[n++] = *s++;
    }
  }
  msg[n] = '\0';
  TVMAPISetLastError(msg);
  return code;
}

/* Checks the call's shape before any argument is read. */
static int CheckCall(const char* fn, const TVMValue* args, const int* type_codes, int num_args,
                     const char* usage) {
  if (num_args != 3) {
    return Fail(kTvmErrorFunctionCallNumArguments, fn, "arguments", usage);
  }
  if (args == NULL || type_codes == NULL) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn, "arguments", "NULL args or type_codes");
  }
  return 0;
}

/*
 * Checks argument `index` (called `name`) as a float32 compact tensor with
 * ndim `want_ndim` (-1: any of 0..TVM_CRT_MAX_NDIM), and describes it in *out.
 */
static int CheckTensor(const char* fn, const char* name, const TVMValue* args,
                       const int* type_codes, int index, int32_t want_ndim,
                       const char* ndim_problem, bf_ops_tensor_t* out) {
  const DLTensor* t;
  int64_t elements = 1;
  int64_t stride = 1;
  uintptr_t base;
  int32_t d;
  if (type_codes[index] != (int)kTVMDLTensorHandle) {
    return Fail(kTvmErrorFunctionCallWrongArgType, fn, name,
                "expected a DLTensor handle (type code 7)");
  }
  t = (const DLTensor*)args[index].v_handle;
  if (t == NULL) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn, name, "NULL DLTensor");
  }
  if (want_ndim >= 0 ? t->ndim != want_ndim : (t->ndim < 0 || t->ndim > TVM_CRT_MAX_NDIM)) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn, name, ndim_problem);
  }
  if (t->dtype.code != (uint8_t)kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn, name, "dtype must be float32");
  }
  if (t->ndim > 0 && t->shape == NULL) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn, name, "NULL shape");
  }
  for (d = 0; d < t->ndim; ++d) {
    const int64_t extent = t->shape[d];
    if (extent < 0) {
      return Fail(kTvmErrorFunctionCallInvalidArg, fn, name, "negative dimension");
    }
    if (extent > BF_OPS_MAX_TENSOR_ELEMENTS ||
        (extent > 0 && elements > BF_OPS_MAX_TENSOR_ELEMENTS / extent)) {
      return Fail(kTvmErrorFunctionCallInvalidArg, fn, name,
                  "too many elements (BF_OPS_MAX_TENSOR_ELEMENTS)");
    }
    elements *= extent;
  }
  /* Compact row-major; the stride of an extent-1 dimension does not matter. */
  if (t->strides != NULL && elements > 0) {
    for (d = t->ndim - 1; d >= 0; --d) {
      if (t->shape[d] != 1 && t->strides[d] != stride) {
        return Fail(kTvmErrorFunctionCallInvalidArg, fn, name,
                    "not compact (strides must be NULL or row-major)");
      }
      stride *= t->shape[d];
    }
  }
  if (t->data == NULL) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn, name, "NULL data");
  }
  base = (uintptr_t)t->data;
  if (base % sizeof(float) != 0 || t->byte_offset % sizeof(float) != 0) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn, name,
                "data + byte_offset not aligned for float32");
  }
  if (t->byte_offset > (uint64_t)(UINTPTR_MAX - base) ||
      (uint64_t)elements * sizeof(float) >
          (uint64_t)(UINTPTR_MAX - base - (uintptr_t)t->byte_offset)) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn, name, "byte_offset out of range");
  }
  out->tensor = t;
  out->begin = base + (uintptr_t)t->byte_offset;
  out->end = out->begin + (uintptr_t)elements * sizeof(float);
  /* Alignment was checked above. */
  out->data = (float*)(void*)((char*)t->data + (uintptr_t)t->byte_offset);
  out->elements = (int32_t)elements;
  return 0;
}

/* True when two non-empty byte ranges share a byte. */
static int Overlap(const bf_ops_tensor_t* x, const bf_ops_tensor_t* y) {
  return x->begin < x->end && y->begin < y->end && x->begin < y->end && y->begin < x->end;
}

static int SameShape(const DLTensor* x, const DLTensor* y) {
  int32_t d;
  if (x->ndim != y->ndim) {
    return 0;
  }
  for (d = 0; d < x->ndim; ++d) {
    if (x->shape[d] != y->shape[d]) {
      return 0;
    }
  }
  return 1;
}

int bf_ops_add_unpack(const char* fn_name, const TVMValue* args, const int* type_codes,
                      int num_args, bf_ops_add_args_t* out) {
  static const char kNdim[] = "ndim must be 0..TVM_CRT_MAX_NDIM";
  bf_ops_tensor_t a, b, c;
  int err = CheckCall(fn_name, args, type_codes, num_args, "expected 3 (A, B, C)");
  if (err == 0) err = CheckTensor(fn_name, "A", args, type_codes, 0, -1, kNdim, &a);
  if (err == 0) err = CheckTensor(fn_name, "B", args, type_codes, 1, -1, kNdim, &b);
  if (err == 0) err = CheckTensor(fn_name, "C", args, type_codes, 2, -1, kNdim, &c);
  if (err != 0) {
    return err;
  }
  if (!SameShape(a.tensor, b.tensor)) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn_name, "B", "shape differs from A");
  }
  if (!SameShape(a.tensor, c.tensor)) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn_name, "C", "shape differs from A");
  }
  if ((Overlap(&c, &a) && c.begin != a.begin) || (Overlap(&c, &b) && c.begin != b.begin)) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn_name, "C",
                "partly overlaps an input (only C == A or C == B is allowed)");
  }
  out->a = a.data;
  out->b = b.data;
  out->c = c.data;
  out->count = a.elements;
  return 0;
}

int bf_ops_matmul_unpack(const char* fn_name, const TVMValue* args, const int* type_codes,
                         int num_args, bf_ops_matmul_args_t* out) {
  static const char kNdim[] = "ndim must be 2";
  bf_ops_tensor_t a, b, c;
  int err = CheckCall(fn_name, args, type_codes, num_args, "expected 3 (A[M,K], B[K,N], C[M,N])");
  if (err == 0) err = CheckTensor(fn_name, "A", args, type_codes, 0, 2, kNdim, &a);
  if (err == 0) err = CheckTensor(fn_name, "B", args, type_codes, 1, 2, kNdim, &b);
  if (err == 0) err = CheckTensor(fn_name, "C", args, type_codes, 2, 2, kNdim, &c);
  if (err != 0) {
    return err;
  }
  if (b.tensor->shape[0] != a.tensor->shape[1]) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn_name, "B",
                "shape[0] must equal A's shape[1] (K)");
  }
  if (c.tensor->shape[0] != a.tensor->shape[0] || c.tensor->shape[1] != b.tensor->shape[1]) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn_name, "C",
                "shape must be [M, N] (A's shape[0], B's shape[1])");
  }
  if (Overlap(&c, &a) || Overlap(&c, &b)) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn_name, "C", "overlaps an input");
  }
  out->a = a.data;
  out->b = b.data;
  out->c = c.data;
  out->m = (int32_t)a.tensor->shape[0];
  out->k = (int32_t)a.tensor->shape[1];
  out->n = (int32_t)b.tensor->shape[1];
  return 0;
}

int bf_ops_conv2d_unpack(const char* fn_name, const TVMValue* args, const int* type_codes,
                         int num_args, bf_ops_conv2d_args_t* out) {
  static const char kNdim[] = "ndim must be 4";
  bf_ops_tensor_t in, wt, o;
  const int64_t* is;
  const int64_t* ws;
  const int64_t* os;
  int err = CheckCall(fn_name, args, type_codes, num_args,
                      "expected 3 (input NCHW, weight OIHW, output NOHW)");
  if (err == 0) err = CheckTensor(fn_name, "input", args, type_codes, 0, 4, kNdim, &in);
  if (err == 0) err = CheckTensor(fn_name, "weight", args, type_codes, 1, 4, kNdim, &wt);
  if (err == 0) err = CheckTensor(fn_name, "output", args, type_codes, 2, 4, kNdim, &o);
  if (err != 0) {
    return err;
  }
  is = in.tensor->shape;
  ws = wt.tensor->shape;
  os = o.tensor->shape;
  if (ws[1] != is[1]) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn_name, "weight",
                "shape[1] must equal input's channels (C)");
  }
  if (ws[2] < 1 || ws[3] < 1) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn_name, "weight",
                "kernel KH and KW must be >= 1");
  }
  if (ws[2] > is[2] || ws[3] > is[3]) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn_name, "weight",
                "kernel larger than input (KH > H or KW > W)");
  }
  if (os[0] != is[0] || os[1] != ws[0] || os[2] != is[2] - ws[2] + 1 ||
      os[3] != is[3] - ws[3] + 1) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn_name, "output",
                "shape must be [N, O, H-KH+1, W-KW+1]");
  }
  if (Overlap(&o, &in) || Overlap(&o, &wt)) {
    return Fail(kTvmErrorFunctionCallInvalidArg, fn_name, "output", "overlaps an input");
  }
  out->input = in.data;
  out->weight = wt.data;
  out->output = o.data;
  out->dims.n = (int32_t)is[0];
  out->dims.c = (int32_t)is[1];
  out->dims.h = (int32_t)is[2];
  out->dims.w = (int32_t)is[3];
  out->dims.o = (int32_t)ws[0];
  out->dims.kh = (int32_t)ws[2];
  out->dims.kw = (int32_t)ws[3];
  out->dims.oh = (int32_t)os[2];
  out->dims.ow = (int32_t)os[3];
  return 0;
}
