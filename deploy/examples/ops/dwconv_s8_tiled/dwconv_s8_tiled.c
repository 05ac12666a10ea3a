/* A user operator for benchfarm: dwconv_s8's depthwise 2-D convolution (int8 data, int8 weights,
 * int32 accumulation, HWC, valid padding, stride 1: output[oh][ow][c] = sum over kh, kw of
 * input[oh + kh][ow + kw][c] * weight[kh][kw][c]) with the schedule a Cortex-M tuner explores,
 * the int8 space of the tuner's replay benchmark (issue 37 §4, benchmarks/data/).
 *
 * Knobs (op.json), 3 x 4 x 4 x 2 x 2 x 2 x 2 x 3 = 2,304 configs:
 *   tile_h, tile_w  output rows and columns computed per tile (1, 2, 4; 1, 2, 4, 8): each weight
 *                   vector is loaded once per tap for the whole tile, the tile's accumulators
 *                   live while the taps go by;
 *   block_c         channels per block (1, 2, 4, 8);
 *   simd            1: blocks of 4 channels use the Cortex-M4's DSP instructions — one 32-bit load
 *                   of 4 int8 channels, SXTB16 splitting it into two pairs of int16, SMLABB/SMLATT
 *                   accumulating each; a weight word is unpacked once per tap for the whole tile
 *                   (without the DSP extension, e.g. on a Cortex-M3 or the host, the same data
 *                   flow in plain C); blocks of 1 or 2 channels are scalar whatever it says;
 *   unroll_kw       3: the kernel's columns written out when it is 3 wide (else the loop);
 *   order           hwc: tiles outer, channel blocks inner; chw: channel blocks outer;
 *   acc             reg: the tile's accumulators in a local array (registers when they fit);
 *                   mem: accumulated in the output itself;
 *   opt             the compile options (a cflag knob): -Os, -O2, -O3.
 * A tile or block that does not divide the output leaves edges: rows, columns and channels past
 * the last whole tile are computed one at a time (scalar), so every config computes the same
 * output. The agent compiles this file once per candidate with the knobs defined; compiled alone
 * it uses the defaults below. dwconv_s8_tiled_reference, the plain loop every candidate is
 * checked against (exactly: int32), is its own code, not the edges'. */
#include <benchfarm/ops/common.h>
#include <benchfarm/ops/knob.h>
#include <dlpack/dlpack.h>
#include <stdint.h>
#include <string.h>

#ifndef BF_KNOB_tile_h
#define BF_KNOB_tile_h 1
#endif
#ifndef BF_KNOB_tile_w
#define BF_KNOB_tile_w 1
#endif
#ifndef BF_KNOB_block_c
#define BF_KNOB_block_c 1
#endif
#ifndef BF_KNOB_simd
#define BF_KNOB_simd 0
#endif
#ifndef BF_KNOB_unroll_kw
#define BF_KNOB_unroll_kw 1
#endif
#if !defined(BF_KNOB_order_hwc) && !defined(BF_KNOB_order_chw)
#define BF_KNOB_order_hwc 1
#endif
#if !defined(BF_KNOB_acc_reg) && !defined(BF_KNOB_acc_mem)
#define BF_KNOB_acc_reg 1
#endif

#define TH BF_KNOB_tile_h
#define TW BF_KNOB_tile_w
#define CB BF_KNOB_block_c
/* Blocks of 4 (or 8) channels through the packed path. */
#define PACKED (BF_KNOB_simd && CB % 4 == 0)

#if PACKED
#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP && defined(__ARM_FEATURE_SIMD32)
#include <arm_acle.h>
#define Sxtb16(x) ((int32_t)__sxtb16((int32_t)(x)))
#define Smlabb(a, b, acc) __smlabb((a), (b), (acc))
#define Smlatt(a, b, acc) __smlatt((a), (b), (acc))
#else
/* The same instructions in plain C: bytes 0 and 2 of x sign-extended into the two halves. */
static int32_t Sxtb16(uint32_t x) {
  return (int32_t)(((uint32_t)(uint16_t)(int16_t)(int8_t)(x & 0xff)) |
                   ((uint32_t)(uint16_t)(int16_t)(int8_t)((x >> 16) & 0xff) << 16));
}
static int32_t Lo16(int32_t x) { return (int16_t)(uint16_t)((uint32_t)x & 0xffff); }
static int32_t Hi16(int32_t x) { return (int16_t)(uint16_t)((uint32_t)x >> 16); }
#define Smlabb(a, b, acc) ((acc) + Lo16(a) * Lo16(b))
#define Smlatt(a, b, acc) ((acc) + Hi16(a) * Hi16(b))
#endif

