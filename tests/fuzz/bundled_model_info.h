// The bundled model as the server's request parsers see it (engine::ServedModel), for the fuzz
// targets of request bodies: with its own chat template, and with one that takes tools in the
// hermes syntax (tests/data/chat_templates), whose forced calls compile through a constraint
// cache over the bundled vocabulary.
#pragma once

#include <fstream>
#include <sstream>

#include "fuzz_support.h"
#include "server/core/completion_params.h"
#include "structured/constraint_cache.h"
#include "tests/support/source_dir.h"

namespace kvd::fuzz {

inline const engine::ServedModel& BundledModelInfo() {
  static const engine::ServedModel* info = [] {
    const BundledModel& bundled = Bundled();
    return new engine::ServedModel{.config = &bundled.config,
                                   .tokenizer = bundled.tokenizer.get(),
                                   .chat_template = bundled.chat_template.get(),
                                   .name = "kvd-tiny"};
  }();
  return *info;
}

// The bundled model under the hermes tools template.
inline const engine::ServedModel& ToolsModelInfo() {
  static const engine::ServedModel* info = [] {
    std::ifstream in(kvd::test_support::SourceDir() +
                     "/tests/data/chat_templates/hermes_tools.jinja");
    std::stringstream source;
    source << in.rdbuf();
    auto chat_template = text::ChatTemplate::Parse(source.str(), "<|begin_of_text|>", "<|eot_id|>");
    RequireOk(chat_template.status(), "tests/data/chat_templates/hermes_tools.jinja");
    auto* model = new engine::ServedModel(BundledModelInfo());
    model->chat_template = chat_template->release();
    return model;
  }();
  return *info;
}

inline structured::ConstraintCache& BundledConstraints() {
  static structured::ConstraintCache* cache = [] {
    const BundledModel& bundled = Bundled();
    auto trie = structured::TokenTrie::Create(*bundled.tokenizer, bundled.config.eos_token_ids);
    RequireOk(trie.status(), "the bundled vocabulary's trie");
    return new structured::ConstraintCache(*std::move(trie));
  }();
  return *cache;
}

}  // namespace kvd::fuzz
