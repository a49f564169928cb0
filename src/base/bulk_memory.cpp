#include "bpulint/base/bulk_memory.h"

#include <sys/mman.h>

#include "bpulint/base/sanitizers.h"

namespace bpulint {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// AddressSanitizer cannot see into a mapping: under it every block stays on the heap.
constexpr bool kMapLargeBlocks = !BPULINT_ASAN;

bool mapped(size_t bytes) { return kMapLargeBlocks && bytes >= kHugePage; }

}  // namespace

bool bulk_maps_large_blocks() { return kMapLargeBlocks; }

void* bulk_allocate(size_t bytes) {
  if (!mapped(bytes)) return ::operator new(bytes);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without THP the mapping works as is
#endif
  return p;
}

void bulk_free(void* block, size_t bytes) {
  if (block == nullptr) return;
  if (!mapped(bytes)) {
    ::operator delete(block);
    return;
  }
  munmap(block, bytes);
}

}  // namespace bpulint
