// What a gRPC call whose request message does not parse (malformed protobuf, or a string field
// that is not UTF-8) answers: INVALID_ARGUMENT naming the method, where gRPC's own handlers say
// UNIMPLEMENTED; and libprotobuf's log lines, which a client could otherwise trigger one per
// message, rate-limited into the server's log.
#pragma once

#include <memory>

#include <grpcpp/support/server_interceptor.h>

namespace kvd::server {

// For ServerBuilder::experimental().SetInterceptorCreators.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MalformedRequestInterceptorFactory();

// Sends libprotobuf's messages to the server's log, at most one line a second. Call once, before
// serving.
void RouteProtobufLogs();

}  // namespace kvd::server
