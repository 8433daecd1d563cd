#include "server/core/deferred_reply.h"

#include <utility>

#include "base/check.h"

namespace kvd::server {

DeferredReply::DeferredReply() : state_(std::make_shared<State>()) {}

DeferredReply::~DeferredReply() { SetNotify(nullptr); }

void DeferredReply::Complete(State& state, HandlerResult result) {
  std::function<void()> notify;
  AsyncReply* cancel = nullptr;
  {
    base::MutexLock lock(state.mu);
    KVD_CHECK(!state.response && state.reply == nullptr);
    if (auto* response = std::get_if<HttpResponse>(&result)) {
      state.response = std::move(*response);
    } else {
      state.reply = std::get<std::unique_ptr<AsyncReply>>(std::move(result));
      if (state.cancelled) cancel = state.reply.get();
      state.reply->SetNotify(state.notify);
    }
    notify = state.notify;
  }
  if (cancel != nullptr) cancel->Cancel();
  if (notify) notify();
}

bool DeferredReply::streaming() const {
  base::MutexLock lock(state_->mu);
  return state_->reply != nullptr && state_->reply->streaming();
}

void DeferredReply::SetNotify(std::function<void()> notify) {
  bool completed;
  {
    base::MutexLock lock(state_->mu);
    state_->notify = notify;
    if (state_->reply != nullptr) state_->reply->SetNotify(notify);
    completed = state_->response.has_value() || state_->reply != nullptr;
  }
  if (completed && notify) notify();
}

ReplyProgress DeferredReply::Poll() {
  AsyncReply* reply;
  {
    base::MutexLock lock(state_->mu);
    if (state_->response) {
      ReplyProgress progress;
      progress.response = *state_->response;
      progress.done = true;
      return progress;
    }
    reply = state_->reply.get();
  }
  // Set once and kept by the state, which this reply holds.
  return reply != nullptr ? reply->Poll() : ReplyProgress{};
}

void DeferredReply::Cancel() {
  AsyncReply* reply;
  {
    base::MutexLock lock(state_->mu);
    state_->cancelled = true;
    reply = state_->reply.get();
  }
  if (reply != nullptr) reply->Cancel();
}

}  // namespace kvd::server
