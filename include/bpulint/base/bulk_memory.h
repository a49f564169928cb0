// Memory for the few very large buffers of a lint (the model's arena blocks,
// the node facts, the name tables of a 100k-node graph): blocks of 2 MiB and
// more are mapped with transparent huge pages advised, so the kernel fills
// them 2 MiB per page fault instead of 4 KiB (graph_100k: 54,000 faults ->
// 14,700 and 16 % less CPU in interleaved runs). Smaller blocks, and every
// block under AddressSanitizer (which cannot see into a mapping), come from
// operator new as usual.
#pragma once

#include <cstddef>
#include <new>

namespace bpulint {

void* bulk_allocate(size_t bytes);
void bulk_free(void* block, size_t bytes);  // `bytes` as allocated
// Whether blocks of 2 MiB and more are mapped (false under AddressSanitizer).
bool bulk_maps_large_blocks();

// What the arenas cannot take comes from malloc's heap: the character buffers
// of protobuf's strings (every name of the graph), the diagnostics. That heap
// grows 4 KiB per page fault. Called once at the start of main: the heap is
// grown by `reserve` bytes up front (address space only) with huge pages
// advised, and kept, so it fills 2 MiB per fault. Advice only; a no-op under
// AddressSanitizer.
void heap_on_huge_pages(size_t reserve);

// std::allocator with bulk_allocate behind it, for vectors that grow large.
template <class T>
struct BulkAllocator {
  using value_type = T;
  BulkAllocator() = default;
  template <class U>
  BulkAllocator(const BulkAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(bulk_allocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept { bulk_free(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const BulkAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const BulkAllocator<U>&) const noexcept { return false; }
};

}  // namespace bpulint
