// The /metrics exposition: vLLM's families and kvd's own, checked sample by sample and linted by
// promtool.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "documents/document_service.h"
#include "server/metrics/metrics_exporter.h"

namespace kvd::server {
namespace {

using base::HistogramSnapshot;
using scheduler::FinishReason;
using scheduler::MetricsSnapshot;

constexpr char kModel[] = "llama-test";

// One line of the text format: `name{label="value",...} value`.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0.0;
};

std::vector<Sample> ParseSamples(const std::string& text) {
  std::vector<Sample> samples;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    Sample sample;
    size_t i = line.find_first_of("{ ");
    sample.name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        const size_t eq = line.find('=', i);
        std::string key = line.substr(i, eq - i);
        std::string value;
        for (i = eq + 2; line[i] != '"'; ++i) {
          if (line[i] == '\\') ++i;
          value += line[i];
        }
        sample.labels[key] = value;
        ++i;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    sample.value = std::strtod(line.c_str() + i, nullptr);
    samples.push_back(std::move(sample));
  }
  return samples;
}

// The samples of `name` whose labels include `labels`.
std::vector<Sample> Find(const std::vector<Sample>& samples, const std::string& name,
                         const std::map<std::string, std::string>& labels = {}) {
  std::vector<Sample> found;
  for (const Sample& sample : samples) {
    if (sample.name != name) continue;
    bool match = true;
    for (const auto& [key, value] : labels) {
      const auto it = sample.labels.find(key);
      match = match && it != sample.labels.end() && it->second == value;
    }
    if (match) found.push_back(sample);
  }
  return found;
}

// The value of the one sample of `name` with `labels`; NaN (a failed comparison) otherwise.
double ValueOf(const std::vector<Sample>& samples, const std::string& name,
               const std::map<std::string, std::string>& labels = {}) {
  const std::vector<Sample> found = Find(samples, name, labels);
  EXPECT_EQ(found.size(), 1u) << name;
  return found.size() == 1 ? found[0].value : std::nan("");
}

HistogramSnapshot MakeHistogram(std::vector<double> bounds, std::vector<uint64_t> counts,
                                double sum) {
  HistogramSnapshot histogram;
  histogram.bounds = std::move(bounds);
  histogram.counts = std::move(counts);
  histogram.sum = sum;
  for (uint64_t count : histogram.counts) histogram.count += count;
  return histogram;
}

MetricsSnapshot SampleSnapshot() {
  MetricsSnapshot s;
  s.num_running = 3;
  s.num_waiting = 5;
  s.kv_blocks_total = 100;
  s.kv_blocks_free = 25;
  s.kv_usage = 0.75;
  s.tenants["alpha"] = {.running = 2,
                        .waiting = 1,
                        .prompt_tokens = 40,
                        .generation_tokens = 9,
                        .prefix_cache_queries = 40,
                        .prefix_cache_hits = 32};
  s.tenants["stranger"] = {.running = 1, .waiting = 3, .prompt_tokens = 7, .generation_tokens = 2};
  s.tenants["intruder"] = {.running = 0, .waiting = 1, .prompt_tokens = 5, .generation_tokens = 4};
  s.steps = 12;
  s.preemptions = 2;
  s.prompt_tokens = 52;
  s.generation_tokens = 15;
  s.computed_tokens = 70;
  s.keepkv_merges = 300;
  s.keepkv_evictions = 20;
  s.keepkv_refreshes = 3;
  s.keepkv_sequences = 2;
  s.keepkv_compressed_fraction = 0.8;
  s.prefix_cache_blocks = 48;
  s.prefix_cache_queries = 52;
  s.prefix_cache_hits = 32;
  s.finished_sequences[FinishReason::kStop] = 4;
  s.finished_sequences[FinishReason::kLength] = 1;
  s.spec_decode_drafts = 6;
  s.spec_decode_draft_tokens = 20;
  s.spec_decode_accepted_tokens = 9;
  s.spec_decode_accepted_per_position = {5, 3, 1, 0};
  s.step_seconds_total = 0.5;
  s.forward_seconds_total = 0.4;
  s.tokens_per_step = MakeHistogram({1, 8, 16}, {3, 2, 4, 1}, 70);
  s.step_seconds = MakeHistogram({0.01, 0.1}, {6, 4, 0}, 0.45);
  s.queue_seconds = MakeHistogram({0.3, 0.5}, {1, 1, 1}, 2.0);
  s.time_to_first_token_seconds = MakeHistogram({0.1, 0.5, 1.0}, {2, 0, 3, 1}, 4.25);
  s.inter_token_seconds = MakeHistogram({0.01, 0.025}, {7, 3, 1}, 0.2);
  s.e2e_request_seconds = MakeHistogram({0.3, 1.0}, {0, 4, 1}, 5.5);
  return s;
}

