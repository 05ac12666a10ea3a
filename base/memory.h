// The process's heap: how much of it the allocator holds free, and giving that back to the
// system. glibc's malloc keeps freed memory in its arenas (only the top of each heap is returned
// on its own), and tcmalloc (the tracker's malloc) keeps free pages mapped in its page heap, so a
// daemon that once held a burst — a flood of watch streams, a large backlog that then finished —
// keeps that much resident until it asks malloc to return it. Both are handled: tcmalloc when the
// process runs on it, glibc's otherwise.
#ifndef BENCHFARM_BASE_MEMORY_H_
#define BENCHFARM_BASE_MEMORY_H_

#include <cstdint>

namespace benchfarm::base {

// The process's malloc: "tcmalloc" or "glibc" (else "other").
const char* HeapAllocator();

// Bytes the allocator holds free (glibc: mallinfo2 fordblks + fsmblks; tcmalloc: its page heap's
// free bytes); 0 where it cannot tell.
int64_t FreeHeapBytes();

// Returns the free pages to the system (glibc: malloc_trim(0) over every arena; tcmalloc:
// ReleaseFreeMemory); true if any memory was returned. Costs a walk of the allocator's free
// memory: call it from a periodic task, not per request.
bool ReleaseFreeHeap();

// ReleaseFreeHeap when FreeHeapBytes() exceeds `threshold`; true if it released.
bool ReleaseFreeHeapOver(int64_t threshold);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_MEMORY_H_
