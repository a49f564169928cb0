#include "bpulint/base/bulk_memory.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

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

void heap_on_huge_pages(size_t reserve) {
#if defined(MADV_HUGEPAGE) && defined(M_TOP_PAD) && defined(__GLIBC__)
  if (!kMapLargeBlocks) return;
  // Every growth of the heap asks for `reserve` more than it needs, and what
  // is freed at the top stays: the heap is one region, advised once. Blocks
  // of 32 MiB and more are still mapped apart (and returned when freed).
  mallopt(M_TOP_PAD, static_cast<int>(reserve));
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(reserve * 2));
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  const auto brk_now = [] { return reinterpret_cast<uintptr_t>(sbrk(0)); };
  const uintptr_t before = brk_now();
  std::vector<void*> blocks;
  for (int i = 0; i < 64 && brk_now() - before < reserve / 2; ++i) blocks.push_back(malloc(64 << 10));
  for (void* b : blocks) free(b);
  const uintptr_t end = brk_now();
  const uintptr_t from = (before + kHugePage - 1) / kHugePage * kHugePage;
  if (end > from + kHugePage) madvise(reinterpret_cast<void*>(from), end - from, MADV_HUGEPAGE);
#else
  (void)reserve;
#endif
}

}  // namespace bpulint
