// The two ways load.mjs talks to kvd, behind one interface: the OpenAI HTTP API through the
// official OpenAI SDK (SSE), and kvd.v1.InferenceService/Generate through @grpc/grpc-js with
// the protos of this repository. Each client has
//   Stream(text, signal): an async iterable of {content, usage} per message of one streaming
//     request (content: the new text, possibly ''; usage: the final usage once it comes, else
//     null); aborting `signal` cancels the request;
//   Probe(text, timeout_ms): a 1-token request's usage.prompt_tokens, for prompt sizing;
//   ErrorKind(error): the kind load.mjs counts a failed request under, or null for "exception".
import { fileURLToPath } from 'node:url';

import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import OpenAI, { APIConnectionError, APIError } from 'openai';

function HttpBody(options, text) {
  const body = {
    model: options.model,
    max_tokens: options.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (options.chat) {
    body.messages = [{ role: 'user', content: text }];
  } else {
    body.prompt = text;
  }
  if (options.ignoreEos) body.ignore_eos = true;
  if (options.temperature !== '') body.temperature = options.temperature;
  return body;
}

export class HttpClient {
  constructor(options, api_key) {
    this.options = options;
    this.sdk = new OpenAI({
      apiKey: api_key,
      baseURL: options.baseUrl,
      maxRetries: 0,
      timeout: options.timeout * 1000,
    });
  }

  get address() { return this.options.baseUrl; }
  get endpoint() { return this.options.chat ? '/v1/chat/completions' : '/v1/completions'; }

  async *Stream(text, signal) {
    const { chat } = this.options;
    const body = HttpBody(this.options, text);
    const stream = chat
      ? await this.sdk.chat.completions.create(body, { signal })
      : await this.sdk.completions.create(body, { signal });
    for await (const chunk of stream) {
      const choice = chunk.choices?.[0];
      yield {
        content: (chat ? choice?.delta?.content : choice?.text) ?? '',
        usage: chunk.usage ?? null,
      };
    }
  }

  async Probe(text, timeout_ms) {
    const body = { model: this.options.model, max_tokens: 1 };
    if (this.options.chat) body.messages = [{ role: 'user', content: text }];
    else body.prompt = text;
    const answer = this.options.chat
      ? await this.sdk.chat.completions.create(body, { timeout: timeout_ms })
      : await this.sdk.completions.create(body, { timeout: timeout_ms });
    return answer.usage.prompt_tokens;
  }

  Close() {}

  // The HTTP status of an error answer; "connection"; "in-band" for an error event after the
  // 200.
  ErrorKind(error) {
    if (error instanceof APIError && error.status !== undefined) return String(error.status);
    if (error instanceof APIConnectionError) return 'connection';
    if (error instanceof APIError) return 'in-band';
    return null;
  }
}

// An error message after the stream started (GenerateResponse.error).
class InBandError extends Error {}

// kvd.v1 from proto/ of this repository, loaded once.
let kvd_v1 = null;
function KvdV1() {
  if (kvd_v1 === null) {
    const definition = protoLoader.loadSync('kvd/v1/inference.proto', {
      includeDirs: [fileURLToPath(new URL('../../proto', import.meta.url))],
      keepCase: true,
      longs: String,
      enums: String,
      defaults: false,
      oneofs: true,
    });
    kvd_v1 = grpc.loadPackageDefinition(definition).kvd.v1;
  }
  return kvd_v1;
}

// A Usage message as the HTTP API's usage object (proto3 leaves zeros out); null for none.
function Usage(usage) {
  if (!usage) return null;
  return {
    prompt_tokens: usage.prompt_tokens ?? 0,
    completion_tokens: usage.completion_tokens ?? 0,
    cached_tokens: usage.cached_tokens ?? 0,
  };
}

// One channel (one HTTP/2 connection) per client: concurrent requests are streams on it.
export class GrpcClient {
  constructor(options, api_key) {
    this.options = options;
    this.stub = new (KvdV1().InferenceService)(options.grpcTarget,
                                               grpc.credentials.createInsecure());
    this.metadata = new grpc.Metadata();
    this.metadata.set('authorization', `Bearer ${api_key}`);
  }

  get address() { return this.options.grpcTarget; }
  get endpoint() { return `kvd.v1.InferenceService/Generate (${this.options.chat ? 'chat' : 'prompt'})`; }

  Request(text, max_tokens) {
    const request = { model: this.options.model, max_tokens };
    if (this.options.chat) request.messages = { messages: [{ role: 'user', content: text }] };
    else request.prompt = text;
    return request;
  }

  async *Stream(text, signal) {
    const request = this.Request(text, this.options.maxTokens);
    if (this.options.ignoreEos) request.ignore_eos = true;
    if (this.options.temperature !== '') {
      request.sampling = { temperature: this.options.temperature };
    }
    const call = this.stub.Generate(request, this.metadata);
    const cancel = () => call.cancel();
    if (signal.aborted) cancel();
    signal.addEventListener('abort', cancel, { once: true });
    try {
      for await (const message of call) {
        if (message.kind === 'chunk') {
          yield { content: message.chunk.text ?? '', usage: null };
        } else if (message.kind === 'completion') {
          yield { content: '', usage: Usage(message.completion.usage) };
        } else if (message.kind === 'error') {
          throw new InBandError(`${message.error.code}: ${message.error.message}`);
        }
      }
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  }

  async Probe(text, timeout_ms) {
    const call = this.stub.Generate(this.Request(text, 1), this.metadata,
                                    { deadline: Date.now() + timeout_ms });
    let usage = null;
    for await (const message of call) {
      if (message.kind === 'completion') usage = Usage(message.completion.usage) ?? usage;
    }
    if (usage === null) throw new Error('the probe request ended without usage');
    return usage.prompt_tokens;
  }

  // The gRPC status code's name (RESOURCE_EXHAUSTED, UNAVAILABLE, ...); "in-band" for an error
  // message after the stream started.
  ErrorKind(error) {
    if (error instanceof InBandError) return 'in-band';
    if (typeof error?.code === 'number' && grpc.status[error.code] !== undefined) {
      return grpc.status[error.code];
    }
    return null;
  }

  Close() { this.stub.close(); }
}

export function CreateClient(options, api_key) {
  return options.protocol === 'grpc' ? new GrpcClient(options, api_key)
                                     : new HttpClient(options, api_key);
}
