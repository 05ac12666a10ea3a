#include "tests/example_ops.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "catalog/operator.h"

namespace benchfarm::testing {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path, " (in the runfiles?)"));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

absl::StatusOr<v1::Operator> ExampleGemv(const std::function<std::string(std::string)>& edit) {
  const std::string dir = "deploy/examples/ops/gemv/";
  absl::StatusOr<std::string> manifest = ReadFile(dir + "op.json");
  if (!manifest.ok()) return manifest.status();
  absl::StatusOr<std::string> source = ReadFile(dir + "gemv.c");
  if (!source.ok()) return source.status();
  return catalog::OperatorFromManifest(*manifest,
                                       {{"gemv.c", edit ? edit(*source) : *std::move(source)}});
}

}  // namespace benchfarm::testing
