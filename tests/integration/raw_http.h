// Raw HTTP over a TCP socket to 127.0.0.1, for tests whose input is bytes no well-behaved
// client would send: oversized heads and trailers, slow senders, bytes after a request.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <string>
#include <string_view>

namespace kvd::testing {

class RawConnection {
 public:
  // Connects to 127.0.0.1:`port`; reads give up after `read_timeout_seconds`.
  explicit RawConnection(int port, int read_timeout_seconds = 20) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      close(fd_);
      fd_ = -1;
      return;
    }
    timeval timeout{.tv_sec = read_timeout_seconds, .tv_usec = 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  }
  ~RawConnection() { Close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return fd_ >= 0; }

  // Sends what the peer takes; false once it stops taking (closed or reset).
  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t sent = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (sent <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(sent));
    }
    return true;
  }

  // What arrives until `marker` has (or the peer closes, a read fails or times out).
  std::string ReadUntil(std::string_view marker) {
    std::string received;
    char byte;
    while (received.find(marker) == std::string::npos && recv(fd_, &byte, 1, 0) == 1) {
      received.push_back(byte);
    }
    return received;
  }

  // Everything until the peer closes, a read fails or times out.
  std::string ReadUntilClosed() {
    std::string received;
    char buffer[8192];
    ssize_t read_bytes;
    while ((read_bytes = recv(fd_, buffer, sizeof(buffer), 0)) > 0) {
      received.append(buffer, static_cast<size_t>(read_bytes));
    }
    return received;
  }

  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// The status code of an HTTP/1.1 response's first line; 0 without one.
inline int StatusOf(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return 0;
  return std::stoi(response.substr(9, 3));
}

// One request's bytes: a POST with a JSON body and a Content-Length.
inline std::string JsonPost(const std::string& path, const std::string& body,
                            const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
         extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace kvd::testing