documents::DocumentStats SampleDocumentStats() {
  documents::DocumentStats s;
  s.documents = 7;
  s.stored_bytes = 9000;
  s.tenants["alpha"] = {.documents = 4, .bytes = 5000};
  s.tenants["stranger"] = {.documents = 2, .bytes = 3000};
  s.tenants["intruder"] = {.documents = 1, .bytes = 1000};
  s.compressions_running = 2;
  s.metrics.compressions_failed = 1;
  s.tier = {.hits = 30, .misses = 6, .documents = 3, .bytes = 4000};
  s.metrics.compression_seconds = MakeHistogram({0.1, 1}, {2, 3, 0}, 2.5);
  s.metrics.load_seconds = MakeHistogram({0.01}, {5, 1}, 0.04);
  s.metrics.kept_ratio = MakeHistogram({0.2, 0.5}, {1, 4, 0}, 1.6);
  return s;
}

std::optional<cache_store::RedisCallStats> SampleResponseStoreCalls() {
  return cache_store::RedisCallStats{
      .reads = 12, .writes = 5, .failures = 1, .seconds = MakeHistogram({0.01}, {15, 2}, 0.09)};
}

std::unique_ptr<MetricsExporter> MakeExporter(MetricsSnapshot snapshot = SampleSnapshot()) {
  auto exporter = std::make_unique<MetricsExporter>(
      kModel, std::vector<std::string>{"alpha", "beta"}, [snapshot] { return snapshot; });
  exporter->AddDocuments(SampleDocumentStats);
  exporter->AddResponseStore(SampleResponseStoreCalls);
  return exporter;
}

struct FamilyType {
  const char* name;
  const char* type;
};

constexpr FamilyType kFamilies[] = {
    {"vllm:num_requests_running", "gauge"},
    {"vllm:num_requests_waiting", "gauge"},
    {"vllm:kv_cache_usage_perc", "gauge"},
    {"vllm:gpu_cache_usage_perc", "gauge"},
    {"vllm:num_preemptions_total", "counter"},
    {"vllm:prompt_tokens_total", "counter"},
    {"vllm:generation_tokens_total", "counter"},
    {"vllm:prefix_cache_queries_total", "counter"},
    {"vllm:prefix_cache_hits_total", "counter"},
    {"vllm:request_success_total", "counter"},
    {"vllm:spec_decode_num_drafts_total", "counter"},
    {"vllm:spec_decode_num_draft_tokens_total", "counter"},
    {"vllm:spec_decode_num_accepted_tokens_total", "counter"},
    {"vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter"},
    {"vllm:iteration_tokens_total", "histogram"},
    {"vllm:time_to_first_token_seconds", "histogram"},
    {"vllm:inter_token_latency_seconds", "histogram"},
    {"vllm:time_per_output_token_seconds", "histogram"},
    {"vllm:e2e_request_latency_seconds", "histogram"},
    {"vllm:request_queue_time_seconds", "histogram"},
    {"kvd_tenant_requests_running", "gauge"},
    {"kvd_tenant_requests_waiting", "gauge"},
    {"kvd_tenant_prompt_tokens_total", "counter"},
    {"kvd_tenant_generation_tokens_total", "counter"},
    {"kvd_tenant_prefix_cache_queries_total", "counter"},
    {"kvd_tenant_prefix_cache_hits_total", "counter"},
    {"kvd_tenant_requests_total", "counter"},
    {"kvd_tenant_rejections_total", "counter"},
    {"kvd_kv_cache_blocks", "gauge"},
    {"kvd_prefix_cache_blocks", "gauge"},
    {"kvd_scheduler_steps_total", "counter"},
    {"kvd_scheduler_step_seconds", "histogram"},
    {"kvd_scheduler_step_seconds_total", "counter"},
    {"kvd_scheduler_forward_seconds_total", "counter"},
    {"kvd_scheduler_computed_tokens_total", "counter"},
    {"kvd_keepkv_merges_total", "counter"},
    {"kvd_keepkv_evictions_total", "counter"},
    {"kvd_keepkv_refreshes_total", "counter"},
    {"kvd_keepkv_sequences", "gauge"},
    {"kvd_keepkv_compressed_fraction", "gauge"},
    {"kvd_documents", "gauge"},
    {"kvd_document_stored_bytes", "gauge"},
    {"kvd_tenant_documents", "gauge"},
    {"kvd_tenant_document_bytes", "gauge"},
    {"kvd_document_compressions_running", "gauge"},
    {"kvd_document_compressions_failed_total", "counter"},
    {"kvd_document_compression_seconds", "histogram"},
    {"kvd_document_kept_ratio", "histogram"},
    {"kvd_document_load_seconds", "histogram"},
    {"kvd_document_tier_requests_total", "counter"},
    {"kvd_document_tier_bytes", "gauge"},
    {"kvd_document_tier_documents", "gauge"},
    {"kvd_response_store_remote_requests_total", "counter"},
    {"kvd_response_store_remote_failures_total", "counter"},
    {"kvd_response_store_remote_request_seconds", "histogram"},
};

