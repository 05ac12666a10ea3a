// The compile options' allow-list: what it takes, and what it refuses with the cause named — every
// option that would run code or read or write files at build time among them.
#include "catalog/cflags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace benchfarm::catalog {
namespace {

using ::testing::HasSubstr;

TEST(Cflags, TheAllowListTakesOptimisationCodeGenerationAndTargetOptions) {
  for (const char* option : {"-O",
                             "-O0",
                             "-O1",
                             "-O2",
                             "-O3",
                             "-Os",
                             "-Oz",
                             "-Og",
                             "-Ofast",
                             "-funroll-loops",
                             "-fno-tree-vectorize",
                             "-falign-functions=16",
                             "-falign-loops=8:4",
                             "-fomit-frame-pointer",
                             "-finline-limit=64",
                             "-fPIC",
                             "-fno-strict-aliasing",
                             "-mthumb",
                             "-mcpu=cortex-m4",
                             "-mfpu=fpv4-sp-d16",
                             "-mfloat-abi=hard",
                             "-march=armv7e-m+fp",
                             "-msse4.2",
                             "-mavx2",
                             "-mno-unaligned-access",
                             "-mslow-flash-data"}) {
    EXPECT_TRUE(CheckCflag("cflags[0]", option).ok())
        << option << ": " << CheckCflag("cflags[0]", option);
  }
}

TEST(Cflags, OptionsThatRunCodeOrReadFilesAreRefusedWithTheCause) {
  struct Case {
    std::string option;
    std::string cause;
  };
  const std::vector<Case> cases = {
      {"-fplugin=evil.so", "it loads a compiler plugin (code run at build time)"},
      {"-fplugin-arg-evil-x=1", "it loads a compiler plugin"},
      {"@/etc/passwd", "it reads options from a file"},
      {"@opts", "it reads options from a file"},
      {"-B/tmp/evil", "it names where the compiler finds its programs (code run at build time)"},
      {"-Bprefix", "it names where the compiler finds its programs"},
      {"-specs=evil.specs", "it reads a specs file, which can run programs"},
      {"--specs=picolibc.specs", "it reads a specs file"},
      {"-wrapper", "it runs the compiler's programs through another program"},
      {"-fprofile-use=/tmp/p", "it reads or writes profile files"},
      {"-fprofile-use", "it reads or writes profile files"},
      {"-fprofile-generate", "it reads or writes profile files"},
      {"-fauto-profile", "it reads a profile file"},
      {"-fbranch-probabilities", "it reads profile files"},
      {"-fdump-tree-all", "it writes files at build time"},
      {"-fself-test=x", "it reads the compiler's test files"},
      {"-flto", "it moves code generation into the link"},
      {"-flto=auto", "it moves code generation into the link"},
      {"-fuse-ld=gold", "it chooses the linker program"},
      {"-fdebug-prefix-map=/a=/b", "it rewrites the paths faults are named with"},
      {"-ffile-prefix-map=x", "it rewrites the paths faults are named with"},
      {"-fno-macro-prefix-map=x", "it rewrites the paths"},
      {"-fsanitize=address", "it needs a runtime library the boards lack"},
      {"-fopenmp", "it needs a runtime library the boards lack"},
      {"-fcompare-debug", "it runs the compiler again"},
      {"-fstack-usage", "it writes files at build time"},
      {"-fopt-info-vec", "it writes files at build time"},
      {"-I/etc", "it reads files (an include path)"},
      {"-include/etc/passwd", "it reads files (an include path or file)"},
      {"-isystem/usr", "it reads files"},
      {"-L/lib", "it reads files (a library path)"},
      {"-lm", "it links a library"},
      {"--sysroot=/", "it reads files (a system root)"},
      {"-DNDEBUG", "it defines a macro"},
      {"-Wl,-T,evil.ld", "it passes options to the assembler, linker or preprocessor"},
      {"-Wa,-adhln=/tmp/x", "it passes options to the assembler"},
      {"-Xlinker", "it passes options to the assembler, linker or preprocessor"},
      {"-save-temps", "it writes files at build time"},
      {"-g0", "debug information is always on"},
      {"-std=c11", "it is not on the allow-list"},
      {"-o", "it is not on the allow-list"},
      {"-O4", "it is not on the allow-list"},
      {"-f", "one option of letters"},
      {"-m", "one option of letters"},
      {"-fx=a/b", "no path"},
      {"-fx=a,b", "one option of letters"},
      {"-fx=a=b", "one option of letters"},
      {"-O3 -funroll-loops", "one option each, without spaces"},
      {"-funroll-loops -O3", "one option each, without spaces"},
      {"", "empty"},
  };
  for (const Case& c : cases) {
    absl::Status s = CheckCflag("op.spec.cflags[0]", c.option);
    ASSERT_FALSE(s.ok()) << c.option;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("op.spec.cflags[0]: ")) << c.option;
    EXPECT_THAT(s.message(), HasSubstr(c.cause)) << c.option;
    if (!c.option.empty()) {
      EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("\"", c.option, "\""))) << c.option;
    }
  }
}

TEST(Cflags, AnOversizedOptionIsNamedByItsSizeNotQuoted) {
  const std::string option = "-f" + std::string(100, 'x');
  absl::Status s = CheckCflag("op.cflags[3]", option);
  EXPECT_EQ(s.message(), "op.cflags[3]: an option of 102 bytes, at most 64");
}

TEST(Cflags, ListsAreCountedAndEachOptionNamed) {
  google::protobuf::RepeatedPtrField<std::string> options;
  options.Add("-O3");
  options.Add("-mthumb");
  EXPECT_TRUE(CheckCflags("op.cflags", options).ok());
  options.Add("-fplugin=x");
  EXPECT_THAT(CheckCflags("op.cflags", options).message(),
              HasSubstr("op.cflags[2]: \"-fplugin=x\" is refused"));
  google::protobuf::RepeatedPtrField<std::string> many;
  for (int i = 0; i < kMaxCflags + 1; ++i) many.Add("-O2");
  EXPECT_EQ(CheckCflags("op.cflags", many).message(), "op.cflags: 17 options, at most 16");
}

TEST(Cflags, AKnobValueIsOptionsSeparatedBySingleSpaces) {
  absl::StatusOr<std::vector<std::string>> options =
      CflagValueOptions("knobs[0].values[1]", "-O3 -funroll-loops");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(*options, (std::vector<std::string>{"-O3", "-funroll-loops"}));
  EXPECT_THAT(CflagValueOptions("v", "-O3  -funroll-loops").status().message(),
              HasSubstr("v: \"-O3  -funroll-loops\": compile options separated by single spaces"));
  EXPECT_THAT(CflagValueOptions("v", " -O3").status().message(), HasSubstr("single spaces"));
  EXPECT_THAT(CflagValueOptions("v", "-O3 -B/x").status().message(),
              HasSubstr("v: \"-B/x\" is refused"));
  EXPECT_THAT(CflagValueOptions("v", "").status().message(), HasSubstr("single spaces"));
}

}  // namespace
}  // namespace benchfarm::catalog
