/*
 * format.c: TVMPlatformFormatMessage — a small vsnprintf for crt's messages (DeviceInfo numbers,
 * Log lines), so the firmware carries no libc printf (picolibc's double-capable vfprintf is
 * several KiB). Define BF_BSP_LIBC_PRINTF=1 to use the C library's vsnprintf instead.
 *
 * Contract (platform.h): writes at most out_buf_size_bytes bytes including the NUL, always
 * NUL-terminates when the size is > 0, and returns the number of characters written (excluding
 * the NUL; a truncated message returns out_buf_size_bytes - 1).
 *
 * Supported: conversions d i u x X o c s p % f F e E g G; flags - 0 + space #; width and precision
 * as numbers or *; length modifiers hh h l ll z j t (L is accepted and ignored: long double is
 * double here). Floating point prints up to 17 significant digits, correctly rounded to within one
 * unit in the last place of what it prints (diagnostics, not a round-trip printer). An unknown
 * conversion is copied as is.
 */
#include <tvm/runtime/crt/platform.h>

#if defined(BF_BSP_LIBC_PRINTF) && BF_BSP_LIBC_PRINTF
#include <stdio.h>

size_t TVMPlatformFormatMessage(char* out_buf, size_t out_buf_size_bytes, const char* fmt,
                                va_list args) {
  int n;
  if (out_buf == NULL || out_buf_size_bytes == 0u) return 0;
  n = vsnprintf(out_buf, out_buf_size_bytes, fmt, args);
  if (n < 0) {
    out_buf[0] = '\0';
    return 0;
  }
  return (size_t)n >= out_buf_size_bytes ? out_buf_size_bytes - 1u : (size_t)n;
}

#else

typedef struct {
  char* buf;
  size_t size;
  size_t len;
} BfOut;

typedef struct {
  int left, zero, plus, space, alt, upper;
  int width;
  int prec; /* -1: none */
} BfSpec;

static void BfPut(BfOut* o, char c) {
  if (o->len + 1u < o->size) o->buf[o->len++] = c;
}

static void BfRepeat(BfOut* o, char c, int n) {
  while (n-- > 0) BfPut(o, c);
}

static size_t BfStrLen(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') n++;
  return n;
}

/* Emits prefix, `zeros` zero digits and body, padded with spaces to the field width. */
static void BfField(BfOut* o, const BfSpec* s, const char* prefix, int zeros, const char* body,
                    size_t body_len) {
  int total = (int)BfStrLen(prefix) + zeros + (int)body_len;
  size_t i;
  if (!s->left) BfRepeat(o, ' ', s->width - total);
  for (i = 0; prefix[i] != '\0'; i++) BfPut(o, prefix[i]);
  BfRepeat(o, '0', zeros);
  for (i = 0; i < body_len; i++) BfPut(o, body[i]);
  if (s->left) BfRepeat(o, ' ', s->width - total);
}

/* Writes v in `base` into the end of buf[24]; returns the first digit. */
static char* BfDigits(char* end, unsigned long long v, unsigned base, int upper) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  do {
    *--end = digits[v % base];
    v /= base;
  } while (v != 0u);
  return end;
}

static void BfInteger(BfOut* o, const BfSpec* s, unsigned long long v, int negative,
                      unsigned base) {
  char buf[24];
  char prefix[3] = {0, 0, 0};
  char* first = BfDigits(buf + sizeof(buf), v, base, s->upper);
  size_t n = (size_t)(buf + sizeof(buf) - first);
  int zeros = 0;
  if (negative) {
    prefix[0] = '-';
  } else if (base == 10u && s->plus) {
    prefix[0] = '+';
  } else if (base == 10u && s->space) {
    prefix[0] = ' ';
  } else if (s->alt && base == 16u && v != 0u) {
    prefix[0] = '0';
    prefix[1] = s->upper ? 'X' : 'x';
  } else if (s->alt && base == 8u) {
    prefix[0] = '0';
  }
  if (s->prec >= 0) {
    if (s->prec == 0 && v == 0u) n = 0;
    if ((int)n < s->prec) zeros = s->prec - (int)n;
  } else if (s->zero && !s->left) {
    int room = s->width - (int)BfStrLen(prefix) - (int)n;
    if (room > 0) zeros = room;
  }
  BfField(o, s, prefix, zeros, first, n);
}

/* v * 10^k, in steps that are exact powers of ten. */
static double BfScale(double v, int k) {
  while (k >= 16) {
    v *= 1e16;
    k -= 16;
  }
  while (k <= -16) {
    v /= 1e16;
    k += 16;
  }
  while (k > 0) {
    v *= 10.0;
    k--;
  }
  while (k < 0) {
    v /= 10.0;
    k++;
  }
  return v;
}

static unsigned long long BfPow10(int n) {
  unsigned long long p = 1u;
  while (n-- > 0) p *= 10u;
  return p;
}

