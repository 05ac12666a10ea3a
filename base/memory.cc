#include "base/memory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace benchfarm::base {

int64_t FreeHeapBytes() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.fordblks + info.fsmblks);
#else
  return 0;
#endif
}

bool ReleaseFreeHeap() {
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
