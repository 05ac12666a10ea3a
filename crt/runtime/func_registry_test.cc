// Tests of func_registry.c: TVM v0.18's golden cases (reference section 6.3) plus
// benchfarm's fix of the exact-fill quirk (reference 9.12).

#include "tvm/runtime/crt/func_registry.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

extern "C" int crt_runtime_headers_compile_as_c(void);

namespace {

// Distinct functions, so pointer checks mean something (TVM's test helper
// returned NULL for every function).
template <int kId>
int Fn(TVMValue*, int*, int, TVMValue* ret, int* ret_tcode, void*) {
  ret->v_int64 = kId;
  *ret_tcode = kTVMArgInt;
  return 0;
}

// ---- strcmp_cursor ------------------------------------------------------------------------------

struct StrCmpCase {
  const char* a;
  const char* b;
  int expected;
};

class StrCmpTestFixture : public ::testing::TestWithParam<StrCmpCase> {};

TEST_P(StrCmpTestFixture, Match) {
  const StrCmpCase& c = GetParam();
  const char* cursor = c.a;
  EXPECT_EQ(TVMFuncRegistry_StrCmpCursor(&cursor, c.b), c.expected);
  EXPECT_EQ(cursor, c.a + std::strlen(c.a));  // on a's NUL, whatever the result
}

INSTANTIATE_TEST_SUITE_P(StrCmpTests, StrCmpTestFixture,
                         ::testing::Values(StrCmpCase{"Foo", "Foo", 0},
                                           StrCmpCase{"Foo", "Bar", 'F' - 'B'},
                                           StrCmpCase{"Foo", "", 'F'},
                                           StrCmpCase{"Fabulous", "Fab", 'u'},
                                           StrCmpCase{"Fab", "Fabulous", -'u'}));

TEST(StrCmpScan, Test) {
  static const char kBlob[] = "Foo\0Bar\0Whoops\0";
  const char* cursor = kBlob;
  EXPECT_EQ(TVMFuncRegistry_StrCmpCursor(&cursor, "Fo"), 'o');
  EXPECT_EQ(cursor, kBlob + 3);
  cursor++;
  EXPECT_EQ(TVMFuncRegistry_StrCmpCursor(&cursor, "Barr"), -'r');
  EXPECT_EQ(cursor, kBlob + 7);
  cursor++;
  EXPECT_EQ(TVMFuncRegistry_StrCmpCursor(&cursor, "WB"), 'h' - 'B');
  EXPECT_EQ(cursor, kBlob + 14);
  cursor++;
  EXPECT_EQ(TVMFuncRegistry_StrCmpCursor(&cursor, ""), 0);
  EXPECT_EQ(cursor, kBlob + 15);
}

// ---- const registries ---------------------------------------------------------------------------

TEST(FuncRegistry, Empty) {
  static const char kNames[] = {0, 0, 0};
  TVMFuncRegistry reg = {kNames, nullptr};
  tvm_function_index_t index = 42;
  EXPECT_EQ(TVMFuncRegistry_Lookup(&reg, "Foo", &index), kTvmErrorFunctionNameNotFound);
  EXPECT_EQ(index, 42);
  TVMBackendPackedCFunc f = nullptr;
  EXPECT_EQ(TVMFuncRegistry_GetByIndex(&reg, 0, &f), kTvmErrorFunctionIndexInvalid);
  EXPECT_EQ(TVMFuncRegistry_GetNumFuncs(&reg), 0);
}

TEST(FuncRegistry, ConstGlobalRegistry) {
  static const TVMBackendPackedCFunc kFuncs[] = {Fn<1>, Fn<2>};
  // The C string literal adds the end-of-list NUL.
  static const TVMFuncRegistry kReg = {
      "\x02\x00"
      "Foo\0"
      "Bar\0",
      kFuncs};
  EXPECT_EQ(TVMFuncRegistry_GetNumFuncs(&kReg), 2);

  tvm_function_index_t index = 42;
  ASSERT_EQ(TVMFuncRegistry_Lookup(&kReg, "Foo", &index), kTvmErrorNoError);
  EXPECT_EQ(index, 0);
  TVMBackendPackedCFunc f = nullptr;
  ASSERT_EQ(TVMFuncRegistry_GetByIndex(&kReg, index, &f), kTvmErrorNoError);
  EXPECT_EQ(f, &Fn<1>);

  ASSERT_EQ(TVMFuncRegistry_Lookup(&kReg, "Bar", &index), kTvmErrorNoError);
  EXPECT_EQ(index, 1);
  ASSERT_EQ(TVMFuncRegistry_GetByIndex(&kReg, index, &f), kTvmErrorNoError);
  EXPECT_EQ(f, &Fn<2>);

  EXPECT_EQ(TVMFuncRegistry_Lookup(&kReg, "Baz", &index), kTvmErrorFunctionNameNotFound);
  EXPECT_EQ(index, 1);  // unchanged
  EXPECT_EQ(TVMFuncRegistry_GetByIndex(&kReg, 2, &f), kTvmErrorFunctionIndexInvalid);
  EXPECT_EQ(f, &Fn<2>);  // unchanged
}

TEST(FuncRegistry, LookupStopsAtCount) {
  // The count says 1, so "Bar" is not part of the registry.
  static const TVMBackendPackedCFunc kFuncs[] = {Fn<1>, Fn<2>};
  static const TVMFuncRegistry kReg = {
      "\x01\x00"
      "Foo\0"
      "Bar\0",
      kFuncs};
  tvm_function_index_t index = 42;
  EXPECT_EQ(TVMFuncRegistry_Lookup(&kReg, "Bar", &index), kTvmErrorFunctionNameNotFound);
  EXPECT_EQ(TVMFuncRegistry_Lookup(&kReg, "Foo", &index), kTvmErrorNoError);
  EXPECT_EQ(index, 0);
}

TEST(FuncRegistry, NullArgumentsAreErrors) {
  static const TVMBackendPackedCFunc kFuncs[] = {Fn<1>};
  static const TVMFuncRegistry kReg = {
      "\x01\x00"
      "Foo\0",
      kFuncs};
  tvm_function_index_t index = 0;
  TVMBackendPackedCFunc f = nullptr;
  EXPECT_EQ(TVMFuncRegistry_Lookup(nullptr, "Foo", &index), kTvmErrorFunctionNameNotFound);
  EXPECT_EQ(TVMFuncRegistry_Lookup(&kReg, nullptr, &index), kTvmErrorFunctionNameNotFound);
  EXPECT_EQ(TVMFuncRegistry_Lookup(&kReg, "Foo", nullptr), kTvmErrorFunctionNameNotFound);
  EXPECT_EQ(TVMFuncRegistry_GetByIndex(nullptr, 0, &f), kTvmErrorFunctionIndexInvalid);
  EXPECT_EQ(TVMFuncRegistry_GetByIndex(&kReg, 0, nullptr), kTvmErrorFunctionIndexInvalid);
}

// ---- mutable registries -------------------------------------------------------------------------

constexpr size_t kEntryBytes = TVM_CRT_FUNC_REGISTRY_AVERAGE_ENTRY_BYTES;
constexpr size_t kStorageBytes = 4 * kEntryBytes + 2 * sizeof(void*);

// A buffer of `size` bytes whose END is pointer-aligned, so Create lays it out
// exactly as TVM v0.18 did (funcs = buffer + size - max_functions * sizeof(void*)).
class EndAlignedBuffer {
 public:
  explicit EndAlignedBuffer(size_t size) : size_(size) {
    const size_t end = kStorageBytes - kStorageBytes % sizeof(void*);
    data_ = storage_ + end - size;
  }
  uint8_t* data() { return data_; }
  size_t size() const { return size_; }

