// Firmware images for trials: the C sources of an image's system library (many template-operator
// candidates in one image, or one trial's own C source), and ImageBuilder, which turns them into
// an image with the board kind's project template and keeps images content-addressed in a cache.
//
// A project template is a directory with an executable `build`, run in two steps, each in its own
// sandbox (process/sandbox.h: no network, a read-only system, no other host file, an unprivileged
// uid, its own PID namespace, limits) and with a time limit:
//     build --runtime CRT_DIR CACHE_DIR           compile what every image of the board kind links
//                                                 (the crt runtime) into CACHE_DIR, if not there
//     build WORK_DIR IMAGE_OUT CRT_DIR CACHE_DIR  compile WORK_DIR's generated *.c (the trial's
//                                                 code) and link IMAGE_OUT
// The first runs only trusted code — the template and the crt tree — and may write CACHE_DIR; the
// second runs the trial's code and may write nothing but WORK_DIR (and its own /tmp, which is in
// WORK_DIR): CACHE_DIR, CRT_DIR and the template are read-only there, so nothing a trial does at
// build time reaches a later build or trial. Inside the sandbox the paths are /bf/work,
// /bf/work/image, /bf/crt, /bf/cache and /bf/template (compiler messages show those, never host
// paths). The template and the crt tree are snapshots the agent keeps in its cache
// (cache_dir/templates/<hash>/, cache_dir/crt/<hash>/), so symbolic links (Bazel runfiles) need not
// resolve inside the sandbox. See agent/templates/host-process/build.
//
// Images: the agent alone writes the image cache, outside any sandbox. After a build it copies
// IMAGE_OUT (and IMAGE_OUT.debug, .hash, .bin, .hex, .timing beside it: regular files only, never
// through a symbolic link) into cache_dir/images/<key>/ with a MANIFEST of their SHA-256 digests,
// and renames the directory into place. IMAGE_OUT.debug is the image with its debug information
// (the templates build with -g and may strip IMAGE_OUT): a fault's addresses are named with it.
// The key is a hash of the template, the crt tree and the generated sources (compile options
// included: BuildUnit), so an identical image is never built twice. On a hit every file is hashed
// again and compared with the MANIFEST (and with what this process stored, for images it built);
// a mismatch — a tampered or damaged entry — is counted (cache_mismatches()), the entry removed,
// and the image built afresh.
//
// Limits: an image's files together (its debug information too) may have at most max_image_bytes
// (16 MiB by default): their sizes are checked before anything is read, and a build over it fails
// like a compile error (COMPILE_DEVICE: the trial's fault) with nothing cached. The image entries
// together may have at most image_cache_max_bytes (2 GiB by default): after storing an entry (and
// at construction, for a lowered limit) the builder evicts the least recently used entries — stored
// or hit the longest ago: each hit touches its directory's mtime, so the order survives a restart —
// until the rest fit (cache_evictions()). An entry whose Image (any copy of it) is still held, e.g.
// by a board worker flashing or measuring with it, or that is being built or checked, is never
// evicted; while such entries alone exceed the limit the cache stays over it until the next store.
// The crt/template snapshots and runtime/ (one per crt tree and template version, small and
// trusted) are not counted and never evicted. A cache_dir belongs to one agent (its builder alone
// writes and evicts it).
//
// Interrupted work leaves nothing: a staged or set-aside directory (.staging-*, .removed-*, and
// any other hidden directory in images/, crt/ and templates/) is removed on every failure path
// and, for an agent killed mid-copy, at construction, with the build work directories (build-*,
// runtime-*) in scratch_dir.
//
// Thread-safety: ImageBuilder may be used from any number of threads; two builds of the same key
// at once wait for one another (the second is a cache hit). An Image may outlive its builder.

#ifndef BENCHFARM_AGENT_FIRMWARE_H_
#define BENCHFARM_AGENT_FIRMWARE_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "catalog/knob_space.h"
#include "process/sandbox.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::agent {

// One instantiation of an operator template: a trial's knobs resolved.
struct Candidate {
  const v1::OpTemplate* op = nullptr;
  // Every knob of the op in spec order, with its value as written there ("8", "ikj").
  std::vector<std::pair<std::string, std::string>> knobs;
  // A C identifier unique to (op, knob values): "bf_cand_matmul_8_8_16_4_ikj".
  std::string function;
  // The op's instantiate line with every placeholder replaced (empty for a user operator:
  // UserOperatorUnit compiles its sources once per candidate).
  std::string instantiate;
  // Its compile options (catalog::CandidateCflags: the op's cflags, then its cflag knobs'); part of
  // its identity through its function name and the image's sources.
  std::vector<std::string> cflags;
};

