#include "bpulint/cli.h"

int main(int argc, char** argv) { return bpulint::run_cli(argc, argv); }
