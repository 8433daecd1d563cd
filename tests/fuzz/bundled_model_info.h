// The bundled model as the server's request parsers see it (engine::ServedModel), for the fuzz
// targets of request bodies.
#pragma once

#include "fuzz_support.h"
#include "server/api/completion_params.h"

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

}  // namespace kvd::fuzz
