/* reference.c: the reference kernels (reference.h). Deliberately plain loops. */
#include <benchfarm/ops/reference.h>
#include <stddef.h>
#include <stdint.h>

void bf_ops_reference_add(const float* a, const float* b, float* c, int32_t count) {
  int32_t i;
  for (i = 0; i < count; ++i) {
    c[i] = a[i] + b[i];
  }
}

void bf_ops_reference_matmul(const float* a, const float* b, float* c, int32_t m, int32_t n,
                             int32_t k) {
  int32_t i, j, kk;
  for (i = 0; i < m; ++i) {
    for (j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (kk = 0; kk < k; ++kk) {
        acc += a[i * k + kk] * b[kk * n + j];
      }
      c[i * n + j] = acc;
    }
  }
}

void bf_ops_reference_conv2d(const float* input, const float* weight, float* output,
                             const bf_ops_conv2d_dims_t* dims) {
  const int32_t oh_size = dims->h - dims->kh + 1;
  const int32_t ow_size = dims->w - dims->kw + 1;
  int32_t b, o, y, x, c, r, s;
  for (b = 0; b < dims->n; ++b) {
    for (o = 0; o < dims->o; ++o) {
      for (y = 0; y < oh_size; ++y) {
        for (x = 0; x < ow_size; ++x) {
          float acc = 0.0f;
          for (c = 0; c < dims->c; ++c) {
            for (r = 0; r < dims->kh; ++r) {
              for (s = 0; s < dims->kw; ++s) {
                acc += input[((b * dims->c + c) * dims->h + y + r) * dims->w + x + s] *
                       weight[((o * dims->c + c) * dims->kh + r) * dims->kw + s];
              }
            }
          }
          output[((b * dims->o + o) * oh_size + y) * ow_size + x] = acc;
        }
      }
    }
  }
}

BF_OPS_DECLARE_PACKED(bf_ops_add_reference) {
  bf_ops_add_args_t p;
  const int err = bf_ops_add_unpack("add_reference", args, type_codes, num_args, &p);
  (void)out_ret_value;
  (void)resource_handle;
  if (out_ret_tcode != NULL) {
    *out_ret_tcode = kTVMNullptr;
  }
  if (err != 0) {
    return err;
  }
  bf_ops_reference_add(p.a, p.b, p.c, p.count);
  return 0;
}

BF_OPS_DECLARE_PACKED(bf_ops_matmul_reference) {
  bf_ops_matmul_args_t p;
  const int err = bf_ops_matmul_unpack("matmul_reference", args, type_codes, num_args, &p);
  (void)out_ret_value;
  (void)resource_handle;
  if (out_ret_tcode != NULL) {
    *out_ret_tcode = kTVMNullptr;
  }
  if (err != 0) {
    return err;
  }
  bf_ops_reference_matmul(p.a, p.b, p.c, p.m, p.n, p.k);
  return 0;
}

BF_OPS_DECLARE_PACKED(bf_ops_conv2d_reference) {
  bf_ops_conv2d_args_t p;
  const int err = bf_ops_conv2d_unpack("conv2d_reference", args, type_codes, num_args, &p);
  (void)out_ret_value;
  (void)resource_handle;
  if (out_ret_tcode != NULL) {
    *out_ret_tcode = kTVMNullptr;
  }
  if (err != 0) {
    return err;
  }
  bf_ops_reference_conv2d(p.input, p.weight, p.output, &p.dims);
  return 0;
}