TEST(MetricsExporterTest, EveryFamilyHasItsTypeAndAHelpWithAUnit) {
  const std::string text = MakeExporter()->Render();
  for (const FamilyType& family : kFamilies) {
    EXPECT_NE(text.find("# TYPE " + std::string(family.name) + " " + family.type + "\n"),
              std::string::npos)
        << family.name;
    const size_t help = text.find("# HELP " + std::string(family.name) + " ");
    ASSERT_NE(help, std::string::npos) << family.name;
    const std::string line = text.substr(help, text.find('\n', help) - help);
    EXPECT_TRUE(std::regex_search(
        line,
        std::regex(
            R"(\((ratio|seconds|tokens|sequences|requests|steps|blocks|documents|bytes|lookups|entries|refreshes|calls)\b)")))
        << "no unit in: " << line;
  }
}

TEST(MetricsExporterTest, EverySeriesCarriesTheModelNameAndVllmOnesTheEngine) {
  const std::vector<Sample> samples = ParseSamples(MakeExporter()->Render());
  ASSERT_FALSE(samples.empty());
  for (const Sample& sample : samples) {
    EXPECT_EQ(sample.labels.at("model_name"), kModel) << sample.name;
    if (sample.name.rfind("vllm:", 0) == 0) {
      EXPECT_EQ(sample.labels.at("engine"), "0") << sample.name;
    } else {
      EXPECT_EQ(sample.labels.count("engine"), 0u) << sample.name;
    }
  }
}

TEST(MetricsExporterTest, GaugesAndCountersCarryTheSnapshot) {
  const std::vector<Sample> samples = ParseSamples(MakeExporter()->Render());
  EXPECT_EQ(ValueOf(samples, "vllm:num_requests_running"), 3);
  EXPECT_EQ(ValueOf(samples, "vllm:num_requests_waiting"), 5);
  EXPECT_EQ(ValueOf(samples, "vllm:kv_cache_usage_perc"), 0.75);
  EXPECT_EQ(ValueOf(samples, "vllm:gpu_cache_usage_perc"), 0.75);
  EXPECT_EQ(ValueOf(samples, "vllm:num_preemptions_total"), 2);
  EXPECT_EQ(ValueOf(samples, "vllm:prompt_tokens_total"), 52);
  EXPECT_EQ(ValueOf(samples, "vllm:generation_tokens_total"), 15);
  EXPECT_EQ(ValueOf(samples, "kvd_kv_cache_blocks", {{"state", "free"}}), 25);
  EXPECT_EQ(ValueOf(samples, "kvd_kv_cache_blocks", {{"state", "used"}}), 75);
  EXPECT_EQ(ValueOf(samples, "kvd_scheduler_steps_total"), 12);
  EXPECT_EQ(ValueOf(samples, "kvd_scheduler_step_seconds_total"), 0.5);
  EXPECT_EQ(ValueOf(samples, "kvd_scheduler_forward_seconds_total"), 0.4);
  EXPECT_EQ(ValueOf(samples, "kvd_scheduler_computed_tokens_total"), 70);
  EXPECT_EQ(ValueOf(samples, "kvd_keepkv_merges_total"), 300);
  EXPECT_EQ(ValueOf(samples, "kvd_keepkv_evictions_total"), 20);
  EXPECT_EQ(ValueOf(samples, "kvd_keepkv_refreshes_total"), 3);
  EXPECT_EQ(ValueOf(samples, "kvd_keepkv_sequences"), 2);
  EXPECT_EQ(ValueOf(samples, "kvd_keepkv_compressed_fraction"), 0.8);
  EXPECT_EQ(ValueOf(samples, "vllm:prefix_cache_queries_total"), 52);
  EXPECT_EQ(ValueOf(samples, "vllm:prefix_cache_hits_total"), 32);
  EXPECT_EQ(ValueOf(samples, "kvd_prefix_cache_blocks"), 48);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_prefix_cache_hits_total", {{"tenant", "alpha"}}), 32);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_prefix_cache_queries_total", {{"tenant", "alpha"}}), 40);
}

