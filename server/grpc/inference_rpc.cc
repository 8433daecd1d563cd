#include "server/grpc/inference_rpc.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/check.h"
#include "base/mutex.h"
#include "server/core/completion_start.h"
#include "server/core/generation_output.h"
#include "server/grpc/call_auth.h"
#include "server/grpc/generate_request.h"
#include "server/grpc/grpc_status.h"
#include "server/http/error_response.h"
#include "server/metrics/metrics_exporter.h"
#include "server/openai/openai_json.h"
#include "spdlog/spdlog.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

v1::FinishReason ToProto(scheduler::FinishReason reason) {
  switch (reason) {
    case scheduler::FinishReason::kStop:
      return v1::FINISH_REASON_STOP;
    case scheduler::FinishReason::kLength:
      return v1::FINISH_REASON_LENGTH;
    case scheduler::FinishReason::kAbort:
      return v1::FINISH_REASON_ABORT;
  }
  return v1::FINISH_REASON_UNSPECIFIED;
}

void ToProto(const scheduler::Usage& usage, v1::Usage& out) {
  out.set_prompt_tokens(usage.prompt_tokens);
  out.set_completion_tokens(usage.completion_tokens);
  out.set_cached_tokens(usage.cached_tokens);
}

std::string TokenText(const text::Tokenizer& tokenizer, int32_t id) {
  auto bytes = tokenizer.TokenBytes(id);
  return bytes.ok() ? *std::move(bytes) : std::string();
}

// A Generate refused before it started.
class RefusedGenerate final : public grpc::ServerWriteReactor<v1::GenerateResponse> {
 public:
  RefusedGenerate(grpc::CallbackServerContext* call, const absl::Status& status) {
    Finish(ToGrpcStatus(status, *call));
  }
  void OnDone() override { delete this; }
};

}  // namespace

class InferenceRpc::Registry {
 public:
  // False when the tenant already runs a request with this id.
  bool Add(const std::string& tenant, const std::string& id,
           std::vector<scheduler::RequestHandle>* handles) {
    base::MutexLock lock(mu_);
    return calls_.emplace(Key(tenant, id), handles).second;
  }
  void Remove(const std::string& tenant, const std::string& id) {
    base::MutexLock lock(mu_);
    calls_.erase(Key(tenant, id));
  }
  bool Cancel(const std::string& tenant, const std::string& id) {
    base::MutexLock lock(mu_);
    const auto it = calls_.find(Key(tenant, id));
    if (it == calls_.end()) return false;
    for (scheduler::RequestHandle& handle : *it->second) handle.Cancel();
    return true;
  }

 private:
  static std::string Key(const std::string& tenant, const std::string& id) {
    return tenant + "\n" + id;
  }
  base::Mutex mu_;
  // The handles live in their call, which removes itself before they go.
  std::map<std::string, std::vector<scheduler::RequestHandle>*> calls_;
};

