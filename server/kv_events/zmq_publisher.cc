#include "server/kv_events/zmq_publisher.h"

#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "server/kv_events/vllm_kv_events.h"
#include "spdlog/spdlog.h"

namespace kvd::server {
namespace {

constexpr int kHighWaterMark = 100000;  // messages queued per subscriber (vLLM's default)
// Messages queued for one replaying peer; a peer that reads no faster loses the rest of its
// replay (no end marker) and asks again from the last batch it got.
constexpr int kReplayHighWaterMark = 256;
// A replay request is three short frames, a subscription one: a peer that sends a longer
// frame is disconnected.
constexpr int64_t kMaxReplayFrameBytes = 256;
constexpr int64_t kMaxSubscriptionBytes = 4096;
constexpr size_t kReplayRequestFrames = 3;  // [peer, empty, first batch number]
// Requests answered before the thread publishes again, so that no peer holds the stream up.
constexpr int kReplaysPerWake = 8;
constexpr std::string_view kEndOfReplay = "\xff\xff\xff\xff\xff\xff\xff\xff";  // -1

bool Binds(std::string_view endpoint) {
  return endpoint.find('*') != std::string_view::npos ||
         endpoint.find("::") != std::string_view::npos || endpoint.starts_with("ipc://") ||
         endpoint.starts_with("inproc://");
}

// IPv6 is on only for an endpoint that names an IPv6 address, so that an IPv4 one keeps its form.
int Ipv6(std::string_view endpoint) {
  return endpoint.find('[') != std::string_view::npos ||
                 endpoint.find("::") != std::string_view::npos
             ? 1
             : 0;
}

std::string BigEndian8(uint64_t value) {
  std::string bytes(8, '\0');
  for (int i = 7; i >= 0; --i, value >>= 8) bytes[i] = static_cast<char>(value & 0xff);
  return bytes;
}

uint64_t ReadBigEndian8(std::string_view bytes) {
  uint64_t value = 0;
  for (const char byte : bytes) value = value << 8 | static_cast<uint8_t>(byte);
  return value;
}

absl::Status ZmqError(std::string_view what, std::string_view endpoint) {
  const int error = zmq_errno();
  const bool malformed = error == EINVAL || error == EPROTONOSUPPORT || error == ENOCOMPATPROTO;
  return absl::Status(
      malformed ? absl::StatusCode::kInvalidArgument : absl::StatusCode::kUnavailable,
      absl::StrCat(std::string(what), " \"", std::string(endpoint), "\": ", zmq_strerror(error)));
}

std::string LastEndpoint(void* socket) {
  std::array<char, 1024> text{};
  size_t size = text.size();
  if (zmq_getsockopt(socket, ZMQ_LAST_ENDPOINT, text.data(), &size) != 0) return "";
  return std::string(text.data(), strnlen(text.data(), text.size()));
}

absl::Status SetOption(void* socket, int option, auto value) {
  if (zmq_setsockopt(socket, option, &value, sizeof value) != 0) {
    return absl::InternalError(absl::StrCat("zmq_setsockopt: ", zmq_strerror(zmq_errno())));
  }
  return absl::OkStatus();
}

// Sends `frames` as one message without waiting; false when the socket has no room for it.
bool SendMessage(void* socket, std::span<const std::string_view> frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    const int flags = ZMQ_DONTWAIT | (i + 1 < frames.size() ? ZMQ_SNDMORE : 0);
    if (zmq_send(socket, frames[i].data(), frames[i].size(), flags) < 0) return false;
  }
  return true;
}

// One whole message waiting on `socket` (null when none), its frames kept up to
// kReplayRequestFrames + 1 (more cannot make a replay request).
std::optional<std::vector<std::string>> ReceiveMessage(void* socket) {
  std::vector<std::string> frames;
  for (bool more = true; more;) {
    zmq_msg_t message;
    zmq_msg_init(&message);
    if (zmq_msg_recv(&message, socket, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&message);
      return std::nullopt;
    }
    if (frames.size() <= kReplayRequestFrames) {
      frames.emplace_back(static_cast<const char*>(zmq_msg_data(&message)),
                          zmq_msg_size(&message));
    }
    more = zmq_msg_more(&message) != 0;
    zmq_msg_close(&message);
  }
  return frames;
}

// The first batch number a replay request asks for; null for anything else.
std::optional<uint64_t> ReplayStart(const std::vector<std::string>& frames) {
  if (frames.size() != kReplayRequestFrames || !frames[1].empty() || frames[2].size() != 8) {
    return std::nullopt;
  }
  return ReadBigEndian8(frames[2]);
}

}  // namespace

