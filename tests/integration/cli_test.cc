// `kvd` subcommands end to end on the bundled model: output on stdout only, errors as
// messages and exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/integration/kvd_binary.h"
#include "tests/support/source_dir.h"

namespace {

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `kvd ARGS` through the shell with stdout and stderr captured separately.
Result RunKvd(const std::string& args, const std::string& stdin_text = "") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kvd_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "stdin") << stdin_text;
  const std::string command = kvd::testing::KvdBinary() + " " + args + " <" +
                              (dir / "stdin").string() + " >" + (dir / "out").string() + " 2>" +
                              (dir / "err").string();
  const int status = std::system(command.c_str());
  Result result{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadAll(dir / "out"),
                ReadAll(dir / "err")};
  std::filesystem::remove_all(dir);
  return result;
}

const std::string kModel = kvd::test_support::SourceDir() + "/models/kvd-tiny";
const std::string kExample =
    kvd::test_support::SourceDir() + "/docs/examples/document_question.txt";

TEST(CliTest, GenerateAnswersAQuestionAboutADocument) {
  const Result result = RunKvd("generate --model " + kModel + " --prompt-file " + kExample +
                               " --temperature 0 --max-tokens 16");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "KSOHB");  // the value of key vig in the document; nothing else
  EXPECT_NE(result.err.find("prompt:"), std::string::npos);  // logs go to stderr
}

TEST(CliTest, GenerationStopsBeforeAStopString) {
  const Result result = RunKvd("generate -q --model " + kModel + " --prompt-file " + kExample +
                               " --temperature 0 --max-tokens 16 --stop OH --stop never");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "KS");
}

TEST(CliTest, PromptFromStdinEqualsPromptFromFile) {
  const Result from_file = RunKvd("generate -q --model " + kModel + " --prompt-file " + kExample +
                                  " --temperature 0 --max-tokens 16");
  const Result from_stdin =
      RunKvd("generate -q --model " + kModel + " --prompt-file - --temperature 0 --max-tokens 16",
             ReadAll(kExample));
  EXPECT_EQ(from_stdin.exit_code, 0) << from_stdin.err;
  EXPECT_EQ(from_stdin.out, from_file.out);
}

TEST(CliTest, SeededSamplingIsReproducible) {
  const std::string args = "generate -q --model " + kModel +
                           " --prompt 'the old river' --temperature 1.0 --top-p 0.9 --seed 7 "
                           "--max-tokens 24 --ignore-eos";
  const Result first = RunKvd(args);
  const Result second = RunKvd(args);
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_FALSE(first.out.empty());
  EXPECT_EQ(first.out, second.out);
}

TEST(CliTest, ErrorsAreMessagesWithExitCodes) {
  Result result = RunKvd("generate --model /nonexistent/model --prompt hi");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("kvd: /nonexistent/model/config.json: cannot open"), std::string::npos)
      << result.err;
  EXPECT_TRUE(result.out.empty());

  result = RunKvd("generate --model " + kModel + " --prompt hi --prompt-file x");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("either --prompt or --prompt-file"), std::string::npos) << result.err;

  result = RunKvd("generate --model " + kModel + " --prompt hi --top-p 3");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("top_p"), std::string::npos) << result.err;

  result = RunKvd("generate --model " + kModel + " --prompt hi --max-tokens 100000");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("context"), std::string::npos) << result.err;

  result = RunKvd("generate --no-such-flag");
  EXPECT_NE(result.exit_code, 0);

  result = RunKvd("");
  EXPECT_NE(result.exit_code, 0);
}

