// The command line: argument parsing and dispatch only; exit codes
// 0 = no error-level findings, 1 = findings, 2 = usage/input/rule-file error.
#pragma once

namespace bpulint {

constexpr int kExitClean = 0;     // no error-level findings
constexpr int kExitFindings = 1;  // error-level findings
constexpr int kExitError = 2;     // usage error, unreadable model, bad configuration or rule file

int run_cli(int argc, char** argv);

}  // namespace bpulint
