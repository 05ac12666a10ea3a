/*
 * data.c: the generator, poison and check of benchfarm/data.h.
 */
#include <benchfarm/data.h>
#include <math.h>
#include <string.h>

/* The generator's arithmetic must round the same on every board: no fused multiply-add. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#define BF_NO_FMA
#elif defined(__GNUC__)
#define BF_NO_FMA __attribute__((optimize("fp-contract=off")))
#else
#define BF_NO_FMA
#endif

typedef enum {
  kBad = 0,
  kI8,
  kU8,
  kI16,
  kU16,
  kI32,
  kU32,
  kF16,
  kF32,
  kF64,
} Kind;

static Kind KindOf(DLDataType t) {
  if (t.lanes != 1u) return kBad;
  if (t.code == (uint8_t)kDLInt) {
    return t.bits == 8u ? kI8 : t.bits == 16u ? kI16 : t.bits == 32u ? kI32 : kBad;
  }
  if (t.code == (uint8_t)kDLUInt) {
    return t.bits == 8u ? kU8 : t.bits == 16u ? kU16 : t.bits == 32u ? kU32 : kBad;
  }
  if (t.code == (uint8_t)kDLFloat) {
    return t.bits == 16u ? kF16 : t.bits == 32u ? kF32 : t.bits == 64u ? kF64 : kBad;
  }
  return kBad;
}

static int IsFloat(Kind k) { return k == kF16 || k == kF32 || k == kF64; }

static const char* const kNames[] = {NULL,    "int8",   "uint8",   "int16",   "uint16",
                                     "int32", "uint32", "float16", "float32", "float64"};

const char* bf_data_dtype_name(DLDataType dtype) { return kNames[KindOf(dtype)]; }

int bf_data_parse_dtype(const char* name, DLDataType* dtype) {
  static const DLDataType kTypes[] = {
      {0, 0, 0},       {kDLInt, 8, 1},   {kDLUInt, 8, 1},   {kDLInt, 16, 1},   {kDLUInt, 16, 1},
      {kDLInt, 32, 1}, {kDLUInt, 32, 1}, {kDLFloat, 16, 1}, {kDLFloat, 32, 1}, {kDLFloat, 64, 1}};
  size_t i;
  for (i = 1; i < sizeof(kNames) / sizeof(kNames[0]); i++) {
    if (strcmp(name, kNames[i]) == 0) {
      *dtype = kTypes[i];
      return 0;
    }
  }
  return -1;
}

size_t bf_data_element_bytes(DLDataType dtype) {
  return KindOf(dtype) == kBad ? 0u : (size_t)dtype.bits / 8u;
}

void bf_data_default_range(DLDataType dtype, double* lo, double* hi) {
  switch (KindOf(dtype)) {
    case kI8:
      *lo = -128.0;
      *hi = 127.0;
      return;
    case kU8:
      *lo = 0.0;
      *hi = 255.0;
      return;
    case kI16:
      *lo = -32768.0;
      *hi = 32767.0;
      return;
    case kU16:
      *lo = 0.0;
      *hi = 65535.0;
      return;
    case kI32:
      *lo = -2147483648.0;
      *hi = 2147483647.0;
      return;
    case kU32:
      *lo = 0.0;
      *hi = 4294967295.0;
      return;
    default:
      *lo = -1.0;
      *hi = 1.0;
      return;
  }
}

static int IsFinite(double x) { return x == x && x != HUGE_VAL && x != -HUGE_VAL; }

int bf_data_check_range(DLDataType dtype, double lo, double hi) {
  Kind k = KindOf(dtype);
  double min, max;
  if (k == kBad || !IsFinite(lo) || !IsFinite(hi) || !(lo <= hi)) return -1;
  if (IsFloat(k)) {
    /* float16 holds at most 65504; float32 about 3.4e38. */
    max = k == kF16 ? 65504.0 : k == kF32 ? 3.4028234663852886e38 : HUGE_VAL;
    return lo >= -max && hi <= max ? 0 : -1;
  }
  bf_data_default_range(dtype, &min, &max);
  if (lo < min || hi > max) return -1;
  return lo == (double)(int64_t)lo && hi == (double)(int64_t)hi ? 0 : -1;
}

