// Two independent halves of one job on two threads (the machines bpu-lint
// runs on have two cores): the split parse of a big graph, fix planning.
#pragma once

#include <exception>
#include <system_error>
#include <thread>
#include <utility>

namespace bpulint {

// Runs here() on this thread and there() on a second one, both to the end.
// When no thread can be started, there() runs here afterwards (unless here()
// failed). An exception from here(), else from there(), is rethrown once
// both are done; a thread is never left running.
template <class Here, class There>
void run_side_by_side(Here&& here, There&& there) {
  std::exception_ptr here_failure, there_failure;
  const auto run_there = [&] {
    try {
      there();
    } catch (...) {
      there_failure = std::current_exception();
    }
  };
  std::thread other;
  try {
    other = std::thread(run_there);
  } catch (const std::system_error&) {
    // no thread to be had: one after the other
  }
  try {
    here();
  } catch (...) {
    here_failure = std::current_exception();
  }
  if (other.joinable()) {
    other.join();
  } else if (!here_failure) {
    run_there();
  }
  if (here_failure) std::rethrow_exception(here_failure);
  if (there_failure) std::rethrow_exception(there_failure);
}

}  // namespace bpulint
