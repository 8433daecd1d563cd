#include "server/cli/info_command.h"

#include <cstdio>
#include <memory>
#include <string>

#include "engine/model_config.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/devices.h"
#include "server/cli/exit_status.h"
#include "server/version.h"

namespace kvd::server {
namespace {

absl::Status RunInfo(const std::string& model_dir) {
  std::printf("kvd %s\n", kVersion);
  auto devices = kernels::ListCudaDevices();
  if (!devices.ok()) {
    std::printf("cuda: unavailable (%s)\n", std::string(devices.status().message()).c_str());
  } else {
    std::printf("cuda: %zu device(s)\n", devices->size());
    for (const auto& device : *devices) {
      std::printf("  %d: %s, %.1f GiB, compute capability %d.%d\n", device.index,
                  device.name.c_str(), device.memory_bytes / double(1ull << 30),
                  device.compute_capability / 10, device.compute_capability % 10);
    }
  }
  std::printf("%s\n", kernels::cpu::CpuKernelSummary().c_str());
  if (model_dir.empty()) return absl::OkStatus();
  auto config = engine::LoadModelConfig(model_dir);
  if (!config.ok()) return config.status();
  std::printf(
      "model %s: %s, %d layers, hidden %d, %d query / %d kv heads of %d, intermediate %d, vocab "
      "%d, context %d\n",
      model_dir.c_str(), config->architecture.c_str(), config->num_layers, config->hidden_size,
      config->num_heads, config->num_kv_heads, config->head_dim, config->intermediate_size,
      config->vocab_size, config->max_position_embeddings);
  return absl::OkStatus();
}

}  // namespace

void AddInfoCommand(CLI::App& app) {
  auto model_dir = std::make_shared<std::string>();
  CLI::App* command =
      app.add_subcommand("info", "Show the build, the CUDA devices and a model's shape");
  command->add_option("--model", *model_dir, "A model directory to describe");
  command->callback([model_dir] { ExitWith(RunInfo(*model_dir)); });
}

}  // namespace kvd::server
