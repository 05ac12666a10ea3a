#include "agent/firmware.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "device/firmware_hash.h"
#include "device/flasher.h"
#include "device/run_command.h"
#include "base/status_macros.h"

namespace benchfarm::agent {
namespace {

bool IsCIdentifier(const std::string& s) {
  if (s.empty() || s.size() > 200 || absl::ascii_isdigit(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// (registered name, C symbol) pairs -> the system library: registry and entry point.
std::string SystemLibrary(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out;
  absl::StrAppend(&out, "static const TVMBackendPackedCFunc kBfFuncs[] = {\n");
  for (const auto& [name, symbol] : entries) absl::StrAppend(&out, "    ", symbol, ",\n");
  absl::StrAppend(&out, "};\n\n");
  // Bytes 0-1: the count, little-endian; then the names, each NUL-terminated; the literal's own
  // NUL ends the list.
  absl::StrAppend(&out, "static const TVMFuncRegistry kBfRegistry = {\n");
  absl::StrAppendFormat(&out, "    \"\\x%02x\" \"\\x%02x\"\n", entries.size() & 0xff,
                        (entries.size() >> 8) & 0xff);
  for (const auto& [name, symbol] : entries) absl::StrAppend(&out, "    \"", name, "\\0\"\n");
  absl::StrAppend(&out, "    , kBfFuncs};\n\n");
  absl::StrAppend(&out, "static const TVMModule kBfModule = {&kBfRegistry};\n\n");
  absl::StrAppend(&out,
                  "const TVMModule* TVMSystemLibEntryPoint(void) { return &kBfModule; }\n");
  return out;
}

std::string CommonIncludes(const KnobSpace& space) {
  std::string out =
      "#include <benchfarm/ops/reference.h>\n"
      "#include <tvm/runtime/c_backend_api.h>\n"
      "#include <tvm/runtime/crt/func_registry.h>\n"
      "#include <tvm/runtime/crt/module.h>\n";
  for (const v1::OpTemplate& op : space.proto().ops()) {
    absl::StrAppend(&out, "#include <", op.header(), ">\n");
  }
  return out;
}

void AddReferences(const KnobSpace& space, std::vector<std::pair<std::string, std::string>>* entries,
                   std::vector<std::string>* functions) {
  for (const v1::OpTemplate& op : space.proto().ops()) {
    entries->emplace_back(op.reference_entry(), op.reference_symbol());
    functions->push_back(op.reference_entry());
  }
}

absl::Status WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void RemoveTree(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir != nullptr) {
    while (struct dirent* e = readdir(dir)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::string child = path + "/" + name;
      struct stat st;
      if (lstat(child.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        RemoveTree(child);
      } else {
        unlink(child.c_str());
      }
    }
    closedir(dir);
  }
  rmdir(path.c_str());
}

// Every regular file under `root` (relative paths, sorted), skipping hidden entries.
void ListFiles(const std::string& root, const std::string& rel, std::vector<std::string>* out) {
  DIR* dir = opendir((root + "/" + rel).c_str());
  if (dir == nullptr) return;
  while (struct dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name.empty() || name[0] == '.') continue;
    std::string child = rel.empty() ? name : rel + "/" + name;
    struct stat st;
    if (stat((root + "/" + child).c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      ListFiles(root, child, out);
    } else if (S_ISREG(st.st_mode)) {
      out->push_back(child);
    }
  }
  closedir(dir);
}

}  // namespace

absl::Status MakeDirs(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("empty directory path");
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    std::string prefix = path.substr(0, pos);
    if (prefix.empty()) continue;
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::InternalError(absl::StrCat("mkdir ", prefix, ": ", strerror(errno)));
    }
  }
  return absl::OkStatus();
}

BuildUnit CandidatesUnit(const KnobSpace& space, const std::vector<Candidate>& candidates) {
  BuildUnit unit;
  std::string src =
      "/* Generated by the benchfarm agent: schedule candidates and the system library. */\n";
  absl::StrAppend(&src, CommonIncludes(space), "\n");
  std::vector<std::pair<std::string, std::string>> entries;
  std::set<std::string> seen;
  for (const Candidate& c : candidates) {
    if (!seen.insert(c.function).second) continue;
    absl::StrAppend(&src, c.instantiate, "\n");
    entries.emplace_back(c.function, c.function);
    unit.functions.push_back(c.function);
  }
  absl::StrAppend(&src, "\n");
  AddReferences(space, &entries, &unit.functions);
  absl::StrAppend(&src, SystemLibrary(entries));
  unit.files["candidates.c"] = src;
  return unit;
}

absl::StatusOr<BuildUnit> CSourceUnit(const KnobSpace& space, const v1::OperatorSpec& op) {
  if (!IsCIdentifier(op.entry_function())) {
    return absl::InvalidArgumentError(
        absl::StrCat("op.entry_function: \"", op.entry_function(), "\" is not a C identifier"));
  }
  for (const v1::OpTemplate& t : space.proto().ops()) {
    if (t.reference_entry() == op.entry_function()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "op.entry_function: \"", op.entry_function(), "\" is a reference kernel's name"));
    }
  }
  BuildUnit unit;
  unit.files["trial.c"] = op.c_source();
  std::string lib = "/* Generated by the benchfarm agent: the system library. */\n";
  absl::StrAppend(&lib, CommonIncludes(space), "\n");
  absl::StrAppend(&lib, "BF_OPS_DECLARE_PACKED(", op.entry_function(), ");\n\n");
  std::vector<std::pair<std::string, std::string>> entries = {
      {op.entry_function(), op.entry_function()}};
  unit.functions.push_back(op.entry_function());
  AddReferences(space, &entries, &unit.functions);
  absl::StrAppend(&lib, SystemLibrary(entries));
  unit.files["system_lib.c"] = lib;
  return unit;
}

