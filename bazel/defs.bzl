"""benchfarm's build macros: compiler options in one place.

- bf_cc_library / bf_cc_binary / bf_cc_test: project C++ (C++17 from .bazelrc),
  warnings as errors. bf_cc_test links GoogleTest's main.
- bf_cc_tests: a bf_cc_test per name (its source NAME.cc), the other attributes shared.
- crt_library: crt's C99 code, -pedantic, warnings as errors. Sources are C only.
- crt_test_c: a C file that includes public crt headers and is compiled as C99,
  proving the headers are valid C; link it into a bf_cc_test that calls it.
"""

BF_WARNINGS = ["-Wall", "-Wextra", "-Werror"]
CRT_COPTS = BF_WARNINGS + ["-std=c99", "-pedantic", "-Wshadow", "-Wstrict-prototypes"]

def bf_cc_library(name, copts = [], **kwargs):
    native.cc_library(name = name, copts = BF_WARNINGS + copts, **kwargs)

def bf_cc_binary(name, copts = [], **kwargs):
    native.cc_binary(name = name, copts = BF_WARNINGS + copts, **kwargs)

def bf_cc_test(name, copts = [], deps = [], **kwargs):
    native.cc_test(
        name = name,
        copts = BF_WARNINGS + copts,
        deps = deps + ["//third_party:gtest_main"],
        **kwargs
    )

def bf_cc_tests(names, **kwargs):
    for name in names:
        bf_cc_test(name = name, srcs = [name + ".cc"], **kwargs)

def crt_library(name, copts = [], **kwargs):
    native.cc_library(name = name, copts = CRT_COPTS + copts, **kwargs)

def crt_test_c(name, srcs, deps = [], **kwargs):
    native.cc_library(name = name, srcs = srcs, copts = CRT_COPTS, deps = deps, testonly = True, **kwargs)
