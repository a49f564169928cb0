// Memory the lint fills by the hundred megabytes (a 100k-node graph's
// messages, its facts) pays a page fault per 4 KiB on first touch: a third
// of a big parse. Transparent huge pages take one per 2 MiB.
#pragma once

#include <cstddef>

namespace bpulint {

// Asks the kernel to back the whole 2 MiB pages inside [p, p + n) with huge
// pages. Only advice: without them (THP off, an old kernel) nothing changes.
void advise_huge_pages(void* p, size_t n);

// Memory for a block of at least 2 MiB, mapped apart and advised as above;
// smaller sizes come from operator new. Free with free_bulk(p, n), same n.
void* allocate_bulk(size_t n);
void free_bulk(void* p, size_t n);

}  // namespace bpulint
