// See skeleton_reads.h for the why.
#include "skeleton_reads.h"

#include <sys/mman.h>
#include <unistd.h>

namespace bpulint {
namespace {

constexpr uint64_t kMaxWindow = uint64_t{1} << 20;

}  // namespace

SkeletonReads::SkeletonReads(const uint8_t* map, uint64_t size, bool strict)
    : map_(map), size_(size), strict_(strict) {
  const long page = ::sysconf(_SC_PAGESIZE);
  if (page > 0 && (page & (page - 1)) == 0) {
    page_ = static_cast<uint64_t>(page);
    shift_ = 0;
    while ((uint64_t{1} << shift_) < page_) ++shift_;
  }
  const uint64_t pages = (size_ + page_ - 1) >> shift_;
  pages_.assign(static_cast<size_t>((pages + 63) / 64), 0);
  if (strict_) (void)::mprotect(const_cast<uint8_t*>(map_), static_cast<size_t>(size_), PROT_NONE);
}

void SkeletonReads::request(uint64_t from, uint64_t to) {
  uint64_t page = from >> shift_;
  const uint64_t last = (to - 1) >> shift_;
  while (page <= last && has(page)) ++page;
  if (page > last) return;
  uint64_t start = page << shift_;
  // The scanner reads on (skeleton_reads.h): the window doubles. Anywhere
  // else it jumped over a payload: one page.
  const bool read_to_window_end = reached_ + page_ > last_end_;
  if (window_ != 0 && read_to_window_end && start >= last_end_ && start - last_end_ <= page_) {
    start = last_end_;
    window_ = std::min(window_ * 2, kMaxWindow);
  } else {
    window_ = page_;
  }
  uint64_t end = std::max(to, start + window_);
  end = std::min(size_, (end + page_ - 1) >> shift_ << shift_);
  for (uint64_t p = start >> shift_; p <= (end - 1) >> shift_; ++p) {
    if (has(p)) continue;
    pages_[p >> 6] |= uint64_t{1} << (p & 63);
    requested_bytes_ += std::min(page_, size_ - (p << shift_));
  }
  fetch(start, end);
  last_end_ = end;
}

// Reads the window in large requests, then maps it in one call where the
// kernel can (older kernels fault page by page, from the page cache).
void SkeletonReads::fetch(uint64_t from, uint64_t to) const {
  auto* addr = const_cast<uint8_t*>(map_) + from;
  const auto length = static_cast<size_t>(to - from);
  if (strict_) (void)::mprotect(addr, length, PROT_READ);
  (void)::madvise(addr, length, MADV_WILLNEED);
#ifdef MADV_POPULATE_READ
  (void)::madvise(addr, length, MADV_POPULATE_READ);
#endif
}

}  // namespace bpulint