/* ---- the generator (SplitMix64) ----------------------------------------------------------------
 */

typedef struct {
  uint64_t state;
} Rng;

static Rng RngStart(uint64_t seed, uint64_t stream) {
  Rng r;
  r.state = seed ^ (stream * UINT64_C(0xD1B54A32D192ED03));
  return r;
}

static uint64_t RngNext(Rng* r) {
  uint64_t z;
  r->state += UINT64_C(0x9E3779B97F4A7C15);
  z = r->state;
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* ---- binary16 ----------------------------------------------------------------------------------
 */

/* Rounds v >> shift to nearest, ties to even (shift 1..31). */
static uint32_t ShiftRounded(uint32_t v, uint32_t shift) {
  uint32_t kept = v >> shift;
  uint32_t rest = v & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (kept & 1u) != 0u)) kept++;
  return kept;
}

uint16_t bf_data_f16_from_f32(float value) {
  uint32_t x;
  uint32_t sign, exp, mant;
  int32_t e;
  memcpy(&x, &value, sizeof(x));
  sign = (x >> 16) & 0x8000u;
  exp = (x >> 23) & 0xffu;
  mant = x & 0x7fffffu;
  if (exp == 0xffu) {
    return (uint16_t)(sign | 0x7c00u | (mant != 0u ? 0x200u | (mant >> 13) : 0u));
  }
  e = (int32_t)exp - 127 + 15;
  if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    /* A subnormal half: the 24-bit significand times 2^(e - 14). */
    return (uint16_t)(sign | ShiftRounded(mant | 0x800000u, (uint32_t)(14 - e)));
  }
  /* A carry out of the significand moves into the exponent, up to infinity: still right. */
  return (uint16_t)(sign | ShiftRounded(((uint32_t)e << 23) | mant, 13u));
}

float bf_data_f16_to_f32(uint16_t bits) {
  uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  uint32_t x;
  float out;
  if (exp == 0x1fu) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0u) {
    x = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0u) {
    x = sign;
  } else {
    uint32_t k = 0;
    while ((mant & 0x400u) == 0u) {
      mant <<= 1;
      k++;
    }
    x = sign | ((113u - k) << 23) | ((mant & 0x3ffu) << 13);
  }
  memcpy(&out, &x, sizeof(out));
  return out;
}

/* ---- elements ----------------------------------------------------------------------------------
 */

static void Put(void* data, size_t i, Kind k, double v) {
  switch (k) {
    case kI8:
      ((int8_t*)data)[i] = (int8_t)v;
      return;
    case kU8:
      ((uint8_t*)data)[i] = (uint8_t)v;
      return;
    case kI16:
      ((int16_t*)data)[i] = (int16_t)v;
      return;
    case kU16:
      ((uint16_t*)data)[i] = (uint16_t)v;
      return;
    case kI32:
      ((int32_t*)data)[i] = (int32_t)v;
      return;
    case kU32:
      ((uint32_t*)data)[i] = (uint32_t)v;
      return;
    case kF16:
      ((uint16_t*)data)[i] = bf_data_f16_from_f32((float)v);
      return;
    case kF32:
      ((float*)data)[i] = (float)v;
      return;
    case kF64:
      ((double*)data)[i] = v;
      return;
    default:
      return;
  }
}

/* Element i of an integer dtype. */
static int64_t IntAt(const void* data, size_t i, Kind k) {
  switch (k) {
    case kI8:
      return ((const int8_t*)data)[i];
    case kU8:
      return ((const uint8_t*)data)[i];
    case kI16:
      return ((const int16_t*)data)[i];
    case kU16:
      return ((const uint16_t*)data)[i];
    case kI32:
      return ((const int32_t*)data)[i];
    case kU32:
      return ((const uint32_t*)data)[i];
    default:
      return 0;
  }
}

