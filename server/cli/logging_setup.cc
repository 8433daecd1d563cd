#include "server/cli/logging_setup.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "spdlog/pattern_formatter.h"
#include "spdlog/spdlog.h"

namespace kvd::server {
namespace {

// One JSON object per line: {"time", "level", "logger", "message"}, for log pipelines.
class JsonLineFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& message, spdlog::memory_buf_t& out) override {
    const auto time = std::chrono::system_clock::to_time_t(message.time);
    const auto millis =
        std::chrono::duration_cast<std::chrono::milliseconds>(message.time.time_since_epoch())
            .count() %
        1000;
    std::tm utc{};
    gmtime_r(&time, &utc);
    char stamp[32];
    std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &utc);
    const nlohmann::json line = {
        {"time", absl::StrCat(stamp, ".", absl::Dec(millis, absl::kZeroPad3), "Z")},
        {"level", std::string(spdlog::level::to_string_view(message.level).data(),
                              spdlog::level::to_string_view(message.level).size())},
        {"logger", std::string(message.logger_name.data(), message.logger_name.size())},
        {"message", std::string(message.payload.data(), message.payload.size())}};
    const std::string text =
        line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    out.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonLineFormatter>();
  }
};

}  // namespace

absl::Status ConfigureLogging(const LoggingConfig& config) {
  const spdlog::level::level_enum level = spdlog::level::from_str(config.level);
  if (level == spdlog::level::off && config.level != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("logging.level: unknown level '", config.level, "'"));
  }
  spdlog::set_level(level);
  if (config.format == "json") {
    spdlog::set_formatter(std::make_unique<JsonLineFormatter>());
  } else if (config.format != "text") {
    return absl::InvalidArgumentError(
        absl::StrCat("logging.format: expected text or json, got '", config.format, "'"));
  }
  return absl::OkStatus();
}

}  // namespace kvd::server