class ZmqKvEventPublisher::Wake {
 public:
  Wake() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~Wake() {
    if (fd_ >= 0) close(fd_);
  }
  Wake(const Wake&) = delete;
  Wake& operator=(const Wake&) = delete;

  int fd() const { return fd_; }
  void Signal() const {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t written = write(fd_, &one, sizeof one);
  }
  void Clear() const {
    uint64_t count = 0;
    [[maybe_unused]] const ssize_t read_bytes = read(fd_, &count, sizeof count);
  }

 private:
  const int fd_;
};

absl::StatusOr<std::unique_ptr<ZmqKvEventPublisher>> ZmqKvEventPublisher::Start(
    const scheduler::KvEventLog& log, ZmqKvEventsOptions options) {
  std::unique_ptr<ZmqKvEventPublisher> publisher(new ZmqKvEventPublisher(log, std::move(options)));
  KVD_RETURN_IF_ERROR(publisher->Open());
  publisher->listener_ = log.AddListener([wake = publisher->wake_] { wake->Signal(); });
  publisher->thread_ = std::thread([raw = publisher.get()] { raw->Run(); });
  return publisher;
}

ZmqKvEventPublisher::ZmqKvEventPublisher(const scheduler::KvEventLog& log,
                                         ZmqKvEventsOptions options)
    : log_(log), options_(std::move(options)), wake_(std::make_shared<Wake>()) {}

ZmqKvEventPublisher::~ZmqKvEventPublisher() {
  if (listener_ != 0) log_.RemoveListener(listener_);
  if (thread_.joinable()) {
    stopping_ = true;
    wake_->Signal();
    thread_.join();
  }
  if (replay_ != nullptr) zmq_close(replay_);
  if (pub_ != nullptr) zmq_close(pub_);
  if (context_ != nullptr) zmq_ctx_term(context_);
}

absl::Status ZmqKvEventPublisher::Open() {
  if (wake_->fd() < 0) return absl::InternalError(absl::StrCat("eventfd: ", strerror(errno)));
  context_ = zmq_ctx_new();
  if (context_ == nullptr) return absl::InternalError("zmq_ctx_new failed");
  pub_ = zmq_socket(context_, ZMQ_PUB);
  if (pub_ == nullptr) return absl::InternalError("zmq_socket(PUB) failed");
  // Sockets close at once: a subscriber that is gone must not hold up a shutdown.
  KVD_RETURN_IF_ERROR(SetOption(pub_, ZMQ_LINGER, 0));
  KVD_RETURN_IF_ERROR(SetOption(pub_, ZMQ_IPV6, Ipv6(options_.endpoint)));
  KVD_RETURN_IF_ERROR(SetOption(pub_, ZMQ_SNDHWM, kHighWaterMark));
  KVD_RETURN_IF_ERROR(SetOption(pub_, ZMQ_MAXMSGSIZE, kMaxSubscriptionBytes));
  const std::string& endpoint = options_.endpoint;
  if (Binds(endpoint)) {
    if (zmq_bind(pub_, endpoint.c_str()) != 0) return ZmqError("cannot bind", endpoint);
    endpoint_ = LastEndpoint(pub_);
  } else {
    if (zmq_connect(pub_, endpoint.c_str()) != 0) return ZmqError("cannot connect to", endpoint);
    endpoint_ = endpoint;
  }
  if (options_.replay_endpoint.empty()) return absl::OkStatus();
  replay_ = zmq_socket(context_, ZMQ_ROUTER);
  if (replay_ == nullptr) return absl::InternalError("zmq_socket(ROUTER) failed");
  KVD_RETURN_IF_ERROR(SetOption(replay_, ZMQ_LINGER, 0));
  KVD_RETURN_IF_ERROR(SetOption(replay_, ZMQ_IPV6, Ipv6(options_.replay_endpoint)));
  KVD_RETURN_IF_ERROR(SetOption(replay_, ZMQ_MAXMSGSIZE, kMaxReplayFrameBytes));
  KVD_RETURN_IF_ERROR(SetOption(replay_, ZMQ_SNDHWM, kReplayHighWaterMark));
  // A send to a peer whose queue is full fails rather than vanishing, so the replay stops
  // there without claiming its end.
  KVD_RETURN_IF_ERROR(SetOption(replay_, ZMQ_ROUTER_MANDATORY, 1));
  if (zmq_bind(replay_, options_.replay_endpoint.c_str()) != 0) {
    return ZmqError("cannot bind", options_.replay_endpoint);
  }
  replay_endpoint_ = LastEndpoint(replay_);
  return absl::OkStatus();
}

