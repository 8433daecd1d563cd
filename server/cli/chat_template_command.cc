#include "server/cli/chat_template_command.h"

#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "server/cli/exit_status.h"
#include "text/chat_template.h"

namespace kvd::server {
namespace {

// Ordered, so tools and messages keep the client's key order as Python and JavaScript do.
using OrderedJson = nlohmann::ordered_json;

struct Options {
  std::string model_dir;
  bool no_generation_prompt = false;
  bool jsonl = false;
};

// One request: an array of messages, or an object with "messages", an optional
// "add_generation_prompt" and any further template variables ("tools", "enable_thinking").
absl::StatusOr<std::string> RenderRequest(const text::ChatTemplate& chat_template,
                                          const std::string& text, bool add_generation_prompt) {
  OrderedJson request = OrderedJson::parse(text, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) return absl::InvalidArgumentError("input is not valid JSON");
  if (request.is_array()) return chat_template.Render(request, add_generation_prompt);
  if (!request.is_object()) {
    return absl::InvalidArgumentError("input must be a JSON array of messages or an object");
  }
  const auto messages = request.find("messages");
  if (messages == request.end() || !messages->is_array()) {
    return absl::InvalidArgumentError("\"messages\" must be an array");
  }
  OrderedJson extra = OrderedJson::object();
  for (auto it = request.begin(); it != request.end(); ++it) {
    if (it.key() == "messages") continue;
    if (it.key() == "add_generation_prompt") {
      if (!it->is_boolean()) {
        return absl::InvalidArgumentError("\"add_generation_prompt\" must be a boolean");
      }
      add_generation_prompt = it->get<bool>();
      continue;
    }
    extra[it.key()] = it.value();
  }
  return chat_template.Render(*messages, add_generation_prompt, extra);
}

// Each input line is one request; each output line is its rendering as a JSON string, or
// {"error": message}, so one process can render a whole corpus.
void RenderLines(const text::ChatTemplate& chat_template, bool add_generation_prompt) {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    absl::StatusOr<std::string> rendered =
        RenderRequest(chat_template, line, add_generation_prompt);
    const OrderedJson reply =
        rendered.ok() ? OrderedJson(*rendered)
                      : OrderedJson{{"error", std::string(rendered.status().message())}};
    std::cout << reply.dump(-1, ' ', /*ensure_ascii=*/false,
                            nlohmann::json::error_handler_t::replace)
              << '\n';
  }
  std::cout.flush();
}

absl::Status Run(const Options& options) {
  absl::StatusOr<std::unique_ptr<text::ChatTemplate>> chat_template =
      text::ChatTemplate::FromTokenizerConfig(options.model_dir);
  // A missing or broken template is a problem with the argument, whatever the cause.
  if (!chat_template.ok()) {
    return absl::InvalidArgumentError(std::string(chat_template.status().message()));
  }
  const bool add_generation_prompt = !options.no_generation_prompt;
  if (options.jsonl) {
    RenderLines(**chat_template, add_generation_prompt);
    return absl::OkStatus();
  }
  const std::string input(std::istreambuf_iterator<char>(std::cin), {});
  absl::StatusOr<std::string> rendered =
      RenderRequest(**chat_template, input, add_generation_prompt);
  if (!rendered.ok()) return rendered.status();
  std::cout << *rendered;
  return absl::OkStatus();
}

}  // namespace

void AddChatTemplateCommand(CLI::App& app) {
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "chat-template",
      "Render the chat messages on stdin (a JSON array, or an object with \"messages\" and "
      "template variables) with a model's chat template and print the prompt");
  command->add_option("--model", options->model_dir, "The model directory")->required();
  command->add_flag("--no-generation-prompt", options->no_generation_prompt,
                    "Do not open an assistant turn at the end (add_generation_prompt=false)");
  command->add_flag("--jsonl", options->jsonl,
                    "Read one request per line; print each rendering as a JSON string, or "
                    "{\"error\": ...}, one per line");
  command->callback([options] { ExitWith(Run(*options)); });
}

}  // namespace kvd::server