namespace {

class GenerateCall;

// Runs the calls' Pump on a thread of its own: the scheduler's listener (on the scheduler
// thread) only queues the call, so building messages and writing sockets never delay a step.
class PumpQueue {
 public:
  PumpQueue() : thread_([this] { Run(); }) {}
  ~PumpQueue() {
    {
      base::MutexLock lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Post(std::weak_ptr<GenerateCall> call) {
    {
      base::MutexLock lock(mu_);
      queue_.push_back(std::move(call));
    }
    cv_.notify_one();
  }

 private:
  void Run();

  base::Mutex mu_;
  std::condition_variable cv_;
  std::deque<std::weak_ptr<GenerateCall>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// One running Generate: turns the scheduler's events into messages and writes them one at a
// time. Shared with the scheduler's listeners, which hold it weakly and may fire after the call
// is done.
class GenerateCall final : public grpc::ServerWriteReactor<v1::GenerateResponse>,
                           public std::enable_shared_from_this<GenerateCall> {
 public:
  GenerateCall(ServingContext& context, grpc::CallbackServerContext* call,
               std::shared_ptr<InferenceRpc::Registry> registry, std::shared_ptr<PumpQueue> pumps,
               std::string tenant, std::string request_id)
      : context_(context),
        call_(call),
        pumps_(std::move(pumps)),
        registry_(std::move(registry)),
        tenant_(std::move(tenant)),
        request_id_(std::move(request_id)),
        start_(absl::Now()) {}

  // Keeps the call alive until OnDone, through a start that may come later (a document read
  // off gRPC's threads).
  void Hold() {
    base::MutexLock lock(mu_);
    self_ = shared_from_this();
  }

  // The start of the call's completion, or its refusal: pumps it, or finishes the call with
  // the refusal's status. Once, after Hold; thread: any.
  void Started(CompletionStart&& started) {
    if (auto* refusal = std::get_if<CompletionRefusal>(&started)) {
      Refuse(refusal->status, refusal->rejection);
      return;
    }
    // Only this thread touches completion_ until Begin publishes begun_ (and Abort, once the
    // registry holds its handles).
    completion_ = std::get<StartedCompletion>(std::move(started));
    if (!request_id_.empty() && !registry_->Add(tenant_, request_id_, &completion_.handles)) {
      CancelAll();
      completion_.permit->Settle(0);
      Refuse(WithParam(absl::AlreadyExistsError(absl::StrCat("a request with request_id '",
                                                             request_id_, "' is already running")),
                       "request_id"),
             std::nullopt);
      return;
    }
    Begin();
  }

  // Drains the events, starts the next write, or finishes the call once everything is out.
  // Thread: the pump queue's or gRPC's.
  void Pump() {
    pump_posted_.store(false);
    base::MutexLock lock(mu_);
    PumpLocked();
  }

  void OnWriteDone(bool ok) override {
    {
      base::MutexLock lock(mu_);
      write_in_flight_ = false;
      if (!ok) client_gone_ = true;
    }
    if (!ok) CancelAll();
    Pump();
  }

  // The client cancelled or its deadline passed: the sequences stop within one step (or, before
  // they started, as soon as they do).
  void OnCancel() override {
    bool begun;
    {
      base::MutexLock lock(mu_);
      client_gone_ = true;
      begun = begun_;
    }
    if (!begun) return;
    CancelAll();
    Pump();
  }

  void OnDone() override {
    std::shared_ptr<GenerateCall> self;
    {
      base::MutexLock lock(mu_);
      if (!begun_) {
        self.swap(self_);  // refused: counted when it was; released after the lock
        return;
      }
    }
    if (!request_id_.empty()) registry_->Remove(tenant_, request_id_);
    for (scheduler::RequestHandle& handle : completion_.handles) handle.SetListener(nullptr);
    scheduler::Usage usage;
    absl::Status status;
    bool client_gone = false;
    {
      base::MutexLock lock(mu_);
      usage = usage_;
      status = status_;
      client_gone = client_gone_;
    }
    if (completion_.permit) completion_.permit->Settle(usage.total_tokens());
    context_.replies_in_flight.fetch_sub(1);
    if (context_.metrics != nullptr) {
      // A client that cancelled or let its deadline pass counts as HTTP counts one that left.
      const int http_status = client_gone ? 499 : status.ok() ? 200 : HttpStatusFor(status);
      context_.metrics->RecordRequest(tenant_, http_status, Protocol::kGrpc);
    }
    if (context_.log_requests) {
      spdlog::info(
          "gRPC Generate tenant={} status={} prompt_tokens={} completion_tokens={} "
          "{:.3f}s{}",
          tenant_, absl::StatusCodeToString(status.code()), usage.prompt_tokens,
          usage.completion_tokens, absl::ToDoubleSeconds(absl::Now() - start_),
          status.ok() ? "" : " " + std::string(status.message()));
    }
    {
      base::MutexLock lock(mu_);
      done_ = true;
      self.swap(self_);  // released after the lock: the last reference may be this one
    }
  }

 private:
  // Runs the completion: its events become the call's messages.
  void Begin() {
    const auto& document = completion_.params.request.document;
    context_.replies_in_flight.fetch_add(1);
    std::weak_ptr<GenerateCall> weak = weak_from_this();
    bool client_gone;
    {
      base::MutexLock lock(mu_);
      begun_ = true;
      usage_.cached_tokens = document ? document->payload->original_length : 0;
      usage_.prompt_tokens =
          static_cast<int32_t>(completion_.params.prompts.front().size()) + usage_.cached_tokens;
      client_gone = client_gone_;
    }
    for (scheduler::RequestHandle& handle : completion_.handles) {
      handle.SetListener([weak, pumps = pumps_] {
        auto call = weak.lock();
        // One pending pump per call is enough: it drains every event there is.
        if (call != nullptr && !call->pump_posted_.exchange(true)) pumps->Post(weak);
      });
    }
    if (client_gone) CancelAll();  // it left while the start was pending
    Pump();
  }

  // Finishes a call that never began with `status`, counted as `rejection`.
  void Refuse(const absl::Status& status, std::optional<RejectionReason> rejection) {
    if (context_.metrics != nullptr) {
      context_.metrics->RecordRequest(tenant_, HttpStatusFor(status), Protocol::kGrpc);
      if (rejection) context_.metrics->RecordRejection(tenant_, *rejection);
    }
    Finish(ToGrpcStatus(status, *call_));
  }

  void CancelAll() {
    for (scheduler::RequestHandle& handle : completion_.handles) handle.Cancel();
  }

  void PumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (done_ || finished_) return;
    scheduler::RequestHandle& handle = completion_.handles.front();
    while (!ended_) {
      std::optional<scheduler::Event> event = handle.Next(absl::ZeroDuration());
      if (!event) break;
      Convert(*std::move(event));
    }
    if (write_in_flight_) return;
    if (!queue_.empty() && !client_gone_) {
      writing_ = std::move(queue_.front());
      queue_.pop_front();
      write_in_flight_ = true;
      wrote_any_ = true;
      StartWrite(&writing_);
      return;
    }
    if (ended_ || client_gone_) {
      finished_ = true;
      if (client_gone_ && status_.ok()) {
        status_ = absl::CancelledError("the client cancelled the call or its deadline passed");
      }
      // A failure before any output is the call's status; after it, an in-band error.
      Finish(refused_before_output_ ? ToGrpcStatus(status_, *call_) : grpc::Status::OK);
    }
  }

  // Thread: any.
  void Convert(scheduler::Event event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const text::Tokenizer& tokenizer = *context_.model.tokenizer;
    if (event.final) {
      ended_ = true;
      usage_ = event.usage;
      status_ = event.status;
      if (!event.status.ok()) {
        if (!wrote_any_ && queue_.empty()) {
          refused_before_output_ = true;  // nothing sent: the call's status says it
        } else {
          v1::GenerateResponse response;
          response.mutable_error()->set_code(static_cast<int>(event.status.code()));
          response.mutable_error()->set_message(std::string(event.status.message()));
          queue_.push_back(std::move(response));
        }
        return;
      }
      if (pending_completion_) {
        ToProto(usage_, *pending_completion_->mutable_completion()->mutable_usage());
        queue_.push_back(*std::move(pending_completion_));
        pending_completion_.reset();
      }
      return;
    }
    const ChoiceDelta delta = Output().Take(static_cast<size_t>(event.index), event);
    if (!delta.token_ids.empty() || !delta.content.empty() || !delta.calls.empty()) {
      usage_.completion_tokens += static_cast<int32_t>(delta.token_ids.size());
      v1::GenerateResponse response;
      v1::Chunk& chunk = *response.mutable_chunk();
      chunk.set_index(event.index);
      chunk.mutable_token_ids()->Assign(delta.token_ids.begin(), delta.token_ids.end());
      chunk.set_text(delta.content);
      for (const ToolCallDelta& piece : delta.calls) {
        v1::ToolCallDelta& call = *chunk.add_tool_calls();
        call.set_index(piece.index);
        call.set_id(piece.id);
        call.set_name(piece.name);
        call.set_arguments(piece.arguments);
      }
      for (const engine::SampledToken& sampled : delta.logprobs) {
        v1::TokenLogprob& logprob = *chunk.add_logprobs();
        logprob.set_token_id(sampled.token);
        logprob.set_token(TokenText(tokenizer, sampled.token));
        logprob.set_logprob(sampled.logprob);
        for (const engine::TokenLogprob& top : sampled.top_logprobs) {
          v1::TopLogprob& alternative = *logprob.add_top();
          alternative.set_token_id(top.token);
          alternative.set_token(TokenText(tokenizer, top.token));
          alternative.set_logprob(top.logprob);
        }
      }
      ToProto(usage_, *chunk.mutable_usage());
      queue_.push_back(std::move(response));
    }
    if (delta.finish) {
      // The last choice to finish carries the final usage: hold each back until the next.
      if (pending_completion_) queue_.push_back(*std::move(pending_completion_));
      pending_completion_.emplace();
      v1::Completion& completion = *pending_completion_->mutable_completion();
      completion.set_index(event.index);
      completion.set_finish_reason(ToProto(*delta.finish));
      completion.set_stop(delta.stop_string);
      const std::vector<ToolCallOutput>& calls = Output().choice(delta.choice).calls;
      // Calls the model chose to make end its turn; a named choice is the caller's.
      if (!calls.empty() && *delta.finish == scheduler::FinishReason::kStop &&
          !completion_.params.named_tool_choice) {
        completion.set_finish_reason(v1::FINISH_REASON_TOOL_CALLS);
      }
      for (const ToolCallOutput& call : calls) {
        v1::ToolCall& out = *completion.add_tool_calls();
        out.set_id(call.id);
        out.set_name(call.name);
        out.set_arguments(call.arguments);
      }
    }
  }

  // The choices' output, made on the first event (the request's n and tools are known by then).
  GenerationOutput& Output() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!output_) {
      output_.emplace(static_cast<size_t>(completion_.params.request.n),
                      completion_.params.tool_syntax);
    }
    return *output_;
  }

