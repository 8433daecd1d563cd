// Maps a method and a path to a handler. Paths are literal segments or `{name}` placeholders
// (one segment each), e.g. "/v1/models/{id}".
#pragma once

#include <string>
#include <vector>

#include "server/http/http_message.h"

namespace kvd::server {

class Router {
 public:
  void Add(std::string method, std::string pattern, Handler handler);

  // The handler for `request` with its path_params filled; or, when none matches, a 404
  // (unknown path) or 405 (known path, other method) with an OpenAI-style error body.
  HandlerResult Dispatch(HttpRequest& request) const;

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;
    Handler handler;
  };
  static bool Match(const Route& route, const std::vector<std::string>& segments,
                    std::map<std::string, std::string>& params);

  std::vector<Route> routes_;
};

}  // namespace kvd::server
