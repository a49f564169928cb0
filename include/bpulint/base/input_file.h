// One way to read a whole input file that is not a model (rule files, configs,
// baselines, --hb-config, compile logs, ignore files): as a bounded regular
// file. A FIFO, device or socket is refused at once (never a wait on a writer
// that does not come, never an endless /dev/zero); a file above its kind's cap
// is refused before it is read, and so is one that grows past the cap while it
// is read; running out of memory is an error, not an abort. Each file read is
// noted in the run's plan (io_plan.h): one that is a planned output is refused.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "bpulint/base/io_plan.h"

namespace bpulint {

struct InputKind {
  const char* what;        // "rule file", in messages: "... a rule file is at most 16 MiB"
  std::uint64_t max_bytes;
  const char* role;        // in the run's plan of reads and writes (io_plan.h)
};

// The caps, stated in the README ("Input files"). Each is far above what real
// files of the kind reach (the whole rule database is under 1 MiB).
inline constexpr InputKind kRuleFile{"rule file", 16u << 20, "a rule file"};
inline constexpr InputKind kConfigFile{"config", 16u << 20, "the config"};
inline constexpr InputKind kBaselineFile{"baseline", 256u << 20, kBaselineReadRole};
inline constexpr InputKind kHbConfigFile{"hb_mapper config", 16u << 20, "the hb_mapper config (--hb-config)"};
inline constexpr InputKind kCompileLog{"compile log", 512u << 20, "a compile log"};
inline constexpr InputKind kIgnoreFile{"ignore file", 64u << 20, "an ignore file"};

// What a file that is not a regular one is, for messages: "a FIFO", "a folder".
const char* file_kind_name(mode_t mode);

// Reads `path` into `text`. On failure `error` is the problem without the path
// ("is a FIFO, not a regular file"), for the caller to put after its name.
bool read_input_file(const std::string& path, const InputKind& kind, std::string& text, std::string& error);

}  // namespace bpulint
