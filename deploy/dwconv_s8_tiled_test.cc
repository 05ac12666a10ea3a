// examples/ops/dwconv_s8_tiled on a host-process board: the int8 space of the tuner's replay
// benchmark (issue 37 §4) computes its reference's output, exactly, for configs chosen to reach
// every edge — tiles and channel blocks that divide the output and that do not, the packed (SIMD)
// path and the scalar one, accumulators in registers and in memory, both loop orders, each
// compile option — on the manifest's shape and on shapes whose output is smaller than a tile; and
// the check would see a kernel that skipped an edge.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/firmware.h"
#include "agent/measure_request.h"
#include "base/files.h"
#include "catalog/knob_space.h"
#include "catalog/operator.h"
#include "catalog/trial.h"
#include "device/board.h"
#include "device/board_args.h"
#include "device/measure.h"
#include "gtest/gtest.h"
#include "proto/config.pb.h"
#include "tests/test_files.h"

namespace benchfarm {
namespace {

using ::benchfarm::testing::Runfiles;
using ::benchfarm::testing::TestDir;

// The example operator, its source passed through `edit`.
absl::StatusOr<v1::Operator> Tiled(const std::string& edit_from = "",
                                   const std::string& edit_to = "") {
  const std::string dir = Runfiles("deploy/examples/ops/dwconv_s8_tiled/");
  absl::StatusOr<std::string> manifest = base::ReadFile(dir + "op.json");
  if (!manifest.ok()) return manifest.status();
  absl::StatusOr<std::string> source = base::ReadFile(dir + "dwconv_s8_tiled.c");
  if (!source.ok()) return source.status();
  if (!edit_from.empty()) {
    const std::string edited = absl::StrReplaceAll(*source, {{edit_from, edit_to}});
    EXPECT_NE(edited, *source) << "the edit found nothing to change";
    *source = edited;
  }
  return catalog::OperatorFromManifest(*manifest, {{"dwconv_s8_tiled.c", *source}});
}

// Knobs in spec order: tile_h, tile_w, block_c, simd, unroll_kw, order, acc, opt.
using Knobs = std::map<std::string, std::string>;
Knobs Config(const std::string& th, const std::string& tw, const std::string& cb,
             const std::string& simd, const std::string& unroll, const std::string& order,
             const std::string& acc, const std::string& opt) {
  return {{"tile_h", th},        {"tile_w", tw},   {"block_c", cb}, {"simd", simd},
          {"unroll_kw", unroll}, {"order", order}, {"acc", acc},    {"opt", opt}};
}

// The manifest's shape (16x16x12, output 14x14x12) leaves edges for tiles of 4 rows, 4 or 8
// columns and blocks of 8 channels; 2x2 tiles and blocks of 4 divide it.
const std::vector<Knobs>& Configs() {
  static const std::vector<Knobs> c = {
      Config("1", "1", "1", "0", "1", "hwc", "reg", "-Os"),  // the default
      Config("2", "2", "4", "1", "3", "hwc", "reg", "-O3"),  // whole tiles and blocks, packed
      Config("4", "8", "8", "1", "3", "chw", "mem", "-O3"),  // every edge, packed, in memory
      Config("4", "4", "8", "1", "1", "hwc", "reg", "-O2"),  // every edge, packed, registers
      Config("4", "8", "2", "1", "1", "chw", "reg", "-Os"),  // simd with blocks of 2: scalar
      Config("2", "8", "4", "0", "3", "hwc", "mem", "-O2"),  // column edges, scalar, in memory
      Config("4", "1", "8", "0", "1", "chw", "reg", "-O3"),  // row and channel edges, scalar
  };
  return c;
}

struct Outcome {
  std::string function;
  bool matches = false;
  std::string why;
};

class TiledOnHostBoard {
 public:
  // Builds every config of Configs() into one host-process image of `op` and starts a board.
  TiledOnHostBoard(const v1::Operator& op, const std::string& dir)
      : op_(op), space_(std::vector<v1::Operator>{op}) {
    for (const Knobs& k : Configs()) {
      v1::TemplateOperator to;
      to.set_op(op.spec().op());
      for (const auto& [name, value] : k) (*to.mutable_knobs())[name] = value;
      absl::StatusOr<agent::Candidate> c = agent::ResolveCandidate(space_, to);
      EXPECT_TRUE(c.ok()) << c.status();
      if (c.ok()) candidates_.push_back(*c);
    }
    agent::ImageBuilderOptions bo;
    bo.cache_dir = dir + "/cache";
    bo.scratch_dir = dir + "/scratch";
    bo.crt_dir = Runfiles("crt");
    agent::ImageBuilder builder(bo);
    absl::StatusOr<agent::Image> image =
        builder.Build(Runfiles("agent/templates/host-process"),
                      agent::UserOperatorUnit(op_, candidates_), absl::Now() + absl::Minutes(5));
    EXPECT_TRUE(image.ok()) << image.status();
    if (!image.ok()) return;
    device::BoardOptions o;
    o.config.set_id("hp0");
    o.config.set_kind("host-process");
    o.config.mutable_host_process();
    o.scratch_dir = dir;
    absl::StatusOr<std::unique_ptr<device::Board>> board = device::Board::Create(o);
    EXPECT_TRUE(board.ok()) << board.status();
    if (!board.ok()) return;
    board_ = *std::move(board);
    device::EnsureOutcome out = board_->EnsureImage(device::FirmwareImage{image->path, image->hash},
                                                    absl::Now() + absl::Seconds(30));
    EXPECT_FALSE(out.failure) << out.failure->message;
    if (out.failure) board_.reset();
  }
  ~TiledOnHostBoard() {
    if (board_) board_->Stop();
  }
  bool ready() const { return board_ != nullptr && candidates_.size() == Configs().size(); }

