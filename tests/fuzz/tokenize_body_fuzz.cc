// Fuzzes the bodies of POST /tokenize and /detokenize through the routes `kvd serve` installs
// (AddApiRoutes), with the bundled model and authentication off.
#include <memory>
#include <variant>
#include <vector>

#include "fuzz_support.h"
#include "scheduler/clock.h"
#include "server/auth/tenants.h"
#include "server/core/serving_context.h"
#include "server/http/router.h"
#include "server/openai/openai_routes.h"

namespace {

// The API's routes over the bundled model, with no scheduler (neither route uses one).
struct Api {
  Api()
      : tenants(std::make_shared<const kvd::server::TenantRegistry>(
            std::vector<kvd::server::TenantConfig>{}, kvd::scheduler::Clock::System())) {
    const kvd::fuzz::BundledModel& bundled = kvd::fuzz::Bundled();
    context.model = {.config = &bundled.config,
                     .tokenizer = bundled.tokenizer.get(),
                     .chat_template = bundled.chat_template.get(),
                     .name = "kvd-tiny"};
    context.tenants = &tenants;
    context.log_requests = false;
    context.ready = true;
    kvd::server::AddApiRoutes(router, context);
  }

  kvd::server::TenantDirectory tenants;
  kvd::server::ServingContext context;
  kvd::server::Router router;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Api* api = new Api;
  for (const char* path : {"/tokenize", "/detokenize"}) {
    kvd::server::HttpRequest request{.method = "POST",
                                     .path = path,
                                     .headers = {{"content-type", "application/json"}},
                                     .body = std::string(kvd::fuzz::AsText(data, size))};
    kvd::server::HandlerResult result = api->router.Dispatch(request);
    kvd::fuzz::Require(std::holds_alternative<kvd::server::HttpResponse>(result),
                       "tokenize answered asynchronously");
    const int status = std::get<kvd::server::HttpResponse>(result).status;
    kvd::fuzz::Require(status == 200 || status == 400, "tokenize answered neither 200 nor 400");
  }
  return 0;
}
