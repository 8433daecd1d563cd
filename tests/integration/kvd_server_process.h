// Runs `kvd serve` as a child process on 127.0.0.1 with an OS-chosen port, for tests that talk
// to it over real HTTP; and a small curl-based client for those tests.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/kvd_binary.h"

extern char** environ;

namespace kvd::testing {

class KvdServer {
 public:
  // Starts `kvd serve --host 127.0.0.1 --port 0 ARGS` and waits until it listens. Without a
  // --data-dir in ARGS the server gets a fresh one of its own, removed afterwards, so servers
  // of tests running side by side never share a store.
  explicit KvdServer(std::vector<std::string> args) {
    if (std::find(args.begin(), args.end(), "--data-dir") == args.end()) {
      static std::atomic<int> counter = 0;
      own_data_dir_ = std::filesystem::temp_directory_path() /
                      ("kvd_data_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
      std::filesystem::remove_all(own_data_dir_);
      args.push_back("--data-dir");
      args.push_back(own_data_dir_.string());
    }
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
    std::vector<std::string> argv = {
        kvd::testing::KvdBinary(), "serve", "--host", "127.0.0.1", "--port", "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> raw;
    for (std::string& arg : argv) raw.push_back(arg.data());
    raw.push_back(nullptr);
    if (posix_spawn(&pid_, kvd::testing::KvdBinary().c_str(), &actions, nullptr, raw.data(),
                    environ) != 0)
      pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_fds[1]);
    reader_ = std::thread([this, fd = pipe_fds[0]] { ReadLogs(fd); });
    std::unique_lock lock(mu_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (port_ == 0 && !log_closed_ && std::chrono::steady_clock::now() < deadline) {
      cv_.wait_until(lock, deadline);
    }
  }

  ~KvdServer() {
    Stop();
    if (!own_data_dir_.empty()) std::filesystem::remove_all(own_data_dir_);
  }

  int port() const { return port_; }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::string logs() {
    std::lock_guard lock(mu_);
    return logs_;
  }
  pid_t pid() const { return pid_; }

  // Sends `signal` and returns the exit status.
  int Stop(int signal = SIGTERM) {
    if (pid_ <= 0) return exit_status_;
    kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    if (reader_.joinable()) reader_.join();
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_status_;
  }

 private:
  void ReadLogs(int fd) {
    char buffer[4096];
    ssize_t read_bytes;
    while ((read_bytes = read(fd, buffer, sizeof(buffer))) > 0) {
      std::lock_guard lock(mu_);
      logs_.append(buffer, static_cast<size_t>(read_bytes));
      std::smatch match;
      static const std::regex kServing("serving .* on http://[^:]+:([0-9]+)");
      if (port_ == 0 && std::regex_search(logs_, match, kServing)) {
        port_ = std::stoi(match[1]);
        cv_.notify_all();
      }
    }
    close(fd);
    std::lock_guard lock(mu_);
    log_closed_ = true;
    cv_.notify_all();
  }

  std::filesystem::path own_data_dir_;
  pid_t pid_ = -1;
  int exit_status_ = -1;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string logs_;
  int port_ = 0;
  bool log_closed_ = false;
};

struct HttpResult {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-cased names
  std::string body;
};

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One request through curl (a real HTTP client). `extra` is passed to curl as is.
inline HttpResult Curl(const std::string& method, const std::string& url,
                       const std::string& body = "", const std::string& extra = "") {
  static std::atomic<int> counter = 0;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("kvd_curl_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "body", std::ios::binary) << body;
  const std::string command = "curl -s -N -X " + method + " -o " + (dir / "out").string() + " -D " +
                              (dir / "headers").string() + " -H 'Content-Type: application/json' " +
                              (body.empty() ? "" : "--data-binary @" + (dir / "body").string()) +
                              " " + extra + " '" + url + "'";
  std::system(command.c_str());
  HttpResult result;
  result.body = ReadFile(dir / "out");
  std::istringstream headers(ReadFile(dir / "headers"));
  std::string line;
  while (std::getline(headers, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("HTTP/", 0) == 0) {
      result.status = std::stoi(line.substr(line.find(' ') + 1, 3));
      result.headers.clear();
    } else if (const size_t colon = line.find(':'); colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      result.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  std::filesystem::remove_all(dir);
  return result;
}

// Output of a shell command.
inline std::string Shell(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  char buffer[4096];
  size_t read;
  while ((read = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, read);
  pclose(pipe);
  return output;
}

// The SHA-256 digest of an API key, as `kvd hash-key` prints it for the config.
inline std::string Digest(const std::string& key) {
  std::string digest = Shell(kvd::testing::KvdBinary() + " hash-key --key " + key);
  while (!digest.empty() && digest.back() == '\n') digest.pop_back();
  return digest;
}

}  // namespace kvd::testing
