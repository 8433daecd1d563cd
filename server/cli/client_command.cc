#include "server/cli/client_command.h"

#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kvd/v1/documents.grpc.pb.h"
#include "kvd/v1/inference.grpc.pb.h"
#include "engine/sampling_fields.h"
#include "nlohmann/json.hpp"
#include "server/cli/exit_status.h"
#include "server/grpc/sampling_proto.h"

namespace kvd::server {
namespace {

using Json = nlohmann::json;

// Where to call and as whom; shared by every `kvd client` subcommand.
struct Connection {
  std::string target;   // HOST:PORT, or any gRPC target URI (dns:///..., unix:...)
  std::string api_key;  // sent as `authorization: Bearer <key>`; empty: none
};

struct GenerateOptions {
  Connection connection;
  std::string model;  // empty: the server's model (asked with ListModels)
  std::string prompt;
  std::string prompt_file;
  std::string chat;
  std::optional<int32_t> max_tokens;
  // By the rows of engine::kSamplingFields: the values given.
  std::array<std::optional<double>, std::size(engine::kSamplingFields)> sampling;
  std::optional<uint64_t> seed;
  bool ignore_eos = false;
  std::vector<std::string> documents;
  int64_t deadline_ms = 0;  // 0: none
  std::string request_id;
  // Structured outputs; at most one (the options exclude one another).
  std::string json_schema;  // a JSON Schema's text
  bool json_object = false;
  std::string regex;
  std::vector<std::string> choices;
};

struct UploadOptions {
  Connection connection;
  std::string file;
  std::string method;  // empty: the server's default
  std::optional<double> ratio;
  std::string kv_dtype;  // empty: the server's default
  bool merge = false;
  size_t chunk_bytes = 65536;
};

struct HealthOptions {
  Connection connection;
  std::string service;  // empty: the server as a whole
};

std::shared_ptr<grpc::Channel> OpenChannel(const Connection& connection) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(-1);  // the server bounds what it sends
  return grpc::CreateCustomChannel(connection.target, grpc::InsecureChannelCredentials(),
                                   arguments);
}

void Authorize(const Connection& connection, grpc::ClientContext& context) {
  if (!connection.api_key.empty()) {
    context.AddMetadata("authorization", absl::StrCat("Bearer ", connection.api_key));
  }
}

// A status from the server: its code, and a message that starts with the code's name (gRPC's
// and absl's codes are the same numbers).
absl::Status ServerStatus(int code, const std::string& message) {
  const auto absl_code = static_cast<absl::StatusCode>(code);
  return absl::Status(absl_code, absl::StrCat(absl::StatusCodeToString(absl_code), ": ", message));
}

// A call's status; the message ends with what kvd adds as trailing metadata
// (error_response.h): the parameter, kvd's error code and when to retry.
absl::Status FromGrpc(const grpc::Status& status, const grpc::ClientContext& context) {
  if (status.ok()) return absl::OkStatus();
  std::string message = status.error_message();
  std::vector<std::string> details;
  const auto& trailers = context.GetServerTrailingMetadata();
  static constexpr std::pair<const char*, const char*> kTrailers[] = {
      {"kvd-error-param", "param"}, {"kvd-error-code", "code"}, {"retry-after", "retry-after"}};
  for (const auto& [key, label] : kTrailers) {
    if (auto it = trailers.find(key); it != trailers.end()) {
      details.push_back(
          absl::StrCat(label, ": ", std::string(it->second.data(), it->second.size())));
    }
  }
  if (!details.empty()) absl::StrAppend(&message, " (", absl::StrJoin(details, ", "), ")");
  return ServerStatus(status.error_code(), message);
}

absl::StatusOr<std::string> ReadInput(const std::string& path) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), {});
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::string text{std::istreambuf_iterator<char>(in), {}};
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read failed"));
  return text;
}

// A new call's context: authorized, and with --deadline-ms (counted from `start`) if given.
std::unique_ptr<grpc::ClientContext> GenerateContext(const GenerateOptions& options,
                                                     std::chrono::system_clock::time_point start) {
  auto context = std::make_unique<grpc::ClientContext>();
  Authorize(options.connection, *context);
  if (options.deadline_ms > 0) {
    context->set_deadline(start + std::chrono::milliseconds(options.deadline_ms));
  }
  return context;
}

// --model, or the first (only) model the server lists.
absl::StatusOr<std::string> ModelOf(const GenerateOptions& options,
                                    v1::InferenceService::Stub& stub,
                                    std::chrono::system_clock::time_point start) {
  if (!options.model.empty()) return options.model;
  std::unique_ptr<grpc::ClientContext> context = GenerateContext(options, start);
  v1::ListModelsResponse models;
  const grpc::Status status = stub.ListModels(context.get(), v1::ListModelsRequest(), &models);
  if (!status.ok()) return FromGrpc(status, *context);
  if (models.models().empty()) return absl::NotFoundError("the server lists no model");
  return models.models(0).id();
}

