/*
 * sample_system_lib.c: a system library of the sample operators, for firmware
 * that has no generated one. TVMSystemLibEntryPoint (module.h) returns a
 * const module whose registry is, in index order:
 *   0 add  1 matmul  2 conv2d  3 add_reference  4 matmul_reference  5 conv2d_reference
 * (sample_ops.h and reference.h give their contracts). A firmware that brings
 * its own entry point links //crt/ops:ops without this file.
 */
#include <benchfarm/ops/reference.h>
#include <benchfarm/ops/sample_ops.h>
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/crt/func_registry.h>
#include <tvm/runtime/crt/module.h>

static const TVMBackendPackedCFunc kSampleFuncs[] = {
    bf_ops_add,           bf_ops_matmul,           bf_ops_conv2d,
    bf_ops_add_reference, bf_ops_matmul_reference, bf_ops_conv2d_reference,
};

/* Count (6, little-endian), the names in index order, and the literal's NUL ends the list. */
static const TVMFuncRegistry kSampleRegistry = {
    "\x06\x00"
    "add\0"
    "matmul\0"
    "conv2d\0"
    "add_reference\0"
    "matmul_reference\0"
    "conv2d_reference\0",
    kSampleFuncs};

static const TVMModule kSampleModule = {&kSampleRegistry};

TVM_CRT_STATIC_CHECK(sizeof(kSampleFuncs) / sizeof(kSampleFuncs[0]) == 6, bf_ops_sample_lib_count);

const TVMModule* TVMSystemLibEntryPoint(void) { return &kSampleModule; }