// The trial's template operator as a candidate of the space's op of that name (the space must
// outlive the candidate); a knob left out takes its default. InvalidArgument
// "op.template_op.op: unknown operator \"x\"", or catalog::ResolveKnobs' errors.
absl::StatusOr<Candidate> ResolveCandidate(const catalog::KnobSpace& space,
                                           const v1::TemplateOperator& op);

// The sources of one image. A source NAME.c compiled with options of its own has them in
// NAME.c.cflags beside it, one per line (catalog/cflags.h's allow-list, checked by the tracker and
// again before a trial becomes an item); the project template adds them to that file's compile
// after its own flags.
struct BuildUnit {
  std::map<std::string, std::string> files;  // file name -> C source (or its .cflags)
  std::vector<std::string> functions;        // registered in the system library, by these names
};

// One image holding every candidate (each a function named candidate.function) and the reference
// kernel of every op of the space ("<op>_reference").
BuildUnit CandidatesUnit(const catalog::KnobSpace& space, const std::vector<Candidate>& candidates);

// One image holding candidates of a user operator from the catalog: its files under user/, one
// translation unit per candidate that defines the candidate's knobs (BF_KNOB_<name>; not its cflag
// knobs, which are its compile options) and renames the entry function to candidate.function (and
// the reference to a private name) before including each source, compiled with candidate.cflags,
// and one with the default knobs registering the entry and the reference under their own names
// (spec.entry, spec.reference_entry).
BuildUnit UserOperatorUnit(const v1::Operator& op, const std::vector<Candidate>& candidates);

// One image for a trial with its own C source defining op.entry_function() — and
// op.reference_function() too, unless that names a built-in reference kernel — compiled with
// op.cflags(), plus the built-in reference kernels. InvalidArgument for a function name that is not
// a C identifier.
absl::StatusOr<BuildUnit> CSourceUnit(const catalog::KnobSpace& space, const v1::OperatorSpec& op);

struct Image {
  std::string path;  // the image file in the cache
  // The image with its debug information (image.debug beside it, else the image itself): what a
  // fault's addresses are named with (agent/fault_names.h).
  std::string debug_path;
  std::string hash;  // HashFile(path), as the board reports it
  std::string key;   // cache key
  bool cached = false;
  absl::Duration build_time;
  std::vector<std::string> functions;
  // Shared by the copies of this Image: while one lives, its cache entry is not evicted.
  std::shared_ptr<const void> pin;
};

inline constexpr int64_t kDefaultImageCacheMaxBytes = int64_t{2} << 30;
inline constexpr int64_t kDefaultMaxImageBytes = int64_t{16} << 20;

struct ImageBuilderOptions {
  std::string cache_dir;    // images, snapshots, and the templates' runtime cache (runtime/)
  std::string scratch_dir;  // work directories of builds (removed after each build)
  std::string crt_dir;      // the crt source tree
  absl::Duration time_limit = absl::Minutes(2);                // each of the two steps
  int64_t image_cache_max_bytes = kDefaultImageCacheMaxBytes;  // images/ entries together
  int64_t max_image_bytes = kDefaultMaxImageBytes;             // one image's files together
  // Called once for each entry evicted (the agent's /metrics counter); may be empty.
  std::function<void()> evicted;
  // Limits of every process of a build's sandbox.
  process::SandboxLimits limits = DefaultBuildLimits();

  static process::SandboxLimits DefaultBuildLimits() {
    process::SandboxLimits l;
    l.max_processes = 128;
    l.max_cpu_seconds = 300;
    l.max_address_space_bytes = uint64_t{4} << 30;
    l.max_open_files = 1024;
    l.max_file_size_bytes = uint64_t{512} << 20;
    return l;
  }
};

class ImageBuilder {
 public:
  // Removes what an interrupted predecessor left (see the top), indexes the cached images and
  // evicts beyond image_cache_max_bytes. Logs what it removed; never fails.
  explicit ImageBuilder(ImageBuilderOptions options);

