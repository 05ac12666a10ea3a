// Firmware images for trials: the C sources of an image's system library (many template-operator
// candidates in one image, or one trial's own C source), and ImageBuilder, which turns them into
// an image with the board kind's project template and keeps images content-addressed in a cache.
//
// A project template is a directory with an executable `build`, run as
//     build WORK_DIR IMAGE_OUT CRT_DIR CACHE_DIR
// in WORK_DIR (which holds the generated *.c files), with a time limit; exit 0 means IMAGE_OUT was
// written. See agent/templates/host-process/build. The cache key of an image is a hash of the
// template's build script, the crt tree and the generated sources, so an identical image is never
// built twice: cache_dir/images/<key>/image.
//
// Thread-safety: ImageBuilder may be used from any number of threads; two builds of the same key
// at once wait for one another (the second is a cache hit).

#ifndef BENCHFARM_AGENT_FIRMWARE_H_
#define BENCHFARM_AGENT_FIRMWARE_H_

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/knob_space.h"
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
  std::string cache_dir;    // images and the template's own cache
  std::string scratch_dir;  // work directories of builds (removed after each build)
  std::string crt_dir;      // the crt source tree
  absl::Duration time_limit = absl::Minutes(2);
};

class ImageBuilder {
 public:
  explicit ImageBuilder(ImageBuilderOptions options);

  // The image of `unit` built with the template in `template_dir`: from the cache, or built now.
  // Errors: Unknown "compile failed" with the build's output (COMPILE_DEVICE); DeadlineExceeded
  // (BUILD_TIMEOUT) with the output so far; FailedPrecondition when the template cannot be run
  // (a broken agent configuration); Internal for file system errors.
  absl::StatusOr<Image> Build(const std::string& template_dir, const BuildUnit& unit,
                              absl::Time deadline);

  int64_t builds() const { return builds_.load(); }          // template runs that succeeded
  int64_t failed_builds() const { return failed_.load(); }   // failures and timeouts
  int64_t cache_hits() const { return cache_hits_.load(); }

 private:
  absl::StatusOr<std::string> CrtFingerprint();
  absl::StatusOr<Image> BuildLocked(const std::string& template_dir, const BuildUnit& unit,
                                    const std::string& key, absl::Time deadline);

  const ImageBuilderOptions options_;
  std::atomic<int64_t> builds_{0}, failed_{0}, cache_hits_{0};
  absl::Mutex mu_;
  std::set<std::string> in_flight_ ABSL_GUARDED_BY(mu_);
  std::string crt_fingerprint_ ABSL_GUARDED_BY(mu_);
};

// Creates `path` and its parents (like mkdir -p). Internal with the OS's text on failure.
absl::Status MakeDirs(const std::string& path);

}  // namespace benchfarm::agent

#endif  // BENCHFARM_AGENT_FIRMWARE_H_
