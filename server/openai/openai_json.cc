#include "server/openai/openai_json.h"

#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "text/bounded_json.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

std::string TokenText(const text::Tokenizer& tokenizer, int32_t id) {
  auto bytes = tokenizer.TokenBytes(id);
  return bytes.ok() ? *std::move(bytes) : std::string();
}

json BytesJson(const std::string& text) {
  json bytes = json::array();
  for (unsigned char c : text) bytes.push_back(static_cast<int>(c));
  return bytes;
}

}  // namespace

json UsageJson(const scheduler::Usage& usage) {
  json result = {{"prompt_tokens", usage.prompt_tokens},
                 {"completion_tokens", usage.completion_tokens},
                 {"total_tokens", usage.total_tokens()}};
  if (usage.cached_tokens > 0) {
    result["prompt_tokens_details"] = {{"cached_tokens", usage.cached_tokens}};
  }
  return result;
}

json CompletionLogprobsJson(const text::Tokenizer& tokenizer,
                            const std::vector<engine::SampledToken>& tokens, size_t text_offset) {
  json result = {{"tokens", json::array()},
                 {"token_logprobs", json::array()},
                 {"top_logprobs", json::array()},
                 {"text_offset", json::array()}};
  size_t offset = text_offset;
  for (const engine::SampledToken& token : tokens) {
    const std::string text = TokenText(tokenizer, token.token);
    result["tokens"].push_back(text);
    result["token_logprobs"].push_back(token.logprob);
    json top = json::object();
    for (const engine::TokenLogprob& alternative : token.top_logprobs) {
      top[TokenText(tokenizer, alternative.token)] = alternative.logprob;
    }
    result["top_logprobs"].push_back(std::move(top));
    result["text_offset"].push_back(offset);
    offset += text.size();
  }
  return result;
}

json EchoedLogprobsJson(const text::Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                        const std::vector<engine::SampledToken>& prompt_logprobs,
                        const std::vector<engine::SampledToken>& completion, size_t echoed) {
  json tokens = json::array();
  json token_logprobs = json::array();
  json top_logprobs = json::array();
  json text_offset = json::array();
  // Offsets into the echoed text, which holds no special token's text (a BOS adds nothing).
  size_t offset = 0;
  for (size_t i = 0; i < prompt.size(); ++i) {
    const std::string text = TokenText(tokenizer, prompt[i]);
    tokens.push_back(text);
    text_offset.push_back(offset);
    if (!tokenizer.IsSpecial(prompt[i])) offset += text.size();
    if (i == 0 || i - 1 >= prompt_logprobs.size()) {
      token_logprobs.push_back(nullptr);
      top_logprobs.push_back(nullptr);
      continue;
    }
    const engine::SampledToken& scored = prompt_logprobs[i - 1];
    token_logprobs.push_back(scored.logprob);
    json top = json::object();
    // The token itself is listed among the alternatives, as OpenAI's legacy API did.
    top[text] = scored.logprob;
    for (const engine::TokenLogprob& alternative : scored.top_logprobs) {
      top[TokenText(tokenizer, alternative.token)] = alternative.logprob;
    }
    top_logprobs.push_back(std::move(top));
  }
  json result = {{"tokens", std::move(tokens)},
                 {"token_logprobs", std::move(token_logprobs)},
                 {"top_logprobs", std::move(top_logprobs)},
                 {"text_offset", std::move(text_offset)}};
  const json completion_part = CompletionLogprobsJson(tokenizer, completion, echoed);
  for (const auto& [key, values] : completion_part.items()) {
    result[key].insert(result[key].end(), values.begin(), values.end());
  }
  return result;
}

json PromptLogprobsJson(const text::Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                        const std::vector<engine::SampledToken>& scored) {
  json result = json::array();
  const auto entry = [&](int32_t token, float logprob, int32_t rank) {
    return json{
        {"logprob", logprob}, {"rank", rank}, {"decoded_token", TokenText(tokenizer, token)}};
  };
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (i == 0 || i - 1 >= scored.size()) {
      result.push_back(nullptr);
      continue;
    }
    const engine::SampledToken& token = scored[i - 1];
    json position = json::object();
    for (size_t k = 0; k < token.top_logprobs.size(); ++k) {
      const engine::TokenLogprob& alternative = token.top_logprobs[k];
      position[std::to_string(alternative.token)] =
          entry(alternative.token, alternative.logprob, static_cast<int32_t>(k + 1));
    }
    position[std::to_string(token.token)] = entry(token.token, token.logprob, token.rank);
    result.push_back(std::move(position));
  }
  return result;
}

json ChatLogprobsJson(const text::Tokenizer& tokenizer,
                      const std::vector<engine::SampledToken>& tokens) {
  json content = json::array();
  for (const engine::SampledToken& token : tokens) {
    const std::string text = TokenText(tokenizer, token.token);
    json top = json::array();
    for (const engine::TokenLogprob& alternative : token.top_logprobs) {
      const std::string alternative_text = TokenText(tokenizer, alternative.token);
      top.push_back({{"token", alternative_text},
                     {"logprob", alternative.logprob},
                     {"bytes", BytesJson(alternative_text)}});
    }
    content.push_back({{"token", text},
                       {"logprob", token.logprob},
                       {"bytes", BytesJson(text)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string DumpOrdered(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string SseData(const json& value) { return "data: " + Dump(value) + "\n\n"; }

std::string RandomId(std::string_view prefix) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  return absl::StrCat(std::string(prefix), absl::Hex(random(), absl::kZeroPad16),
                      absl::Hex(random() >> 32, absl::kZeroPad8));
}

}  // namespace kvd::server