/* v > 0 finite, 1 <= sig <= 17: *digits has exactly sig digits and v ~= digits * 10^(exp - sig +
 * 1). */
static void BfDecimal(double v, int sig, unsigned long long* digits, int* exp10) {
  int e = 0;
  double x = v;
  int attempt;
  while (x >= 1e16) {
    x /= 1e16;
    e += 16;
  }
  while (x >= 10.0) {
    x /= 10.0;
    e++;
  }
  while (x < 1e-16) {
    x *= 1e16;
    e -= 16;
  }
  while (x < 1.0) {
    x *= 10.0;
    e--;
  }
  for (attempt = 0; attempt < 3; attempt++) {
    double scaled = BfScale(v, sig - 1 - e);
    unsigned long long d = (unsigned long long)scaled;
    double rest = scaled - (double)d;
    if (rest > 0.5 || (rest == 0.5 && (d & 1u) != 0u)) d++; /* to nearest, ties to even */
    if (d >= BfPow10(sig)) { /* e was one too small, or rounding carried into a new digit */
      e++;
      continue;
    }
    if (d < BfPow10(sig - 1)) { /* e was one too large */
      e--;
      continue;
    }
    *digits = d;
    *exp10 = e;
    return;
  }
  *digits = BfPow10(sig - 1);
  *exp10 = e;
}

static void BfFloat(BfOut* o, const BfSpec* s, double v, char conv) {
  char body[72];
  char digits[20];
  char prefix[2] = {0, 0};
  size_t n = 0;
  unsigned long long d = 0;
  int prec = s->prec < 0 ? 6 : s->prec;
  int zeros = 0, e = 0, sig = 1, point, i, use_exp = 0, strip = 0;
  if (v < 0.0) {
    prefix[0] = '-';
    v = -v;
  } else if (s->plus) {
    prefix[0] = '+';
  } else if (s->space) {
    prefix[0] = ' ';
  }
  if (v != v || (v - v) != (v - v)) { /* NaN, or infinity */
    const char* text = v != v ? (s->upper ? "NAN" : "nan") : (s->upper ? "INF" : "inf");
    BfField(o, s, prefix, 0, text, 3);
    return;
  }
  /* The digits to print: d has sig significant digits, the first at decimal exponent e. */
  if (conv == 'g') {
    sig = prec == 0 ? 1 : prec > 17 ? 17 : prec;
    if (v != 0.0) BfDecimal(v, sig, &d, &e);
    use_exp = e < -4 || e >= sig;
    prec = use_exp ? sig - 1 : sig - 1 - e;
    strip = !s->alt;
  } else if (conv == 'e') {
    if (prec > 16) prec = 16;
    sig = prec + 1;
    if (v != 0.0) BfDecimal(v, sig, &d, &e);
    use_exp = 1;
  } else { /* 'f': as many digits as reach prec places after the point, at most 17 */
    if (prec > 16) prec = 16;
    if (v != 0.0) {
      int need;
      BfDecimal(v, 17, &d, &e);
      sig = 17;
      need = e + 1 + prec;
      if (need < 1) { /* below the last place: rounds to 0 or to one unit in it */
        d = BfScale(v, prec) > 0.5 ? 1u : 0u;
        e = d != 0u ? -prec : 0;
        sig = 1;
      } else if (need < 17) {
        BfDecimal(v, need, &d, &e); /* a carry (9.96 -> 10.0) leaves a trailing 0 unprinted */
        sig = need;
      }
      if (e >= 39) use_exp = 1; /* too wide for a plain number: exponent form */
    }
  }
  for (i = sig - 1; i >= 0; i--) {
    digits[i] = (char)('0' + d % 10u);
    d /= 10u;
  }
  if (use_exp) {
    body[n++] = digits[0];
    point = 1;
    if (prec > sig - 1 && conv == 'f') prec = sig - 1;
  } else {
    point = e + 1; /* digits before the decimal point */
    if (point <= 0) body[n++] = '0';
    for (i = 0; i < point; i++) body[n++] = i < sig ? digits[i] : '0';
  }
  if (prec > 0 || s->alt) body[n++] = '.';
  for (i = 0; i < prec; i++) {
    int k = point + i; /* index into digits */
    body[n++] = k >= 0 && k < sig ? digits[k] : '0';
  }
  if (strip && prec > 0) {
    while (body[n - 1] == '0') n--;
    if (body[n - 1] == '.') n--;
  }
  if (use_exp) {
    unsigned ae = (unsigned)(e < 0 ? -e : e);
    body[n++] = s->upper ? 'E' : 'e';
    body[n++] = e < 0 ? '-' : '+';
    if (ae >= 100u) body[n++] = (char)('0' + ae / 100u);
    body[n++] = (char)('0' + ae / 10u % 10u);
    body[n++] = (char)('0' + ae % 10u);
  }
  if (s->zero && !s->left) {
    int room = s->width - (int)BfStrLen(prefix) - (int)n;
    if (room > 0) zeros = room;
  }
  BfField(o, s, prefix, zeros, body, n);
}

