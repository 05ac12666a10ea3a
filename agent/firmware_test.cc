// ImageBuilder: images built in the build sandbox, the cache written by the builder alone and
// checked on every hit (a tampered entry is detected, counted and rebuilt), what a build step
// may and may not touch — a template of the test's own probes the sandbox from inside — and the
// cache's limits: an image over max_image_bytes is not taken, the least recently used images go
// beyond image_cache_max_bytes, and nothing an interrupted agent left stays.

#include "agent/firmware.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/files.h"
#include "catalog/knob_space.h"
#include "tests/test_files.h"

namespace benchfarm::agent {
namespace {

using ::benchfarm::testing::Runfiles;
using ::benchfarm::testing::TestDir;

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Write(const std::string& path, const std::string& content, mode_t mode = 0644) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
  chmod(path.c_str(), mode);
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

int Entries(const std::string& path) {
  int n = 0;
  if (DIR* d = opendir(path.c_str())) {
    while (struct dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

ImageBuilderOptions Options(const std::string& dir) {
  ImageBuilderOptions o;
  o.cache_dir = dir + "/cache";
  o.scratch_dir = dir + "/scratch";
  o.crt_dir = Runfiles("crt");
  return o;
}

absl::StatusOr<BuildUnit> Trial(const std::string& source) {
  absl::StatusOr<catalog::KnobSpace> space =
      catalog::KnobSpace::Load(Runfiles("crt/ops/knobs.json"));
  if (!space.ok()) return space.status();
  v1::OperatorSpec op;
  op.set_c_source(source);
  op.set_entry_function("my_add");
  op.set_reference_function("add_reference");
  return CSourceUnit(*space, op);
}

const char kAdd[] =
    "#include <benchfarm/ops/common.h>\n"
    "#include <dlpack/dlpack.h>\n"
    "BF_OPS_DECLARE_PACKED(my_add);\n"
    "BF_OPS_DECLARE_PACKED(my_add) {\n"
    "  const DLTensor* a = (const DLTensor*)args[0].v_handle;\n"
    "  const DLTensor* b = (const DLTensor*)args[1].v_handle;\n"
    "  DLTensor* c = (DLTensor*)args[2].v_handle;\n"
    "  for (int64_t i = 0; i < a->shape[0]; ++i)\n"
    "    ((float*)c->data)[i] = ((const float*)a->data)[i] + ((const float*)b->data)[i];\n"
    "  return 0;\n"
    "}\n";

absl::Time Soon() { return absl::Now() + absl::Minutes(2); }

// The message of a build of `unit` (host-process template) that fails as COMPILE_DEVICE.
std::string CompileDeviceError(ImageBuilder& builder, const BuildUnit& unit) {
  absl::StatusOr<Image> image =
      builder.Build(Runfiles("agent/templates/host-process"), unit, Soon());
  EXPECT_FALSE(image.ok());
  EXPECT_TRUE(absl::IsUnknown(image.status())) << image.status();  // COMPILE_DEVICE
  return std::string(image.status().message());
}

// Every name in `path`, hidden ones too.
int AllEntries(const std::string& path) {
  int n = 0;
  if (DIR* d = opendir(path.c_str())) {
    while (struct dirent* e = readdir(d)) {
      n += std::string(e->d_name) != "." && std::string(e->d_name) != "..";
    }
    closedir(d);
  }
  return n;
}

// The bytes of the files in the cache's image entries (images/<key>/*).
int64_t ImageCacheBytes(const std::string& images) {
  int64_t bytes = 0;
  if (DIR* d = opendir(images.c_str())) {
    while (struct dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const std::string entry = absl::StrCat(images, "/", e->d_name);
      if (DIR* files = opendir(entry.c_str())) {
        while (struct dirent* f = readdir(files)) {
          struct stat st;
          if (lstat(absl::StrCat(entry, "/", f->d_name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
            bytes += st.st_size;
          }
        }
        closedir(files);
      }
    }
    closedir(d);
  }
  return bytes;
}

TEST(ImageBuilder, BuildsInTheSandboxAndKeepsTheImageWithItsDigests) {
  const std::string dir = TestDir();
  ImageBuilder builder(Options(dir));
  absl::StatusOr<BuildUnit> unit = Trial(kAdd);
  ASSERT_TRUE(unit.ok()) << unit.status();
  absl::Time start = absl::Now();
  absl::StatusOr<Image> image =
      builder.Build(Runfiles("agent/templates/host-process"), *unit, Soon());
  ASSERT_TRUE(image.ok()) << image.status();
  std::cerr << "cold build (runtime too): " << absl::Now() - start << "\n";
  EXPECT_FALSE(image->cached);
  EXPECT_EQ(builder.builds(), 1);
  EXPECT_EQ(image->path, absl::StrCat(dir, "/cache/images/", image->key, "/image"));
  // The MANIFEST the builder wrote: the image's SHA-256.
  const std::string manifest = Read(absl::StrCat(dir, "/cache/images/", image->key, "/MANIFEST"));
  EXPECT_TRUE(absl::StrContains(manifest, " image\n")) << manifest;
  EXPECT_EQ(manifest.find(' '), 64u) << manifest;
  // The agent's copy, executable, not what the sandbox wrote.
  struct stat st;
  ASSERT_EQ(stat(image->path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, geteuid());
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  // The work directories are gone.
  EXPECT_EQ(Entries(dir + "/scratch"), 0);

  start = absl::Now();
  absl::StatusOr<BuildUnit> other = Trial(std::string(kAdd) + "/* another image */\n");
  ASSERT_TRUE(other.ok());
  absl::StatusOr<Image> warm =
      builder.Build(Runfiles("agent/templates/host-process"), *other, Soon());
  ASSERT_TRUE(warm.ok()) << warm.status();
  std::cerr << "warm build (runtime cached): " << absl::Now() - start << "\n";

  start = absl::Now();
  absl::StatusOr<Image> again =
      builder.Build(Runfiles("agent/templates/host-process"), *unit, Soon());
  ASSERT_TRUE(again.ok()) << again.status();
  std::cerr << "cache hit (verified): " << absl::Now() - start << "\n";
  EXPECT_TRUE(again->cached);
  EXPECT_EQ(again->hash, image->hash);
  EXPECT_EQ(builder.cache_hits(), 1);
  EXPECT_EQ(builder.cache_mismatches(), 0);
}

// A user operator whose knob `opt` chooses its compile options; its source leaves a marker of
// what it was compiled for in the image.
v1::Operator OptionsOperator() {
  v1::Operator op;
  op.set_name("k");
  op.set_version("0123456789abcdef");
  v1::OpTemplate* spec = op.mutable_spec();
  spec->set_op("k");
  spec->set_entry("k");
  spec->add_sources("k.c");
  spec->add_cflags("-fno-strict-aliasing");
  v1::Knob* knob = spec->add_knobs();
  knob->set_name("opt");
  knob->set_cflag(true);
  for (const char* value : {"-O2", "-O3", "-Os"}) knob->add_values()->set_string_value(value);
  knob->mutable_default_()->set_string_value("-O2");
  (*op.mutable_files())["k.c"] =
      "#include <benchfarm/ops/common.h>\n"
      "#if defined(__OPTIMIZE_SIZE__)\n"
      "__attribute__((used)) static const char kMarker[] = \"bf-built-for-size\";\n"
      "#else\n"
      "__attribute__((used)) static const char kMarker[] = \"bf-built-for-speed\";\n"
      "#endif\n"
      "BF_OPS_DECLARE_PACKED(k);\n"
      "BF_OPS_DECLARE_PACKED(k) { (void)args; return 0; }\n";
  return op;
}

TEST(ImageBuilder, CompileOptionsOfAKnobMakeTwoImages) {
  const std::string dir = TestDir();
  ImageBuilder builder(Options(dir));
  const v1::Operator op = OptionsOperator();
  const catalog::KnobSpace space({op});
  auto image_of = [&](const std::string& opt) -> absl::StatusOr<Image> {
    v1::TemplateOperator trial;
    trial.set_op("k");
    (*trial.mutable_knobs())["opt"] = opt;
    absl::StatusOr<Candidate> c = ResolveCandidate(space, trial);
    if (!c.ok()) return c.status();
    EXPECT_EQ(c->cflags, (std::vector<std::string>{"-fno-strict-aliasing", opt}));
    const BuildUnit unit = UserOperatorUnit(op, {*c});
    // The candidate's own translation unit, its options beside it; no macro for the knob.
    EXPECT_EQ(unit.files.at(c->function + ".c.cflags"),
              absl::StrCat("-fno-strict-aliasing\n", opt, "\n"));
    EXPECT_FALSE(absl::StrContains(unit.files.at(c->function + ".c"), "BF_KNOB_opt"));
    EXPECT_EQ(unit.files.at("bf_default.c.cflags"), "-fno-strict-aliasing\n-O2\n");
    return builder.Build(Runfiles("agent/templates/host-process"), unit, Soon());
  };
  absl::StatusOr<Image> fast = image_of("-O3");
  ASSERT_TRUE(fast.ok()) << fast.status();
  absl::StatusOr<Image> small = image_of("-Os");
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_NE(fast->key, small->key);
  EXPECT_NE(fast->hash, small->hash);
  EXPECT_EQ(fast->functions[0], "bf_cand_k_O3");
  EXPECT_EQ(small->functions[0], "bf_cand_k_Os");
  // The options reached the compiler: only the -Os candidate was compiled for size.
  EXPECT_FALSE(absl::StrContains(Read(fast->path), "bf-built-for-size"));
  EXPECT_TRUE(absl::StrContains(Read(small->path), "bf-built-for-size"));
  EXPECT_TRUE(absl::StrContains(Read(small->path), "bf-built-for-speed"));  // the default
  EXPECT_EQ(builder.builds(), 2);
  // The same options again: the cached image.
  absl::StatusOr<Image> again = image_of("-Os");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->cached);
  EXPECT_EQ(again->key, small->key);
}

TEST(ImageBuilder, ACSourceTrialsOptionsAreItsOwnAndTheTemplateChecksThemAgain) {
  const std::string dir = TestDir();
  ImageBuilder builder(Options(dir));
  const std::string tmpl = Runfiles("agent/templates/host-process");
  absl::StatusOr<BuildUnit> plain = Trial(kAdd);
  ASSERT_TRUE(plain.ok()) << plain.status();
  // No options: no options file, the sources as before.
  EXPECT_EQ(plain->files.count("trial.c.cflags"), 0u);
  BuildUnit tuned = *plain;
  tuned.files["trial.c.cflags"] = "-O3\n-funroll-loops\n";
  absl::StatusOr<Image> a = builder.Build(tmpl, *plain, Soon());
  absl::StatusOr<Image> b = builder.Build(tmpl, tuned, Soon());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE(a->key, b->key);
  // The image's debug information beside it, the image itself stripped of it.
  EXPECT_EQ(a->debug_path, absl::StrCat(dir, "/cache/images/", a->key, "/image.debug"));
  EXPECT_TRUE(absl::StrContains(Read(a->debug_path), ".debug_line"));
  EXPECT_FALSE(absl::StrContains(Read(a->path), ".debug_line"));
  // An option the allow-list refuses never reaches the compiler, even past the agent's checks.
  BuildUnit bad = *plain;
  bad.files["trial.c.cflags"] = "-B/tmp/evil\n";
  EXPECT_TRUE(absl::StrContains(CompileDeviceError(builder, bad),
                                "trial.c.cflags: '-B/tmp/evil' is not a compile option"));
}

TEST(ImageBuilder, ATamperedCachedImageIsDetectedCountedAndRebuilt) {
  const std::string dir = TestDir();
  const std::string tmpl = Runfiles("agent/templates/host-process");
  ImageBuilder builder(Options(dir));
  absl::StatusOr<BuildUnit> unit = Trial(kAdd);
  ASSERT_TRUE(unit.ok());
  absl::StatusOr<Image> image = builder.Build(tmpl, *unit, Soon());
  ASSERT_TRUE(image.ok()) << image.status();
  const std::string good = Read(image->path);

  // Someone rewrites the cached image (as a trial once did): injected code in its place.
  Write(image->path, "#!/bin/sh\necho injected\n", 0755);
  absl::StatusOr<Image> rebuilt = builder.Build(tmpl, *unit, Soon());
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_FALSE(rebuilt->cached);
  EXPECT_EQ(builder.cache_mismatches(), 1);
  EXPECT_EQ(builder.builds(), 2);
  EXPECT_EQ(rebuilt->hash, image->hash);
  EXPECT_EQ(Read(rebuilt->path), good);

  // The image and its MANIFEST rewritten to agree: this builder remembers what it stored.
  const std::string entry = absl::StrCat(dir, "/cache/images/", image->key);
  Write(image->path, good + "appended", 0755);
  Write(entry + "/MANIFEST",
        "0000000000000000000000000000000000000000000000000000000000000000 image\n");
  rebuilt = builder.Build(tmpl, *unit, Soon());
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_FALSE(rebuilt->cached);
  EXPECT_EQ(builder.cache_mismatches(), 2);
  EXPECT_EQ(Read(rebuilt->path), good);

  // A file planted beside the image (a .hash would change the identity the board is checked by).
  Write(image->path + ".hash", "0123456789abcdef");
  rebuilt = builder.Build(tmpl, *unit, Soon());
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_EQ(builder.cache_mismatches(), 3);
  EXPECT_FALSE(Exists(image->path + ".hash"));

  // A new builder (an agent restarted) still checks the digests on disk.
  ImageBuilder restarted(Options(dir));
  Write(image->path, "#!/bin/sh\necho injected\n", 0755);
  rebuilt = restarted.Build(tmpl, *unit, Soon());
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_EQ(restarted.cache_mismatches(), 1);
  EXPECT_EQ(restarted.builds(), 1);
  EXPECT_EQ(Read(rebuilt->path), good);
  // And an intact entry is a plain hit.
  rebuilt = restarted.Build(tmpl, *unit, Soon());
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_TRUE(rebuilt->cached);
  EXPECT_EQ(restarted.cache_mismatches(), 1);
}

TEST(ImageBuilder, IncludesOfHostFilesFailWithoutTheirContent) {
  const std::string dir = TestDir();
  const std::string secret = dir + "/secret.h";
  Write(secret, "SECRET_CONTENT_71c3 leaked\n");
  ImageBuilder builder(Options(dir));
  for (const std::string& path :
       {std::string("/etc/shadow"), secret, absl::StrCat(dir, "/cache/images")}) {
    absl::StatusOr<BuildUnit> unit = Trial(absl::StrCat("#include \"", path, "\"\n", kAdd));
    ASSERT_TRUE(unit.ok());
    const std::string message = CompileDeviceError(builder, *unit);
    EXPECT_TRUE(absl::StrContains(message, "No such file or directory")) << message;
    EXPECT_FALSE(absl::StrContains(message, "SECRET_CONTENT")) << message;
    EXPECT_FALSE(absl::StrContains(message, "root:")) << message;
  }
}

TEST(ImageBuilder, AnImageOverMaxImageBytesFailsLikeACompileErrorAndIsNotCached) {
  const std::string dir = TestDir();
  ImageBuilderOptions options = Options(dir);
  options.max_image_bytes = int64_t{1} << 20;
  ImageBuilder builder(options);
  // 2 MiB of zeros in the image's read-only data.
  absl::StatusOr<BuildUnit> unit = Trial(
      absl::StrCat(kAdd, "__asm__(\".section .rodata\\n.fill 2097152, 1, 0\\n.previous\");\n"));
  ASSERT_TRUE(unit.ok());
  const std::string message = CompileDeviceError(builder, *unit);
  EXPECT_TRUE(absl::StartsWith(message, "the image is 2")) << message;
  EXPECT_TRUE(absl::StrContains(message, "over the agent's max_image_bytes of 1048576")) << message;
  EXPECT_EQ(builder.failed_builds(), 1);
  EXPECT_EQ(builder.builds(), 0);
  // Nothing of it is kept: no entry, nothing staged, no work directory.
  EXPECT_EQ(AllEntries(dir + "/cache/images"), 0);
  EXPECT_EQ(Entries(dir + "/scratch"), 0);
  // The same source without the padding is well under the limit.
  absl::StatusOr<BuildUnit> small = Trial(kAdd);
  ASSERT_TRUE(small.ok());
  absl::StatusOr<Image> image =
      builder.Build(Runfiles("agent/templates/host-process"), *small, Soon());
  ASSERT_TRUE(image.ok()) << image.status();
}

TEST(ImageBuilder, TheLeastRecentlyUsedImagesGoBeyondTheCacheLimitButNotOnesInUse) {
  const std::string dir = TestDir();
  const std::string tmpl = Runfiles("agent/templates/host-process");
  const std::string images = dir + "/cache/images";
  std::map<std::string, BuildUnit> units;
  for (const char* name : {"a", "b", "c"}) {
    absl::StatusOr<BuildUnit> unit =
        Trial(absl::StrCat(kAdd, "const char which[] = \"", name, "\";\n"));
    ASSERT_TRUE(unit.ok());
    units[name] = *unit;
  }
  // One entry's size, to set a limit that holds two entries and not three.
  int64_t one;
  {
    ImageBuilder sizing(Options(dir));
    ASSERT_TRUE(sizing.Build(tmpl, units["a"], Soon()).ok());
    one = ImageCacheBytes(images);
  }
  ASSERT_GT(one, 0);
  ImageBuilderOptions options = Options(dir);
  options.image_cache_max_bytes = one * 5 / 2;
  int evicted_calls = 0;
  options.evicted = [&evicted_calls] { evicted_calls++; };
  ImageBuilder builder(options);
  auto build = [&](const std::string& name) {
    absl::StatusOr<Image> image = builder.Build(tmpl, units[name], Soon());
    EXPECT_TRUE(image.ok()) << image.status();
    return image.ok() ? *image : Image();
  };
  auto cached = [&](const std::string& key) { return Exists(absl::StrCat(images, "/", key)); };

  const std::string a = build("a").key;  // a hit (built by `sizing`)
  const std::string b = build("b").key;  // built: two entries, under the limit
  EXPECT_EQ(builder.cache_evictions(), 0);
  EXPECT_TRUE(build("a").cached);        // a used after b
  const std::string c = build("c").key;  // built: over the limit, b (least recently used) goes
  EXPECT_EQ(builder.cache_evictions(), 1);
  EXPECT_EQ(evicted_calls, 1);
  EXPECT_TRUE(cached(a));
  EXPECT_FALSE(cached(b));
  EXPECT_TRUE(cached(c));
  EXPECT_LE(ImageCacheBytes(images), options.image_cache_max_bytes);

  // b again: a miss, rebuilt. The least recently used is now a, but a board holds a's image
  // (flashing or measuring with it): c goes instead.
  {
    Image held = build("a");
    ASSERT_TRUE(held.cached);
    Image c_again = build("c");  // c used after a: a is the least recently used
    c_again = Image();
    const int64_t builds = builder.builds();
    Image rebuilt = build("b");
    EXPECT_FALSE(rebuilt.cached);
    EXPECT_EQ(builder.builds(), builds + 1);
    EXPECT_EQ(builder.cache_evictions(), 2);
    EXPECT_TRUE(cached(a));
    EXPECT_TRUE(Exists(held.path));
    EXPECT_FALSE(cached(c));
    EXPECT_TRUE(cached(rebuilt.key));
    EXPECT_LE(ImageCacheBytes(images), options.image_cache_max_bytes);
  }

  // The order survives a restart (a hit touches its entry): a used last, then a builder with room
  // for one entry keeps a and evicts b at construction. (File times advance by the kernel's
  // tick: a hit in the same tick as b's store would tie.)
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_TRUE(build("a").cached);
  ImageBuilderOptions one_entry = Options(dir);
  one_entry.image_cache_max_bytes = one * 3 / 2;
  ImageBuilder restarted(one_entry);
  EXPECT_EQ(restarted.cache_evictions(), 1);
  EXPECT_TRUE(cached(a));
  EXPECT_FALSE(cached(b));
  EXPECT_EQ(Entries(images), 1);
  EXPECT_EQ(AllEntries(images), 1);  // nothing set aside left behind
}

TEST(ImageBuilder, WhatAnInterruptedAgentLeftIsRemovedAtStart) {
  const std::string dir = TestDir();
  const std::string tmpl = Runfiles("agent/templates/host-process");
  std::string key;
  {
    ImageBuilder builder(Options(dir));
    absl::StatusOr<BuildUnit> unit = Trial(kAdd);
    ASSERT_TRUE(unit.ok());
    absl::StatusOr<Image> image = builder.Build(tmpl, *unit, Soon());
    ASSERT_TRUE(image.ok()) << image.status();
    key = image->key;
  }
  // An agent killed mid-copy and mid-build: staged and set-aside directories in the cache, work
  // directories in the scratch directory.
  const std::vector<std::string> leftovers = {dir + "/cache/images/.staging-12345",
                                              dir + "/cache/images/.bad-" + key + "-7",
                                              dir + "/cache/images/.removed-k-9",
                                              dir + "/cache/crt/.staging-1",
                                              dir + "/cache/templates/.staging-2",
                                              dir + "/scratch/build-" + key + "-3",
                                              dir + "/scratch/runtime-4"};
  for (const std::string& path : leftovers) {
    ASSERT_TRUE(base::MakeDirs(path + "/sub").ok());
    Write(path + "/image", std::string(1000, 'x'));
  }
  // What is not the builder's to remove: the agent's lock, board logs, the process records.
  Write(dir + "/scratch/agent.lock", "");
  Write(dir + "/scratch/b0.qemu.log", "log");
  ASSERT_TRUE(base::MakeDirs(dir + "/scratch/processes").ok());

  ImageBuilder restarted(Options(dir));
  for (const std::string& path : leftovers) EXPECT_FALSE(Exists(path)) << path;
  EXPECT_TRUE(Exists(dir + "/scratch/agent.lock"));
  EXPECT_TRUE(Exists(dir + "/scratch/b0.qemu.log"));
  EXPECT_TRUE(Exists(dir + "/scratch/processes"));
  // The cached image is still there, and a hit.
  EXPECT_TRUE(Exists(dir + "/cache/images/" + key + "/image"));
  absl::StatusOr<BuildUnit> unit = Trial(kAdd);
  ASSERT_TRUE(unit.ok());
  absl::StatusOr<Image> image = restarted.Build(tmpl, *unit, Soon());
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_TRUE(image->cached);
}

// A template of the test's own: each step probes what it can reach and writes the answers into
// the image (or, for --runtime, into the runtime cache, which that step may write).
TEST(ImageBuilder, EachBuildStepSeesOnlyWhatItMay) {
  const std::string dir = TestDir();
  const std::string tmpl = dir + "/probe-template";
  ASSERT_TRUE(base::MakeDirs(tmpl).ok());
  const std::string outside = dir + "/outside";
  Write(tmpl + "/build",
        absl::StrCat("#!/bin/bash\n"
                     "try() { if (eval \"$1\") >/dev/null 2>&1; then echo \"yes: $1\"; else echo "
                     "\"no: $1\"; fi; }\n"
                     "if [[ $1 == --runtime ]]; then\n"
                     "  try \"touch $3/runtime-step-was-here\" > /tmp/probes\n"
                     "  cp /tmp/probes $3/runtime-probes\n"
                     "  exit 0\n"
                     "fi\n"
                     "{\n"
                     "  try \"touch $1/work-file\"\n"
                     "  try \"touch $4/poison\"\n"
                     "  try \"touch $3/poison\"\n"
                     "  try \"touch /bf/template/poison\"\n"
                     "  try \"touch /tmp/tmp-file\"\n"
                     "  try \"touch ",
                     outside,
                     "\"\n"
                     "  try \"ls ",
                     dir,
                     "/cache/images\"\n"
                     "  try \"cat /etc/shadow\"\n"
                     "  try \"exec 3<>/dev/tcp/127.0.0.1/22\"\n"
                     "  try \"test -e $4/runtime-step-was-here\"\n"
                     "  echo \"uid $(id -u)\"\n"
                     "} > $2\n"),
        0755);
  ImageBuilder builder(Options(dir));
  absl::StatusOr<BuildUnit> unit = Trial(kAdd);
  ASSERT_TRUE(unit.ok());
  absl::StatusOr<Image> image = builder.Build(tmpl, *unit, Soon());
  ASSERT_TRUE(image.ok()) << image.status();
  const std::string probes = Read(image->path);
  for (const char* allowed : {"yes: touch /bf/work/work-file", "yes: touch /tmp/tmp-file",
                              "yes: test -e /bf/cache/runtime-step-was-here"}) {
    EXPECT_TRUE(absl::StrContains(probes, allowed)) << allowed << "\n" << probes;
  }
  for (const std::string& denied :
       {std::string("no: touch /bf/cache/poison"), std::string("no: touch /bf/crt/poison"),
        std::string("no: touch /bf/template/poison"), absl::StrCat("no: touch ", outside),
        absl::StrCat("no: ls ", dir, "/cache/images"), std::string("no: cat /etc/shadow"),
        std::string("no: exec 3<>/dev/tcp/127.0.0.1/22")}) {
    EXPECT_TRUE(absl::StrContains(probes, denied)) << denied << "\n" << probes;
  }
  EXPECT_FALSE(absl::StrContains(probes, "uid 0\n")) << probes;
  EXPECT_FALSE(Exists(outside));
  EXPECT_FALSE(Exists(dir + "/cache/runtime/poison"));
  // The runtime step wrote its cache (and only it, with no user code in reach).
  EXPECT_TRUE(Exists(dir + "/cache/runtime/runtime-step-was-here"));
  // Owned by the agent again after the step.
  struct stat st;
  ASSERT_EQ(stat((dir + "/cache/runtime/runtime-step-was-here").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, geteuid());
}

}  // namespace
}  // namespace benchfarm::agent
