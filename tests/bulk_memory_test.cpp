// Bulk memory: blocks of every size hold what is written; a large block is
// filled by huge pages where the kernel offers transparent huge pages.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bpulint/base/bulk_memory.h"

using bpulint::BulkAllocator;

TEST_CASE("bulk memory: small and large blocks hold what is written") {
  for (size_t bytes : {size_t{1}, size_t{4096}, (size_t{2} << 20) - 1, size_t{2} << 20, (size_t{5} << 20) + 3}) {
    auto* p = static_cast<unsigned char*>(bpulint::bulk_allocate(bytes));
    REQUIRE(p != nullptr);
    for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(i * 131 + 7);
    size_t wrong = 0;
    for (size_t i = 0; i < bytes; ++i) wrong += p[i] != static_cast<unsigned char>(i * 131 + 7);
    CHECK(wrong == 0);
    bpulint::bulk_free(p, bytes);
  }
  std::vector<uint64_t, BulkAllocator<uint64_t>> v;
  for (uint64_t i = 0; i < 1'000'000; ++i) v.push_back(i * i);  // grows through small blocks into mapped ones
  uint64_t sum = 0;
  for (uint64_t x : v) sum += x;
  CHECK(sum == 333332833333500000ull);
}

namespace {
bool kernel_offers_huge_pages() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(f, line);
  return line.find("[always]") != std::string::npos || line.find("[madvise]") != std::string::npos;
}
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}
}  // namespace

TEST_CASE("bulk memory: a 32 MiB block takes far fewer page faults than its 8,192 small pages") {
  if (!bpulint::bulk_maps_large_blocks() || !kernel_offers_huge_pages()) {
    MESSAGE("skipped: no transparent huge pages here (or AddressSanitizer, which keeps every block on its heap)");
    return;
  }
  const size_t bytes = size_t{32} << 20;
  auto* p = static_cast<char*>(bpulint::bulk_allocate(bytes));
  const long before = minor_faults();
  for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
  const long faults = minor_faults() - before;
  bpulint::bulk_free(p, bytes);
  MESSAGE("minor faults touching 32 MiB: " << faults);
  CHECK(faults < 8192 / 4);
}
