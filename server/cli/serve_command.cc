#include "server/cli/serve_command.h"

#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "documents/document_service.h"
#include "documents/shared_tier.h"
#include "engine/model.h"
#include "kernels/backend.h"
#include "scheduler/scheduler.h"
#include "server/anthropic/messages_routes.h"
#include "server/auth/tenants.h"
#include "server/cli/exit_status.h"
#include "server/cli/logging_setup.h"
#include "server/cli/signal_watch.h"
#include "server/cli/type_choices.h"
#include "server/config/config_loader.h"
#include "server/core/serving_context.h"
#include "server/core/tool_parser.h"
#include "server/documents_api/document_routes.h"
#include "server/grpc/grpc_server.h"
#include "server/http/http_server.h"
#include "server/kv_events/zmq_publisher.h"
#include "server/metrics/metrics_exporter.h"
#include "server/openai/openai_routes.h"
#include "server/responses/local_response_store.h"
#include "server/responses/responses_routes.h"
#include "server/responses/shared_response_store.h"
#include "spdlog/spdlog.h"
#include "structured/constraint_cache.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace kvd::server {
namespace {

struct ServeFlags {
  std::string config_file;
  std::optional<std::string> model_dir;
  std::optional<std::string> host;
  std::optional<int32_t> port;
  std::optional<int32_t> grpc_port;
  std::optional<std::string> data_dir;
  std::optional<std::string> replica;
  std::optional<std::string> backend;
  std::optional<int32_t> threads;
  std::optional<std::string> dtype;
  std::optional<std::string> kv_events_topic;
};

absl::StatusOr<ServerConfig> ResolveConfig(const ServeFlags& flags) {
  ServerConfig config;
  if (!flags.config_file.empty()) {
    auto loaded = LoadServerConfig(flags.config_file);
    if (!loaded.ok()) return loaded.status();
    config = *std::move(loaded);
  }
  // Flags override the file's single values.
  if (flags.model_dir) config.model.path = *flags.model_dir;
  if (flags.host) config.server.host = *flags.host;
  if (flags.port) config.server.port = *flags.port;
  if (flags.grpc_port) config.server.grpc_port = *flags.grpc_port;
  if (flags.data_dir) config.store.data_dir = *flags.data_dir;
  if (flags.replica) config.store.replica = *flags.replica;
  if (flags.backend) config.model.backend = *flags.backend;
  if (flags.threads) config.model.threads = *flags.threads;
  if (flags.dtype) config.model.dtype = *flags.dtype;
  if (flags.kv_events_topic) config.kv_events_zmq.topic = *flags.kv_events_topic;
  if (auto status = config.Validate(); !status.ok()) return status;
  return config;
}

HttpServerOptions HttpOptions(const ListenConfig& listen) {
  HttpServerOptions options;
  options.host = listen.host;
  options.port = static_cast<uint16_t>(listen.port);
  options.io_threads = listen.io_threads;
  options.limits = {.max_header_bytes = listen.max_header_bytes,
                    .max_body_bytes = listen.max_body_bytes};
  options.max_connections = listen.max_connections;
  options.max_connections_per_client = listen.max_connections_per_client;
  options.read_timeout = absl::Seconds(listen.read_timeout_seconds);
  options.idle_timeout = absl::Seconds(listen.idle_timeout_seconds);
  options.keepalive_interval = absl::Seconds(listen.keepalive_interval_seconds);
  return options;
}

// Raises the soft limit on open files to the hard one, as a server holding many connections
// needs (the soft default is often 1024), and warns when it cannot hold the configured number
// of connections plus what the store and the model take.
void RaiseFileLimit(const ListenConfig& listen) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  constexpr rlim_t kReserved = 256;  // RocksDB's files, the checkpoint, gRPC, logs
  if (listen.max_connections > 0 &&
      limit.rlim_cur < static_cast<rlim_t>(listen.max_connections) + kReserved) {
    spdlog::warn(
        "open-file limit {} may not hold server.max_connections {} plus {} in reserve; "
        "past it new connections wait",
        static_cast<uint64_t>(limit.rlim_cur), listen.max_connections, kReserved);
  }
}