 private:
  alignas(void*) uint8_t storage_[kStorageBytes] = {};
  uint8_t* data_;
  size_t size_;
};

// Reference 6.3, MutableFuncRegistry.Create, with one deliberate difference:
// TVM accepted "bcdefghi" when rem == 0, although its name, NUL and the new
// end-of-list NUL need 10 bytes and only 9 are left before funcs[]. TVM then
// wrote the end-of-list NUL onto the first byte of funcs[0] (quirk 9.12; its
// test did not notice because all its function pointers were NULL). benchfarm
// keeps the terminator inside the names area, so for rem == 0 "bcdefghi" is
// RegistryFull and the short third name "a" takes index 1 instead. For every
// rem >= 1 the results are exactly TVM's.
TEST(MutableFuncRegistry, Create) {
  static_assert(sizeof(void*) != 8 || kEntryBytes == 19, "TVM's golden arithmetic (64-bit)");
  for (size_t size = 0; size < kEntryBytes; size++) {
    EndAlignedBuffer buf(size + 1);  // + 1: a zero-size buffer still needs a valid pointer
    TVMMutableFuncRegistry reg;
    EXPECT_EQ(TVMMutableFuncRegistry_Create(&reg, buf.data(), size), kTvmErrorBufferTooSmall)
        << "size " << size;
  }

  static const char kLongNameSource[] = "bcdefghijklmnopqrstuvwxyzyxw";
  for (size_t rem = 0; rem < kEntryBytes; rem++) {
    SCOPED_TRACE(testing::Message() << "rem " << rem);
    EndAlignedBuffer buf(2 * kEntryBytes + rem);
    TVMMutableFuncRegistry reg;
    ASSERT_EQ(TVMMutableFuncRegistry_Create(&reg, buf.data(), buf.size()), kTvmErrorNoError);
    EXPECT_EQ(reg.max_functions, 2u);
    EXPECT_EQ(reinterpret_cast<const uint8_t*>(reg.registry.funcs),
              buf.data() + buf.size() - 2 * sizeof(void*));

    tvm_function_index_t index = 42;
    ASSERT_EQ(TVMMutableFuncRegistry_Set(&reg, "abcdefghij", Fn<1>, false), kTvmErrorNoError);
    ASSERT_EQ(TVMFuncRegistry_Lookup(&reg.registry, "abcdefghij", &index), kTvmErrorNoError);
    EXPECT_EQ(index, 0);

    std::string long_name;
    for (size_t i = 0; i < 11 + rem; i++) {
      long_name += kLongNameSource[i % (sizeof(kLongNameSource) - 1)];
    }
    EXPECT_EQ(TVMMutableFuncRegistry_Set(&reg, long_name.c_str(), Fn<2>, false),
              kTvmErrorFunctionRegistryFull);
    EXPECT_EQ(TVMFuncRegistry_Lookup(&reg.registry, long_name.c_str(), &index),
              kTvmErrorFunctionNameNotFound);

    if (rem == 0) {
      // benchfarm's fix (see above): no room for the end-of-list NUL.
      EXPECT_EQ(TVMMutableFuncRegistry_Set(&reg, "bcdefghi", Fn<3>, false),
                kTvmErrorFunctionRegistryFull);
      ASSERT_EQ(TVMMutableFuncRegistry_Set(&reg, "a", Fn<4>, false), kTvmErrorNoError);
      ASSERT_EQ(TVMFuncRegistry_Lookup(&reg.registry, "a", &index), kTvmErrorNoError);
      EXPECT_EQ(index, 1);
    } else {
      ASSERT_EQ(TVMMutableFuncRegistry_Set(&reg, "bcdefghi", Fn<3>, false), kTvmErrorNoError);
      ASSERT_EQ(TVMFuncRegistry_Lookup(&reg.registry, "bcdefghi", &index), kTvmErrorNoError);
      EXPECT_EQ(index, 1);
      EXPECT_EQ(TVMMutableFuncRegistry_Set(&reg, "a", Fn<4>, false), kTvmErrorFunctionRegistryFull);
    }

    // Every function pointer is still what was stored.
    TVMBackendPackedCFunc f = nullptr;
    ASSERT_EQ(TVMFuncRegistry_GetByIndex(&reg.registry, 0, &f), kTvmErrorNoError);
    EXPECT_EQ(f, &Fn<1>);
    ASSERT_EQ(TVMFuncRegistry_GetByIndex(&reg.registry, 1, &f), kTvmErrorNoError);
    EXPECT_EQ(f, rem == 0 ? &Fn<4> : &Fn<3>);
  }
}

// The names exactly fill the area before funcs[] (under TVM's rule): the name
// is refused, funcs[0] keeps every byte, and the blob stays terminated.
TEST(MutableFuncRegistry, ExactFillDoesNotCorruptFuncs) {
  EndAlignedBuffer buf(2 * kEntryBytes);
  TVMMutableFuncRegistry reg;
  ASSERT_EQ(TVMMutableFuncRegistry_Create(&reg, buf.data(), buf.size()), kTvmErrorNoError);
  const uint8_t* names = buf.data();
  const uint8_t* funcs = reinterpret_cast<const uint8_t*>(reg.registry.funcs);
  ASSERT_EQ(TVMMutableFuncRegistry_Set(&reg, "abcdefghij", Fn<1>, false), kTvmErrorNoError);

  // The free bytes between the end-of-list NUL and funcs[].
  const size_t free_bytes = static_cast<size_t>(funcs - (names + 2 + 11));
  uint8_t funcs_before[sizeof(void*)];
  std::memcpy(funcs_before, funcs, sizeof(funcs_before));

  // strlen + 1 == free_bytes: TVM accepted this and overwrote funcs[0]'s first byte.
  const std::string exact(free_bytes - 1, 'x');
  EXPECT_EQ(TVMMutableFuncRegistry_Set(&reg, exact.c_str(), Fn<2>, false),
            kTvmErrorFunctionRegistryFull);
  EXPECT_EQ(std::memcmp(funcs_before, funcs, sizeof(funcs_before)), 0);

  // One byte shorter fits: its end-of-list NUL is the last byte before funcs[].
  const std::string fits(free_bytes - 2, 'y');
  ASSERT_EQ(TVMMutableFuncRegistry_Set(&reg, fits.c_str(), Fn<2>, false), kTvmErrorNoError);
  EXPECT_EQ(funcs[-1], 0);
  EXPECT_EQ(funcs[-2], 0);
  TVMBackendPackedCFunc f = nullptr;
  ASSERT_EQ(TVMFuncRegistry_GetByIndex(&reg.registry, 0, &f), kTvmErrorNoError);
  EXPECT_EQ(f, &Fn<1>);
  ASSERT_EQ(TVMFuncRegistry_GetByIndex(&reg.registry, 1, &f), kTvmErrorNoError);
  EXPECT_EQ(f, &Fn<2>);
  tvm_function_index_t index = 42;
  EXPECT_EQ(TVMFuncRegistry_Lookup(&reg.registry, "zzz", &index), kTvmErrorFunctionNameNotFound);
  EXPECT_EQ(TVMFuncRegistry_GetNumFuncs(&reg.registry), 2);
}

TEST(MutableFuncRegistry, SetOverride) {
  EndAlignedBuffer buf(3 * kEntryBytes);
  TVMMutableFuncRegistry reg;
  ASSERT_EQ(TVMMutableFuncRegistry_Create(&reg, buf.data(), buf.size()), kTvmErrorNoError);
  ASSERT_EQ(TVMMutableFuncRegistry_Set(&reg, "foo", Fn<1>, false), kTvmErrorNoError);
  ASSERT_EQ(TVMMutableFuncRegistry_Set(&reg, "bar", Fn<2>, false), kTvmErrorNoError);

  EXPECT_EQ(TVMMutableFuncRegistry_Set(&reg, "foo", Fn<3>, false), kTvmErrorFunctionAlreadyDefined);
  TVMBackendPackedCFunc f = nullptr;
  ASSERT_EQ(TVMFuncRegistry_GetByIndex(&reg.registry, 0, &f), kTvmErrorNoError);
  EXPECT_EQ(f, &Fn<1>);

  EXPECT_EQ(TVMMutableFuncRegistry_Set(&reg, "foo", Fn<3>, true), kTvmErrorNoError);
  ASSERT_EQ(TVMFuncRegistry_GetByIndex(&reg.registry, 0, &f), kTvmErrorNoError);
  EXPECT_EQ(f, &Fn<3>);
  // Overriding keeps the index and adds nothing.
  EXPECT_EQ(TVMFuncRegistry_GetNumFuncs(&reg.registry), 2);
  tvm_function_index_t index = 42;
  ASSERT_EQ(TVMFuncRegistry_Lookup(&reg.registry, "bar", &index), kTvmErrorNoError);
  EXPECT_EQ(index, 1);
}

TEST(MutableFuncRegistry, Full) {
  EndAlignedBuffer buf(3 * kEntryBytes);
  TVMMutableFuncRegistry reg;
  ASSERT_EQ(TVMMutableFuncRegistry_Create(&reg, buf.data(), buf.size()), kTvmErrorNoError);
  ASSERT_EQ(reg.max_functions, 3u);
  ASSERT_EQ(TVMMutableFuncRegistry_Set(&reg, "f0", Fn<0>, false), kTvmErrorNoError);
  ASSERT_EQ(TVMMutableFuncRegistry_Set(&reg, "f1", Fn<1>, false), kTvmErrorNoError);
  ASSERT_EQ(TVMMutableFuncRegistry_Set(&reg, "f2", Fn<2>, false), kTvmErrorNoError);
  EXPECT_EQ(TVMMutableFuncRegistry_Set(&reg, "f3", Fn<3>, false), kTvmErrorFunctionRegistryFull);
  EXPECT_EQ(TVMFuncRegistry_GetNumFuncs(&reg.registry), 3);
  // A full registry still lets an existing name be overridden.
  EXPECT_EQ(TVMMutableFuncRegistry_Set(&reg, "f1", Fn<4>, true), kTvmErrorNoError);
  for (int i = 0; i < 3; i++) {
    TVMBackendPackedCFunc f = nullptr;
    ASSERT_EQ(TVMFuncRegistry_GetByIndex(&reg.registry, static_cast<tvm_function_index_t>(i), &f),
              kTvmErrorNoError);
    TVMValue ret;
    int tcode = 0;
    ASSERT_EQ(f(nullptr, nullptr, 0, &ret, &tcode, nullptr), 0);
    EXPECT_EQ(ret.v_int64, i == 1 ? 4 : i);
  }
}

TEST(MutableFuncRegistry, RejectsBadNames) {
  EndAlignedBuffer buf(3 * kEntryBytes);
  TVMMutableFuncRegistry reg;
  ASSERT_EQ(TVMMutableFuncRegistry_Create(&reg, buf.data(), buf.size()), kTvmErrorNoError);
  EXPECT_EQ(TVMMutableFuncRegistry_Set(&reg, "", Fn<1>, false), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMMutableFuncRegistry_Set(&reg, nullptr, Fn<1>, false),
            kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMMutableFuncRegistry_Set(&reg, "f", nullptr, false), kTvmErrorFunctionCallInvalidArg);
  const std::string too_long(TVM_CRT_MAX_FUNCTION_NAME_LENGTH_BYTES, 'n');
  EXPECT_EQ(TVMMutableFuncRegistry_Set(&reg, too_long.c_str(), Fn<1>, false),
            kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMFuncRegistry_GetNumFuncs(&reg.registry), 0);
}

TEST(MutableFuncRegistry, MisalignedEndStillAlignsFuncs) {
  EndAlignedBuffer buf(2 * kEntryBytes + 1);
  // Drop the last byte: the buffer now ends one byte before an aligned address.
  TVMMutableFuncRegistry reg;
  ASSERT_EQ(TVMMutableFuncRegistry_Create(&reg, buf.data(), buf.size() - 1), kTvmErrorNoError);
  EXPECT_EQ(reg.max_functions, 2u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(reg.registry.funcs) % sizeof(void*), 0u);
  EXPECT_LE(reinterpret_cast<const uint8_t*>(reg.registry.funcs + reg.max_functions),
            buf.data() + buf.size() - 1);
  ASSERT_EQ(TVMMutableFuncRegistry_Set(&reg, "abc", Fn<1>, false), kTvmErrorNoError);
  TVMBackendPackedCFunc f = nullptr;
  ASSERT_EQ(TVMFuncRegistry_GetByIndex(&reg.registry, 0, &f), kTvmErrorNoError);
  EXPECT_EQ(f, &Fn<1>);
}

// ---- the headers compile as C -------------------------------------------------------------------

TEST(FuncRegistryC, HeadersCompileAsC) {
  // "eight" is index 1 and returns 8.
  EXPECT_EQ(crt_runtime_headers_compile_as_c(), 108);
}

}  // namespace