static int BfNumber(const char** p) {
  int v = 0;
  while (**p >= '0' && **p <= '9') {
    if (v < 100000) v = v * 10 + (**p - '0');
    (*p)++;
  }
  return v;
}

size_t TVMPlatformFormatMessage(char* out_buf, size_t out_buf_size_bytes, const char* fmt,
                                va_list args) {
  BfOut o;
  const char* p = fmt;
  va_list ap;
  if (out_buf == NULL || out_buf_size_bytes == 0u) return 0;
  o.buf = out_buf;
  o.size = out_buf_size_bytes;
  o.len = 0;
  va_copy(ap, args);
  while (p != NULL && *p != '\0') {
    BfSpec s;
    int length = 0; /* -2 hh, -1 h, 0 int, 1 long, 2 long long, 3 size_t/ptrdiff_t/intmax_t */
    const char* start = p;
    char conv;
    if (*p != '%') {
      BfPut(&o, *p++);
      continue;
    }
    p++;
    s.left = s.zero = s.plus = s.space = s.alt = s.upper = 0;
    s.width = 0;
    s.prec = -1;
    for (;; p++) {
      if (*p == '-')
        s.left = 1;
      else if (*p == '0')
        s.zero = 1;
      else if (*p == '+')
        s.plus = 1;
      else if (*p == ' ')
        s.space = 1;
      else if (*p == '#')
        s.alt = 1;
      else
        break;
    }
    if (*p == '*') {
      s.width = va_arg(ap, int);
      if (s.width < 0) {
        s.left = 1;
        s.width = -s.width;
      }
      p++;
    } else {
      s.width = BfNumber(&p);
    }
    if (*p == '.') {
      p++;
      if (*p == '*') {
        s.prec = va_arg(ap, int);
        if (s.prec < 0) s.prec = -1;
        p++;
      } else {
        s.prec = BfNumber(&p);
      }
    }
    if (*p == 'h') {
      length = -1;
      if (*++p == 'h') {
        length = -2;
        p++;
      }
    } else if (*p == 'l') {
      length = 1;
      if (*++p == 'l') {
        length = 2;
        p++;
      }
    } else if (*p == 'z' || *p == 'j' || *p == 't') {
      length = 3;
      p++;
    } else if (*p == 'L') {
      p++;
    }
    conv = *p;
    if (conv == '\0') { /* a lone '%' at the end: copy it */
      while (*start != '\0') BfPut(&o, *start++);
      break;
    }
    p++;
    if (conv >= 'A' && conv <= 'Z' && conv != 'X') {
      s.upper = 1;
      conv = (char)(conv - 'A' + 'a');
    } else if (conv == 'X') {
      s.upper = 1;
    }
    switch (conv) {
      case 'd':
      case 'i': {
        long long v;
        unsigned long long mag;
        if (length == 2)
          v = va_arg(ap, long long);
        else if (length == 1)
          v = va_arg(ap, long);
        else if (length == 3)
          v = (long long)va_arg(ap, ptrdiff_t);
        else
          v = va_arg(ap, int);
        if (length == -1) v = (short)v;
        if (length == -2) v = (signed char)v;
        mag = v < 0 ? 0u - (unsigned long long)v : (unsigned long long)v;
        BfInteger(&o, &s, mag, v < 0, 10u);
        break;
      }
      case 'u':
      case 'x':
      case 'X':
      case 'o': {
        unsigned long long v;
        if (length == 2)
          v = va_arg(ap, unsigned long long);
        else if (length == 1)
          v = va_arg(ap, unsigned long);
        else if (length == 3)
          v = va_arg(ap, size_t);
        else
          v = va_arg(ap, unsigned int);
        if (length == -1) v = (unsigned short)v;
        if (length == -2) v = (unsigned char)v;
        BfInteger(&o, &s, v, 0, conv == 'u' ? 10u : conv == 'o' ? 8u : 16u);
        break;
      }
      case 'p': {
        s.alt = 1;
        BfInteger(&o, &s, (unsigned long long)(uintptr_t)va_arg(ap, void*), 0, 16u);
        break;
      }
      case 'c': {
        char c = (char)va_arg(ap, int);
        BfField(&o, &s, "", 0, &c, 1);
        break;
      }
      case 's': {
        const char* str = va_arg(ap, const char*);
        size_t n = 0;
        if (str == NULL) str = "(null)";
        while (str[n] != '\0' && (s.prec < 0 || n < (size_t)s.prec)) n++;
        BfField(&o, &s, "", 0, str, n);
        break;
      }
      case 'f':
      case 'e':
      case 'g':
        BfFloat(&o, &s, va_arg(ap, double), conv);
        break;
      case '%':
        BfPut(&o, '%');
        break;
      default: /* unknown: copy the directive */
        while (start < p) BfPut(&o, *start++);
        break;
    }
  }
  va_end(ap);
  o.buf[o.len] = '\0';
  return o.len;
}

#endif
