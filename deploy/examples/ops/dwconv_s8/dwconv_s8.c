/* A user operator for benchfarm: a depthwise 2-D convolution of int8 data with int8 weights and
 * int32 accumulation, layout HWC (channels innermost, as CMSIS-NN and TFLM keep activations),
 * valid padding, stride 1: output[oh][ow][c] = sum over kh, kw of
 * input[oh + kh][ow + kw][c] * weight[kh][kw][c].
 *
 * Knobs (op.json): unroll_c — channels computed per step of the channel loop (1, 2, 4, 8);
 * channel_inner — 1: the channel loop innermost (contiguous loads), 0: outermost (one weight
 * column kept for a whole channel). The agent compiles this file once per candidate with
 * BF_KNOB_unroll_c and BF_KNOB_channel_inner defined; compiled alone it uses the defaults below.
 * dwconv_s8_reference is the plain loop every candidate is checked against (exactly: int32). */
#include <benchfarm/ops/common.h>
#include <benchfarm/ops/knob.h>
#include <dlpack/dlpack.h>
#include <stdint.h>

#ifndef BF_KNOB_unroll_c
#define BF_KNOB_unroll_c 1
#endif
#ifndef BF_KNOB_channel_inner
#define BF_KNOB_channel_inner 1
#endif

typedef struct {
  const int8_t* in;
  const int8_t* w;
  int32_t* out;
  int64_t h, w_, c, kh, kw, oh, ow;
} Conv;

static int IsType(const DLTensor* t, uint8_t code, uint8_t bits, int ndim) {
  return t->ndim == ndim && t->dtype.code == code && t->dtype.bits == bits && t->dtype.lanes == 1;
}

/* input (H, W, C) int8, weight (KH, KW, C) int8, output (OH, OW, C) int32; -1 otherwise. */
static int Unpack(const TVMValue* args, const int* type_codes, int num_args, Conv* v) {
  const DLTensor *x, *w, *y;
  if (num_args != 3 || type_codes[0] != kTVMDLTensorHandle || type_codes[1] != kTVMDLTensorHandle ||
      type_codes[2] != kTVMDLTensorHandle) {
    return -1;
  }
  x = (const DLTensor*)args[0].v_handle;
  w = (const DLTensor*)args[1].v_handle;
  y = (const DLTensor*)args[2].v_handle;
  if (!IsType(x, kDLInt, 8, 3) || !IsType(w, kDLInt, 8, 3) || !IsType(y, kDLInt, 32, 3)) return -1;
  v->h = x->shape[0];
  v->w_ = x->shape[1];
  v->c = x->shape[2];
  v->kh = w->shape[0];
  v->kw = w->shape[1];
  v->oh = y->shape[0];
  v->ow = y->shape[1];
  if (w->shape[2] != v->c || y->shape[2] != v->c || v->oh != v->h - v->kh + 1 ||
      v->ow != v->w_ - v->kw + 1) {
    return -1;
  }
  v->in = (const int8_t*)x->data;
  v->w = (const int8_t*)w->data;
  v->out = (int32_t*)y->data;
  return 0;
}

/* One output pixel's channels [c0, c0 + n). */
static void Pixel(const Conv* v, int64_t oh, int64_t ow, int64_t c0, int n) {
  int32_t acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i, j;
  int u;
  for (i = 0; i < v->kh; ++i) {
    for (j = 0; j < v->kw; ++j) {
      const int8_t* x = v->in + ((oh + i) * v->w_ + (ow + j)) * v->c + c0;
      const int8_t* k = v->w + (i * v->kw + j) * v->c + c0;
      for (u = 0; u < n; ++u) acc[u] += (int32_t)x[u] * (int32_t)k[u];
    }
  }
  for (u = 0; u < n; ++u) v->out[(oh * v->ow + ow) * v->c + c0 + u] = acc[u];
}

BF_OPS_DECLARE_PACKED(dwconv_s8);
BF_OPS_DECLARE_PACKED(dwconv_s8) {
  Conv v;
  int64_t oh, ow, c;
  const int step = BF_KNOB(unroll_c);
  if (Unpack(args, type_codes, num_args, &v) != 0) return -1;
#if BF_KNOB_channel_inner
  for (oh = 0; oh < v.oh; ++oh) {
    for (ow = 0; ow < v.ow; ++ow) {
      for (c = 0; c + step <= v.c; c += step) Pixel(&v, oh, ow, c, step);
      for (; c < v.c; ++c) Pixel(&v, oh, ow, c, 1);
    }
  }
#else
  for (c = 0; c + step <= v.c; c += step) {
    for (oh = 0; oh < v.oh; ++oh) {
      for (ow = 0; ow < v.ow; ++ow) Pixel(&v, oh, ow, c, step);
    }
  }
  for (; c < v.c; ++c) {
    for (oh = 0; oh < v.oh; ++oh) {
      for (ow = 0; ow < v.ow; ++ow) Pixel(&v, oh, ow, c, 1);
    }
  }
#endif
  return 0;
}

BF_OPS_DECLARE_PACKED(dwconv_s8_reference);
BF_OPS_DECLARE_PACKED(dwconv_s8_reference) {
  Conv v;
  int64_t oh, ow, c, i, j;
  if (Unpack(args, type_codes, num_args, &v) != 0) return -1;
  for (oh = 0; oh < v.oh; ++oh) {
    for (ow = 0; ow < v.ow; ++ow) {
      for (c = 0; c < v.c; ++c) {
        int32_t acc = 0;
        for (i = 0; i < v.kh; ++i) {
          for (j = 0; j < v.kw; ++j) {
            acc += (int32_t)v.in[((oh + i) * v.w_ + (ow + j)) * v.c + c] *
                   (int32_t)v.w[(i * v.kw + j) * v.c + c];
          }
        }
        v.out[(oh * v.ow + ow) * v.c + c] = acc;
      }
    }
  }
  return 0;
}