TEST(MetricsExporterTest, SpeculativeDecodingCountsDraftsAndKeptTokensByPosition) {
  const std::vector<Sample> samples = ParseSamples(MakeExporter()->Render());
  EXPECT_EQ(ValueOf(samples, "vllm:spec_decode_num_drafts_total"), 6);
  EXPECT_EQ(ValueOf(samples, "vllm:spec_decode_num_draft_tokens_total"), 20);
  EXPECT_EQ(ValueOf(samples, "vllm:spec_decode_num_accepted_tokens_total"), 9);
  EXPECT_EQ(Find(samples, "vllm:spec_decode_num_accepted_tokens_per_pos_total").size(), 4u);
  EXPECT_EQ(
      ValueOf(samples, "vllm:spec_decode_num_accepted_tokens_per_pos_total", {{"position", "1"}}),
      3);
}

TEST(MetricsExporterTest, EveryFinishReasonIsPresent) {
  const std::vector<Sample> samples = ParseSamples(MakeExporter()->Render());
  EXPECT_EQ(Find(samples, "vllm:request_success_total").size(), 3u);
  EXPECT_EQ(ValueOf(samples, "vllm:request_success_total", {{"finished_reason", "stop"}}), 4);
  EXPECT_EQ(ValueOf(samples, "vllm:request_success_total", {{"finished_reason", "length"}}), 1);
  EXPECT_EQ(ValueOf(samples, "vllm:request_success_total", {{"finished_reason", "abort"}}), 0);
}

TEST(MetricsExporterTest, HistogramBucketsAreCumulativeAndInfIsTheCount) {
  const std::vector<Sample> samples = ParseSamples(MakeExporter()->Render());
  const std::string ttft = "vllm:time_to_first_token_seconds";
  // Per-bucket counts {2, 0, 3, 1} over edges {0.1, 0.5, 1}.
  EXPECT_EQ(Find(samples, ttft + "_bucket").size(), 4u);
  EXPECT_EQ(ValueOf(samples, ttft + "_bucket", {{"le", "0.1"}}), 2);
  EXPECT_EQ(ValueOf(samples, ttft + "_bucket", {{"le", "0.5"}}), 2);
  EXPECT_EQ(ValueOf(samples, ttft + "_bucket", {{"le", "1"}}), 5);
  EXPECT_EQ(ValueOf(samples, ttft + "_bucket", {{"le", "+Inf"}}), 6);
  EXPECT_EQ(ValueOf(samples, ttft + "_count"), 6);
  EXPECT_EQ(ValueOf(samples, ttft + "_sum"), 4.25);

  const std::string steps = "vllm:iteration_tokens_total";
  EXPECT_EQ(ValueOf(samples, steps + "_bucket", {{"le", "8"}}), 5);
  EXPECT_EQ(ValueOf(samples, steps + "_bucket", {{"le", "16"}}), 9);
  EXPECT_EQ(ValueOf(samples, steps + "_bucket", {{"le", "+Inf"}}), 10);
  EXPECT_EQ(ValueOf(samples, steps + "_sum"), 70);

  EXPECT_EQ(ValueOf(samples, "vllm:e2e_request_latency_seconds_bucket", {{"le", "0.3"}}), 0);
  EXPECT_EQ(ValueOf(samples, "vllm:e2e_request_latency_seconds_bucket", {{"le", "1"}}), 4);
  EXPECT_EQ(ValueOf(samples, "vllm:request_queue_time_seconds_bucket", {{"le", "0.5"}}), 2);
  EXPECT_EQ(ValueOf(samples, "kvd_scheduler_step_seconds_bucket", {{"le", "0.01"}}), 6);
  EXPECT_EQ(ValueOf(samples, "kvd_scheduler_step_seconds_count"), 10);
}

