// CheckOperatorBuilds: see op_check.h.
#include "farmctl/op_check.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/firmware.h"
#include "base/data_roots.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "process/run_command.h"

namespace benchfarm::farmctl {
namespace {

// The host-process template's compiler flags (agent/templates/host-process/build, FLAGS).
const std::vector<std::string>& TemplateFlags() {
  static const auto* const flags =
      new std::vector<std::string>{"-std=c99",
                                   "-O2",
                                   "-Wall",
                                   "-Wextra",
                                   "-Wno-unused-parameter",
                                   "-fno-strict-aliasing",
                                   "-DTVM_CRT_MEMORY_POOL_SIZE_BYTES=(32*1024*1024)",
                                   "-DTVM_CRT_PAGE_BYTES=256"};
  return *flags;
}

// -I for crt/include and every crt/*/include, as the template.
std::vector<std::string> IncludeFlags(const std::string& crt) {
  std::vector<std::string> flags = {"-I", crt + "/include"};
  std::set<std::string> dirs;
  if (DIR* d = opendir(crt.c_str())) {
    while (struct dirent* e = readdir(d)) {
      const std::string include = absl::StrCat(crt, "/", e->d_name, "/include");
      if (e->d_name[0] != '.' && access(include.c_str(), F_OK) == 0) dirs.insert(include);
    }
    closedir(d);
  }
  for (const std::string& dir : dirs) flags.insert(flags.end(), {"-I", dir});
  return flags;
}

// The compiler's output with the user's files named where they are (they were compiled as
// user/NAME beside the generated sources).
std::string UserPaths(const std::string& output, const std::string& source_dir) {
  std::vector<std::string> lines = absl::StrSplit(output, '\n');
  const std::string dir = source_dir.empty() ? "" : source_dir + "/";
  for (std::string& line : lines) {
    if (absl::StartsWith(line, "user/")) line = dir + line.substr(5);
    for (const char* from : {"In file included from user/", "                 from user/"}) {
      if (absl::StartsWith(line, from)) {
        const size_t at = std::string(from).size() - 5;
        line = line.substr(0, at) + dir + line.substr(at + 5);
      }
    }
  }
  return absl::StrJoin(lines, "\n");
}

// A temporary directory, removed when this goes.
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        absl::StrCat(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp", "/farmctl-op-check.XXXXXX");
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    if (!path_.empty()) base::RemoveTree(path_);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The functions `object` defines as global symbols (nm -g --defined-only), or nullopt (skipped,
// said in *check) when nm cannot run.
absl::StatusOr<std::optional<std::set<std::string>>> DefinedFunctions(const std::string& object,
                                                                      const OpCheckOptions& options,
                                                                      OpCheck* check) {
  process::RunCommandOptions run;
  run.argv = {options.nm, "-g", "--defined-only", object};
  run.time_limit = options.time_limit;
  absl::StatusOr<process::CommandRun> nm =
      process::RunCommand(run, absl::InfiniteFuture(), "farmctl op add");
  if (!nm.ok() || !nm->succeeded()) {
    check->skipped.push_back(absl::StrCat(
        "the entry and reference were not looked up: ", options.nm, " did not run (",
        nm.ok() ? process::OutputForError(nm->output, nm->output_bytes) : nm.status().message(),
        ")"));
    return std::optional<std::set<std::string>>();
  }
  std::set<std::string> defined;
  for (absl::string_view line : absl::StrSplit(nm->output, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.size() == 3 && (words[1] == "T" || words[1] == "W")) {
      defined.insert(std::string(words[2]));
    }
  }
  return std::optional<std::set<std::string>>(std::move(defined));
}

}  // namespace

std::string FindCrtTree(const char* argv0) {
  const char* env = std::getenv("BENCHFARM_CRT");
  if (env != nullptr && env[0] != '\0') return env;
  const std::string knobs = base::FindDataFile(argv0, "crt/ops/knobs.json");
  if (knobs.empty()) return "";
  return knobs.substr(0, knobs.size() - std::string("/ops/knobs.json").size());
}

absl::StatusOr<OpCheck> CheckOperatorBuilds(const v1::Operator& op, const std::string& source_dir,
                                            const OpCheckOptions& options) {
  OpCheck check;
  if (options.crt_dir.empty() || access((options.crt_dir + "/include").c_str(), F_OK) != 0) {
    check.skipped.push_back(
        absl::StrCat("not compiled for the host: no crt tree (its headers) at \"", options.crt_dir,
                     "\" (set $BENCHFARM_CRT to a crt/ directory, or use ./farm install-bin's "
                     "farmctl)"));
    return check;
  }
  TempDir dir;
  if (dir.path().empty()) return absl::InternalError("cannot make a temporary directory");
  // What the agent compiles for this operator: the user's files under user/, the default instance
  // (entry and reference under the user's names) and the system library.
  const agent::BuildUnit unit = agent::UserOperatorUnit(op, {});
  RETURN_IF_ERROR(base::MakeDirs(dir.path() + "/user"));
  std::vector<std::string> sources;
  for (const auto& [name, content] : unit.files) {
    RETURN_IF_ERROR(base::WriteFile(absl::StrCat(dir.path(), "/", name), content));
    if (name.find('/') == std::string::npos && absl::EndsWith(name, ".c")) sources.push_back(name);
  }
  std::vector<std::string> objects;
  const std::vector<std::string> includes = IncludeFlags(options.crt_dir);
  for (const std::string& source : sources) {
    process::RunCommandOptions run;
    run.argv = {options.cc};
    run.argv.insert(run.argv.end(), TemplateFlags().begin(), TemplateFlags().end());
    run.argv.insert(run.argv.end(), includes.begin(), includes.end());
    const std::string object = absl::StrCat(absl::StripSuffix(source, ".c"), ".o");
    run.argv.insert(run.argv.end(), {"-c", source, "-o", object});
    run.working_dir = dir.path();
    run.time_limit = options.time_limit;
    absl::StatusOr<process::CommandRun> cc =
        process::RunCommand(run, absl::InfiniteFuture(), "farmctl op add");
    if (!cc.ok()) {
      check.skipped.push_back(absl::StrCat("not compiled for the host: no host C compiler (",
                                           options.cc, ": ", cc.status().message(), ")"));
      return check;
    }
    if (!cc->succeeded()) {
      const std::string output = UserPaths(cc->output, source_dir);
      std::vector<std::string> errors;
      for (absl::string_view line : absl::StrSplit(output, '\n')) {
        if (absl::StrContains(line, " error: ")) errors.emplace_back(line);
      }
      return absl::InvalidArgumentError(absl::StrCat(
          op.name(), " does not compile for the host (", options.cc, " ",
          absl::StrJoin(TemplateFlags(), " "), ", as the agent compiles it, its knobs at their ",
          "defaults)",
          cc->timed_out
              ? absl::StrCat(": the compiler ran past ", absl::FormatDuration(options.time_limit))
              : "",
          errors.empty()
              ? ""
              : absl::StrCat(": ", errors.size(), errors.size() == 1 ? " error" : " errors",
                             ":\n  ", absl::StrJoin(errors, "\n  ")),
          "\ncompiler output:\n", output, "nothing was sent to the tracker"));
    }
    objects.push_back(dir.path() + "/" + object);
  }
  check.compiled = true;
  // The default instance's object (bf_default.o) must define the entry and the reference.
  std::string instance;
  for (const std::string& object : objects) {
    if (absl::EndsWith(object, "/bf_default.o")) instance = object;
  }
  if (instance.empty()) return check;
  ASSIGN_OR_RETURN(std::optional<std::set<std::string>> defined,
                   DefinedFunctions(instance, options, &check));
  if (!defined.has_value()) return check;
  check.symbols_checked = true;
  std::vector<std::string> missing;
  for (const auto& [field, function] :
       {std::pair{"entry", op.spec().entry()},
        std::pair{"reference_entry", op.spec().reference_entry()}}) {
    if (!function.empty() && defined->count(function) == 0) {
      missing.push_back(absl::StrCat(field, " \"", function, "\""));
    }
  }
  if (!missing.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        op.name(), ": its sources (", absl::StrJoin(op.spec().sources(), ", "),
        ") define no function named by op.json's ", absl::StrJoin(missing, " or "),
        " (a function of the sources, not static: BF_OPS_DECLARE_PACKED(name) { ... }); they "
        "define ",
        defined->empty() ? "no function" : absl::StrJoin(*defined, ", "),
        "; nothing was sent to the tracker"));
  }
  return check;
}

}  // namespace benchfarm::farmctl
