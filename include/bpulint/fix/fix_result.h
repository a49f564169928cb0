// What --fix did, as every renderer reports it: data only, so the renderers
// need neither the fix engine nor the model writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bpulint {

struct FixResult {
  long node = -1;
  std::string fix_id;          // the fix tried, "" when none applied
  bool applied = false;
  std::string reason;          // why not applied
  int trials = 0;              // random inputs compared (see fix_proof.h)
  uint64_t seed = 0;
  double max_abs_error = -1;   // over all trials
  std::vector<std::vector<int64_t>> proof_input_shapes;  // the small inputs the proof ran
  std::vector<int64_t> input_shape;  // the real input, checked by shape (-1: a dynamic dim)
};

struct FixRun {
  std::vector<FixResult> results;
  std::string output_path;
  bool written = false;
  std::string error;           // one line when the run failed as a whole (nothing written)
  std::string data_path;       // weights written as external data here, when they were
  size_t applied() const {
    size_t n = 0;
    for (const auto& r : results) n += r.applied ? 1 : 0;
    return n;
  }
};

// What --fix did to the compile config (--hb-config): the lines added, each
// with the fix kind and the finding it settles.
struct ConfigFixRun {
  struct Added {
    std::string kind;      // fix id
    std::string rule;      // the finding's rule id
    std::string node;      // the node_info entry's node
    std::string line;      // the entry as written: "<node>": {'ON': 'BPU', ...}
    std::string evidence;  // the kind's source and measured cost
  };
  std::string config_path;  // the input config (never written)
  std::string output_path;  // the fixed config
  bool written = false;
  std::string error;        // one line when nothing was written
  std::vector<Added> added;
};

// What an applied fix's proof showed, as every format prints it: "proven on random
// inputs 2x8x3x5x7 and ... (seed S): max abs error E; shapes checked at 1x8xNx...".
std::string proof_summary(const FixResult& result);

}  // namespace bpulint
