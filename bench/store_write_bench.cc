#include "bench/store_write_bench.h"

#include <algorithm>
#include <random>
#include <string>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/statistics.h"
#include "cache_store/store/document_store.h"
#include "cache_store/store/payload_codec.h"

namespace kvd::bench {
namespace {

constexpr int32_t kPrefixTokens = 5;  // the chat template's tokens before the document

// A compressed cache of `document_tokens` with the model's geometry: the prefix and `ratio` of
// the document kept per head, seeded random keys, values and scores.
cache_store::DocumentPayload RandomPayload(const engine::ModelConfig& model,
                                           int32_t document_tokens, double ratio, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  cache_store::DocumentPayload payload;
  payload.num_layers = model.num_layers;
  payload.num_kv_heads = model.num_kv_heads;
  payload.head_dim = model.head_dim;
  payload.original_length = kPrefixTokens + document_tokens;
  payload.prefix_text = std::string(static_cast<size_t>(document_tokens) * 4, 'x');
  for (int32_t i = 0; i < payload.original_length; ++i) payload.prefix_token_ids.push_back(i);
  const int32_t kept = kPrefixTokens + static_cast<int32_t>(ratio * document_tokens);
  std::vector<int32_t> positions(document_tokens);
  for (int32_t i = 0; i < document_tokens; ++i) positions[i] = kPrefixTokens + i;
  payload.heads.resize(static_cast<size_t>(model.num_layers) * model.num_kv_heads);
  for (cache_store::HeadKv& head : payload.heads) {
    std::shuffle(positions.begin(), positions.end(), random);
    for (int32_t p = 0; p < kPrefixTokens; ++p) head.positions.push_back(p);
    head.positions.insert(head.positions.end(), positions.begin(),
                          positions.begin() + (kept - kPrefixTokens));
    std::sort(head.positions.begin(), head.positions.end());
    head.log_votes.assign(kept, 0.0f);
    for (int64_t e = 0; e < int64_t{kept} * model.head_dim; ++e) {
      head.keys.push_back(uniform(random));
      head.values.push_back(uniform(random));
    }
    for (int32_t p = 0; p < payload.original_length; ++p) head.scores.push_back(uniform(random));
  }
  return payload;
}

cache_store::DocumentMeta Meta(std::string id, int32_t document_tokens, double ratio) {
  cache_store::DocumentMeta meta;
  meta.id = std::move(id);
  meta.tenant = "bench";
  meta.status = cache_store::DocumentStatus::kProcessing;
  meta.created = absl::Now();
  meta.token_count = kPrefixTokens + document_tokens;
  meta.identity.method = "kvzip";
  meta.identity.ratio = ratio;
  return meta;
}

struct Round {
  std::vector<double> upload_ms;
  double seconds = 0.0;
};

// One round on a fresh store: `uploads` uploads of `payload`, each timed.
absl::StatusOr<Round> RunRound(const std::filesystem::path& dir, bool sync_writes,
                               const cache_store::DocumentPayload& payload, int32_t document_tokens,
                               const StoreWriteBenchOptions& options) {
  std::error_code error;
  std::filesystem::remove_all(dir, error);
  Round round;
  {
    auto store = cache_store::DocumentStore::Open(dir, {.sync_writes = sync_writes});
    if (!store.ok()) return store.status();
    const absl::Time start = absl::Now();
    for (int32_t i = 0; i < options.uploads; ++i) {
      cache_store::DocumentMeta meta =
          Meta(absl::StrCat("doc-", i), document_tokens, options.ratio);
      const absl::Time upload = absl::Now();
      if (auto status = (*store)->PutMeta(meta); !status.ok()) return status;
      meta.status = cache_store::DocumentStatus::kReady;
      if (auto status = (*store)->Put(meta, payload); !status.ok()) return status;
      round.upload_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - upload));
    }
    round.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  }
  std::filesystem::remove_all(dir, error);
  return round;
}

}  // namespace

absl::StatusOr<std::vector<StoreWriteBenchRow>> MeasureStoreWrites(
    const engine::ModelConfig& model, const StoreWriteBenchOptions& options) {
  if (options.uploads < 1 || options.rounds < 1) {
    return absl::InvalidArgumentError("uploads and rounds must be at least 1");
  }
  std::vector<StoreWriteBenchRow> rows;
  for (int32_t tokens : options.document_tokens) {
    if (tokens < 1) return absl::InvalidArgumentError("document lengths must be at least 1");
    const cache_store::DocumentPayload payload =
        RandomPayload(model, tokens, options.ratio, options.seed);
    absl::StatusOr<std::string> encoded = cache_store::EncodePayload(payload);
    if (!encoded.ok()) return encoded.status();
    const auto payload_bytes = static_cast<int64_t>(encoded->size());
    // Index 0: sync on, 1: off. A warm-up round of each first, then the timed rounds in
    // alternating order, so that drift in the disk's state weighs on both alike.
    std::vector<Round> rounds[2];
    for (int32_t r = -1; r < options.rounds; ++r) {
      for (int k = 0; k < 2; ++k) {
        const int setting = (r % 2 == 0) ? k : 1 - k;
        absl::StatusOr<Round> round =
            RunRound(options.dir / "store", setting == 0, payload, tokens, options);
        if (!round.ok()) return round.status();
        if (r >= 0) rounds[setting].push_back(*std::move(round));
      }
    }
    for (int setting = 0; setting < 2; ++setting) {
      std::vector<double> medians, rates, every;
      for (const Round& round : rounds[setting]) {
        medians.push_back(Median(round.upload_ms));
        rates.push_back(options.uploads / round.seconds);
        every.insert(every.end(), round.upload_ms.begin(), round.upload_ms.end());
      }
      std::sort(every.begin(), every.end());
      StoreWriteBenchRow row;
      row.document_tokens = tokens;
      row.payload_bytes = payload_bytes;
      row.sync_writes = setting == 0;
      row.median_upload_ms = Median(medians);
      row.p90_upload_ms = every[static_cast<size_t>(0.9 * static_cast<double>(every.size() - 1))];
      row.uploads_per_second = Median(rates);
      row.megabytes_per_second = row.uploads_per_second * static_cast<double>(payload_bytes) / 1e6;
      rows.push_back(row);
    }
  }
  return rows;
}

}  // namespace kvd::bench