  // Every candidate checked once on inputs of `shapes` (input, weight, output), seed `seed`.
  std::vector<Outcome> Check(const std::vector<std::vector<int64_t>>& shapes, uint64_t seed) {
    std::vector<Outcome> out;
    absl::StatusOr<catalog::TrialArgs> targs = catalog::TemplateArgs(op_.spec(), shapes);
    EXPECT_TRUE(targs.ok()) << targs.status();
    if (!targs.ok()) return out;
    v1::Trial trial;
    trial.set_seed(seed);
    trial.set_check_outputs(true);
    trial.mutable_measure()->set_number(1);
    trial.mutable_measure()->set_repeat(1);
    device::MeasureRequest q = agent::MeasureRequestFor(trial, *targs);
    q.reference = op_.spec().reference_entry();
    device::BoardArgs args;
    for (const agent::Candidate& c : candidates_) {
      q.function = c.function;
      device::MeasureOutcome o;
      absl::Status st =
          device::MeasureRound(*board_->rpc(), q, 1, &o, absl::Now() + absl::Seconds(30), &args);
      out.push_back({c.function, st.ok() && o.checked && o.matches && !o.costs.empty(),
                     st.ok() ? o.mismatch : std::string(st.message())});
    }
    args.Release(*board_->rpc(), absl::Now() + absl::Seconds(30));
    return out;
  }

 private:
  v1::Operator op_;
  catalog::KnobSpace space_;
  std::vector<agent::Candidate> candidates_;
  std::unique_ptr<device::Board> board_;
};

TEST(DwconvS8Tiled, ItsSpaceHasEightKnobsAndAFewThousandConfigs) {
  absl::StatusOr<v1::Operator> op = Tiled();
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_EQ(op->spec().knobs_size(), 8);
  EXPECT_EQ(catalog::SpaceSize(op->spec()), 2304);
}

TEST(DwconvS8Tiled, EveryEdgeComputesTheReferencesOutputExactly) {
  absl::StatusOr<v1::Operator> op = Tiled();
  ASSERT_TRUE(op.ok()) << op.status();
  TiledOnHostBoard board(*op, TestDir());
  ASSERT_TRUE(board.ready());
  // The manifest's shape; channels that no block of 4 divides; an output smaller than any tile
  // but 1x1 (everything an edge); a 5x5 kernel (unroll_kw=3 falls back to the loop).
  const std::vector<std::vector<std::vector<int64_t>>> shapes = {
      {{16, 16, 12}, {3, 3, 12}, {14, 14, 12}},
      {{9, 11, 7}, {3, 3, 7}, {7, 9, 7}},
      {{3, 3, 8}, {3, 3, 8}, {1, 1, 8}},
      {{12, 12, 16}, {5, 5, 16}, {8, 8, 16}},
  };
  for (uint64_t seed : {1, 7}) {
    for (const auto& s : shapes) {
      for (const Outcome& o : board.Check(s, seed)) {
        EXPECT_TRUE(o.matches) << o.function << " on " << s[0][0] << "x" << s[0][1] << "x"
                               << s[0][2] << " seed " << seed << ": " << o.why;
      }
    }
  }
}

TEST(DwconvS8Tiled, TheCheckSeesAKernelThatSkipsTheRowsPastTheLastTile) {
  absl::StatusOr<v1::Operator> op =
      Tiled("  Edge(&v, oh_end, v.oh, 0, v.ow, 0, v.c);", "  (void)oh_end;");
  ASSERT_TRUE(op.ok()) << op.status();
  TiledOnHostBoard board(*op, TestDir());
  ASSERT_TRUE(board.ready());
  // 14 output rows: tiles of 4 leave 2, tiles of 1 and 2 none.
  const std::vector<Outcome> out = board.Check({{16, 16, 12}, {3, 3, 12}, {14, 14, 12}}, 1);
  ASSERT_EQ(out.size(), Configs().size());
  for (size_t i = 0; i < out.size(); ++i) {
    const bool edge = Configs()[i].at("tile_h") == "4";
    EXPECT_EQ(out[i].matches, !edge) << out[i].function << ": " << out[i].why;
    if (edge) {
      EXPECT_NE(out[i].why.find("output element"), std::string::npos) << out[i].why;
    }
  }
}

}  // namespace
}  // namespace benchfarm
