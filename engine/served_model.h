// What the layers above the engine need to know about the model being served: its shape, its
// tokenizer, its chat template (if any) and the name clients call it by. Borrowed pointers;
// the model outlives every user.
#pragma once

#include <string>

#include "engine/model_config.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace kvd::engine {

struct ServedModel {
  const ModelConfig* config = nullptr;
  const text::Tokenizer* tokenizer = nullptr;
  const text::ChatTemplate* chat_template = nullptr;  // null: chat is refused
  std::string name;
};

}  // namespace kvd::engine
