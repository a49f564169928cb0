#include "bpulint/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace bpulint {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

void advise_huge_pages(void* p, size_t n) {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t last = (begin + n) & ~(kHugePage - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

void* allocate_bulk(size_t n) {
  if (n < kHugePage) return ::operator new(n);
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  advise_huge_pages(p, n);
  return p;
}

void free_bulk(void* p, size_t n) {
  if (n < kHugePage) ::operator delete(p);
  else munmap(p, n);
}

}  // namespace bpulint
