// Small string helpers shared by the renderers and the command line.
#pragma once

#include <string>
#include <vector>

namespace bpulint {

// "a, b, c"; empty items keep their separators.
inline std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

}  // namespace bpulint
