// Which bytes of a mapped model file the loader reads, and when. Internal to src/model/.
//
// A lint needs the graph (the skeleton), never the weights. The file is mapped
// with the kernel's read-ahead off, and the wire scanner asks for every byte
// before it looks at it: a field's head (tag and length) before it decides
// whether to descend, copy or jump over the payload, and the whole field
// before it copies it. This class turns those asks into reads:
//  - where the scanner reads on (the nodes of a graph), windows double up to
//    1 MiB, so a big graph streams in a few dozen requests. Reading on means
//    it asked for bytes in the last page of the window and then within a
//    page past it;
//  - anywhere else it jumped over a payload: the window starts again at one
//    page, so a stripped tensor costs the page or two its header sits on,
//    however the tensors are laid out (even back to back, a window apart).
// What was never asked for is never read, and never counts in the RSS.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace bpulint {

class SkeletonReads {
 public:
  // `map`: the whole file, mapped read-only. `strict`: pages not asked for
  // stay unreadable (PROT_NONE), so a read the scanner did not ask for
  // crashes: the fuzz target and tests prove every read is asked for.
  SkeletonReads(const uint8_t* map, uint64_t size, bool strict);

  // Makes [pos, pos + n) of the file resident (clipped to the file).
  void need(uint64_t pos, uint64_t n) {
    if (n == 0 || pos >= size_) return;
    const uint64_t end = pos + std::min(n, size_ - pos);
    const uint64_t first = pos >> shift_;
    const uint64_t last = (end - 1) >> shift_;
    if (!(last - first <= 1 && has(first) && has(last))) request(pos, end);  // else the common case: a field head
    reached_ = std::max(reached_, end);
  }
  void need_all() { request(0, size_); }

  uint64_t requested_bytes() const { return requested_bytes_; }  // pages asked for, each once

 private:
  bool has(uint64_t page) const { return (pages_[page >> 6] >> (page & 63)) & 1; }
  void request(uint64_t from, uint64_t to);
  void fetch(uint64_t from, uint64_t to) const;

  const uint8_t* map_;
  uint64_t size_;
  bool strict_;
  unsigned shift_ = 12;     // log2 of the page size
  uint64_t page_ = 4096;
  std::vector<uint64_t> pages_;  // one bit per page: asked for
  uint64_t last_end_ = 0;        // end of the last window
  uint64_t window_ = 0;          // size of the last window
  uint64_t reached_ = 0;         // the furthest byte asked for
  uint64_t requested_bytes_ = 0;
};

}  // namespace bpulint
