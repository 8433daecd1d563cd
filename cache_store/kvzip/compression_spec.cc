#include "cache_store/kvzip/compression_spec.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/enum_names.h"

namespace kvd::cache_store {

namespace {

constexpr auto kCompressionMethodNames = base::MakeEnumNames<CompressionMethod>({
    {CompressionMethod::kNone, "none"},
    {CompressionMethod::kKvzip, "kvzip"},
    {CompressionMethod::kKvzipHeads, "kvzip_heads"},
    {CompressionMethod::kSnapKv, "snapkv"},
    {CompressionMethod::kH2O, "h2o"},
    {CompressionMethod::kStreaming, "streaming"},
});

}  // namespace

const char* CompressionMethodName(CompressionMethod method) {
  return kCompressionMethodNames.Name(method).data();
}

absl::StatusOr<CompressionMethod> ParseCompressionMethod(std::string_view name) {
  return kCompressionMethodNames.Parse(name, "compression method");
}

const char* CompressionMethodVersion(CompressionMethod method) {
  switch (method) {
    case CompressionMethod::kNone:
      return "none/1";
    case CompressionMethod::kKvzip:
      return "kvzip/1 chunk=2000 lead-in=8 softmax=f32 reduce=max(queries,group) budget=joint";
    case CompressionMethod::kKvzipHeads:
      return "kvzip_heads/1 importance=mean(samples,max(positions)) windows=1/8 "
             "rest=by-importance recent-first";
    case CompressionMethod::kSnapKv:
      return "snapkv/1 window=query softmax=f32 reduce=sum(queries,group) pool=max7 "
             "budget=per-head";
    case CompressionMethod::kH2O:
      return "h2o/1 softmax=f32 reduce=sum(prefill,group) recent=half budget=per-head";
    case CompressionMethod::kStreaming:
      return "streaming/1 sinks=prefix recent=budget budget=per-head";
  }
  return "unknown";
}

absl::Status CompressionSpec::Validate() const {
  if (!(ratio > 0.0 && ratio <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compression ratio must be in (0, 1], the fraction of entries kept; got ", ratio));
  }
  if (budget_tokens && *budget_tokens < 1) {
    return absl::InvalidArgumentError("compression budget_tokens must be at least 1");
  }
  if (method == CompressionMethod::kNone && (ratio < 1.0 || budget_tokens)) {
    return absl::InvalidArgumentError("compression method none keeps everything: ratio 1 only");
  }
  if (method == CompressionMethod::kSnapKv && query.empty()) {
    return absl::InvalidArgumentError(
        "compression method snapkv needs a query: the question whose attention selects entries");
  }
  if (method != CompressionMethod::kSnapKv && !query.empty()) {
    return absl::InvalidArgumentError("compression query is used by method snapkv only");
  }
  if (merge && method != CompressionMethod::kKvzip && method != CompressionMethod::kKvzipHeads) {
    return absl::InvalidArgumentError(
        "compression merge folds dropped entries by their KVzip scores: methods kvzip and "
        "kvzip_heads only");
  }
  return absl::OkStatus();
}

int64_t CompressionSpec::KeptEntries(int64_t document_entries, int64_t entries_per_token) const {
  const double wanted = budget_tokens ? static_cast<double>(*budget_tokens) * entries_per_token
                                      : ratio * static_cast<double>(document_entries);
  return std::clamp<int64_t>(std::llround(wanted), std::min<int64_t>(1, document_entries),
                             document_entries);
}

}  // namespace kvd::cache_store
