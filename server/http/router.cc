#include "server/http/router.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "server/http/error_response.h"

namespace kvd::server {
namespace {

std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> segments;
  for (absl::string_view segment : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    segments.emplace_back(segment);
  }
  return segments;
}

}  // namespace

const std::string& HttpRequest::header(const std::string& lower_case_name) const {
  static const std::string kEmpty;
  const auto it = headers.find(lower_case_name);
  return it == headers.end() ? kEmpty : it->second;
}

void Router::Add(std::string method, std::string pattern, Handler handler) {
  routes_.push_back({std::move(method), Segments(pattern), std::move(handler)});
}

bool Router::Match(const Route& route, const std::vector<std::string>& segments,
                   std::map<std::string, std::string>& params) {
  if (route.segments.size() != segments.size()) return false;
  std::map<std::string, std::string> found;
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string& expected = route.segments[i];
    if (expected.size() > 2 && expected.front() == '{' && expected.back() == '}') {
      found[expected.substr(1, expected.size() - 2)] = segments[i];
    } else if (expected != segments[i]) {
      return false;
    }
  }
  params = std::move(found);
  return true;
}

HandlerResult Router::Dispatch(HttpRequest& request) const {
  const std::vector<std::string> segments = Segments(request.path);
  std::vector<std::string> allowed;  // the path's methods
  for (const Route& route : routes_) {
    std::map<std::string, std::string> params;
    if (!Match(route, segments, params)) continue;
    allowed.push_back(route.method);
    if (route.method != request.method) continue;
    request.path_params = std::move(params);
    return route.handler(request);
  }
  if (!allowed.empty()) {
    HttpResponse response = ErrorResponse(absl::InvalidArgumentError(
        absl::StrCat("method ", request.method, " is not allowed on ", request.path)));
    response.status = 405;
    response.headers.emplace_back("Allow", absl::StrJoin(allowed, ", "));
    return response;
  }
  return ErrorResponse(WithErrorCode(
      absl::NotFoundError(absl::StrCat("no route for ", request.method, " ", request.path)),
      "unknown_url"));
}

}  // namespace kvd::server