// The prompts a document is scored with, as the model reads them: chat framing on the bundled
// model; plain framing (BOS + the document) on a copy without a chat template; a configured
// repeat prompt shows up in the scoring input and changes the cache identity.
TEST(CliTest, DocumentPromptsShowWhatTheModelIsAskedUnderEachFraming) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kvd_cli_prompts_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "base");
  for (const char* name : {"config.json", "model.safetensors", "tokenizer.json"}) {
    std::filesystem::copy_file(std::filesystem::path(kModel) / name, dir / "base" / name);
  }
  nlohmann::json tokenizer_config =
      nlohmann::json::parse(std::ifstream(kModel + "/tokenizer_config.json"));
  tokenizer_config.erase("chat_template");
  std::ofstream(dir / "base" / "tokenizer_config.json") << tokenizer_config.dump();
  std::ofstream(dir / "config.yaml") << "documents:\n  repeat_prompt: \"\\n\\nCopy it.\"\n";

  const auto prompts = [](const std::string& args) {
    const Result result = RunKvd("document-prompts --text 'vig: QXTV' " + args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return nlohmann::json::parse(result.out, nullptr, false);
  };
  const nlohmann::json chat = prompts("--model " + kModel);
  const nlohmann::json plain = prompts("--model " + (dir / "base").string());
  const nlohmann::json copy_it =
      prompts("--model " + kModel + " --config " + (dir / "config.yaml").string());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(chat.is_object() && plain.is_object() && copy_it.is_object());

  EXPECT_EQ(chat["framing"], "chat");
  EXPECT_EQ(chat["document_cache"]["text"],
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nvig: QXTV");
  EXPECT_EQ(chat["scoring_first_chunk"]["text"],
            "\n\nRepeat the previous context exactly.<|eot_id|><|start_header_id|>assistant"
            "<|end_header_id|>\n\nvig: QXTV");
  EXPECT_EQ(plain["framing"], "plain");
  EXPECT_EQ(plain["document_cache"]["text"], "<|begin_of_text|>vig: QXTV");
  EXPECT_EQ(plain["scoring_first_chunk"]["text"],
            "\n\nRepeat the previous context exactly.\n\nAnswer: vig: QXTV");
  EXPECT_EQ(plain["question"]["text"], "\n\nQ:vig\n\nAnswer: ");
  EXPECT_EQ(copy_it["scoring_first_chunk"]["text"],
            "\n\nCopy it.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nvig: QXTV");
  EXPECT_NE(copy_it["tokenizer_digest"], chat["tokenizer_digest"]);
}

TEST(CliTest, HelpDescribesSubcommands) {
  const Result result = RunKvd("generate --help");
  EXPECT_EQ(result.exit_code, 0);
  for (const char* option :
       {"--model", "--prompt", "--prompt-file", "--max-tokens", "--temperature", "--top-k",
        "--top-p", "--min-p", "--seed", "--logit-bias"}) {
    EXPECT_NE(result.out.find(option), std::string::npos) << option;
  }
}

TEST(CliTest, HalfPrecisionAndQuantizedWeightsAnswerAsF32Does) {
  for (const char* dtype : {"bf16", "f16", "int8", "int4"}) {
    const Result result = RunKvd("generate -q --model " + kModel + " --prompt-file " + kExample +
                                 " --temperature 0 --max-tokens 16 --dtype " + dtype);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out, "KSOHB") << dtype;
  }
  const Result refused = RunKvd("generate -q --model " + kModel + " --prompt x --dtype int3");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("--dtype"), std::string::npos) << refused.err;
}

TEST(CliTest, InfoAndBenchSayWhichKernelsRun) {
  const Result info = RunKvd("info");
  EXPECT_EQ(info.exit_code, 0) << info.err;
  // The machine's name and threads come first: they tell the machine kinds apart in a record.
  EXPECT_NE(info.out.find("cpu: "), std::string::npos) << info.out;
  EXPECT_NE(info.out.find(" threads; features "), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("; matmul "), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("; attention "), std::string::npos) << info.out;
  const Result bench = RunKvd(
      "bench --matmul --matmul-rows 1,3 --matmul-out 64 --matmul-in 96 "
      "--matmul-mib 1");
  EXPECT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_NE(bench.out.find("read bandwidth"), std::string::npos) << bench.out;
  for (const char* row : {"| openblas | f32 | 1 |", "| scalar | bf16 | 3 |", "| scalar | f16 | 1 |",
                          "| scalar | int8 | 3 |", "| scalar | int4 | 1 |"}) {
    EXPECT_NE(bench.out.find(row), std::string::npos) << row << "\n" << bench.out;
  }
}

TEST(CliTest, BenchMeasuresAttentionOverEachLayoutAndCacheType) {
  const Result bench = RunKvd("bench --attention --attention-entries 5,40 --attention-mib 1");
  EXPECT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_NE(bench.out.find("read bandwidth"), std::string::npos) << bench.out;
  for (const char* row :
       {"| f32 | 5 | in order |", "| f32 | 40 | shuffled blocks |", "| bf16 | 5 | grown, in runs |",
        "| bf16 | 40 | shuffled runs |", "| f32 | 40 | grown, single blocks |"}) {
    EXPECT_NE(bench.out.find(row), std::string::npos) << row << "\n" << bench.out;
  }
  const Result refused = RunKvd("bench --attention --attention-entries 0");
  EXPECT_NE(refused.exit_code, 0);
}

TEST(CliTest, BenchPrintsAThroughputTable) {
  const Result result =
      RunKvd("bench --model " + kModel + " --batch 1,2 --prompt-tokens 16 --decode-tokens 4");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("| 1 |"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("| 2 |"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("of roofline"), std::string::npos) << result.out;
  // The step against STREAM's triad measured in the same run, the figure peers quote.
  EXPECT_NE(result.out.find("| of triad |"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find(", STREAM triad "), std::string::npos) << result.out;
  // Prefill's rate of work, against the cores' measured vector peak.
  EXPECT_NE(result.out.find("prefill GFLOP/s"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("vector peak on "), std::string::npos) << result.out;
  // The read's buffer and the resident memory say how much of them is in huge pages.
  EXPECT_NE(result.out.find("huge pages)"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("resident anonymous memory "), std::string::npos) << result.out;
}

}  // namespace
