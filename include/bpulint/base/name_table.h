// A hash map from value names to V, for the hottest lookups over a graph:
// every node input and output, in the fact walk and in the checker's fast
// path. Open addressing in one array of 8-byte slots (32-bit hash tag,
// 1-based entry index), entries dense in insertion order: a node-per-entry
// hash map spends its time on cache misses. Keys view names owned by someone
// else (the ModelProto), which must outlive the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "bpulint/base/bulk_memory.h"

namespace bpulint {

template <class V>
class NameTable {
 public:
  explicit NameTable(size_t expected) {
    size_t capacity = 16;
    while (capacity < expected * 2) capacity <<= 1;
    slots_.assign(capacity, 0);
    entries_.reserve(expected);
  }

  const V* find(std::string_view key) const {
    const size_t h = std::hash<std::string_view>{}(key);
    for (size_t i = h & mask();; i = (i + 1) & mask()) {
      const uint64_t slot = slots_[i];
      if (slot == 0) return nullptr;
      const Entry& e = entries_[static_cast<uint32_t>(slot) - 1];
      if ((slot >> 32) == tag(h) && e.key == key) return &e.value;
    }
  }

  // The entry for `key`, inserted (value-initialised) on first use; `inserted`
  // says which. May grow, which moves entries: callers keep no pointers
  // across an insertion.
  V& get(std::string_view key, bool* inserted = nullptr) {
    if ((entries_.size() + 1) * 2 > slots_.size()) grow();
    const size_t h = std::hash<std::string_view>{}(key);
    for (size_t i = h & mask();; i = (i + 1) & mask()) {
      const uint64_t slot = slots_[i];
      if (slot == 0) {
        entries_.push_back({key, V{}});
        slots_[i] = (tag(h) << 32) | entries_.size();
        if (inserted != nullptr) *inserted = true;
        return entries_.back().value;
      }
      Entry& e = entries_[static_cast<uint32_t>(slot) - 1];
      if ((slot >> 32) == tag(h) && e.key == key) {
        if (inserted != nullptr) *inserted = false;
        return e.value;
      }
    }
  }
  V& operator[](std::string_view key) { return get(key); }

  // Adds `key`; false when it was there already.
  bool insert(std::string_view key) {
    bool inserted = false;
    get(key, &inserted);
    return inserted;
  }
  bool contains(std::string_view key) const { return find(key) != nullptr; }

 private:
  struct Entry {
    std::string_view key;
    V value;
  };
  static uint64_t tag(size_t h) { return static_cast<uint64_t>(h >> 32) & 0xffffffffu; }
  size_t mask() const { return slots_.size() - 1; }
  void grow() {
    slots_.assign(slots_.size() * 2, 0);
    for (size_t k = 0; k < entries_.size(); ++k) {
      const size_t h = std::hash<std::string_view>{}(entries_[k].key);
      size_t i = h & mask();
      while (slots_[i] != 0) i = (i + 1) & mask();
      slots_[i] = (tag(h) << 32) | (k + 1);
    }
  }
  std::vector<uint64_t, BulkAllocator<uint64_t>> slots_;
  std::vector<Entry, BulkAllocator<Entry>> entries_;
};

}  // namespace bpulint