TEST(MetricsExporterTest, InterTokenLatencyIsAlsoTimePerOutputToken) {
  const std::vector<Sample> samples = ParseSamples(MakeExporter()->Render());
  for (const char* le : {"0.01", "0.025", "+Inf"}) {
    EXPECT_EQ(ValueOf(samples, "vllm:inter_token_latency_seconds_bucket", {{"le", le}}),
              ValueOf(samples, "vllm:time_per_output_token_seconds_bucket", {{"le", le}}));
  }
  EXPECT_EQ(ValueOf(samples, "vllm:time_per_output_token_seconds_bucket", {{"le", "0.025"}}), 10);
  EXPECT_EQ(ValueOf(samples, "vllm:time_per_output_token_seconds_count"), 11);
}

TEST(MetricsExporterTest, EmptySnapshotStillHasEverySeries) {
  const std::vector<Sample> samples = ParseSamples(MakeExporter(MetricsSnapshot())->Render());
  EXPECT_EQ(ValueOf(samples, "vllm:request_success_total", {{"finished_reason", "abort"}}), 0);
  EXPECT_EQ(ValueOf(samples, "vllm:e2e_request_latency_seconds_bucket", {{"le", "+Inf"}}), 0);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_requests_running", {{"tenant", "beta"}}), 0);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_requests_running", {{"tenant", "other"}}), 0);
}

TEST(MetricsExporterTest, TenantsOutsideTheConfiguredOnesAreOther) {
  const std::vector<Sample> samples = ParseSamples(MakeExporter()->Render());
  for (const Sample& sample : samples) {
    const auto tenant = sample.labels.find("tenant");
    if (tenant == sample.labels.end()) continue;
    EXPECT_TRUE(tenant->second == "alpha" || tenant->second == "beta" || tenant->second == "other")
        << sample.name << " tenant=" << tenant->second;
  }
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_requests_running", {{"tenant", "alpha"}}), 2);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_requests_waiting", {{"tenant", "alpha"}}), 1);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_prompt_tokens_total", {{"tenant", "alpha"}}), 40);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_generation_tokens_total", {{"tenant", "alpha"}}), 9);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_requests_running", {{"tenant", "beta"}}), 0);
  // "stranger" and "intruder" summed.
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_requests_running", {{"tenant", "other"}}), 1);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_requests_waiting", {{"tenant", "other"}}), 4);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_prompt_tokens_total", {{"tenant", "other"}}), 12);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_generation_tokens_total", {{"tenant", "other"}}), 6);
}

TEST(MetricsExporterTest, DocumentFamiliesCarryTheStatsWithBoundedTenants) {
  const std::vector<Sample> samples = ParseSamples(MakeExporter()->Render());
  EXPECT_EQ(ValueOf(samples, "kvd_documents"), 7);
  EXPECT_EQ(ValueOf(samples, "kvd_document_stored_bytes"), 9000);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_documents", {{"tenant", "alpha"}}), 4);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_documents", {{"tenant", "beta"}}), 0);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_documents", {{"tenant", "other"}}), 3);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_document_bytes", {{"tenant", "other"}}), 4000);
  EXPECT_EQ(Find(samples, "kvd_tenant_documents").size(), 3u);
  EXPECT_EQ(ValueOf(samples, "kvd_document_compressions_running"), 2);
  EXPECT_EQ(ValueOf(samples, "kvd_document_compressions_failed_total"), 1);
  EXPECT_EQ(ValueOf(samples, "kvd_document_tier_requests_total", {{"result", "hit"}}), 30);
  EXPECT_EQ(ValueOf(samples, "kvd_document_tier_requests_total", {{"result", "miss"}}), 6);
  EXPECT_EQ(ValueOf(samples, "kvd_document_tier_bytes"), 4000);
  EXPECT_EQ(ValueOf(samples, "kvd_document_compression_seconds_bucket", {{"le", "1"}}), 5);
  EXPECT_EQ(ValueOf(samples, "kvd_document_kept_ratio_count"), 5);
  EXPECT_EQ(ValueOf(samples, "kvd_document_load_seconds_sum"), 0.04);
}