ImageBuilder::ImageBuilder(ImageBuilderOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::string> ImageBuilder::CrtFingerprint() {
  absl::MutexLock lock(&mu_);
  if (!crt_fingerprint_.empty()) return crt_fingerprint_;
  std::vector<std::string> files;
  ListFiles(options_.crt_dir, "", &files);
  if (files.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the crt source tree \"", options_.crt_dir, "\" is empty or missing"));
  }
  std::sort(files.begin(), files.end());
  std::string all;
  for (const std::string& f : files) {
    ASSIGN_OR_RETURN(std::string content, ReadFile(options_.crt_dir + "/" + f));
    absl::StrAppend(&all, f, "\n", content.size(), "\n", content);
  }
  crt_fingerprint_ = device::HashBytes(all);
  return crt_fingerprint_;
}

absl::StatusOr<Image> ImageBuilder::Build(const std::string& template_dir, const BuildUnit& unit,
                                          absl::Time deadline) {
  const std::string script = template_dir + "/build";
  absl::StatusOr<std::string> script_text = ReadFile(script);
  if (!script_text.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("project template ", template_dir, ": no build script (", script, ")"));
  }
  ASSIGN_OR_RETURN(std::string crt, CrtFingerprint());
  // Two independent 64-bit hashes of everything that makes the image.
  std::string material = absl::StrCat(*script_text, "\n--crt ", crt, "\n");
  for (const auto& [name, content] : unit.files) {
    absl::StrAppend(&material, "--file ", name, " ", content.size(), "\n", content);
  }
  const std::string key =
      absl::StrCat(device::HashBytes(material), device::HashBytes(absl::StrCat("salt\n", material)));
  {
    absl::MutexLock lock(&mu_);
    auto free = [this, &key]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return in_flight_.count(key) == 0;
    };
    mu_.Await(absl::Condition(&free));
    in_flight_.insert(key);
  }
  absl::StatusOr<Image> image = BuildLocked(template_dir, unit, key, deadline);
  absl::MutexLock lock(&mu_);
  in_flight_.erase(key);
  return image;
}

