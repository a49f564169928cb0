// The process exit codes, shared by the command line and the runs it
// dispatches to (lint, compare), so the core needs no CLI header.
#pragma once

namespace bpulint {

constexpr int kExitClean = 0;     // no error-level findings
constexpr int kExitFindings = 1;  // error-level findings
constexpr int kExitError = 2;     // usage error, unreadable model, bad configuration or rule file

}  // namespace bpulint