  // The image of `unit` built with the template in `template_dir`: from the cache, or built now.
  // Errors: Unknown "compile failed" with the build's output, or "the image is N bytes, over the
  // agent's max_image_bytes of M" (both COMPILE_DEVICE); DeadlineExceeded
  // (BUILD_TIMEOUT) with the output so far; FailedPrecondition when the template cannot be run
  // (a broken agent configuration, or no sandbox: bubblewrap missing); Internal for file system
  // errors. `log` (may be null) gets what the build did, for the attempts' logs: each step's
  // command line as the sandbox runs it, its output (the tail RunCommand keeps, saying so when it
  // is cut) and how it ended; or that the image came from the cache.
  absl::StatusOr<Image> Build(const std::string& template_dir, const BuildUnit& unit,
                              absl::Time deadline, std::string* log = nullptr);

  int64_t builds() const { return builds_.load(); }         // template runs that succeeded
  int64_t failed_builds() const { return failed_.load(); }  // failures and timeouts
  int64_t cache_hits() const { return cache_hits_.load(); }
  // Cached images that failed their hash check (then rebuilt).
  int64_t cache_mismatches() const { return cache_mismatches_.load(); }
  // Entries evicted to keep image_cache_max_bytes.
  int64_t cache_evictions() const { return cache_evictions_.load(); }

 private:
  // The index of images/: each entry's bytes and last use (store or hit).
  struct Entry {
    int64_t bytes = 0;
    absl::Time last_use;
  };
  // Keys of the Images handed out and still held, with how many pins each (shared with the pins,
  // which may outlive the builder).
  struct Pins {
    absl::Mutex mu;
    std::map<std::string, int> held ABSL_GUARDED_BY(mu);
  };

  // At construction: removes what an interrupted agent left; indexes images/ (last use: each
  // entry directory's mtime).
  void RemoveLeftovers();
  void IndexCache();
  // A pin of `key`'s entry, for Image::pin.
  std::shared_ptr<const void> Pin(const std::string& key);
  // Records `key`'s entry with its bytes and last use; forgets it (and its MANIFEST).
  void Record(const std::string& key, int64_t bytes, absl::Time last_use)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Forget(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Evicts least recently used entries, neither pinned nor in flight, until the rest fit.
  void Evict() ABSL_LOCKS_EXCLUDED(mu_);

  struct Snapshot {
    std::string hash;    // of every file's name, mode and content
    std::string dir;     // cache_dir/<kind>/<hash>
    std::string source;  // what it is a snapshot of
  };
  // The crt tree's snapshot (its hash computed once; the snapshot made again if it went missing).
  absl::StatusOr<Snapshot> CrtSnapshot();
  absl::StatusOr<Snapshot> TemplateSnapshot(const std::string& template_dir);
  absl::StatusOr<Image> BuildLocked(const Snapshot& tmpl, const Snapshot& crt,
                                    const BuildUnit& unit, const std::string& key,
                                    absl::Time deadline, std::string* log);
  // The cached image of `key` if its files match their digests; nullopt (after removing a bad
  // entry) otherwise.
  absl::StatusOr<std::optional<Image>> CachedImage(const std::string& key);
  // `build --runtime` for the template, in its sandbox.
  absl::Status PrepareRuntime(const Snapshot& tmpl, const Snapshot& crt, absl::Time deadline,
                              std::string* log);
  // Runs one step of a template in a sandbox; the status says how it ended, as Build() does; what
  // ran and its output are added to `log` (may be null).
  absl::Status RunStep(const std::vector<process::SandboxBind>& binds,
                       const std::vector<std::string>& command, const std::string& working_dir,
                       const std::string& step, absl::Time deadline, std::string* log);

  const ImageBuilderOptions options_;
  std::atomic<int64_t> builds_{0}, failed_{0}, cache_hits_{0}, cache_mismatches_{0},
      cache_evictions_{0};
  const std::shared_ptr<Pins> pins_ = std::make_shared<Pins>();
  absl::Mutex mu_;  // taken before pins_->mu
  std::set<std::string> in_flight_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  int64_t cached_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::string crt_fingerprint_ ABSL_GUARDED_BY(mu_);
  // What this process stored or verified: key -> MANIFEST.
  std::map<std::string, std::string> manifests_ ABSL_GUARDED_BY(mu_);
  // One `build --runtime` at a time (in root mode the runtime cache is lent to its sandbox's uid).
  absl::Mutex runtime_mu_;
};

}  // namespace benchfarm::agent

#endif  // BENCHFARM_AGENT_FIRMWARE_H_
