#include "agent/firmware.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "base/content_hash.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "catalog/cflags.h"
#include "catalog/knob_space.h"
#include "catalog/trial.h"
#include "device/flasher.h"
#include "process/run_command.h"
#include "process/sandbox.h"
#include "spdlog/spdlog.h"

namespace benchfarm::agent {

using base::MakeDirs;
using base::ReadFile;
using base::RemoveTree;
using base::WriteFile;

namespace {

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
  absl::StrAppend(&out, "const TVMModule* TVMSystemLibEntryPoint(void) { return &kBfModule; }\n");
  return out;
}

std::string CommonIncludes(const catalog::KnobSpace& space) {
  std::string out =
      "#include <benchfarm/ops/reference.h>\n"
      "#include <tvm/runtime/c_backend_api.h>\n"
      "#include <tvm/runtime/crt/func_registry.h>\n"
      "#include <tvm/runtime/crt/module.h>\n";
  for (const v1::Operator& op : space.ops()) {
    absl::StrAppend(&out, "#include <", op.spec().header(), ">\n");
  }
  return out;
}

void AddReferences(const catalog::KnobSpace& space,
                   std::vector<std::pair<std::string, std::string>>* entries,
                   std::vector<std::string>* functions) {
  for (const v1::Operator& op : space.ops()) {
    entries->emplace_back(op.spec().reference_entry(), op.spec().reference_symbol());
    functions->push_back(op.spec().reference_entry());
  }
}

// Removes the tree at `path` when it goes out of scope, unless `path` was cleared.
struct RemoveOnExit {
  std::string path;
  ~RemoveOnExit() {
    if (!path.empty()) RemoveTree(path);
  }
};

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

absl::StatusOr<Candidate> ResolveCandidate(const catalog::KnobSpace& space,
                                           const v1::TemplateOperator& op) {
  const v1::Operator* entry = space.Find(op.op());
  if (entry == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("op.template_op.op: unknown operator \"", op.op(), "\""));
  }
  Candidate c;
  c.op = &entry->spec();
  ASSIGN_OR_RETURN(c.knobs, catalog::ResolveKnobs(*c.op, op.knobs()));
  c.function = absl::StrCat("bf_cand_", op.op());
  std::vector<std::pair<std::string, std::string>> replacements;
  for (const auto& [name, value] : c.knobs) {
    // A C identifier: integer knobs may be negative, a cflag knob's values are options.
    absl::StrAppend(&c.function, "_",
                    catalog::FunctionPiece(*catalog::FindKnob(*c.op, name), value));
    replacements.emplace_back(absl::StrCat("{", name, "}"), value);
  }
  c.cflags = catalog::CandidateCflags(*c.op, c.knobs);
  replacements.emplace_back("{fn}", c.function);
  c.instantiate = absl::StrReplaceAll(c.op->instantiate(), replacements);
  return c;
}