// SIGHUP: the tenants of the configuration file replace the running ones, with the file's
// `keepkv` defaults; connections, requests in flight and the tenants' rate buckets are kept.
// Anything else that changed in the file waits for a restart.
void ReloadTenants(const ServeFlags& flags, TenantDirectory& tenants) {
  if (flags.config_file.empty()) {
    spdlog::warn("SIGHUP: no --config file to reload");
    return;
  }
  auto config = ResolveConfig(flags);
  if (!config.ok()) {
    spdlog::error("SIGHUP: keeping the running tenants: {}",
                  std::string(config.status().message()));
    return;
  }
  const auto previous = tenants.current();
  if (previous->authentication_enabled() && config->tenants.empty() && config->auth != "disabled") {
    spdlog::error(
        "SIGHUP: keeping the running tenants: the file lists no tenants, which would turn "
        "authentication off; write `auth: disabled` to mean that");
    return;
  }
  tenants.Replace(std::make_shared<TenantRegistry>(config->tenants, scheduler::Clock::System(),
                                                   previous.get(), config->keepkv));
  if (config->tenants.empty()) {
    spdlog::warn("SIGHUP: no tenants loaded; authentication is off (auth: {})", config->auth);
  } else {
    spdlog::info("SIGHUP: {} tenants loaded", config->tenants.size());
  }
}

// SIGTERM or SIGINT: /ready and new requests answer 503 at once; replies in flight get up to
// `timeout` to finish. A second SIGTERM or SIGINT ends the wait; SIGHUP is ignored meanwhile.
void Drain(ServingContext& context, SignalWatch& signals, absl::Duration timeout) {
  context.draining = true;
  spdlog::info("draining: {} replies in flight, up to {:.0f} s", context.replies_in_flight.load(),
               absl::ToDoubleSeconds(timeout));
  const absl::Time deadline = absl::Now() + timeout;
  while (context.replies_in_flight.load() > 0 && absl::Now() < deadline) {
    const int signal = signals.Next(absl::Milliseconds(50));
    if ((signal == SIGTERM || signal == SIGINT) && context.replies_in_flight.load() > 0) {
      spdlog::warn("second signal: stopping without waiting for {} replies",
                   context.replies_in_flight.load());
      return;
    }
  }
  spdlog::info("drained; {} replies cut off", context.replies_in_flight.load());
}

// Where stored responses live: the shared tier when store.remote configures one (any replica
// continues any conversation), else this replica's database.
absl::StatusOr<std::unique_ptr<responses::ResponseStore>> OpenResponseStore(
    const ServerConfig& config) {
  const absl::Duration ttl = absl::Seconds(config.responses.ttl_seconds);
  KVD_ASSIGN_OR_RETURN(std::optional<cache_store::RedisPoolOptions> shared,
                       documents::SharedTierPoolOptions(config.store.remote));
  if (shared) {
    spdlog::info("responses: stored in the shared tier at {}",
                 documents::SharedTierAddress(shared->endpoint));
    return std::make_unique<responses::SharedResponseStore>(
        std::make_shared<cache_store::RedisPool>(*std::move(shared)),
        config.store.remote.key_prefix, ttl);
  }
  return responses::LocalResponseStore::Open(
      std::filesystem::path(config.store.data_dir) / "responses", ttl);
}

