// Positioned template errors, marked with a Status payload so each gets one position only.
#include "text/internal/jinja/errors.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace kvd::text::internal::jinja {

namespace {

constexpr char kFinalPayload[] = "kvd.engine.jinja/final";

absl::Status MarkFinal(absl::Status status) {
  status.SetPayload(kFinalPayload, absl::Cord("1"));
  return status;
}

}  // namespace

std::string PositionedMessage(int line, int column, std::string_view message) {
  return absl::StrCat(line, ":", column, ": ", std::string(message));
}

absl::Status RaisedError(std::string_view message) {
  return MarkFinal(absl::InvalidArgumentError(std::string(message)));
}

absl::Status AddPosition(int line, int column, absl::Status status) {
  if (status.ok() || status.GetPayload(kFinalPayload).has_value()) return status;
  return MarkFinal(
      absl::Status(status.code(), PositionedMessage(line, column, std::string(status.message()))));
}

}  // namespace kvd::text::internal::jinja