  ServingContext& context_;
  grpc::CallbackServerContext* const call_;
  const std::shared_ptr<PumpQueue> pumps_;
  std::atomic<bool> pump_posted_ = false;
  const std::shared_ptr<InferenceRpc::Registry> registry_;
  const std::string tenant_;
  const std::string request_id_;
  StartedCompletion completion_;  // set once, by Begin, before begun_
  const absl::Time start_;

  base::Mutex mu_;
  std::shared_ptr<GenerateCall> self_ ABSL_GUARDED_BY(mu_);  // from Hold until OnDone
  bool begun_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<v1::GenerateResponse> queue_ ABSL_GUARDED_BY(mu_);
  std::optional<v1::GenerateResponse> pending_completion_ ABSL_GUARDED_BY(mu_);
  std::optional<GenerationOutput> output_ ABSL_GUARDED_BY(mu_);
  v1::GenerateResponse writing_ ABSL_GUARDED_BY(mu_);
  scheduler::Usage usage_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool wrote_any_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;  // the final event came
  bool refused_before_output_ ABSL_GUARDED_BY(mu_) = false;
  bool client_gone_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // Finish was called
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

void PumpQueue::Run() {
  while (true) {
    std::deque<std::weak_ptr<GenerateCall>> batch;
    {
      base::MutexLock lock(mu_);
      while (!stopping_ && queue_.empty()) lock.Wait(cv_);
      if (queue_.empty()) return;
      batch.swap(queue_);
    }
    for (const auto& weak : batch) {
      if (auto call = weak.lock()) call->Pump();
    }
  }
}

}  // namespace

InferenceRpc::InferenceRpc(ServingContext& context)
    : context_(context),
      registry_(std::make_shared<Registry>()),
      pumps_(std::make_shared<PumpQueue>()) {}

InferenceRpc::~InferenceRpc() = default;

grpc::ServerWriteReactor<v1::GenerateResponse>* InferenceRpc::Generate(
    grpc::CallbackServerContext* call, const v1::GenerateRequest* request) {
  auto refuse = [&](const std::string& tenant, const absl::Status& status,
                    std::optional<RejectionReason> rejection) {
    if (context_.metrics != nullptr) {
      context_.metrics->RecordRequest(tenant, HttpStatusFor(status), Protocol::kGrpc);
      if (rejection) context_.metrics->RecordRejection(tenant, *rejection);
    }
    return new RefusedGenerate(call, status);
  };
  auto tenant = AuthenticateCall(context_, *call);
  if (!tenant.ok()) return refuse("-", tenant.status(), RejectionFor(tenant.status()));
  auto completion_request = ReadGenerateRequest(*request);
  if (!completion_request.ok()) {
    return refuse((*tenant)->id(), completion_request.status(), std::nullopt);
  }
  auto generate = std::make_shared<GenerateCall>(context_, call, registry_,
                                                 std::static_pointer_cast<PumpQueue>(pumps_),
                                                 (*tenant)->id(), request->request_id());
  generate->Hold();
  // A named document is read, and a constraint compiled, off gRPC's threads; the call starts
  // when they are. A drain waits for the start too; a started call counts itself before this
  // lets go.
  std::atomic<int32_t>* in_flight = &context_.replies_in_flight;
  in_flight->fetch_add(1);
  StartCompletion(context_, *tenant, *std::move(completion_request),
                  [generate, in_flight](CompletionStart started) {
                    generate->Started(std::move(started));
                    in_flight->fetch_sub(1);
                  });
  return generate.get();
}

grpc::ServerUnaryReactor* InferenceRpc::Abort(grpc::CallbackServerContext* call,
                                              const v1::AbortRequest* request,
                                              v1::AbortResponse* response) {
  auto tenant = AuthenticateCall(context_, *call);
  if (!tenant.ok()) return FinishUnary(call, tenant.status());
  if (request->request_id().empty()) {
    return FinishUnary(
        call, WithParam(absl::InvalidArgumentError("request_id is required"), "request_id"));
  }
  response->set_aborted(registry_->Cancel((*tenant)->id(), request->request_id()));
  return FinishUnary(call, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceRpc::Tokenize(grpc::CallbackServerContext* call,
                                                 const v1::TokenizeRequest* request,
                                                 v1::TokenizeResponse* response) {
  auto tenant = AuthenticateCall(context_, *call);
  if (!tenant.ok()) return FinishUnary(call, tenant.status());
  // The model is optional here; one named must be the one served, as over HTTP.
  if (!request->model().empty()) {
    if (absl::Status model = CheckModelName(request->model(), context_.model); !model.ok()) {
      return FinishUnary(call, model);
    }
  }
  std::vector<int32_t> tokens;
  if (request->has_messages()) {
    v1::GenerateRequest chat;
    chat.set_model(context_.model.name);
    *chat.mutable_messages() = request->messages();
    if (request->has_add_generation_prompt()) {
      chat.set_add_generation_prompt(request->add_generation_prompt());
    }
    auto chat_request = ReadGenerateRequest(chat);
    if (!chat_request.ok()) return FinishUnary(call, chat_request.status());
    auto params = ResolveCompletionParams(*chat_request, context_.model);
    if (!params.ok()) return FinishUnary(call, params.status());
    tokens = params->prompts.front();
  } else {
    tokens = context_.model.tokenizer->Encode(request->prompt(), request->has_add_special_tokens()
                                                                     ? request->add_special_tokens()
                                                                     : true);
  }
  response->mutable_tokens()->Assign(tokens.begin(), tokens.end());
  response->set_count(static_cast<int32_t>(tokens.size()));
  response->set_max_model_len(context_.max_model_len());
  return FinishUnary(call, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceRpc::Detokenize(grpc::CallbackServerContext* call,
                                                   const v1::DetokenizeRequest* request,
                                                   v1::DetokenizeResponse* response) {
  auto tenant = AuthenticateCall(context_, *call);
  if (!tenant.ok()) return FinishUnary(call, tenant.status());
  if (!request->model().empty()) {
    if (absl::Status model = CheckModelName(request->model(), context_.model); !model.ok()) {
      return FinishUnary(call, model);
    }
  }
  std::vector<int32_t> ids(request->tokens().begin(), request->tokens().end());
  for (int32_t id : ids) {
    if (id < 0 || id >= context_.model.tokenizer->vocab_size()) {
      return FinishUnary(call, WithParam(absl::InvalidArgumentError(absl::StrCat(
                                             "token id ", id, " is outside the vocabulary")),
                                         "tokens"));
    }
  }
  auto text = context_.model.tokenizer->Decode(ids);
  if (!text.ok()) return FinishUnary(call, WithParam(text.status(), "tokens"));
  response->set_prompt(*text);
  return FinishUnary(call, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceRpc::ListModels(grpc::CallbackServerContext* call,
                                                   const v1::ListModelsRequest* /*request*/,
                                                   v1::ListModelsResponse* response) {
  auto tenant = AuthenticateCall(context_, *call);
  if (!tenant.ok()) return FinishUnary(call, tenant.status());
  v1::Model& model = *response->add_models();
  model.set_id(context_.model.name);
  model.set_max_model_len(context_.max_model_len());
  model.set_owned_by("kvd");
  return FinishUnary(call, absl::OkStatus());
}

}  // namespace kvd::server
