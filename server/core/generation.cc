#include "server/core/generation.h"

#include <utility>

#include "absl/algorithm/container.h"

namespace kvd::server {

Generation::Generation(CompletionParams params, std::vector<scheduler::RequestHandle> handles,
                       std::unique_ptr<TenantPermit> permit,
                       std::function<void(const ReplyOutcome&)> on_done,
                       std::string_view call_id_prefix)
    : params_(std::move(params)),
      handles_(std::move(handles)),
      permit_(std::move(permit)),
      on_done_(std::move(on_done)),
      output_(handles_.size() * static_cast<size_t>(params_.request.n), params_.tool_syntax,
              call_id_prefix),
      ended_(handles_.size(), false) {
  if (!params_.echo) return;
  for (size_t choice = 0; choice < output_.size(); ++choice) {
    output_.Prepend(choice, params_.prompt_texts[choice / params_.request.n]);
  }
}

Generation::~Generation() {
  if (!finished_) Finish(499, absl::CancelledError("the client closed the connection"));
}

void Generation::SetNotify(std::function<void()> notify) {
  for (scheduler::RequestHandle& handle : handles_) handle.SetListener(notify);
}

void Generation::Cancel() {
  for (scheduler::RequestHandle& handle : handles_) handle.Cancel();
}

bool Generation::Drain(std::vector<ChoiceDelta>& deltas) {
  for (size_t prompt = 0; prompt < handles_.size() && error_.ok(); ++prompt) {
    while (!ended_[prompt]) {
      std::optional<scheduler::Event> event = handles_[prompt].Next(absl::ZeroDuration());
      if (!event) break;
      if (event->final) {
        ended_[prompt] = true;
        usage_.prompt_tokens += event->usage.prompt_tokens;
        usage_.cached_tokens += event->usage.cached_tokens;
        usage_.completion_tokens += event->usage.completion_tokens;
        if (!event->status.ok()) error_ = event->status;
        break;
      }
      const size_t choice =
          prompt * static_cast<size_t>(params_.request.n) + static_cast<size_t>(event->index);
      deltas.push_back(output_.Take(choice, *event));
    }
  }
  return !error_.ok() || absl::c_all_of(ended_, [](bool ended) { return ended; });
}

void Generation::Finish(int http_status, absl::Status status) {
  finished_ = true;
  if (!status.ok()) Cancel();
  for (scheduler::RequestHandle& handle : handles_) handle.SetListener(nullptr);
  if (permit_) permit_->Settle(usage_.total_tokens());
  if (on_done_) on_done_({http_status, usage_, std::move(status)});
}

}  // namespace kvd::server
