// A test fixture holding the bundled model's config, tokenizer and chat template (loaded once
// per suite), and the engine::ServedModel that request parsing takes.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "engine/model_config.h"
#include "server/core/completion_params.h"
#include "tests/support/source_dir.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace kvd::server {

class TinyModelTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = kvd::test_support::SourceDir() + "/models/kvd-tiny";
    auto config = engine::LoadModelConfig(dir);
    ASSERT_TRUE(config.ok()) << config.status();
    config_ = new engine::ModelConfig(*config);
    auto tokenizer = text::Tokenizer::FromFile(dir + "/tokenizer.json");
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    tokenizer_ = tokenizer->release();
    auto chat_template = text::ChatTemplate::FromTokenizerConfig(dir);
    ASSERT_TRUE(chat_template.ok()) << chat_template.status();
    chat_template_ = chat_template->release();
  }
  static void TearDownTestSuite() {
    delete chat_template_;
    delete tokenizer_;
    delete config_;
  }

  // The served model "kvd-tiny", with `chat_template` in place of its own when given.
  static engine::ServedModel Model(const text::ChatTemplate* chat_template = nullptr) {
    return {config_, tokenizer_, chat_template != nullptr ? chat_template : chat_template_,
            "kvd-tiny"};
  }

  static inline engine::ModelConfig* config_ = nullptr;
  static inline text::Tokenizer* tokenizer_ = nullptr;
  static inline text::ChatTemplate* chat_template_ = nullptr;
};

}  // namespace kvd::server
