#include "server/cli/hash_key_command.h"

#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "base/sha256.h"
#include "server/cli/exit_status.h"
#include "server/config/api_key.h"

namespace kvd::server {

void AddHashKeyCommand(CLI::App& app) {
  auto key = std::make_shared<std::string>();
  CLI::App* command = app.add_subcommand(
      "hash-key",
      "Print the SHA-256 digest of an API key (read from stdin, trailing newline dropped) for "
      "a tenant's key_sha256");
  command->add_option("--key", *key, "The key (visible in the process list: prefer stdin)");
  command->callback([key] {
    std::string value = *key;
    if (value.empty()) {
      value.assign(std::istreambuf_iterator<char>(std::cin), {});
      while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.pop_back();
    }
    if (value.empty()) {
      ExitWith(absl::InvalidArgumentError("no key given: pipe it to stdin or pass --key"));
    }
    std::cout << base::Sha256Hex(value) << "\n";
    ExitWith(absl::OkStatus());
  });
}

}  // namespace kvd::server