BuildUnit CandidatesUnit(const catalog::KnobSpace& space,
                         const std::vector<Candidate>& candidates) {
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

namespace {

// The translation unit of one instance of a user operator: its knobs defined, its functions
// renamed (an empty name keeps the user's), each source included.
std::string UserInstance(const v1::Operator& op,
                         const std::vector<std::pair<std::string, std::string>>& knobs,
                         const std::string& entry_as, const std::string& reference_as) {
  const v1::OpTemplate& spec = op.spec();
  std::string src = absl::StrCat("/* Generated by the benchfarm agent: ", op.name(), " version ",
                                 op.version(), " with");
  for (const auto& [name, value] : knobs) absl::StrAppend(&src, " ", name, "=", value);
  absl::StrAppend(&src, ". */\n");
  for (const auto& [name, value] : knobs) {
    const v1::Knob* knob = catalog::FindKnob(spec, name);
    if (knob != nullptr && knob->cflag()) continue;  // options of its compile (AddCflags)
    absl::StrAppend(&src, "#define BF_KNOB_", name, " ", value, "\n");
    if (!value.empty() && !absl::ascii_isdigit(static_cast<unsigned char>(value[0])) &&
        value[0] != '-') {
      absl::StrAppend(&src, "#define BF_KNOB_", name, "_", value, " 1\n");
    }
  }
  if (!entry_as.empty()) absl::StrAppend(&src, "#define ", spec.entry(), " ", entry_as, "\n");
  if (!reference_as.empty() && !spec.reference_entry().empty()) {
    absl::StrAppend(&src, "#define ", spec.reference_entry(), " ", reference_as, "\n");
  }
  for (const std::string& file : spec.sources()) {
    absl::StrAppend(&src, "#include \"user/", file, "\"\n");
  }
  return src;
}

// The compile options of `source` as a file beside it (see BuildUnit::files); nothing without
// any, so the sources of an operator without options are what they were before options existed.
void AddCflags(const std::string& source, const std::vector<std::string>& cflags, BuildUnit* unit) {
  if (cflags.empty()) return;
  unit->files[source + ".cflags"] = absl::StrCat(absl::StrJoin(cflags, "\n"), "\n");
}

}  // namespace

BuildUnit UserOperatorUnit(const v1::Operator& op, const std::vector<Candidate>& candidates) {
  BuildUnit unit;
  const v1::OpTemplate& spec = op.spec();
  for (const auto& [name, content] : op.files()) unit.files["user/" + name] = content;
  std::vector<std::pair<std::string, std::string>> entries;
  std::set<std::string> seen;
  for (const Candidate& c : candidates) {
    if (!seen.insert(c.function).second) continue;
    unit.files[c.function + ".c"] =
        UserInstance(op, c.knobs, c.function, absl::StrCat(c.function, "_unused_reference"));
    AddCflags(c.function + ".c", c.cflags, &unit);
    entries.emplace_back(c.function, c.function);
    unit.functions.push_back(c.function);
  }
  // The default instance: the entry and the reference under the user's names.
  std::vector<std::pair<std::string, std::string>> defaults;
  for (const v1::Knob& k : spec.knobs())
    defaults.emplace_back(k.name(), catalog::ValueText(k.default_()));
  unit.files["bf_default.c"] = UserInstance(op, defaults, "", "");
  AddCflags("bf_default.c", catalog::CandidateCflags(spec, defaults), &unit);
  entries.emplace_back(spec.entry(), spec.entry());
  unit.functions.push_back(spec.entry());
  if (!spec.reference_entry().empty()) {
    entries.emplace_back(spec.reference_entry(), spec.reference_entry());
    unit.functions.push_back(spec.reference_entry());
  }
  std::string lib = "/* Generated by the benchfarm agent: the system library. */\n";
  absl::StrAppend(&lib,
                  "#include <benchfarm/ops/common.h>\n"
                  "#include <tvm/runtime/c_backend_api.h>\n"
                  "#include <tvm/runtime/crt/func_registry.h>\n"
                  "#include <tvm/runtime/crt/module.h>\n\n");
  for (const auto& [name, symbol] : entries) {
    absl::StrAppend(&lib, "BF_OPS_DECLARE_PACKED(", symbol, ");\n");
  }
  absl::StrAppend(&lib, "\n", SystemLibrary(entries));
  unit.files["system_lib.c"] = lib;
  return unit;
}

absl::StatusOr<BuildUnit> CSourceUnit(const catalog::KnobSpace& space, const v1::OperatorSpec& op) {
  if (!catalog::IsCIdentifier(op.entry_function())) {
    return absl::InvalidArgumentError(
        absl::StrCat("op.entry_function: \"", op.entry_function(), "\" is not a C identifier"));
  }
  for (const v1::Operator& t : space.ops()) {
    if (t.spec().reference_entry() == op.entry_function()) {
      return absl::InvalidArgumentError(absl::StrCat("op.entry_function: \"", op.entry_function(),
                                                     "\" is a reference kernel's name"));
    }
  }
  BuildUnit unit;
  unit.files["trial.c"] = op.c_source();
  AddCflags("trial.c", {op.cflags().begin(), op.cflags().end()}, &unit);
  std::string lib = "/* Generated by the benchfarm agent: the system library. */\n";
  absl::StrAppend(&lib, CommonIncludes(space), "\n");
  absl::StrAppend(&lib, "BF_OPS_DECLARE_PACKED(", op.entry_function(), ");\n");
  std::vector<std::pair<std::string, std::string>> entries = {
      {op.entry_function(), op.entry_function()}};
  unit.functions.push_back(op.entry_function());
  // A reference that is not a built-in one is the trial's own, defined in its source.
  const std::string& reference = op.reference_function();
  bool builtin_reference = reference.empty();
  for (const v1::Operator& t : space.ops()) {
    builtin_reference = builtin_reference || t.spec().reference_entry() == reference;
  }
  if (!builtin_reference) {
    if (!catalog::IsCIdentifier(reference) || reference == op.entry_function()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "op.reference_function: \"", reference, "\" is not a C identifier other than the entry"));
    }
    absl::StrAppend(&lib, "BF_OPS_DECLARE_PACKED(", reference, ");\n");
    entries.emplace_back(reference, reference);
    unit.functions.push_back(reference);
  }
  absl::StrAppend(&lib, "\n");
  AddReferences(space, &entries, &unit.functions);
  absl::StrAppend(&lib, SystemLibrary(entries));
  unit.files["system_lib.c"] = lib;
  return unit;
}