TEST(MetricsExporterTest, ResponseStoreFamiliesCarryItsCallsAndZerosWithoutASharedTier) {
  const std::vector<Sample> samples = ParseSamples(MakeExporter()->Render());
  EXPECT_EQ(ValueOf(samples, "kvd_response_store_remote_requests_total", {{"op", "read"}}), 12);
  EXPECT_EQ(ValueOf(samples, "kvd_response_store_remote_requests_total", {{"op", "write"}}), 5);
  EXPECT_EQ(ValueOf(samples, "kvd_response_store_remote_failures_total"), 1);
  EXPECT_EQ(ValueOf(samples, "kvd_response_store_remote_request_seconds_count"), 17);

  MetricsExporter local(kModel, {}, [] { return MetricsSnapshot{}; });
  local.AddResponseStore([] { return std::optional<cache_store::RedisCallStats>(); });
  const std::vector<Sample> zeros = ParseSamples(local.Render());
  EXPECT_EQ(ValueOf(zeros, "kvd_response_store_remote_requests_total", {{"op", "read"}}), 0);
  EXPECT_EQ(ValueOf(zeros, "kvd_response_store_remote_failures_total"), 0);
  EXPECT_EQ(ValueOf(zeros, "kvd_response_store_remote_request_seconds_count"), 0);
  EXPECT_FALSE(Find(zeros, "kvd_response_store_remote_request_seconds_bucket").empty());
}

TEST(MetricsExporterTest, RequestsCountByTenantAndStatusClass) {
  std::unique_ptr<MetricsExporter> exporter = MakeExporter();
  std::vector<Sample> samples = ParseSamples(exporter->Render());
  // Three status classes and two protocols for alpha, beta and other, at 0 before any request.
  EXPECT_EQ(Find(samples, "kvd_tenant_requests_total").size(), 18u);
  for (const Sample& sample : Find(samples, "kvd_tenant_requests_total")) {
    EXPECT_EQ(sample.value, 0);
  }

  exporter->RecordRequest("alpha", 200);
  exporter->RecordRequest("alpha", 201);
  exporter->RecordRequest("alpha", 429);
  exporter->RecordRequest("beta", 503);
  exporter->RecordRequest("stranger", 404);
  exporter->RecordRequest("intruder", 401);
  exporter->RecordRequest("alpha", 0);  // no status at all: a server fault
  exporter->RecordRequest("alpha", 200, Protocol::kGrpc);
  exporter->RecordRequest("beta", 404, Protocol::kGrpc);
  samples = ParseSamples(exporter->Render());
  const std::string name = "kvd_tenant_requests_total";
  auto http = [](std::map<std::string, std::string> labels) {
    labels["protocol"] = "http";
    return labels;
  };
  EXPECT_EQ(ValueOf(samples, name, http({{"tenant", "alpha"}, {"status", "2xx"}})), 2);
  EXPECT_EQ(ValueOf(samples, name, http({{"tenant", "alpha"}, {"status", "4xx"}})), 1);
  EXPECT_EQ(ValueOf(samples, name, http({{"tenant", "alpha"}, {"status", "5xx"}})), 1);
  EXPECT_EQ(ValueOf(samples, name, http({{"tenant", "beta"}, {"status", "5xx"}})), 1);
  EXPECT_EQ(ValueOf(samples, name, http({{"tenant", "other"}, {"status", "4xx"}})), 2);
  EXPECT_EQ(ValueOf(samples, name, http({{"tenant", "other"}, {"status", "2xx"}})), 0);
  EXPECT_EQ(ValueOf(samples, name, {{"tenant", "alpha"}, {"status", "2xx"}, {"protocol", "grpc"}}),
            1);
  EXPECT_EQ(ValueOf(samples, name, {{"tenant", "beta"}, {"status", "4xx"}, {"protocol", "grpc"}}),
            1);
  EXPECT_TRUE(Find(samples, name, {{"tenant", "stranger"}}).empty());
}

