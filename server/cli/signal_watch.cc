#include "server/cli/signal_watch.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kvd::server {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
int g_write_fd = -1;  // written by the handler; async-signal-safe use only

void OnSignal(int signal) {
  const unsigned char byte = static_cast<unsigned char>(signal);
  const int saved_errno = errno;
  [[maybe_unused]] const ssize_t written = write(g_write_fd, &byte, 1);
  errno = saved_errno;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SignalWatch>> SignalWatch::Install() {
  if (g_write_fd >= 0) return absl::FailedPreconditionError("signal watch already installed");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    return absl::InternalError(absl::StrCat("pipe2: ", std::strerror(errno)));
  }
  g_write_fd = fds[1];
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int signal : kSignals) sigaction(signal, &action, nullptr);
  return std::unique_ptr<SignalWatch>(new SignalWatch(fds[0], fds[1]));
}

SignalWatch::~SignalWatch() {
  struct sigaction action = {};
  action.sa_handler = SIG_IGN;
  sigemptyset(&action.sa_mask);
  for (int signal : kSignals) sigaction(signal, &action, nullptr);
  g_write_fd = -1;
  close(read_fd_);
  close(write_fd_);
}

int SignalWatch::Next(absl::Duration timeout) {
  pollfd readable{read_fd_, POLLIN, 0};
  const int timeout_ms = timeout == absl::InfiniteDuration()
                             ? -1
                             : static_cast<int>(absl::ToInt64Milliseconds(timeout));
  while (true) {
    const int ready = poll(&readable, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return 0;
    unsigned char byte = 0;
    if (read(read_fd_, &byte, 1) == 1) return byte;
    if (errno != EAGAIN && errno != EINTR) return 0;
  }
}

}  // namespace kvd::server
