// A board's core from its package's data: see board_core.h.
#include "agent/board_core.h"

#include <sys/stat.h>

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "catalog/trial.h"

namespace benchfarm::agent {
namespace {

// What may follow a value: blanks, then nothing or a comment.
bool IsTail(absl::string_view rest) {
  rest = absl::StripLeadingAsciiWhitespace(rest);
  return rest.empty() || rest[0] == '#';
}

// One line as crt/boards/build.sh reads it (its patterns: ^KEY="value" or ^KEY=value, KEY
// [A-Z][A-Z0-9_]*, an unquoted value without blanks, quotes or '#', then blanks and an optional
// comment). False when it is neither.
bool ParseLine(absl::string_view line, std::string* key, std::string* value) {
  size_t i = 0;
  if (line.empty() || !absl::ascii_isupper(static_cast<unsigned char>(line[0]))) return false;
  while (i < line.size() &&
         (absl::ascii_isupper(static_cast<unsigned char>(line[i])) ||
          absl::ascii_isdigit(static_cast<unsigned char>(line[i])) || line[i] == '_')) {
    ++i;
  }
  if (i == line.size() || line[i] != '=') return false;
  *key = std::string(line.substr(0, i));
  absl::string_view rest = line.substr(i + 1);
  if (!rest.empty() && rest[0] == '"') {
    const size_t close = rest.find('"', 1);
    if (close == absl::string_view::npos) return false;
    *value = std::string(rest.substr(1, close - 1));
    return IsTail(rest.substr(close + 1));
  }
  size_t end = 0;
  while (end < rest.size() && !absl::ascii_isspace(static_cast<unsigned char>(rest[end])) &&
         rest[end] != '"' && rest[end] != '#') {
    ++end;
  }
  *value = std::string(rest.substr(0, end));
  return IsTail(rest.substr(end));
}

// A crt/boards package's name, as build.sh accepts it.
bool IsPackageName(absl::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return name != "." && name != "..";
}

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ParseBoardConf(absl::string_view text) {
  std::map<std::string, std::string> conf;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    if (absl::EndsWith(line, "\r")) line.remove_suffix(1);
    if (IsTail(line)) continue;  // blank, or a comment
    std::string key, value;
    if (ParseLine(line, &key, &value)) {
      conf[key] = value;
      continue;
    }
    return absl::InvalidArgumentError(absl::StrCat("line ", number, ": not KEY=VALUE: ", line));
  }
  return conf;
}

absl::StatusOr<std::string> CoreOfCpuFlags(absl::string_view cpu_flags) {
  std::vector<std::string> cores;
  for (absl::string_view flag : absl::StrSplit(cpu_flags, ' ', absl::SkipWhitespace())) {
    if (absl::ConsumePrefix(&flag, "-mcpu=")) cores.emplace_back(flag);
  }
  if (cores.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("CPU_FLAGS \"", cpu_flags,
                                                   "\": ", cores.empty() ? "no" : "more than one",
                                                   " -mcpu= (the board's core)"));
  }
  if (cores[0].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CPU_FLAGS \"", cpu_flags, "\": -mcpu= is empty"));
  }
  if (std::string p = catalog::CpuNameProblem("CPU_FLAGS -mcpu", cores[0]); !p.empty()) {
    return absl::InvalidArgumentError(p);
  }
  return cores[0];
}

absl::StatusOr<std::string> BoardCore(const std::string& template_dir, const std::string& crt_dir) {
  const std::string package_file = template_dir + "/package";
  if (!IsFile(package_file)) return std::string();  // a host template: no core
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(package_file));
  // One line: the package's name (the build script reads it with `read -r`).
  const std::string package(
      absl::StripAsciiWhitespace(absl::string_view(text).substr(0, text.find('\n'))));
  if (!IsPackageName(package)) {
    return absl::InvalidArgumentError(absl::StrCat(
        package_file, ": \"", package,
        "\" is not a board package's name (a directory of crt/boards: letters, digits, . _ -)"));
  }
  const std::string conf_path = absl::StrCat(crt_dir, "/boards/", package, "/board.conf");
  if (!IsFile(conf_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat(package_file, ": no board package \"", package, "\" (no ", conf_path, ")"));
  }
  ASSIGN_OR_RETURN(std::string conf_text, base::ReadFile(conf_path));
  absl::StatusOr<std::map<std::string, std::string>> conf = ParseBoardConf(conf_text);
  if (!conf.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(conf_path, ": ", conf.status().message()));
  }
  auto flags = conf->find("CPU_FLAGS");
  if (flags == conf->end()) {
    return absl::InvalidArgumentError(absl::StrCat(conf_path, ": no CPU_FLAGS"));
  }
  absl::StatusOr<std::string> core = CoreOfCpuFlags(flags->second);
  if (!core.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(conf_path, ": ", core.status().message()));
  }
  return *core;
}

}  // namespace benchfarm::agent
