// run_side_by_side: both halves always run to the end, on two threads, and
// an exception from either reaches the caller (this thread's first).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "bpulint/base/side_by_side.h"

using bpulint::run_side_by_side;

TEST_CASE("side by side: both halves run, on two threads") {
  std::thread::id here, there;
  run_side_by_side([&] { here = std::this_thread::get_id(); }, [&] { there = std::this_thread::get_id(); });
  const bool here_is_caller = here == std::this_thread::get_id();
  const bool there_ran_elsewhere = there != std::thread::id() && there != here;
  CHECK(here_is_caller);
  CHECK(there_ran_elsewhere);
}

TEST_CASE("side by side: a failure reaches the caller after both halves are done") {
  std::atomic<bool> there_done{false};
  CHECK_THROWS_WITH(run_side_by_side([] { throw std::runtime_error("here"); },
                                     [&] {
                                       std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                       there_done = true;
                                     }),
                    "here");
  CHECK(there_done);
  CHECK_THROWS_WITH(run_side_by_side([] {}, [] { throw std::runtime_error("there"); }), "there");
  CHECK_THROWS_WITH(run_side_by_side([] { throw std::runtime_error("here"); }, [] { throw std::runtime_error("there"); }),
                    "here");
}
