// Delivers SIGINT, SIGTERM and SIGHUP to the thread that waits for them, whichever thread the
// kernel interrupts: a handler writes the signal number to a pipe that Next reads. Blocking the
// signals in main cannot steer them, because libraries start threads before main (OpenBLAS
// does), and a signal those threads take would kill the process.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kvd::server {

class SignalWatch {
 public:
  // One per process.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SignalWatch>> Install();
  // The watch lives until the process stops, so signals that come after it (while the process
  // tears down, after a drain) are ignored: the stop they ask for is already under way.
  ~SignalWatch();
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  // The next signal received, waiting up to `timeout`; 0 when none came in time.
  int Next(absl::Duration timeout = absl::InfiniteDuration());

 private:
  SignalWatch(int read_fd, int write_fd) : read_fd_(read_fd), write_fd_(write_fd) {}
  int read_fd_;
  int write_fd_;
};

}  // namespace kvd::server