TEST(MetricsExporterTest, RejectionsCountByTenantAndReason) {
  std::unique_ptr<MetricsExporter> exporter = MakeExporter();
  const std::string name = "kvd_tenant_rejections_total";
  std::vector<Sample> samples = ParseSamples(exporter->Render());
  for (const char* tenant : {"alpha", "beta", "other"}) {
    for (const char* reason : {"rate_limit", "token_limit", "concurrency", "queue_full",
                               "overloaded", "unauthenticated"}) {
      EXPECT_EQ(ValueOf(samples, name, {{"tenant", tenant}, {"reason", reason}}), 0);
    }
  }
  EXPECT_EQ(Find(samples, name).size(), 18u);

  exporter->RecordRejection("alpha", RejectionReason::kRateLimit);
  exporter->RecordRejection("alpha", RejectionReason::kRateLimit);
  exporter->RecordRejection("beta", RejectionReason::kQueueFull);
  exporter->RecordRejection("nobody", RejectionReason::kUnauthenticated);
  samples = ParseSamples(exporter->Render());
  EXPECT_EQ(ValueOf(samples, name, {{"tenant", "alpha"}, {"reason", "rate_limit"}}), 2);
  EXPECT_EQ(ValueOf(samples, name, {{"tenant", "alpha"}, {"reason", "token_limit"}}), 0);
  EXPECT_EQ(ValueOf(samples, name, {{"tenant", "beta"}, {"reason", "queue_full"}}), 1);
  EXPECT_EQ(ValueOf(samples, name, {{"tenant", "other"}, {"reason", "unauthenticated"}}), 1);
  EXPECT_EQ(Find(samples, name).size(), 18u);
}

TEST(MetricsExporterTest, RecordsAndRendersFromManyThreads) {
  std::unique_ptr<MetricsExporter> exporter = MakeExporter();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&exporter, t] {
      for (int i = 0; i < kPerThread; ++i) {
        exporter->RecordRequest(t % 2 == 0 ? "alpha" : "unknown", 200);
        exporter->RecordRejection("beta", RejectionReason::kOverloaded);
        if (i % 100 == 0) {
          EXPECT_FALSE(exporter->Render().empty());
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::vector<Sample> samples = ParseSamples(exporter->Render());
  const std::string requests = "kvd_tenant_requests_total";
  EXPECT_EQ(
      ValueOf(samples, requests, {{"tenant", "alpha"}, {"status", "2xx"}, {"protocol", "http"}}),
      kThreads / 2 * kPerThread);
  EXPECT_EQ(
      ValueOf(samples, requests, {{"tenant", "other"}, {"status", "2xx"}, {"protocol", "http"}}),
      kThreads / 2 * kPerThread);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_rejections_total",
                    {{"tenant", "beta"}, {"reason", "overloaded"}}),
            kThreads * kPerThread);
}

TEST(MetricsExporterTest, ExportsWhatTheSchedulerRecorded) {
  scheduler::SchedulerMetrics metrics;
  metrics.RecordGauges({.num_running = 1,
                        .num_waiting = 2,
                        .kv_blocks_total = 8,
                        .kv_blocks_free = 6,
                        .tenants = {{"alpha", {.running = 1, .waiting = 2}}}});
  metrics.RecordAdmission("alpha", 12, 0.4);
  metrics.RecordStep(12, 0, 0.02, 0.015);
  metrics.RecordToken("alpha", 0.05, std::nullopt);
  metrics.RecordStep(1, 1, 0.004, 0.003);
  metrics.RecordToken("alpha", std::nullopt, 0.02);
  metrics.RecordFinish(FinishReason::kLength);
  metrics.RecordRequestDone(0.07);
  MetricsExporter exporter(kModel, {"alpha"}, [&metrics] { return metrics.Snapshot(); });
  const std::vector<Sample> samples = ParseSamples(exporter.Render());

  EXPECT_EQ(ValueOf(samples, "vllm:num_requests_running"), 1);
  EXPECT_EQ(ValueOf(samples, "vllm:kv_cache_usage_perc"), 0.25);
  EXPECT_EQ(ValueOf(samples, "kvd_kv_cache_blocks", {{"state", "used"}}), 2);
  EXPECT_EQ(ValueOf(samples, "vllm:num_preemptions_total"), 1);
  EXPECT_EQ(ValueOf(samples, "vllm:prompt_tokens_total"), 12);
  EXPECT_EQ(ValueOf(samples, "vllm:generation_tokens_total"), 2);
  EXPECT_EQ(ValueOf(samples, "vllm:request_success_total", {{"finished_reason", "length"}}), 1);
  // vLLM's edges: 1, 8, 16, ...
  EXPECT_EQ(ValueOf(samples, "vllm:iteration_tokens_total_bucket", {{"le", "1"}}), 1);
  EXPECT_EQ(ValueOf(samples, "vllm:iteration_tokens_total_bucket", {{"le", "8"}}), 1);
  EXPECT_EQ(ValueOf(samples, "vllm:iteration_tokens_total_bucket", {{"le", "16"}}), 2);
  EXPECT_EQ(ValueOf(samples, "vllm:iteration_tokens_total_sum"), 13);
  EXPECT_EQ(ValueOf(samples, "vllm:time_to_first_token_seconds_bucket", {{"le", "0.04"}}), 0);
  EXPECT_EQ(ValueOf(samples, "vllm:time_to_first_token_seconds_bucket", {{"le", "0.06"}}), 1);
  EXPECT_EQ(ValueOf(samples, "vllm:inter_token_latency_seconds_bucket", {{"le", "0.025"}}), 1);
  EXPECT_EQ(ValueOf(samples, "vllm:request_queue_time_seconds_bucket", {{"le", "0.5"}}), 1);
  EXPECT_EQ(ValueOf(samples, "vllm:e2e_request_latency_seconds_count"), 1);
  EXPECT_EQ(ValueOf(samples, "kvd_scheduler_steps_total"), 2);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_prompt_tokens_total", {{"tenant", "alpha"}}), 12);
  EXPECT_EQ(ValueOf(samples, "kvd_tenant_requests_waiting", {{"tenant", "alpha"}}), 2);
}