absl::Status RunServe(const ServeFlags& flags) {
  auto signals = SignalWatch::Install();
  if (!signals.ok()) return signals.status();
  auto config = ResolveConfig(flags);
  if (!config.ok()) return config.status();
  if (auto status = ConfigureLogging(config->logging); !status.ok()) return status;
  RaiseFileLimit(config->server);

  auto backend = kernels::CreateBackend(
      config->model.backend, {.num_threads = config->model.threads,
                              .weight_dtype = kernels::DTypeFromName(config->model.dtype)});
  if (!backend.ok()) return backend.status();
  spdlog::info("backend {}", (*backend)->KernelSummary());
  auto model = engine::Model::Load(config->model.path, **backend);
  if (!model.ok()) return model.status();
  auto tokenizer =
      text::Tokenizer::FromFile(std::filesystem::path(config->model.path) / "tokenizer.json");
  if (!tokenizer.ok()) return tokenizer.status();
  std::unique_ptr<text::ChatTemplate> chat_template;
  if (auto loaded = text::ChatTemplate::FromTokenizerConfig(config->model.path); loaded.ok()) {
    chat_template = *std::move(loaded);
  } else if (loaded.status().code() == absl::StatusCode::kNotFound) {
    spdlog::warn("{}; /v1/chat/completions is off", std::string(loaded.status().message()));
  } else {
    return loaded.status();
  }
  auto tool_call_syntax = ResolveToolParser(config->model.tool_parser, chat_template.get());
  if (!tool_call_syntax.ok()) return tool_call_syntax.status();
  if (*tool_call_syntax) {
    spdlog::info("tool calls: {} syntax",
                 std::string(structured::ToolCallSyntaxName(**tool_call_syntax)));
  }
  auto scheduler = scheduler::Scheduler::Create(**model, tokenizer->get(), config->scheduler);
  if (!scheduler.ok()) return scheduler.status();

  TenantDirectory tenants(std::make_shared<TenantRegistry>(
      config->tenants, scheduler::Clock::System(), nullptr, config->keepkv));
  if (!tenants.current()->authentication_enabled()) {
    spdlog::warn(
        "NO TENANTS CONFIGURED: authentication is OFF and every caller shares one default "
        "tenant. Configure `tenants` with API key digests before exposing this server.");
  }
  ServingContext context;
  context.model = {&(*model)->config(), tokenizer->get(), chat_template.get(),
                   config->model.ServedName()};
  context.scheduler = scheduler->get();
  context.tool_call_syntax = *tool_call_syntax;
  context.tenants = &tenants;
  context.log_requests = config->logging.requests;
  context.health_step_timeout = absl::Seconds(config->server.health_step_timeout_seconds);
  context.kv_cache_medium = config->model.backend == "cuda" ? "GPU" : "CPU";
  // Structured outputs: the vocabulary's token bytes, once, for every constraint's masks.
  std::unique_ptr<structured::ConstraintCache> constraints;
  std::unique_ptr<ConstraintCompiler> constraint_compiler;
  if (context.model.tokenizer != nullptr) {
    auto trie = structured::TokenTrie::Create(*context.model.tokenizer,
                                              context.model.config->eos_token_ids);
    if (!trie.ok()) return trie.status();
    constraints = std::make_unique<structured::ConstraintCache>(*std::move(trie));
    const StructuredOutputsConfig& structured_outputs = config->structured_outputs;
    constraint_compiler = std::make_unique<ConstraintCompiler>(
        *constraints, ConstraintCompilerOptions{
                          .threads = structured_outputs.compile_threads,
                          .max_per_tenant = structured_outputs.max_compiles_per_tenant,
                          .timeout = absl::Seconds(structured_outputs.compile_timeout_seconds)});
    context.constraints = constraint_compiler.get();
  }
  std::unique_ptr<ZmqKvEventPublisher> kv_events_zmq;
  if (!config->kv_events_zmq.endpoint.empty()) {
    const KvEventsZmqConfig& zmq = config->kv_events_zmq;
    auto started = ZmqKvEventPublisher::Start(*(*scheduler)->kv_events(),
                                              {.endpoint = zmq.endpoint,
                                               .replay_endpoint = zmq.replay_endpoint,
                                               .topic = zmq.topic,
                                               .medium = context.kv_cache_medium});
    if (!started.ok()) {
      return absl::Status(started.status().code(),
                          absl::StrCat("KV events: ", started.status().message()));
    }
    kv_events_zmq = *std::move(started);
    spdlog::info("publishing KV events on {}{}", kv_events_zmq->endpoint(),
                 kv_events_zmq->replay_endpoint().empty()
                     ? ""
                     : absl::StrCat(", replays on ", kv_events_zmq->replay_endpoint()));
  }
  std::unique_ptr<MetricsExporter> metrics;
  if (config->metrics.enabled) {
    std::vector<std::string> tenant_ids;
    for (const TenantConfig& tenant : config->tenants) tenant_ids.push_back(tenant.id);
    if (tenant_ids.empty()) tenant_ids.push_back("default");
    scheduler::Scheduler* engine = scheduler->get();
    metrics = std::make_unique<MetricsExporter>(context.model.name, std::move(tenant_ids),
                                                [engine] { return engine->Metrics(); });
    context.metrics = metrics.get();
  }
  std::unique_ptr<documents::DocumentService> documents;
  if (config->documents.enabled) {
    auto opened = documents::DocumentService::Open(config->documents, config->store,
                                                   {.scheduler = scheduler->get(),
                                                    .model = context.model,
                                                    .model_dir = config->model.path,
                                                    .kv_dtype = "f32"});
    if (!opened.ok()) return opened.status();
    documents = *std::move(opened);
    context.documents = documents.get();
    if (metrics != nullptr) {
      metrics->AddDocuments([service = documents.get()] { return service->Stats(); });
    }
  }
  std::unique_ptr<responses::ResponseStore> stored_responses;
  if (config->responses.store) {
    auto opened = OpenResponseStore(*config);
    if (!opened.ok()) return opened.status();
    stored_responses = *std::move(opened);
    context.responses = stored_responses.get();
  }
  if (metrics != nullptr && constraint_compiler != nullptr) {
    metrics->AddConstraintCompiles(
        [compiler = constraint_compiler.get()] { return compiler->stats(); });
  }
  if (metrics != nullptr) {
    metrics->AddResponseStore(
        [store = stored_responses.get()]() -> std::optional<cache_store::RedisCallStats> {
          return store == nullptr ? std::nullopt : store->SharedTierCalls();
        });
  }
  Router router;
  AddApiRoutes(router, context);
  anthropic::AddMessagesRoutes(router, context);
  responses::AddResponsesRoutes(router, context);
  AddDocumentRoutes(router, context);

  auto http = HttpServer::Create(HttpOptions(config->server), router);
  if (!http.ok()) return http.status();
  (*scheduler)->Start();
  std::unique_ptr<GrpcServer> grpc;
  if (config->server.grpc_port != 0) {
    auto started = GrpcServer::Start({.host = config->server.host,
                                      .port = config->server.grpc_port,
                                      .max_message_bytes = config->server.max_body_bytes,
                                      .max_metadata_bytes = config->server.max_header_bytes},
                                     context);
    if (!started.ok()) return started.status();
    grpc = *std::move(started);
    spdlog::info("serving gRPC on {}:{}", config->server.host, grpc->port());
  }
  (*http)->Start();
  context.ready = true;
  spdlog::info("serving {} on http://{}:{}", context.model.name, config->server.host,
               (*http)->port());

  while ((*signals)->Next() == SIGHUP) ReloadTenants(flags, tenants);
  if (grpc != nullptr) grpc->SetServing(false);  // health checks see the drain at once
  Drain(context, **signals, absl::Seconds(config->server.drain_timeout_seconds));
  (*http)->Stop();
  if (grpc != nullptr) grpc->Stop(absl::Seconds(1));
  // Compressions still running end failed; what finished is written and the store flushed.
  if (documents != nullptr) documents->Shutdown();
  (*scheduler)->Stop();
  return absl::OkStatus();
}

}  // namespace

