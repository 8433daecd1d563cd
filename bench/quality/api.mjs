// The parts of kvd's HTTP API the benchmark drives: /v1/documents over plain fetch, questions
// over /v1/chat/completions with the official OpenAI SDK.
import { randomUUID } from 'node:crypto';
import { setTimeout as Sleep } from 'node:timers/promises';
import OpenAI, { APIError } from 'openai';

const kPollMs = 50;
const kMaxTokens = 8;  // values are 3-6 one-letter tokens, then <|eot_id|>

// A request that failed: its message names the request, the HTTP status and the answer's body,
// or why no answer came.
export class ApiError extends Error {}

// An error and the chain of its causes as one line ("fetch failed: connect ECONNREFUSED ...").
function Causes(error) {
  const parts = [];
  for (let e = error; e !== undefined && parts.length < 4; e = e.cause) {
    parts.push(String(e.message ?? e).replace(/\.$/, ''));
  }
  return parts.join(': ');
}

// An SDK error as text: the status and the answer's `error` object for an HTTP error (the SDK
// keeps only that part of a JSON body), else the message and its cause.
function SdkErrorText(error) {
  if (error instanceof APIError && error.status !== undefined) {
    const body = error.error === undefined ? error.message : JSON.stringify(error.error);
    return `HTTP ${error.status}: ${body}`;
  }
  return Causes(error);
}

// `body` as JSON text with its `keepkv.budget`, a fraction, written with its decimal point
// (`1.0`, not JSON.stringify's `1`): kvd reads an integer budget as a token count.
export function KeepKvBodyText(body) {
  const { keepkv, ...fields } = body;
  const { budget, ...rest } = keepkv;
  const fraction = Number.isInteger(budget) ? budget.toFixed(1) : String(budget);
  const others = Object.keys(rest).length === 0 ? '' : `,${JSON.stringify(rest).slice(1, -1)}`;
  return `${JSON.stringify(fields).slice(0, -1)},"keepkv":{"budget":${fraction}${others}}}`;
}

export class KvdApi {
  // `api_key`: '' sends no Authorization header. `timeout_s` bounds each request and each wait
  // for a document to become ready.
  constructor(base_url, api_key, timeout_s) {
    this.base_url = base_url.replace(/\/+$/, '');
    this.headers = { 'Content-Type': 'application/json' };
    if (api_key !== '') this.headers.Authorization = `Bearer ${api_key}`;
    this.timeout_ms = timeout_s * 1000;
    // The SDK insists on a key; without one, a null header drops its Authorization header.
    this.openai = new OpenAI({
      apiKey: api_key === '' ? 'unused' : api_key,
      baseURL: this.base_url,
      maxRetries: 0,
      timeout: this.timeout_ms,
      defaultHeaders: api_key === '' ? { Authorization: null } : {},
    });
  }

  // Sends one request under the base URL with fetch; returns the parsed JSON answer (null for
  // an empty body). Any status outside `ok_statuses` throws an ApiError with the body.
  async Request(method, path, body, ok_statuses) {
    const what = `${method} ${path}`;
    let response;
    let text;
    try {
      response = await fetch(`${this.base_url}${path}`, {
        method,
        headers: this.headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeout_ms),
      });
      text = await response.text();
    } catch (error) {
      throw new ApiError(`${what}: ${Causes(error)}`);
    }
    if (!ok_statuses.includes(response.status)) {
      throw new ApiError(`${what}: HTTP ${response.status}: ${text}`);
    }
    try {
      return text === '' ? null : JSON.parse(text);
    } catch {
      throw new ApiError(`${what}: HTTP ${response.status} with a body that is not JSON: ${text}`);
    }
  }

  async FirstModel() {
    try {
      const page = await this.openai.models.list();
      if (page.data.length === 0) throw new Error('no models listed');
      return page.data[0].id;
    } catch (error) {
      throw new ApiError(`GET /models: ${SdkErrorText(error)}`);
    }
  }

  // Uploads a document; returns the document object, whose status may still be 'processing'.
  // `compression`: {method, ratio, query?, kv_dtype?}.
  async Create(text, compression, metadata) {
    return this.Request('POST', '/documents', { text, compression, metadata }, [201, 202]);
  }

  // Polls a document created 'processing' until it is ready or failed; returns it then.
  async WaitReady(doc) {
    const deadline = performance.now() + this.timeout_ms;
    while (doc.status === 'processing') {
      if (performance.now() > deadline) {
        throw new ApiError(`document ${doc.id} still processing after ` +
                           `${this.timeout_ms / 1000} s (progress ${doc.progress})`);
      }
      await Sleep(kPollMs);
      doc = await this.Request('GET', `/documents/${encodeURIComponent(doc.id)}`, undefined, [200]);
    }
    if (doc.status !== 'ready' && doc.status !== 'failed') {
      throw new ApiError(`document ${doc.id}: unexpected status ${JSON.stringify(doc.status)}`);
    }
    return doc;
  }

  async Delete(id) {
    await this.Request('DELETE', `/documents/${encodeURIComponent(id)}`, undefined, [200, 204]);
  }

  // One greedy chat turn; returns {content ('' for none), prompt_tokens}. `documents`: ids of
  // stored documents the server places before the message, or undefined. `keepkv`: {budget,
  // method} with `budget` a fraction of the prompt's tokens in (0, 1]; null turns KeepKV off
  // whatever the tenant's default; undefined sends nothing.
  async Ask(model, content, { documents, keepkv } = {}) {
    const body = {
      model,
      messages: [{ role: 'user', content }],
      max_tokens: kMaxTokens,
      temperature: 0,
    };
    // Not OpenAI fields: the SDK sends the body object as it is, unknown keys included.
    if (documents !== undefined) body.documents = documents;
    const options = {};
    if (keepkv !== undefined) body.keepkv = keepkv;
    if (keepkv) {
      // A salt of its own: KeepKV would protect (never merge) a prefix that an earlier question
      // left in the prefix cache, and this measures KeepKV over the whole prompt.
      body.cache_salt = randomUUID();
      // The SDK's JSON.stringify writes the fraction 1.0 as `1`, which kvd reads as a budget of
      // one token; the SDK's `body` option sends this text instead, as it is.
      options.body = KeepKvBodyText(body);
      options.headers = { 'Content-Type': 'application/json' };
    }
    try {
      const answer = await this.openai.chat.completions.create(body, options);
      return {
        content: answer.choices[0]?.message?.content ?? '',
        prompt_tokens: answer.usage?.prompt_tokens ?? null,
      };
    } catch (error) {
      throw new ApiError(`POST /chat/completions: ${SdkErrorText(error)}`);
    }
  }

  // One greedy text completion of `prompt`, which continues the stored documents' caches when
  // `documents` names them; returns {content, prompt_tokens} as Ask does.
  async Complete(model, prompt, { documents } = {}) {
    const body = { model, prompt, max_tokens: kMaxTokens, temperature: 0 };
    if (documents !== undefined) body.documents = documents;
    try {
      const answer = await this.openai.completions.create(body);
      return {
        content: answer.choices[0]?.text ?? '',
        prompt_tokens: answer.usage?.prompt_tokens ?? null,
      };
    } catch (error) {
      throw new ApiError(`POST /completions: ${SdkErrorText(error)}`);
    }
  }

}