namespace {

// Where the sandboxed build sees its inputs and outputs.
constexpr char kTemplateIn[] = "/bf/template";
constexpr char kCrtIn[] = "/bf/crt";
constexpr char kCacheIn[] = "/bf/cache";
constexpr char kWorkIn[] = "/bf/work";
// The files of a cache entry: the image and what a template writes beside it — its debug
// information (image.debug: the image unstripped, what faults are named with), and a cross
// template's firmware id (image.hash), the forms flash tools want (image.bin, image.hex) and what
// an emulated board's cycle model needs (image.timing).
constexpr const char* kEntrySuffixes[] = {"", ".debug", ".hash", ".bin", ".hex", ".timing"};
constexpr char kManifest[] = "MANIFEST";

// The entry's file with debug information: image.debug, or the image itself.
std::string DebugPath(const std::string& dir) {
  struct stat st;
  const std::string debug = dir + "/image.debug";
  return lstat(debug.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? debug : dir + "/image";
}

std::string Sha256Hex(absl::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) absl::StrAppendFormat(&hex, "%02x", md[i]);
  return hex;
}

// A file the sandbox wrote, opened only if it is a regular file itself (never through a symbolic
// link, never a FIFO or device), with its size from fstat: nothing is read until Read().
class UntrustedFile {
 public:
  // NotFound if it is not there; Unknown if it cannot be opened or is not a regular file.
  static absl::StatusOr<UntrustedFile> Open(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("no ", path));
      return absl::UnknownError(
          absl::StrCat("the build's ", path, " cannot be read: ", strerror(errno)));
    }
    UntrustedFile file(path, fd);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      return absl::UnknownError(absl::StrCat("the build's ", path, " is not a regular file"));
    }
    file.size_ = st.st_size;
    return file;
  }
  UntrustedFile(UntrustedFile&& other)
      : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}
  UntrustedFile& operator=(UntrustedFile&&) = delete;
  ~UntrustedFile() {
    if (fd_ >= 0) close(fd_);
  }

  int64_t size() const { return size_; }

  // Its size() bytes; Unknown if it is no longer that size.
  absl::StatusOr<std::string> Read() const {
    std::string content(static_cast<size_t>(size_), '\0');
    size_t done = 0;
    while (done < content.size()) {
      const ssize_t n = pread(fd_, content.data() + done, content.size() - done, done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    char more;
    if (done != content.size() || pread(fd_, &more, 1, done) != 0) {
      return absl::UnknownError(absl::StrCat("the build's ", path_, " changed while read"));
    }
    return content;
  }

 private:
  UntrustedFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_;
  int64_t size_ = 0;
};

// An untrusted file's content if it has at most `max` bytes. NotFound if it is not there.
absl::StatusOr<std::string> ReadUntrustedFile(const std::string& path, int64_t max) {
  ASSIGN_OR_RETURN(UntrustedFile file, UntrustedFile::Open(path));
  if (file.size() > max) {
    return absl::UnknownError(
        absl::StrCat("the build's ", path, " has ", file.size(), " bytes, more than ", max));
  }
  return file.Read();
}

// Directories 0755, files 0644 (0755 if executable), below and at `path`; symbolic links are
// left alone.
void MakeReadable(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) return;
  if (!S_ISDIR(st.st_mode)) {
    chmod(path.c_str(), (st.st_mode & 0111) != 0 ? 0755 : 0644);
    return;
  }
  chmod(path.c_str(), 0755);
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return;
  while (struct dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") MakeReadable(path + "/" + name);
  }
  closedir(dir);
}

struct TreeFile {
  std::string rel;
  std::string content;
  mode_t mode;
};

// Every regular file under `root` (symbolic links followed), with its content and whether it is
// executable, sorted; and a hash of all of it.
absl::Status ReadTree(const std::string& root, std::vector<TreeFile>* files, std::string* hash) {
  std::vector<std::string> names;
  ListFiles(root, "", &names);
  std::sort(names.begin(), names.end());
  std::string all;
  for (const std::string& name : names) {
    const std::string path = root + "/" + name;
    struct stat st;
    if (stat(path.c_str(), &st) != 0) continue;
    ASSIGN_OR_RETURN(std::string content, ReadFile(path));
    const mode_t mode = (st.st_mode & 0111) != 0 ? 0755 : 0644;
    absl::StrAppend(&all, name, "\n", mode, " ", content.size(), "\n", content);
    files->push_back({name, std::move(content), mode});
  }
  *hash = Sha256Hex(all).substr(0, 32);
  return absl::OkStatus();
}

