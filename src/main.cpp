#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "bpulint/base/bulk_memory.h"
#include "bpulint/cli/cli.h"

int main(int argc, char** argv) {
  bpulint::heap_on_huge_pages(size_t{512} << 20);
  const int code = bpulint::run_cli(argc, argv);
#ifndef BPULINT_FREE_AT_EXIT
  // All is written: the libraries' static tables (ONNX's op-schema registry
  // among them) are left to the OS instead of being destroyed one by one.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
#endif
  return code;
}