/* 4 int8 channels as one word (one LDR; unaligned loads are allowed on a Cortex-M4). */
static uint32_t Word(const int8_t* p) {
  uint32_t x;
  memcpy(&x, p, sizeof x);
  return x;
}
#endif

typedef struct {
  const int8_t* in;
  const int8_t* w;
  int32_t* out;
  int32_t h, w_, c, kh, kw, oh, ow; /* 32-bit index arithmetic, as a Cortex-M kernel's */
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
  if (x->shape[0] * x->shape[1] * x->shape[2] > INT32_MAX) return -1; /* indexes fit int32 */
  v->h = (int32_t)x->shape[0];
  v->w_ = (int32_t)x->shape[1];
  v->c = (int32_t)x->shape[2];
  v->kh = (int32_t)w->shape[0];
  v->kw = (int32_t)w->shape[1];
  v->oh = (int32_t)y->shape[0];
  v->ow = (int32_t)y->shape[1];
  if (w->shape[2] != v->c || y->shape[2] != v->c || v->oh != v->h - v->kh + 1 ||
      v->ow != v->w_ - v->kw + 1) {
    return -1;
  }
  v->in = (const int8_t*)x->data;
  v->w = (const int8_t*)w->data;
  v->out = (int32_t*)y->data;
  return 0;
}

/* Outputs [oh0, oh1) x [ow0, ow1) x [c0, c1), one at a time: the edges past the whole tiles. */
static void Edge(const Conv* v, int32_t oh0, int32_t oh1, int32_t ow0, int32_t ow1, int32_t c0,
                 int32_t c1) {
  int32_t oh, ow, c, i, j;
  for (oh = oh0; oh < oh1; ++oh) {
    for (ow = ow0; ow < ow1; ++ow) {
      for (c = c0; c < c1; ++c) {
        int32_t acc = 0;
        for (i = 0; i < v->kh; ++i) {
          for (j = 0; j < v->kw; ++j) {
            acc += (int32_t)v->in[((oh + i) * v->w_ + (ow + j)) * v->c + c] *
                   (int32_t)v->w[(i * v->kw + j) * v->c + c];
          }
        }
        v->out[(oh * v->ow + ow) * v->c + c] = acc;
      }
    }
  }
}

/* The tile's accumulators: ACC(th, tw, u) is channel c0 + u of pixel (oh0 + th, ow0 + tw). */
#if defined(BF_KNOB_acc_reg)
#define ACC(th, tw, u) acc[th][tw][u]
#else
#define ACC(th, tw, u) v->out[((oh0 + (th)) * v->ow + (ow0 + (tw))) * v->c + c0 + (u)]
#endif

