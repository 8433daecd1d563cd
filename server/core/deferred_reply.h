// A reply made later, on another thread: the work behind it (an upload's compression, a
// document read before a completion starts) completes it with a response, or with the reply
// to hand over to (a completion's). The state outlives the reply, which the connection may
// drop first; Complete may come before or after the session watches.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "base/mutex.h"
#include "server/http/http_message.h"

namespace kvd::server {

class DeferredReply final : public AsyncReply {
 public:
  class State;

  DeferredReply();
  ~DeferredReply() override;
  const std::shared_ptr<State>& state() const { return state_; }

  // Once, from any thread: the response, or the reply that answers from now on.
  static void Complete(State& state, HandlerResult result);

  // False until completed with a streaming reply: a session starts its stream only then, so a
  // refusal is still an HTTP error status.
  bool streaming() const override;
  void SetNotify(std::function<void()> notify) override;
  ReplyProgress Poll() override;
  // Cancels the handed-over reply, or the one still to come.
  void Cancel() override;

 private:
  std::shared_ptr<State> state_;
};

class DeferredReply::State {
 private:
  friend class DeferredReply;
  base::Mutex mu;
  std::optional<HttpResponse> response ABSL_GUARDED_BY(mu);
  std::unique_ptr<AsyncReply> reply ABSL_GUARDED_BY(mu);
  std::function<void()> notify ABSL_GUARDED_BY(mu);
  bool cancelled ABSL_GUARDED_BY(mu) = false;
};

}  // namespace kvd::server