absl::StatusOr<v1::GenerateRequest> BuildRequest(const GenerateOptions& options) {
  const int inputs = !options.prompt.empty() + !options.prompt_file.empty() + !options.chat.empty();
  if (inputs != 1) {
    return absl::InvalidArgumentError("give exactly one of --prompt, --prompt-file, --chat");
  }
  v1::GenerateRequest request;
  request.set_request_id(options.request_id);
  if (!options.chat.empty()) {
    v1::ChatMessage& message = *request.mutable_messages()->add_messages();
    message.set_role("user");
    message.set_content(options.chat);
  } else if (!options.prompt_file.empty()) {
    auto text = ReadInput(options.prompt_file);
    if (!text.ok()) return text.status();
    request.set_prompt(*std::move(text));
  } else {
    request.set_prompt(options.prompt);
  }
  if (options.max_tokens) request.set_max_tokens(*options.max_tokens);
  for (size_t i = 0; i < options.sampling.size(); ++i) {
    if (options.sampling[i]) {
      WriteSamplingProto(engine::kSamplingFields[i], *options.sampling[i],
                         *request.mutable_sampling());
    }
  }
  if (options.seed) request.mutable_sampling()->set_seed(*options.seed);
  request.set_ignore_eos(options.ignore_eos);
  for (const std::string& id : options.documents) request.add_documents(id);
  v1::StructuredOutput output;
  if (!options.json_schema.empty()) output.set_json_schema(options.json_schema);
  if (options.json_object) output.set_json_object(true);
  if (!options.regex.empty()) output.set_regex(options.regex);
  for (const std::string& choice : options.choices) {
    output.mutable_choice()->add_choices(choice);
  }
  if (output.kind_case() != v1::StructuredOutput::KIND_NOT_SET) {
    *request.mutable_structured_output() = std::move(output);
  }
  return request;
}

// A proto enum value's name without its prefix, in lower case: FINISH_REASON_STOP -> "stop".
std::string EnumWord(const std::string& name, std::string_view prefix) {
  return absl::AsciiStrToLower(name.starts_with(prefix) ? name.substr(prefix.size()) : name);
}

// Streams the text to stdout as chunks come; the finish reason and usage go to stderr.
absl::Status RunGenerate(const GenerateOptions& options) {
  auto request = BuildRequest(options);
  if (!request.ok()) return request.status();
  const auto start = std::chrono::system_clock::now();  // --deadline-ms covers both calls
  auto stub = v1::InferenceService::NewStub(OpenChannel(options.connection));
  auto model = ModelOf(options, *stub, start);
  if (!model.ok()) return model.status();
  request->set_model(*model);

  std::unique_ptr<grpc::ClientContext> context = GenerateContext(options, start);
  std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>> reader =
      stub->Generate(context.get(), *request);
  v1::GenerateResponse response;
  absl::Status in_band;  // an error message after the stream started
  bool wrote = false;
  while (reader->Read(&response)) {
    switch (response.kind_case()) {
      case v1::GenerateResponse::kChunk: {
        const std::string& text = response.chunk().text();
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        wrote = true;
        break;
      }
      case v1::GenerateResponse::kCompletion: {
        const v1::Completion& completion = response.completion();
        std::string line = absl::StrCat(
            "finish_reason: ",
            EnumWord(v1::FinishReason_Name(completion.finish_reason()), "FINISH_REASON_"));
        if (!completion.stop().empty()) absl::StrAppend(&line, " (stop: ", completion.stop(), ")");
        if (completion.has_usage()) {
          const v1::Usage& usage = completion.usage();
          absl::StrAppend(&line, ", prompt_tokens: ", usage.prompt_tokens(),
                          ", completion_tokens: ", usage.completion_tokens(),
                          ", cached_tokens: ", usage.cached_tokens());
        }
        std::fprintf(stderr, "%s\n", line.c_str());
        break;
      }
      case v1::GenerateResponse::kError:
        in_band = ServerStatus(response.error().code(), response.error().message());
        break;
      case v1::GenerateResponse::KIND_NOT_SET:
        break;
    }
  }
  const grpc::Status status = reader->Finish();
  if (wrote) std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!status.ok()) return FromGrpc(status, *context);
  return in_band;
}

