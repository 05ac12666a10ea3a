#include "tests/example_ops.h"

#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "catalog/operator.h"

namespace benchfarm::testing {

absl::StatusOr<v1::Operator> ExampleGemv(const std::function<std::string(std::string)>& edit) {
  const std::string dir = "deploy/examples/ops/gemv/";
  absl::StatusOr<std::string> manifest = base::ReadFile(dir + "op.json");
  if (!manifest.ok()) return manifest.status();
  absl::StatusOr<std::string> source = base::ReadFile(dir + "gemv.c");
  if (!source.ok()) return source.status();
  return catalog::OperatorFromManifest(*manifest,
                                       {{"gemv.c", edit ? edit(*source) : *std::move(source)}});
}

}  // namespace benchfarm::testing