// Writes `files` as the directory `dir` (staged beside it, then renamed into place), unless it
// exists already. The staged directory is removed whatever happens.
absl::Status WriteTree(const std::string& dir, const std::vector<TreeFile>& files) {
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) return absl::OkStatus();
  const size_t slash = dir.rfind('/');
  const std::string staged =
      absl::StrCat(dir.substr(0, slash), "/.staging-", absl::Uniform<uint32_t>(absl::BitGen()));
  RemoveOnExit cleanup{staged};
  RETURN_IF_ERROR(MakeDirs(staged));
  for (const TreeFile& f : files) {
    const size_t sep = f.rel.rfind('/');
    if (sep != std::string::npos) RETURN_IF_ERROR(MakeDirs(staged + "/" + f.rel.substr(0, sep)));
    const std::string path = staged + "/" + f.rel;
    RETURN_IF_ERROR(WriteFile(path, f.content));
    chmod(path.c_str(), f.mode);
  }
  if (rename(staged.c_str(), dir.c_str()) != 0) {
    const int err = errno;
    if (err != EEXIST && err != ENOTEMPTY) {
      return absl::InternalError(absl::StrCat("cannot store ", dir, ": ", strerror(err)));
    }
    return absl::OkStatus();
  }
  cleanup.path.clear();
  return absl::OkStatus();
}

// The bytes of the regular files in `dir` (not below).
int64_t DirBytes(const std::string& dir) {
  int64_t bytes = 0;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return 0;
  while (struct dirent* e = readdir(d)) {
    struct stat st;
    if (lstat(absl::StrCat(dir, "/", e->d_name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      bytes += st.st_size;
    }
  }
  closedir(d);
  return bytes;
}

// The names in `dir` that `keep` selects.
std::vector<std::string> Names(const std::string& dir,
                               const std::function<bool(const std::string&)>& keep) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (struct dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != ".." && keep(name)) names.push_back(name);
  }
  closedir(d);
  return names;
}

// Renames the entry of `key` in `images` aside, where no reader looks, and returns its new path;
// empty (errno set) if the rename failed.
std::string SetAside(const std::string& images, const std::string& key) {
  const std::string aside =
      absl::StrCat(images, "/.removed-", key, "-", absl::Uniform<uint32_t>(absl::BitGen()));
  return rename(absl::StrCat(images, "/", key).c_str(), aside.c_str()) == 0 ? aside : "";
}

}  // namespace

ImageBuilder::ImageBuilder(ImageBuilderOptions options) : options_(std::move(options)) {
  RemoveLeftovers();
  IndexCache();
  Evict();
}

void ImageBuilder::RemoveLeftovers() {
  // Hidden directories are the builder's own: staged (.staging-*) or set aside (.removed-*, and
  // .bad-* of earlier agents) when a killed agent left them.
  std::vector<std::string> removed;
  for (const char* kind : {"images", "crt", "templates"}) {
    const std::string parent = absl::StrCat(options_.cache_dir, "/", kind);
    for (const std::string& name :
         Names(parent, [](const std::string& n) { return n[0] == '.'; })) {
      removed.push_back(absl::StrCat(parent, "/", name));
    }
  }
  for (const std::string& name : Names(options_.scratch_dir, [](const std::string& n) {
         return absl::StartsWith(n, "build-") || absl::StartsWith(n, "runtime-");
       })) {
    removed.push_back(absl::StrCat(options_.scratch_dir, "/", name));
  }
  for (const std::string& path : removed) RemoveTree(path);
  if (!removed.empty()) {
    spdlog::info("removed {} directories an interrupted agent left: {}", removed.size(),
                 absl::StrJoin(removed, ", "));
  }
}

void ImageBuilder::IndexCache() {
  const std::string images = options_.cache_dir + "/images";
  absl::MutexLock lock(&mu_);
  for (const std::string& key : Names(images, [](const std::string& n) { return n[0] != '.'; })) {
    const std::string dir = absl::StrCat(images, "/", key);
    struct stat st;
    if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    Record(key, DirBytes(dir), absl::TimeFromTimespec(st.st_mtim));
  }
}