static double Get(const void* data, size_t i, Kind k) {
  switch (k) {
    case kF16:
      return bf_data_f16_to_f32(((const uint16_t*)data)[i]);
    case kF32:
      return ((const float*)data)[i];
    case kF64:
      return ((const double*)data)[i];
    default:
      return (double)IntAt(data, i, k);
  }
}

double bf_data_get(const void* data, size_t i, DLDataType dtype) {
  return Get(data, i, KindOf(dtype));
}

BF_NO_FMA static double Uniform(uint64_t draw, Kind k, double lo, double hi) {
  double unit, scaled;
  if (k == kF64) {
    unit = (double)(draw >> 11) * (1.0 / 9007199254740992.0); /* 2^53 */
  } else {
    unit = (double)(draw >> 40) * (1.0 / 16777216.0); /* 2^24 */
  }
  scaled = (hi - lo) * unit;
  return lo + scaled;
}

int bf_data_fill(void* data, size_t count, DLDataType dtype, uint64_t seed, uint64_t stream,
                 double lo, double hi) {
  Kind k = KindOf(dtype);
  Rng rng = RngStart(seed, stream);
  size_t i;
  if (bf_data_check_range(dtype, lo, hi) != 0) return -1;
  if (IsFloat(k)) {
    for (i = 0; i < count; i++) Put(data, i, k, Uniform(RngNext(&rng), k, lo, hi));
  } else {
    int64_t low = (int64_t)lo;
    uint64_t size = (uint64_t)((int64_t)hi - low) + 1u; /* at most 2^32 */
    for (i = 0; i < count; i++) Put(data, i, k, (double)(low + (int64_t)(RngNext(&rng) % size)));
  }
  return 0;
}

int bf_data_poison(void* data, size_t count, DLDataType dtype, uint64_t salt) {
  Kind k = KindOf(dtype);
  uint32_t x = (uint32_t)salt * 2654435761u + 0x706F6973u; /* a 32-bit LCG: cheap on any core */
  size_t i;
  if (k == kBad) return -1;
  for (i = 0; i < count; i++) {
    x = x * 1664525u + 1013904223u;
    switch (k) {
      case kI8:
      case kU8:
        ((uint8_t*)data)[i] = (uint8_t)(x >> 24);
        break;
      case kI16:
      case kU16:
        ((uint16_t*)data)[i] = (uint16_t)(x >> 16);
        break;
      case kI32:
      case kU32:
        ((uint32_t*)data)[i] = x;
        break;
      case kF16:
        ((uint16_t*)data)[i] = 0x7e00u;
        break;
      default:
        Put(data, i, k, (double)NAN);
        break;
    }
  }
  return 0;
}

static double Abs(double x) { return x < 0 ? -x : x; }

int bf_data_compare(const void* got, const void* want, size_t count, DLDataType dtype, double atol,
                    double rtol, bf_data_report_t* report) {
  Kind k = KindOf(dtype);
  size_t i;
  memset(report, 0, sizeof(*report));
  report->first_index = -1;
  if (k == kBad || !(atol >= 0.0) || !(rtol >= 0.0)) return -1;
  for (i = 0; i < count; i++) {
    double g, w, err;
    int ok;
    if (!IsFloat(k) && IntAt(got, i, k) == IntAt(want, i, k)) continue; /* no double arithmetic */
    g = Get(got, i, k);
    w = Get(want, i, k);
    if (g == w) continue; /* equal, infinities included */
    err = Abs(g - w);
    if (err != err) err = HUGE_VAL; /* a NaN on either side, or infinities of opposite signs */
    ok = IsFloat(k) && err <= atol + rtol * Abs(w);
    if (err > report->max_abs_error) report->max_abs_error = err;
    if (ok) continue;
    if (report->mismatches++ == 0u) {
      report->first_index = (int64_t)i;
      report->got = g;
      report->want = w;
    }
  }
  return 0;
}
