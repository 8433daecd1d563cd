// The bundled model as the server's request parsers see it (server::ModelInfo), for the fuzz
// targets of request bodies.
#pragma once

#include "fuzz_support.h"
#include "server/api/completion_params.h"

namespace kvd::fuzz {

inline const server::ModelInfo& BundledModelInfo() {
  static const server::ModelInfo* info = [] {
    const BundledModel& bundled = Bundled();
    return new server::ModelInfo{.config = &bundled.config,
                                 .tokenizer = bundled.tokenizer.get(),
                                 .chat_template = bundled.chat_template.get(),
                                 .name = "kvd-tiny"};
  }();
  return *info;
}

}  // namespace kvd::fuzz
