// The process's heap: how much of it the allocator holds free, and giving that back to the
// system. glibc's malloc keeps freed memory in its arenas (only the top of each heap is returned
// on its own), so a daemon that once held a burst — a flood of watch streams, a large backlog
// that then finished — keeps that much resident until it asks malloc to return it.
#ifndef BENCHFARM_BASE_MEMORY_H_
#define BENCHFARM_BASE_MEMORY_H_

#include <cstdint>

namespace benchfarm::base {

// Bytes the allocator holds free in its arenas (glibc's mallinfo2 fordblks + fsmblks); 0 where
// the C library cannot tell.
int64_t FreeHeapBytes();

// Returns the free pages of every arena to the system (glibc's malloc_trim(0)); true if any
// memory was returned. Costs a walk of the free lists: call it from a periodic task, not per
// request.
bool ReleaseFreeHeap();

// ReleaseFreeHeap when FreeHeapBytes() exceeds `threshold`; true if it released.
bool ReleaseFreeHeapOver(int64_t threshold);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_MEMORY_H_
