// A reply completed later, from another thread: with a response, or with the reply that answers
// from then on, whether the session watches before or after, and cancelled before or after.
#include "server/core/deferred_reply.h"

#include <gtest/gtest.h>

#include <thread>

namespace kvd::server {
namespace {

// A reply that streams one chunk and records what the deferred reply hands on to it.
class OneChunkReply final : public AsyncReply {
 public:
  explicit OneChunkReply(bool* cancelled) : cancelled_(cancelled) {}
  bool streaming() const override { return true; }
  void SetNotify(std::function<void()> notify) override { notify_ = std::move(notify); }
  ReplyProgress Poll() override { return {.stream_data = "data: x\n\n", .done = true}; }
  void Cancel() override { *cancelled_ = true; }
  const std::function<void()>& notify() const { return notify_; }

 private:
  bool* cancelled_;
  std::function<void()> notify_;
};

TEST(DeferredReplyTest, AResponseBeforeOrAfterTheSessionWatches) {
  for (const bool complete_first : {true, false}) {
    DeferredReply reply;
    int notified = 0;
    auto complete = [&] {
      std::thread([state = reply.state()] {
        DeferredReply::Complete(*state, HttpResponse{.status = 404, .body = "{}"});
      }).join();
    };
    if (complete_first) complete();
    EXPECT_FALSE(reply.streaming());
    reply.SetNotify([&] { ++notified; });
    if (!complete_first) {
      EXPECT_EQ(notified, 0);
      EXPECT_FALSE(reply.Poll().response.has_value());
      complete();
    }
    EXPECT_EQ(notified, 1);
    const ReplyProgress progress = reply.Poll();
    ASSERT_TRUE(progress.response.has_value());
    EXPECT_EQ(progress.response->status, 404);
    EXPECT_TRUE(progress.done);
    EXPECT_FALSE(reply.streaming()) << "a refusal is a plain response";
  }
}

TEST(DeferredReplyTest, AReplyToHandOverToStreamsFromThenOn) {
  DeferredReply reply;
  int notified = 0;
  reply.SetNotify([&] { ++notified; });
  EXPECT_FALSE(reply.streaming());
  bool cancelled = false;
  auto inner = std::make_unique<OneChunkReply>(&cancelled);
  OneChunkReply* handed_over = inner.get();
  DeferredReply::Complete(*reply.state(), std::move(inner));
  EXPECT_EQ(notified, 1);
  EXPECT_TRUE(reply.streaming());
  ASSERT_TRUE(handed_over->notify() != nullptr) << "the session's notify goes to the new reply";
  handed_over->notify()();
  EXPECT_EQ(notified, 2);
  const ReplyProgress progress = reply.Poll();
  EXPECT_EQ(progress.stream_data, "data: x\n\n");
  EXPECT_TRUE(progress.done);
  reply.SetNotify(nullptr);
  EXPECT_TRUE(handed_over->notify() == nullptr);
  EXPECT_FALSE(cancelled);
  reply.Cancel();
  EXPECT_TRUE(cancelled);
}

TEST(DeferredReplyTest, ACancelBeforeTheReplyComesCancelsIt) {
  bool cancelled = false;
  std::shared_ptr<DeferredReply::State> state;
  {
    DeferredReply reply;
    state = reply.state();
    reply.Cancel();  // the client left while the work ran
  }
  DeferredReply::Complete(*state, std::make_unique<OneChunkReply>(&cancelled));
  EXPECT_TRUE(cancelled);
}

}  // namespace
}  // namespace kvd::server
