#include "base/memory.h"

#include <cstddef>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// gperftools' C interface (gperftools/malloc_extension_c.h), declared weak: defined when the
// process runs on tcmalloc (the tracker links it), null otherwise.
extern "C" {
int MallocExtension_GetNumericProperty(const char* property, size_t* value) __attribute__((weak));
void MallocExtension_ReleaseFreeMemory(void) __attribute__((weak));
}

namespace benchfarm::base {
namespace {

bool OnTcmalloc() {
  return MallocExtension_GetNumericProperty != nullptr &&
         MallocExtension_ReleaseFreeMemory != nullptr;
}

// tcmalloc's free pages still mapped (its page heap; freed objects reach it once their span is
// wholly free).
int64_t TcmallocFreeBytes() {
  size_t free_bytes = 0;
  if (MallocExtension_GetNumericProperty("tcmalloc.pageheap_free_bytes", &free_bytes) == 0) {
    return 0;
  }
  return static_cast<int64_t>(free_bytes);
}

}  // namespace

const char* HeapAllocator() {
  if (OnTcmalloc()) return "tcmalloc";
#if defined(__GLIBC__)
  return "glibc";
#else
  return "other";
#endif
}

int64_t FreeHeapBytes() {
  if (OnTcmalloc()) return TcmallocFreeBytes();
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.fordblks + info.fsmblks);
#else
  return 0;
#endif
}

bool ReleaseFreeHeap() {
  if (OnTcmalloc()) {
    const int64_t before = TcmallocFreeBytes();
    MallocExtension_ReleaseFreeMemory();
    return TcmallocFreeBytes() < before;
  }
#if defined(__GLIBC__)
  return malloc_trim(0) != 0;
#else
  return false;
#endif
}

bool ReleaseFreeHeapOver(int64_t threshold) {
  return FreeHeapBytes() > threshold && ReleaseFreeHeap();
}

}  // namespace benchfarm::base