// Client-streaming Upload: the header, then the file in pieces of --chunk-bytes.
absl::Status RunUpload(const UploadOptions& options) {
  auto text = ReadInput(options.file);
  if (!text.ok()) return text.status();
  auto stub = v1::DocumentService::NewStub(OpenChannel(options.connection));
  grpc::ClientContext context;
  Authorize(options.connection, context);
  v1::Document document;
  std::unique_ptr<grpc::ClientWriter<v1::UploadRequest>> writer = stub->Upload(&context, &document);
  v1::UploadRequest part;
  v1::Compression& compression = *part.mutable_header()->mutable_compression();
  compression.set_method(options.method);
  if (options.ratio) compression.set_ratio(*options.ratio);
  compression.set_kv_dtype(options.kv_dtype);
  compression.set_merge(options.merge);
  part.mutable_header()->set_text_bytes(static_cast<int64_t>(text->size()));
  // A failed write means the server already ended the call; Finish says why.
  bool open = writer->Write(part);
  for (size_t offset = 0; open && offset < text->size();) {
    // Pieces are bytes: they may split a character; the server joins them.
    const size_t length = std::min(options.chunk_bytes, text->size() - offset);
    part.set_text(text->substr(offset, length));
    open = writer->Write(part);
    offset += length;
  }
  if (open) writer->WritesDone();
  const grpc::Status status = writer->Finish();
  if (!status.ok()) return FromGrpc(status, context);
  Json line = {{"id", document.id()},
               {"status", EnumWord(v1::DocumentStatus_Name(document.status()), "DOCUMENT_STATUS_")},
               {"token_count", document.token_count()},
               {"kept_entries", document.kept_entries()},
               {"stored_bytes", document.stored_bytes()},
               {"method", document.method()},
               {"ratio", document.ratio()},
               {"kv_dtype", document.kv_dtype()},
               {"merge", document.merge()}};
  if (document.status() == v1::DOCUMENT_STATUS_PROCESSING) line["progress"] = document.progress();
  if (!document.failure_reason().empty()) line["failure_reason"] = document.failure_reason();
  std::printf("%s\n", line.dump().c_str());
  return absl::OkStatus();
}

// One JSON line per model.
absl::Status RunModels(const Connection& connection) {
  auto stub = v1::InferenceService::NewStub(OpenChannel(connection));
  grpc::ClientContext context;
  Authorize(connection, context);
  v1::ListModelsResponse models;
  const grpc::Status status = stub->ListModels(&context, v1::ListModelsRequest(), &models);
  if (!status.ok()) return FromGrpc(status, context);
  for (const v1::Model& model : models.models()) {
    const Json line = {{"id", model.id()},
                       {"max_model_len", model.max_model_len()},
                       {"owned_by", model.owned_by()}};
    std::printf("%s\n", line.dump().c_str());
  }
  return absl::OkStatus();
}

// grpc.health.v1.Health/Check. Debian's grpc++ ships no client stub for it, so the call goes
// through the generic stub with the two one-field messages encoded by hand:
// HealthCheckRequest {string service = 1}, HealthCheckResponse {ServingStatus status = 1}.
absl::Status RunHealth(const HealthOptions& options) {
  std::string request;
  if (!options.service.empty()) {
    google::protobuf::UnknownFieldSet fields;
    fields.AddLengthDelimited(1, options.service);
    if (!fields.SerializeToString(&request)) return absl::InternalError("cannot encode");
  }
  grpc::Slice slice(request);
  const grpc::ByteBuffer request_buffer(&slice, 1);
  grpc::ByteBuffer response_buffer;
  grpc::ClientContext context;
  Authorize(options.connection, context);
  grpc::GenericStub stub(OpenChannel(options.connection));
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request_buffer,
                 &response_buffer, [&done](grpc::Status status) { done.set_value(status); });
  const grpc::Status status = done.get_future().get();
  if (!status.ok()) return FromGrpc(status, context);

  grpc::Slice response_slice;
  if (!response_buffer.DumpToSingleSlice(&response_slice).ok()) {
    return absl::DataLossError("cannot read the health answer");
  }
  google::protobuf::UnknownFieldSet fields;
  if (!fields.ParseFromArray(response_slice.begin(), static_cast<int>(response_slice.size()))) {
    return absl::DataLossError("the health answer is not a HealthCheckResponse");
  }
  uint64_t serving_status = 0;  // UNKNOWN: proto3 leaves a zero out
  for (int i = 0; i < fields.field_count(); ++i) {
    const google::protobuf::UnknownField& field = fields.field(i);
    if (field.number() == 1 && field.type() == google::protobuf::UnknownField::TYPE_VARINT) {
      serving_status = field.varint();
    }
  }
  static const char* const kNames[] = {"UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"};
  const std::string name =
      serving_status < 4 ? kNames[serving_status] : absl::StrCat("STATUS_", serving_status);
  std::printf("%s\n", name.c_str());
  if (serving_status != 1) return absl::UnavailableError(absl::StrCat("UNAVAILABLE: ", name));
  return absl::OkStatus();
}