std::shared_ptr<const void> ImageBuilder::Pin(const std::string& key) {
  class Held {
   public:
    Held(std::shared_ptr<Pins> pins, std::string key)
        : pins_(std::move(pins)), key_(std::move(key)) {
      absl::MutexLock lock(&pins_->mu);
      pins_->held[key_]++;
    }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    ~Held() {
      absl::MutexLock lock(&pins_->mu);
      if (--pins_->held[key_] == 0) pins_->held.erase(key_);
    }

   private:
    const std::shared_ptr<Pins> pins_;
    const std::string key_;
  };
  return std::make_shared<const Held>(pins_, key);
}

void ImageBuilder::Record(const std::string& key, int64_t bytes, absl::Time last_use) {
  Entry& entry = entries_[key];
  cached_bytes_ += bytes - entry.bytes;
  entry = Entry{bytes, last_use};
}

void ImageBuilder::Forget(const std::string& key) {
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    cached_bytes_ -= it->second.bytes;
    entries_.erase(it);
  }
  manifests_.erase(key);
}

void ImageBuilder::Evict() {
  const std::string images = options_.cache_dir + "/images";
  std::vector<std::string> aside;
  int64_t freed = 0, over = 0;
  {
    absl::MutexLock lock(&mu_);
    if (cached_bytes_ <= options_.image_cache_max_bytes) return;
    std::vector<std::pair<absl::Time, std::string>> by_use;
    for (const auto& [key, entry] : entries_) by_use.emplace_back(entry.last_use, key);
    std::sort(by_use.begin(), by_use.end());
    for (const auto& [last_use, key] : by_use) {
      if (cached_bytes_ <= options_.image_cache_max_bytes) break;
      if (in_flight_.count(key) > 0) continue;
      {
        absl::MutexLock pins_lock(&pins_->mu);
        if (pins_->held.count(key) > 0) continue;
      }
      // Renamed under mu_: a build of this key that starts next finds no entry.
      std::string path = SetAside(images, key);
      const int err = errno;
      if (path.empty() && err != ENOENT) {
        spdlog::warn("image cache: cannot evict {}/{}: {}", images, key, strerror(err));
        continue;
      }
      if (!path.empty()) aside.push_back(std::move(path));
      freed += entries_[key].bytes;
      Forget(key);
    }
    over = cached_bytes_ - options_.image_cache_max_bytes;
  }
  for (const std::string& path : aside) {
    RemoveTree(path);
    cache_evictions_++;
    if (options_.evicted) options_.evicted();
  }
  spdlog::info(
      "image cache: evicted {} least recently used images ({} bytes){}", aside.size(), freed,
      over > 0
          ? absl::StrCat("; still ", over, " bytes over image_cache_max_bytes in images in use")
          : std::string());
}

absl::StatusOr<ImageBuilder::Snapshot> ImageBuilder::CrtSnapshot() {
  absl::MutexLock lock(&mu_);
  const std::string parent = options_.cache_dir + "/crt";
  if (!crt_fingerprint_.empty()) {
    const std::string dir = absl::StrCat(parent, "/", crt_fingerprint_);
    struct stat st;
    if (stat(dir.c_str(), &st) == 0) return Snapshot{crt_fingerprint_, dir, options_.crt_dir};
  }
  std::vector<TreeFile> files;
  std::string hash;
  RETURN_IF_ERROR(ReadTree(options_.crt_dir, &files, &hash));
  if (files.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the crt source tree \"", options_.crt_dir, "\" is empty or missing"));
  }
  // The tree this agent started with stays its crt (a changed tree needs a restart).
  if (crt_fingerprint_.empty()) crt_fingerprint_ = hash;
  if (hash != crt_fingerprint_) {
    return absl::FailedPreconditionError(absl::StrCat("the crt source tree \"", options_.crt_dir,
                                                      "\" changed under the agent: restart it"));
  }
  RETURN_IF_ERROR(MakeDirs(parent));
  const std::string dir = absl::StrCat(parent, "/", hash);
  RETURN_IF_ERROR(WriteTree(dir, files));
  return Snapshot{hash, dir, options_.crt_dir};
}