absl::StatusOr<Image> ImageBuilder::BuildLocked(const std::string& template_dir,
                                                const BuildUnit& unit, const std::string& key,
                                                absl::Time deadline) {
  Image image;
  image.key = key;
  image.functions = unit.functions;
  const std::string dir = absl::StrCat(options_.cache_dir, "/images/", key);
  image.path = dir + "/image";
  struct stat st;
  if (stat(image.path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    ASSIGN_OR_RETURN(device::FirmwareImage fw, device::FirmwareImageFromFile(image.path));
    image.hash = fw.content_hash;
    image.cached = true;
    cache_hits_++;
    return image;
  }
  RETURN_IF_ERROR(MakeDirs(options_.cache_dir + "/images"));
  RETURN_IF_ERROR(MakeDirs(options_.scratch_dir));
  const std::string work =
      absl::StrCat(options_.scratch_dir, "/build-", key, "-", absl::Uniform<uint32_t>(absl::BitGen()));
  RETURN_IF_ERROR(MakeDirs(work));
  struct Cleanup {
    std::string path;
    ~Cleanup() { RemoveTree(path); }
  } cleanup{work};
  for (const auto& [name, content] : unit.files) RETURN_IF_ERROR(WriteFile(work + "/" + name, content));

  device::RunCommandOptions run;
  run.argv = {template_dir + "/build", work, work + "/image", options_.crt_dir, options_.cache_dir};
  run.working_dir = work;
  run.time_limit = options_.time_limit;
  const absl::Time start = absl::Now();
  absl::StatusOr<device::CommandRun> ran = device::RunCommand(run, deadline, "build");
  image.build_time = absl::Now() - start;
  if (!ran.ok()) {
    failed_++;
    if (absl::IsDeadlineExceeded(ran.status())) return ran.status();
    return absl::FailedPreconditionError(absl::StrCat("project template ", template_dir, ": ",
                                                      ran.status().message()));
  }
  const std::string output = device::OutputForError(ran->output, ran->output_bytes);
  if (ran->timed_out) {
    failed_++;
    return absl::DeadlineExceededError(absl::StrCat(
        "the build did not finish within ", absl::FormatDuration(options_.time_limit), output));
  }
  if (!ran->succeeded()) {
    failed_++;
    return absl::UnknownError(absl::StrCat(
        "compile failed (", ran->exit ? ran->exit->ToString() : std::string("no exit status"), ")",
        output));
  }
  if (stat((work + "/image").c_str(), &st) != 0) {
    failed_++;
    return absl::UnknownError(absl::StrCat("the build wrote no image", output));
  }
  // Into the cache in one rename: a reader sees the whole directory or none.
  const std::string staged = work + "/cache-entry";
  RETURN_IF_ERROR(MakeDirs(staged));
  // The image and what a cross template writes beside it: its firmware id (image.hash) and the
  // forms flash tools want (image.bin, image.hex).
  for (const char* suffix : {"", ".hash", ".bin", ".hex"}) {
    const std::string from = absl::StrCat(work, "/image", suffix);
    if (*suffix != '\0' && stat(from.c_str(), &st) != 0) continue;
    if (rename(from.c_str(), absl::StrCat(staged, "/image", suffix).c_str()) != 0) {
      return absl::InternalError(absl::StrCat("cannot stage ", from, ": ", strerror(errno)));
    }
  }
  if (rename(staged.c_str(), dir.c_str()) != 0 && errno != EEXIST && errno != ENOTEMPTY) {
    return absl::InternalError(absl::StrCat("cannot store the image in ", dir, ": ", strerror(errno)));
  }
  ASSIGN_OR_RETURN(device::FirmwareImage fw, device::FirmwareImageFromFile(image.path));
  image.hash = fw.content_hash;
  builds_++;
  return image;
}

}  // namespace benchfarm::agent