/* Tap (i, j) of the kernel added to the whole tile's accumulators. */
#if PACKED
#define TAP(i, j)                                                                              \
  do {                                                                                         \
    const int8_t* k_ = v->w + ((i)*v->kw + (j)) * v->c + c0;                                   \
    int u_, th_, tw_;                                                                          \
    for (u_ = 0; u_ < CB; u_ += 4) {                                                           \
      const uint32_t kword_ = Word(k_ + u_);                                                   \
      const int32_t k02_ = Sxtb16(kword_), k13_ = Sxtb16((kword_ >> 8) | (kword_ << 24));      \
      for (th_ = 0; th_ < TH; ++th_) {                                                         \
        const int8_t* x_ = v->in + ((oh0 + th_ + (i)) * v->w_ + (ow0 + (j))) * v->c + c0 + u_; \
        for (tw_ = 0; tw_ < TW; ++tw_, x_ += v->c) {                                           \
          const uint32_t xword_ = Word(x_);                                                    \
          const int32_t x02_ = Sxtb16(xword_), x13_ = Sxtb16((xword_ >> 8) | (xword_ << 24));  \
          ACC(th_, tw_, u_) = Smlabb(x02_, k02_, ACC(th_, tw_, u_));                           \
          ACC(th_, tw_, u_ + 1) = Smlabb(x13_, k13_, ACC(th_, tw_, u_ + 1));                   \
          ACC(th_, tw_, u_ + 2) = Smlatt(x02_, k02_, ACC(th_, tw_, u_ + 2));                   \
          ACC(th_, tw_, u_ + 3) = Smlatt(x13_, k13_, ACC(th_, tw_, u_ + 3));                   \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  } while (0)
#else
#define TAP(i, j)                                                                           \
  do {                                                                                      \
    const int8_t* k_ = v->w + ((i)*v->kw + (j)) * v->c + c0;                                \
    int u_, th_, tw_;                                                                       \
    for (th_ = 0; th_ < TH; ++th_) {                                                        \
      const int8_t* x_ = v->in + ((oh0 + th_ + (i)) * v->w_ + (ow0 + (j))) * v->c + c0;     \
      for (tw_ = 0; tw_ < TW; ++tw_, x_ += v->c) {                                          \
        for (u_ = 0; u_ < CB; ++u_) ACC(th_, tw_, u_) += (int32_t)x_[u_] * (int32_t)k_[u_]; \
      }                                                                                     \
    }                                                                                       \
  } while (0)
#endif

/* One whole tile: TH x TW output pixels, channels [c0, c0 + CB). */
static void Tile(const Conv* v, int32_t oh0, int32_t ow0, int32_t c0) {
  int32_t i, j;
  int th, tw, u;
#if defined(BF_KNOB_acc_reg)
  int32_t acc[TH][TW][CB];
#endif
  for (th = 0; th < TH; ++th) {
    for (tw = 0; tw < TW; ++tw) {
      for (u = 0; u < CB; ++u) ACC(th, tw, u) = 0;
    }
  }
  for (i = 0; i < v->kh; ++i) {
#if BF_KNOB_unroll_kw == 3
    if (v->kw == 3) {
      TAP(i, 0);
      TAP(i, 1);
      TAP(i, 2);
      continue;
    }
#endif
    for (j = 0; j < v->kw; ++j) TAP(i, j);
  }
#if defined(BF_KNOB_acc_reg)
  for (th = 0; th < TH; ++th) {
    for (tw = 0; tw < TW; ++tw) {
      int32_t* o = v->out + ((oh0 + th) * v->ow + (ow0 + tw)) * v->c + c0;
      for (u = 0; u < CB; ++u) o[u] = acc[th][tw][u];
    }
  }
#endif
}

BF_OPS_DECLARE_PACKED(dwconv_s8_tiled);
BF_OPS_DECLARE_PACKED(dwconv_s8_tiled) {
  Conv v;
  int32_t oh, ow, c, oh_end, ow_end, c_end;
  if (Unpack(args, type_codes, num_args, &v) != 0) return -1;
  /* The whole tiles cover [0, oh_end) x [0, ow_end) x [0, c_end). */
  oh_end = v.oh - v.oh % TH;
  ow_end = v.ow - v.ow % TW;
  c_end = v.c - v.c % CB;
#if defined(BF_KNOB_order_chw)
  for (c = 0; c < c_end; c += CB) {
    for (oh = 0; oh < oh_end; oh += TH) {
      for (ow = 0; ow < ow_end; ow += TW) Tile(&v, oh, ow, c);
    }
  }
#else
  for (oh = 0; oh < oh_end; oh += TH) {
    for (ow = 0; ow < ow_end; ow += TW) {
      for (c = 0; c < c_end; c += CB) Tile(&v, oh, ow, c);
    }
  }
#endif
  Edge(&v, 0, oh_end, 0, ow_end, c_end, v.c); /* the channels past the last block */
  Edge(&v, 0, oh_end, ow_end, v.ow, 0, v.c);  /* the columns past the last tile */
  Edge(&v, oh_end, v.oh, 0, v.ow, 0, v.c);    /* the rows past the last tile */
  return 0;
}

BF_OPS_DECLARE_PACKED(dwconv_s8_tiled_reference);
BF_OPS_DECLARE_PACKED(dwconv_s8_tiled_reference) {
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
