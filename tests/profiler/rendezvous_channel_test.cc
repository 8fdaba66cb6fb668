// RendezvousChannel: a receive waits for its post and returns the post time; a receive whose
// sender never posts times out with a message naming both workers, and wakes every waiter.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <thread>

#include "profiler/rendezvous_channel.h"

namespace ppsim {
namespace {

TEST_CASE("RendezvousChannel: take returns the sender's post time once posted") {
  RendezvousChannel channel(4, 10.0);
  std::thread sender([&] { channel.post(2, 1.25); });
  CHECK(channel.take(2, 1, 0) == 1.25);
  sender.join();
  channel.reset();
  channel.post(3, 0.5);
  CHECK(channel.take(3, 1, 0) == 0.5);
}

TEST_CASE("RendezvousChannel: a transfer never posted times out naming the workers") {
  RendezvousChannel channel(2, 0.05);
  try {
    channel.take(1, 3, 2);
    FAIL("take returned without a post");
  } catch (const std::runtime_error& error) {
    CHECK_THAT(error.what(), Catch::Contains("worker 3 timed out"));
    CHECK_THAT(error.what(), Catch::Contains("waiting for worker 2"));
  }
  // The channel is aborted: other waiters fail at once instead of hanging.
  CHECK_THROWS_AS(channel.take(0, 1, 0), std::runtime_error);
}

}  // namespace
}  // namespace ppsim
