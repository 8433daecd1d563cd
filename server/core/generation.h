// A started request's output as the HTTP front ends read it: drains the scheduler's streams of
// its prompts into typed deltas (generation_output.h), sums their usage, keeps the first error,
// and when the reply ends (or is dropped: 499) stops listening, settles the tenant's permit and
// reports the outcome once. Each front end only serializes what this gives it.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "scheduler/request_handle.h"
#include "server/auth/tenants.h"
#include "server/core/completion_params.h"
#include "server/core/generation_output.h"

namespace kvd::server {

// How a reply ended, for request logs and metrics.
struct ReplyOutcome {
  int http_status = 200;  // the error's status for failures; 499 when the client went away
  scheduler::Usage usage;
  absl::Status status;
};

class Generation {
 public:
  // One handle per prompt, in order; choice p * n + c is prompt p's completion c, led by its
  // prompt's text when echoed. `on_done` runs once. Tool calls' ids start with `call_id_prefix`.
  Generation(CompletionParams params, std::vector<scheduler::RequestHandle> handles,
             std::unique_ptr<TenantPermit> permit, std::function<void(const ReplyOutcome&)> on_done,
             std::string_view call_id_prefix = "call_");
  ~Generation();
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  void SetNotify(std::function<void()> notify);
  void Cancel();

  // Appends the deltas that arrived since the last call. True once every stream has ended or
  // one failed (error()); the caller then ends its reply and calls Finish.
  bool Drain(std::vector<ChoiceDelta>& deltas);

  // The reply ended with `http_status`. Once.
  void Finish(int http_status, absl::Status status);

  const CompletionParams& params() const { return params_; }
  const GenerationOutput& output() const { return output_; }
  const scheduler::Usage& usage() const { return usage_; }
  const absl::Status& error() const { return error_; }
  bool finished() const { return finished_; }

 private:
  const CompletionParams params_;
  std::vector<scheduler::RequestHandle> handles_;
  std::unique_ptr<TenantPermit> permit_;
  std::function<void(const ReplyOutcome&)> on_done_;
  GenerationOutput output_;
  std::vector<bool> ended_;  // per prompt: its final event arrived
  scheduler::Usage usage_;
  absl::Status error_;
  bool finished_ = false;
};

}  // namespace kvd::server
