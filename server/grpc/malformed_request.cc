#include "server/grpc/malformed_request.h"

#include <google/protobuf/stubs/logging.h>

#include <atomic>
#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace kvd::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

class MalformedRequestInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit MalformedRequestInterceptor(const char* method) : method_(method) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    // A unary call's request is parsed before the handler runs; when it does not parse, gRPC
    // hands the interceptor no message and finishes the call with UNIMPLEMENTED.
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr) {
      unparsed_ = true;
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS) &&
        unparsed_ && methods->GetSendStatus().error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      methods->ModifySendStatus(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("the request is not a valid message for ", method_,
                       ": malformed protobuf, or a string field that is not UTF-8")));
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
  bool unparsed_ = false;
};

class MalformedRequestFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new MalformedRequestInterceptor(info->method());
  }
};

std::atomic<int64_t> last_protobuf_log_ms{-1000};
std::atomic<int64_t> suppressed_protobuf_logs{0};

void LogProtobufMessage(google::protobuf::LogLevel level, const char* filename, int line,
                        const std::string& message) {
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_protobuf_log_ms.load();
  if (now - last < 1000 || !last_protobuf_log_ms.compare_exchange_strong(last, now)) {
    ++suppressed_protobuf_logs;
    return;
  }
  const int64_t suppressed = suppressed_protobuf_logs.exchange(0);
  const std::string text =
      suppressed > 0 ? absl::StrCat(message, " (", suppressed, " more since the last message)")
                     : message;
  if (level >= google::protobuf::LOGLEVEL_FATAL) {
    spdlog::critical("protobuf {}:{}: {}", filename, line, text);
  } else {
    spdlog::warn("protobuf {}:{}: {}", filename, line, text);
  }
}

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MalformedRequestInterceptorFactory() {
  return std::make_unique<MalformedRequestFactory>();
}

void RouteProtobufLogs() { google::protobuf::SetLogHandler(&LogProtobufMessage); }

}  // namespace kvd::server