void AddConnectionOptions(CLI::App& command, Connection& connection) {
  command.add_option("--target", connection.target, "kvd's gRPC address, HOST:PORT")->required();
  command
      .add_option("--api-key", connection.api_key,
                  "API key, sent as 'authorization: Bearer KEY' (default: $KVD_API_KEY)")
      ->envname("KVD_API_KEY");
}

}  // namespace

void AddClientCommand(CLI::App& app) {
  CLI::App* client = app.add_subcommand(
      "client", "Call a running kvd over gRPC (kvd.v1): generate, upload, models, health");
  client->require_subcommand(1);

  auto generate = std::make_shared<GenerateOptions>();
  CLI::App* generate_command = client->add_subcommand(
      "generate", "Stream a completion: the text to stdout, finish reason and usage to stderr");
  AddConnectionOptions(*generate_command, generate->connection);
  generate_command->add_option("--model", generate->model, "Model id (default: the server's)");
  generate_command->add_option("--prompt", generate->prompt, "Prompt text (a completion)");
  generate_command->add_option("--prompt-file", generate->prompt_file,
                               "Read the prompt from FILE ('-': stdin)");
  generate_command->add_option("--chat", generate->chat,
                               "One user message of a chat (the model's chat template)");
  generate_command->add_option("--max-tokens", generate->max_tokens, "Tokens to generate at most")
      ->check(CLI::PositiveNumber);
  for (size_t i = 0; i < generate->sampling.size(); ++i) {
    const engine::SamplingField& field = engine::kSamplingFields[i];
    generate_command->add_option(engine::SamplingFlag(field), generate->sampling[i],
                                 engine::SamplingHelp(field));
  }
  generate_command->add_option("--seed", generate->seed, "Seed for reproducible sampling");
  generate_command->add_flag("--ignore-eos", generate->ignore_eos,
                             "Keep generating past end-of-sequence");
  generate_command->add_option("--documents", generate->documents,
                               "A stored document's id: the input continues it");
  generate_command
      ->add_option("--deadline-ms", generate->deadline_ms,
                   "Deadline of the call in milliseconds (0: none)")
      ->check(CLI::NonNegativeNumber);
  generate_command->add_option("--request-id", generate->request_id,
                               "Name of the request, for Abort");
  CLI::Option* json_schema = generate_command->add_option(
      "--json-schema", generate->json_schema, "The output is an instance of this JSON Schema");
  CLI::Option* json_object =
      generate_command->add_flag("--json-object", generate->json_object,
                                 "The output is a JSON object");
  CLI::Option* regex = generate_command->add_option(
      "--regex", generate->regex, "The output matches this regular expression");
  CLI::Option* choice = generate_command
                            ->add_option("--choice", generate->choices,
                                         "The output is exactly one of these strings")
                            ->delimiter(',');
  CLI::Option* const structured[] = {json_schema, json_object, regex, choice};
  for (CLI::Option* a : structured) {
    for (CLI::Option* b : structured) {
      if (a != b) a->excludes(b);
    }
  }
  generate_command->callback([generate] { ExitWith(RunGenerate(*generate)); });

  auto upload = std::make_shared<UploadOptions>();
  CLI::App* upload_command = client->add_subcommand(
      "upload", "Upload a document (client-streaming); prints its id and status as JSON");
  AddConnectionOptions(*upload_command, upload->connection);
  upload_command->add_option("--file", upload->file, "The document's text ('-': stdin)")
      ->required();
  upload_command->add_option(
      "--method", upload->method,
      "none, kvzip, kvzip_heads, snapkv, h2o, streaming (default: the server's)");
  upload_command->add_option("--ratio", upload->ratio, "Fraction of KV entries kept, (0, 1]");
  upload_command->add_option("--kv-dtype", upload->kv_dtype,
                             "Precision the cache is stored in: f32, bf16, int8 (default: the "
                             "server's)");
  upload_command->add_flag(
      "--merge", upload->merge,
      "Fold the entries the cut drops into the kept ones (kvzip, kvzip_heads)");
  upload_command
      ->add_option("--chunk-bytes", upload->chunk_bytes, "Bytes of text per streamed message")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  upload_command->callback([upload] { ExitWith(RunUpload(*upload)); });

  auto models = std::make_shared<Connection>();
  CLI::App* models_command = client->add_subcommand("models", "List the served models as JSON");
  AddConnectionOptions(*models_command, *models);
  models_command->callback([models] { ExitWith(RunModels(*models)); });

  auto health = std::make_shared<HealthOptions>();
  CLI::App* health_command = client->add_subcommand(
      "health", "grpc.health.v1 Check: prints SERVING (exit 0) or another status (exit 1)");
  AddConnectionOptions(*health_command, health->connection);
  health_command->add_option("--service", health->service,
                             "Service name, e.g. kvd.v1.InferenceService (default: the server)");
  health_command->callback([health] { ExitWith(RunHealth(*health)); });
}

}  // namespace kvd::server
