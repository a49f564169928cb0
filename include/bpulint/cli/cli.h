// The command line: argument parsing and dispatch only; exit codes
// 0 = no error-level findings, 1 = findings, 2 = usage/input/rule-file error.
#pragma once

#include "bpulint/base/exit_codes.h"

namespace bpulint {

int run_cli(int argc, char** argv);

}  // namespace bpulint
