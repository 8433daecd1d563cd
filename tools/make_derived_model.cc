// make_derived_model: a model derived from another (engine/derived_model.h): its first layers,
// a draft model for speculative decoding (speculative.model), or a wider copy with the same
// outputs, a costlier target for such a draft in benchmarks.
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "engine/derived_model.h"

int main(int argc, char** argv) {
  CLI::App app("Writes a model derived from another: its first layers, or a wider copy");
  std::string from, out;
  int layers = 0;
  int mlp_factor = 0;
  app.add_option("--from", from, "The model directory to derive from")->required();
  app.add_option("--out", out, "The directory to write")->required();
  auto* prefix = app.add_option("--layers", layers, "Keep only this many of its first layers");
  auto* wider = app.add_option("--mlp-factor", mlp_factor,
                               "Multiply each MLP's width by this, the new channels zero");
  prefix->excludes(wider);
  app.require_option(1, 3);
  CLI11_PARSE(app, argc, argv);
  if (prefix->count() + wider->count() != 1) {
    std::fprintf(stderr, "make_derived_model: give --layers or --mlp-factor\n");
    return 2;
  }
  const absl::Status status = prefix->count() > 0
                                  ? kvd::engine::WriteLayerPrefixModel(from, out, layers)
                                  : kvd::engine::WriteWiderMlpModel(from, out, mlp_factor);
  if (!status.ok()) {
    std::fprintf(stderr, "make_derived_model: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