// promtool's exit status and its findings, one a line.
struct LintResult {
  int exit_status = -1;
  std::vector<std::string> findings;
};

LintResult Promtool(const std::string& exposition) {
  constexpr char kPromtool[] = "/usr/bin/promtool";
  LintResult result;
  if (!std::filesystem::exists(kPromtool)) {
    ADD_FAILURE() << kPromtool << " is missing: install Debian's prometheus (scripts/bootstrap)";
    return result;
  }
  const std::string path =
      ::testing::TempDir() + "/kvd_metrics_exposition." + std::to_string(getpid()) + ".txt";
  std::ofstream(path) << exposition;
  const std::string command = std::string(kPromtool) + " check metrics < '" + path + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << command;
    return result;
  }
  std::string output;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) output.append(buffer, n);
  const int status = pclose(pipe);
  std::filesystem::remove(path);
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) result.findings.push_back(line);
  }
  return result;
}

std::string RenderWithTraffic() {
  std::unique_ptr<MetricsExporter> exporter = MakeExporter();
  exporter->RecordRequest("alpha", 200);
  exporter->RecordRejection("stranger", RejectionReason::kTokenLimit);
  return exporter->Render();
}

TEST(MetricsExporterPromtoolTest, KvdFamiliesPassTheLinter) {
  std::string kvd_only;
  std::istringstream lines(RenderWithTraffic());
  for (std::string line; std::getline(lines, line);) {
    if (line.find("vllm:") == std::string::npos) kvd_only += line + "\n";
  }
  ASSERT_NE(kvd_only.find("kvd_"), std::string::npos);
  const LintResult lint = Promtool(kvd_only);
  EXPECT_EQ(lint.exit_status, 0);
  EXPECT_TRUE(lint.findings.empty()) << ::testing::PrintToString(lint.findings);
}

// vLLM's names are fixed by the dashboards and autoscalers that read them, and promtool lints
// two of their habits: the ':' of every vllm: name (Prometheus keeps ':' for recording rules)
// and the histogram vllm:iteration_tokens_total ending in "_total". Those findings, and only
// those, make promtool exit with 3 (lint problems) rather than 0; a parse error would be 1.
TEST(MetricsExporterPromtoolTest, WholeExpositionHasOnlyVllmNamingFindings) {
  const LintResult lint = Promtool(RenderWithTraffic());
  EXPECT_EQ(lint.exit_status, 3) << ::testing::PrintToString(lint.findings);
  std::vector<std::string> expected;
  for (const FamilyType& family : kFamilies) {
    const std::string name = family.name;
    if (name.rfind("vllm:", 0) != 0) continue;
    expected.push_back(name + " metric names should not contain ':'");
  }
  expected.push_back(
      "vllm:iteration_tokens_total non-counter metrics should not have \"_total\" suffix");
  std::sort(expected.begin(), expected.end());
  std::vector<std::string> findings = lint.findings;
  std::sort(findings.begin(), findings.end());
  EXPECT_EQ(findings, expected);
}

TEST(MetricsExporterTest, ContentTypeIsTextFormat004) {
  EXPECT_EQ(MetricsExporter::kContentType, "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace
}  // namespace kvd::server
