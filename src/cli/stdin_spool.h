// `-` as the model path: standard input, copied once into a private temporary
// file that the run then reads like any model file (the loader maps it and
// leaves its weights on disk; --fix copies them from there). The file and its
// folder are removed when the spool goes out of scope, and by the signal
// handler when SIGINT, SIGTERM or SIGHUP ends the run (SIGKILL cannot be
// caught: only that leaves them).
#pragma once

#include <memory>
#include <string>

#include "bpulint/base/output_file.h"

namespace bpulint {

class StdinSpool {
 public:
  StdinSpool() = default;
  ~StdinSpool();
  StdinSpool(const StdinSpool&) = delete;
  StdinSpool& operator=(const StdinSpool&) = delete;

  // Reads all of standard input. On failure returns false with a one-line
  // reason (no path prefix): a terminal, no temporary folder, a read error.
  bool read(std::string& error);
  const std::string& path() const { return file_; }

 private:
  std::string folder_, file_;
  std::unique_ptr<TempPathGuard> folder_guard_, file_guard_;
};

}  // namespace bpulint