void ZmqKvEventPublisher::Run() {
  std::array<zmq_pollitem_t, 2> items{};
  items[0].fd = wake_->fd();
  items[0].events = ZMQ_POLLIN;
  items[1].socket = replay_;
  items[1].events = ZMQ_POLLIN;
  const int polled = replay_ != nullptr ? 2 : 1;
  while (!stopping_) {
    PublishNew();
    if (zmq_poll(items.data(), polled, -1) < 0) {
      if (zmq_errno() == EINTR) continue;
      spdlog::error("KV events: zmq_poll: {}; no more events are published",
                    zmq_strerror(zmq_errno()));
      return;
    }
    if ((items[0].revents & ZMQ_POLLIN) != 0) wake_->Clear();
    if (replay_ != nullptr && (items[1].revents & ZMQ_POLLIN) != 0) ServeReplays();
  }
}

void ZmqKvEventPublisher::PublishNew() {
  if (log_.latest() == published_) return;
  for (const scheduler::KvEventBatch& batch : log_.Since(published_)) {
    const EncodedBatch encoded = Encode(batch);
    const std::array<std::string_view, 3> frames{options_.topic, encoded.number, encoded.payload};
    // A PUB socket drops a message for a subscriber whose queue is full; it replays.
    SendMessage(pub_, frames);
    published_ = batch.sequence;
  }
}

void ZmqKvEventPublisher::ServeReplays() {
  for (int served = 0; served < kReplaysPerWake && !stopping_; ++served) {
    const std::optional<std::vector<std::string>> request = ReceiveMessage(replay_);
    if (!request) return;
    const std::optional<uint64_t> start = ReplayStart(*request);
    if (!start) continue;
    const std::string_view peer = (*request)[0];
    bool sent = true;
    for (const EncodedBatch& batch : ReplayFrom(*start)) {
      const std::array<std::string_view, 4> frames{peer, "", batch.number, batch.payload};
      sent = SendMessage(replay_, frames);
      if (!sent) break;
    }
    const std::array<std::string_view, 4> end{peer, "", kEndOfReplay, ""};
    if (sent) SendMessage(replay_, end);
  }
}

std::vector<ZmqKvEventPublisher::EncodedBatch> ZmqKvEventPublisher::ReplayFrom(uint64_t first) {
  const uint64_t after = first == 0 ? 0 : first - 1;
  const uint64_t latest = log_.latest();
  if (after == latest) return {};
  if (log_.Holds(after)) {
    std::vector<EncodedBatch> batches;
    for (const scheduler::KvEventBatch& batch : log_.Since(after)) {
      batches.push_back(Encode(batch));
    }
    return batches;
  }
  // A snapshot is built (under the log's lock) at most once per batch of the log, however many
  // peers ask for one.
  if (!snapshot_ || snapshot_->first != latest) {
    const std::vector<scheduler::KvEventBatch> snapshot = log_.Since(0);
    if (snapshot.empty()) return {};
    snapshot_.emplace(snapshot[0].sequence, Encode(snapshot[0]));
  }
  return {snapshot_->second};
}

ZmqKvEventPublisher::EncodedBatch ZmqKvEventPublisher::Encode(
    const scheduler::KvEventBatch& batch) const {
  return {.number = BigEndian8(batch.sequence),
          .payload = EncodeVllmKvEventBatch(batch, log_.block_size(), options_.medium)};
}

}  // namespace kvd::server