absl::StatusOr<ImageBuilder::Snapshot> ImageBuilder::TemplateSnapshot(
    const std::string& template_dir) {
  const std::string script = template_dir + "/build";
  struct stat st;
  if (stat(script.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("project template ", template_dir, ": no build script (", script, ")"));
  }
  std::vector<TreeFile> files;
  std::string hash;
  RETURN_IF_ERROR(ReadTree(template_dir, &files, &hash));
  const std::string parent = options_.cache_dir + "/templates";
  RETURN_IF_ERROR(MakeDirs(parent));
  const std::string dir = absl::StrCat(parent, "/", hash);
  RETURN_IF_ERROR(WriteTree(dir, files));
  return Snapshot{hash, dir, template_dir};
}

absl::StatusOr<Image> ImageBuilder::Build(const std::string& template_dir, const BuildUnit& unit,
                                          absl::Time deadline, std::string* log) {
  ASSIGN_OR_RETURN(Snapshot tmpl, TemplateSnapshot(template_dir));
  ASSIGN_OR_RETURN(Snapshot crt, CrtSnapshot());
  // Two independent 64-bit hashes of everything that makes the image.
  std::string material = absl::StrCat("--template ", tmpl.hash, "\n--crt ", crt.hash, "\n");
  for (const auto& [name, content] : unit.files) {
    absl::StrAppend(&material, "--file ", name, " ", content.size(), "\n", content);
  }
  const std::string key =
      absl::StrCat(base::HashBytes(material), base::HashBytes(absl::StrCat("salt\n", material)));
  {
    absl::MutexLock lock(&mu_);
    auto free = [this, &key]()
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_.count(key) == 0; };
    mu_.Await(absl::Condition(&free));
    in_flight_.insert(key);
  }
  absl::StatusOr<Image> image = BuildLocked(tmpl, crt, unit, key, deadline, log);
  if (image.ok()) {
    image->functions = unit.functions;
    image->pin = Pin(key);  // before the key leaves in_flight_: never evictable in between
  }
  {
    absl::MutexLock lock(&mu_);
    in_flight_.erase(key);
  }
  if (image.ok() && !image->cached) Evict();
  return image;
}

absl::StatusOr<std::optional<Image>> ImageBuilder::CachedImage(const std::string& key) {
  const std::string dir = absl::StrCat(options_.cache_dir, "/images/", key);
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return std::optional<Image>();
  // Every file of the entry against the digest stored with it (and, for entries this process
  // stored or checked before, against what it stored).
  bool good = true;
  absl::StatusOr<std::string> manifest = ReadFile(dir + "/" + kManifest);
  if (!manifest.ok()) {
    good = false;
  } else {
    absl::MutexLock lock(&mu_);
    auto known = manifests_.find(key);
    if (known != manifests_.end() && known->second != *manifest) good = false;
  }
  std::set<std::string> listed;
  int64_t bytes = 0;
  if (good) {
    bytes = manifest->size();
    for (absl::string_view line : absl::StrSplit(*manifest, '\n', absl::SkipEmpty())) {
      std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits(' ', 1));
      absl::StatusOr<std::string> content =
          f.size() == 2 ? ReadUntrustedFile(dir + "/" + f[1], options_.max_image_bytes)
                        : absl::StatusOr<std::string>(absl::DataLossError("bad manifest"));
      if (!content.ok() || Sha256Hex(*content) != f[0]) {
        good = false;
        break;
      }
      listed.insert(f.size() == 2 ? f[1] : "");
      bytes += content->size();
    }
  }
  // Nothing unlisted beside them (a .hash planted next to an image would change its identity).
  if (good) {
    for (const char* suffix : kEntrySuffixes) {
      const std::string name = absl::StrCat("image", suffix);
      if (listed.count(name) == 0 && lstat((dir + "/" + name).c_str(), &st) == 0) good = false;
    }
    good = good && listed.count("image") == 1;
  }
  if (!good) {
    cache_mismatches_++;
    const std::string aside = SetAside(options_.cache_dir + "/images", key);
    RemoveTree(aside.empty() ? dir : aside);
    absl::MutexLock lock(&mu_);
    Forget(key);
    return std::optional<Image>();
  }
  // Used now (the mtime keeps it for a restarted agent's index).
  utimensat(AT_FDCWD, dir.c_str(), nullptr, 0);
  {
    absl::MutexLock lock(&mu_);
    manifests_[key] = *manifest;
    Record(key, bytes, absl::Now());
  }
  Image image;
  image.key = key;
  image.path = dir + "/image";
  image.debug_path = DebugPath(dir);
  ASSIGN_OR_RETURN(device::FirmwareImage fw, device::FirmwareImageFromFile(image.path));
  image.hash = fw.content_hash;
  image.cached = true;
  return std::optional<Image>(image);
}