void AddServeCommand(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* command = app.add_subcommand(
      "serve", "Serve the OpenAI-compatible HTTP API (SIGINT or SIGTERM stops it)");
  command->add_option("--config", flags->config_file, "YAML configuration file");
  command->add_option("--model", flags->model_dir, "Model directory (model.path)");
  command->add_option("--host", flags->host, "Address to listen on (server.host)");
  command->add_option("--port", flags->port, "HTTP port, 0 for any free one (server.port)");
  command->add_option("--grpc-port", flags->grpc_port, "gRPC port, 0 for none (server.grpc_port)");
  command->add_option("--data-dir", flags->data_dir, "Data directory (store.data_dir)");
  command->add_option("--replica", flags->replica,
                      "This replica's name, carried in its document ids (store.replica)");
  command->add_option("--backend", flags->backend, "cpu or cuda (model.backend)");
  command->add_option("--threads", flags->threads, "CPU threads, 0 for all (model.threads)");
  command
      ->add_option("--dtype", flags->dtype,
                   "Weight matrices in memory: auto, f32, bf16, f16, int8 or int4 (model.dtype)")
      ->check(CLI::IsMember(WeightTypeChoices()));
  command->add_option("--kv-events-topic", flags->kv_events_topic,
                      "First frame of each ZeroMQ KV event message (prefix_cache.kv_events_topic)");
  command->callback([flags] { ExitWith(RunServe(*flags)); });
}

}  // namespace kvd::server
