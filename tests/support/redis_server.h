// A real redis-server for the shared tier's tests: started on a free loopback port with its
// append-only file synced on every write in a directory of its own, so that a restart keeps
// what it acknowledged; stopped (or killed) and started again on the same port by the test.
// Tests skip when redis-server is not installed (scripts/bootstrap installs it).
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cache_store/store/redis_connection.h"
#include "tests/support/free_port.h"

extern char** environ;

namespace kvd::testing {

class RedisServer {
 public:
  // The binary, or "" when none is installed.
  static std::string Binary() {
    for (const char* path : {"/usr/bin/redis-server", "/usr/local/bin/redis-server"}) {
      if (access(path, X_OK) == 0) return path;
    }
    return "";
  }

  // Picks a port and a directory; Start() runs the server.
  RedisServer() {
    static int counter = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("kvd_redis_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    port_ = FreeLoopbackPort();
  }
  ~RedisServer() {
    Stop(SIGKILL);
    std::filesystem::remove_all(dir_);
  }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Starts the server and waits (up to 20 s) until it answers PING; false if it never does.
  bool Start() {
    const std::string binary = Binary();
    if (binary.empty() || pid_ > 0) return false;
    std::vector<std::string> argv = {binary,          "--port",        std::to_string(port_),
                                     "--bind",        "127.0.0.1",     "--dir",
                                     dir_.string(),   "--save",        "",
                                     "--appendonly",  "yes",           "--appendfsync",
                                     "always",        "--logfile",     (dir_ / "log").string(),
                                     "--daemonize",   "no"};
    std::vector<char*> raw;
    for (std::string& arg : argv) raw.push_back(arg.data());
    raw.push_back(nullptr);
    if (posix_spawn(&pid_, binary.c_str(), nullptr, nullptr, raw.data(), environ) != 0) {
      pid_ = -1;
      return false;
    }
    cache_store::RedisConnection probe(Endpoint(), absl::Milliseconds(200));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      auto replies = probe.Pipeline({{"PING"}});
      if (replies.ok() && replies->front().text == "PONG") return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // Stops the server with `signal` (SIGTERM: a clean shutdown; SIGKILL: a crash).
  // Stops the server answering (SIGSTOP) until Resume(): its clients' calls wait.
  void Pause() { kill(pid_, SIGSTOP); }
  void Resume() { kill(pid_, SIGCONT); }

  void Stop(int signal = SIGTERM) {
    if (pid_ <= 0) return;
    kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  cache_store::RedisEndpoint Endpoint() const {
    return cache_store::RedisEndpoint{.host = "127.0.0.1", .port = port_};
  }

 private:
  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace kvd::testing