absl::Status ImageBuilder::RunStep(const std::vector<process::SandboxBind>& binds,
                                   const std::vector<std::string>& command,
                                   const std::string& working_dir, const std::string& step,
                                   absl::Time deadline, std::string* log) {
  process::SandboxOptions sandbox;
  sandbox.binds = binds;
  sandbox.working_dir = working_dir;
  sandbox.new_session = true;
  sandbox.limits = options_.limits;
  absl::StatusOr<process::SandboxCommand> sandboxed = process::MakeSandboxCommand(sandbox, command);
  if (!sandboxed.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot sandbox the build: ", sandboxed.status().message()));
  }
  process::RunCommandOptions run;
  run.argv = sandboxed->argv;
  run.time_limit = options_.time_limit;
  absl::StatusOr<process::CommandRun> ran = process::RunCommand(run, deadline, "build");
  if (log != nullptr) {
    absl::StrAppend(log, "$ ", process::CommandLine(command), "\n");
    if (ran.ok()) {
      if (ran->output_bytes > ran->output.size()) {
        absl::StrAppend(log, "[... the first ", ran->output_bytes - ran->output.size(), " of ",
                        ran->output_bytes, " bytes of output were not kept ...]\n");
      }
      absl::StrAppend(log, ran->output,
                      ran->output.empty() || ran->output.back() == '\n' ? "" : "\n",
                      ran->timed_out ? "stopped at the time limit: " : "",
                      ran->exit ? ran->exit->ToString() : std::string("no exit status"), " after ",
                      absl::FormatDuration(ran->elapsed), "\n");
    } else {
      absl::StrAppend(log, "not run: ", ran.status().message(), "\n");
    }
  }
  if (!ran.ok()) {
    if (absl::IsDeadlineExceeded(ran.status())) return ran.status();
    return absl::FailedPreconditionError(ran.status().message());
  }
  const std::string output = process::OutputForError(ran->output, ran->output_bytes);
  if (ran->timed_out) {
    return absl::DeadlineExceededError(absl::StrCat("the build ", step, "did not finish within ",
                                                    absl::FormatDuration(options_.time_limit),
                                                    output));
  }
  if (!ran->succeeded()) {
    return absl::UnknownError(absl::StrCat(
        "compile failed (", step, ran->exit ? ran->exit->ToString() : std::string("no exit status"),
        ")", output));
  }
  return absl::OkStatus();
}

absl::Status ImageBuilder::PrepareRuntime(const Snapshot& tmpl, const Snapshot& crt,
                                          absl::Time deadline, std::string* log) {
  const std::string runtime = options_.cache_dir + "/runtime";
  RETURN_IF_ERROR(MakeDirs(runtime));
  const std::string tmp =
      absl::StrCat(options_.scratch_dir, "/runtime-", absl::Uniform<uint32_t>(absl::BitGen()));
  RemoveOnExit cleanup{tmp};
  RETURN_IF_ERROR(MakeDirs(tmp));
  absl::MutexLock lock(&runtime_mu_);
  absl::Status ran = RunStep({{tmpl.dir, kTemplateIn, false},
                              {crt.dir, kCrtIn, false},
                              {runtime, kCacheIn, true},
                              {tmp, "/tmp", true}},
                             {absl::StrCat(kTemplateIn, "/build"), "--runtime", kCrtIn, kCacheIn},
                             "/tmp", "(runtime) ", deadline, log);
  // In root mode the sandbox's uid owned the runtime cache while it ran: take it back, so that
  // no later sandbox (which sees it read-only anyway) owns anything in it, and let every later
  // sandbox's uid read it.
  if (geteuid() == 0) (void)process::ChownTree(runtime, geteuid(), getegid());
  MakeReadable(runtime);
  return ran;
}

