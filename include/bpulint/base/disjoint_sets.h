// Union-find over 0..n-1 with path halving: CPU islands (placement) and the
// report's collapsed regions (report_graph) group connected nodes with it.
#pragma once

#include <cstddef>
#include <numeric>
#include <vector>

namespace bpulint {

struct DisjointSets {
  std::vector<size_t> parent;
  explicit DisjointSets(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  size_t find(size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void unite(size_t a, size_t b) { parent[find(a)] = find(b); }
};

}  // namespace bpulint
