// Firmware images for trials: the C sources of an image's system library (many template-operator
// candidates in one image, or one trial's own C source), and ImageBuilder, which turns them into
// an image with the board kind's project template and keeps images content-addressed in a cache.
//
// A project template is a directory with an executable `build`, run in two steps, each in its own
// sandbox (device/sandbox.h: no network, a read-only system, no other host file, an unprivileged
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
// IMAGE_OUT (and IMAGE_OUT.hash, .bin, .hex beside it: regular files only, never through a
// symbolic link) into cache_dir/images/<key>/ with a MANIFEST of their SHA-256 digests, and
// renames the directory into place. The key is a hash of the template, the crt tree and the
// generated sources, so an identical image is never built twice. On a hit every file is hashed
// again and compared with the MANIFEST (and with what this process stored, for images it built);
// a mismatch — a tampered or damaged entry — is counted (cache_mismatches()), the entry removed,
// and the image built afresh.
//
// Thread-safety: ImageBuilder may be used from any number of threads; two builds of the same key
// at once wait for one another (the second is a cache hit).

#ifndef BENCHFARM_AGENT_FIRMWARE_H_
#define BENCHFARM_AGENT_FIRMWARE_H_

#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/knob_space.h"
#include "device/sandbox.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::agent {

// The sources of one image.
struct BuildUnit {
  std::map<std::string, std::string> files;  // file name -> C source
  std::vector<std::string> functions;        // registered in the system library, by these names
};

// One image holding every candidate (each a function named candidate.function) and the reference
// kernel of every op of the space ("<op>_reference").
BuildUnit CandidatesUnit(const KnobSpace& space, const std::vector<Candidate>& candidates);

// One image holding candidates of a user operator from the catalog: its files under user/, one
// translation unit per candidate that defines the candidate's knobs (BF_KNOB_<name>) and renames
// the entry function to candidate.function (and the reference to a private name) before including
// each source, and one with the default knobs registering the entry and the reference under
// their own names (spec.entry, spec.reference_entry).
BuildUnit UserOperatorUnit(const v1::Operator& op, const std::vector<Candidate>& candidates);

// One image for a trial with its own C source defining op.entry_function() — and
// op.reference_function() too, unless that names a built-in reference kernel — plus the built-in
// reference kernels. InvalidArgument for a function name that is not a C identifier.
absl::StatusOr<BuildUnit> CSourceUnit(const KnobSpace& space, const v1::OperatorSpec& op);

struct Image {
  std::string path;   // the image file in the cache
  std::string hash;   // HashFile(path), as the board reports it
  std::string key;    // cache key
  bool cached = false;
  absl::Duration build_time;
  std::vector<std::string> functions;
};

struct ImageBuilderOptions {
  std::string cache_dir;    // images, snapshots, and the templates' runtime cache (runtime/)
  std::string scratch_dir;  // work directories of builds (removed after each build)
  std::string crt_dir;      // the crt source tree
  absl::Duration time_limit = absl::Minutes(2);  // each of the two steps
  // Limits of every process of a build's sandbox.
  device::SandboxLimits limits = DefaultBuildLimits();

  static device::SandboxLimits DefaultBuildLimits() {
    device::SandboxLimits l;
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
  explicit ImageBuilder(ImageBuilderOptions options);

  // The image of `unit` built with the template in `template_dir`: from the cache, or built now.
  // Errors: Unknown "compile failed" with the build's output (COMPILE_DEVICE); DeadlineExceeded
  // (BUILD_TIMEOUT) with the output so far; FailedPrecondition when the template cannot be run
  // (a broken agent configuration, or no sandbox: bubblewrap missing); Internal for file system
  // errors.
  absl::StatusOr<Image> Build(const std::string& template_dir, const BuildUnit& unit,
                              absl::Time deadline);

  int64_t builds() const { return builds_.load(); }          // template runs that succeeded
  int64_t failed_builds() const { return failed_.load(); }   // failures and timeouts
  int64_t cache_hits() const { return cache_hits_.load(); }
  // Cached images that failed their hash check (then rebuilt).
  int64_t cache_mismatches() const { return cache_mismatches_.load(); }

 private:
  struct Snapshot {
    std::string hash;  // of every file's name, mode and content
    std::string dir;   // cache_dir/<kind>/<hash>
    std::string source;  // what it is a snapshot of
  };
  // The crt tree's snapshot (its hash computed once; the snapshot made again if it went missing).
  absl::StatusOr<Snapshot> CrtSnapshot();
  absl::StatusOr<Snapshot> TemplateSnapshot(const std::string& template_dir);
  absl::StatusOr<Image> BuildLocked(const Snapshot& tmpl, const Snapshot& crt,
                                    const BuildUnit& unit, const std::string& key,
                                    absl::Time deadline);
  // The cached image of `key` if its files match their digests; nullopt (after removing a bad
  // entry) otherwise.
  absl::StatusOr<std::optional<Image>> CachedImage(const std::string& key);
  // `build --runtime` for the template, in its sandbox.
  absl::Status PrepareRuntime(const Snapshot& tmpl, const Snapshot& crt, absl::Time deadline);
  // Runs one step of a template in a sandbox; the status says how it ended, as Build() does.
  absl::Status RunStep(const std::vector<device::SandboxBind>& binds,
                       const std::vector<std::string>& command, const std::string& working_dir,
                       const std::string& step, absl::Time deadline);

  const ImageBuilderOptions options_;
  std::atomic<int64_t> builds_{0}, failed_{0}, cache_hits_{0}, cache_mismatches_{0};
  absl::Mutex mu_;
  std::set<std::string> in_flight_ ABSL_GUARDED_BY(mu_);
  std::string crt_fingerprint_ ABSL_GUARDED_BY(mu_);
  // What this process stored or verified: key -> MANIFEST.
  std::map<std::string, std::string> manifests_ ABSL_GUARDED_BY(mu_);
  // One `build --runtime` at a time (in root mode the runtime cache is lent to its sandbox's uid).
  absl::Mutex runtime_mu_;
};

// Creates `path` and its parents (like mkdir -p). Internal with the OS's text on failure.
absl::Status MakeDirs(const std::string& path);

}  // namespace benchfarm::agent

#endif  // BENCHFARM_AGENT_FIRMWARE_H_