absl::StatusOr<Image> ImageBuilder::BuildLocked(const Snapshot& tmpl, const Snapshot& crt,
                                                const BuildUnit& unit, const std::string& key,
                                                absl::Time deadline, std::string* log) {
  ASSIGN_OR_RETURN(std::optional<Image> cached, CachedImage(key));
  if (cached) {
    cache_hits_++;
    if (log != nullptr) absl::StrAppend(log, "image ", key, " from the cache (built before)\n");
    return *cached;
  }
  Image image;
  image.key = key;
  const std::string dir = absl::StrCat(options_.cache_dir, "/images/", key);
  image.path = dir + "/image";
  RETURN_IF_ERROR(MakeDirs(options_.cache_dir + "/images"));
  RETURN_IF_ERROR(MakeDirs(options_.scratch_dir));
  const absl::Time start = absl::Now();

  // The runtime, from trusted code only.
  absl::Status prepared = PrepareRuntime(tmpl, crt, deadline, log);
  if (!prepared.ok()) {
    failed_++;
    image.build_time = absl::Now() - start;
    if (absl::IsFailedPrecondition(prepared)) {
      return absl::FailedPreconditionError(
          absl::StrCat("project template ", tmpl.source, ": ", prepared.message()));
    }
    return prepared;
  }

  // The image, in a sandbox that may write only its work directory.
  const std::string work = absl::StrCat(options_.scratch_dir, "/build-", key, "-",
                                        absl::Uniform<uint32_t>(absl::BitGen()));
  RemoveOnExit cleanup{work};
  RETURN_IF_ERROR(MakeDirs(work));
  for (const auto& [name, content] : unit.files) {
    const size_t slash = name.rfind('/');
    if (slash != std::string::npos) RETURN_IF_ERROR(MakeDirs(work + "/" + name.substr(0, slash)));
    RETURN_IF_ERROR(WriteFile(work + "/" + name, content));
  }
  RETURN_IF_ERROR(MakeDirs(work + "/.tmp"));
  absl::Status built = RunStep({{tmpl.dir, kTemplateIn, false},
                                {crt.dir, kCrtIn, false},
                                {options_.cache_dir + "/runtime", kCacheIn, false},
                                {work, kWorkIn, true},
                                {work + "/.tmp", "/tmp", true}},
                               {absl::StrCat(kTemplateIn, "/build"), kWorkIn,
                                absl::StrCat(kWorkIn, "/image"), kCrtIn, kCacheIn},
                               kWorkIn, "", deadline, log);
  image.build_time = absl::Now() - start;
  if (!built.ok()) {
    failed_++;
    if (absl::IsFailedPrecondition(built)) {
      return absl::FailedPreconditionError(
          absl::StrCat("project template ", tmpl.source, ": ", built.message()));
    }
    return built;
  }

  // Into the cache, by the agent: copies of what the build wrote (regular files only, opened and
  // their sizes checked before any is read), their digests, and one rename, so a reader sees the
  // whole entry or none.
  std::vector<std::pair<std::string, UntrustedFile>> outputs;
  int64_t image_bytes = 0, own_bytes = 0;
  for (const char* suffix : kEntrySuffixes) {
    const std::string name = absl::StrCat("image", suffix);
    absl::StatusOr<UntrustedFile> file = UntrustedFile::Open(work + "/" + name);
    if (absl::IsNotFound(file.status()) && *suffix != '\0') continue;
    if (!file.ok()) {
      failed_++;
      return absl::UnknownError(absl::IsNotFound(file.status())
                                    ? std::string("the build wrote no image")
                                    : std::string(file.status().message()));
    }
    image_bytes += file->size();
    if (*suffix == '\0') own_bytes = file->size();
    outputs.emplace_back(name, *std::move(file));
  }
  if (image_bytes > options_.max_image_bytes) {
    failed_++;
    return absl::UnknownError(
        absl::StrCat("the image is ", own_bytes, " bytes (", image_bytes,
                     " with its debug information and the files beside it), over the agent's "
                     "max_image_bytes of ",
                     options_.max_image_bytes));
  }
  std::string manifest;
  std::vector<TreeFile> entry;
  for (const auto& [name, file] : outputs) {
    absl::StatusOr<std::string> content = file.Read();
    if (!content.ok()) {
      failed_++;
      return content.status();
    }
    absl::StrAppend(&manifest, Sha256Hex(*content), " ", name, "\n");
    entry.push_back(
        {name, *std::move(content), static_cast<mode_t>(name == "image" ? 0755 : 0644)});
  }
  entry.push_back({kManifest, manifest, 0644});
  RETURN_IF_ERROR(WriteTree(dir, entry));
  {
    // (Another agent sharing the cache may have stored the entry first: then it is that one.)
    absl::StatusOr<std::string> stored = ReadFile(dir + "/" + kManifest);
    absl::MutexLock lock(&mu_);
    manifests_[key] = stored.ok() ? *stored : manifest;
    Record(key, DirBytes(dir), absl::Now());
  }
  image.debug_path = DebugPath(dir);
  ASSIGN_OR_RETURN(device::FirmwareImage fw, device::FirmwareImageFromFile(image.path));
  image.hash = fw.content_hash;
  builds_++;
  return image;
}

}  // namespace benchfarm::agent
