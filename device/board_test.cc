// device::Board on real host-process boards:
//   * a board that speaks TVM's protocol without benchfarm's extras (//crt/host:board_tvm_only:
//     no benchfarm.DeviceInfo, no PrepareArgs/CheckCall/TimeArgs, no Calibrate/TimerTotals, as TVM
//     v0.18's own CRT) is a board: Connect and EnsureImage take it (DeviceInfo::benchfarm false,
//     what is unknown listed), it runs the image flashed last (no flash again), and float32 add and
//     matmul are measured and checked with their data made and checked on the host;
//   * Interrupt (from another thread) abandons a long call at once: kCancelled, the board stopped,
//     and the next EnsureImage starts it again.

#include "device/board.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "device/measure.h"
#include "device/rpc_client.h"
#include "proto/config.pb.h"

namespace benchfarm::device {
namespace {

constexpr absl::Duration kConnect = absl::Seconds(30);

std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" + (workspace ? workspace : "benchfarm") + "/" +
         path;
}

// A host-process board that runs `binary` (flashed by EnsureImage).
struct HostBoard {
  std::unique_ptr<Board> board;
  FirmwareImage image;
};

HostBoard MakeBoard(const std::string& binary) {
  v1::BoardConfig c;
  c.set_id("hp");
  c.set_kind("host-process");
  c.mutable_host_process();
  BoardOptions o;
  o.config = c;
  o.connect_timeout = kConnect;
  HostBoard b;
  absl::StatusOr<std::unique_ptr<Board>> board = Board::Create(o);
  EXPECT_TRUE(board.ok()) << board.status();
  if (board.ok()) b.board = *std::move(board);
  absl::StatusOr<FirmwareImage> image = FirmwareImageFromFile(Runfile(binary));
  EXPECT_TRUE(image.ok()) << image.status();
  if (image.ok()) b.image = *image;
  return b;
}

MeasureRequest Request(const std::string& op, std::vector<std::vector<int64_t>> shapes) {
  MeasureRequest q;
  q.function = op;
  q.reference = op + "_reference";
  q.args = Float32Args(shapes);
  q.check = true;
  q.options.number = 3;
  q.options.repeat = 2;
  return q;
}

TEST(BoardWithoutDeviceInfo, IsABoardWhoseDetailsAreUnknownAndMeasuresWithHostData) {
  HostBoard b = MakeBoard("crt/host/board_tvm_only");
  ASSERT_NE(b.board, nullptr);
  EnsureOutcome up = b.board->EnsureImage(b.image, absl::Now() + kConnect);
  ASSERT_FALSE(up.failure) << up.failure->message;
  EXPECT_TRUE(up.flashed);
  ASSERT_TRUE(b.board->info().has_value());
  const DeviceInfo& info = *b.board->info();
  EXPECT_FALSE(info.benchfarm);
  EXPECT_EQ(info.firmware_hash, "");
  EXPECT_EQ(info.max_packet_size, 2037);
  EXPECT_EQ(info.fields.at("unknown"), kUnknownWithoutDeviceInfo);
  EXPECT_TRUE(
      absl::StrContains(info.fields.at("benchfarm"), "no global function benchfarm.DeviceInfo"));
  // It runs what was flashed: no flash again.
  EnsureOutcome again = b.board->EnsureImage(b.image, absl::Now() + kConnect);
  ASSERT_FALSE(again.failure) << again.failure->message;
  EXPECT_TRUE(again.skipped);
  EXPECT_FALSE(again.flashed);
  // float32 add and matmul: inputs made on the host (no benchfarm.PrepareArgs), outputs compared
  // on the host, timed by the board's own time evaluator.
  for (const MeasureRequest& q : {Request("add", {{1024}, {1024}, {1024}}),
                                  Request("matmul", {{16, 8}, {8, 12}, {16, 12}})}) {
    MeasureOutcome outcome;
    while (!outcome.done) {
      const Board::CallOutcome call = b.board->MeasureRound(q, 2, &outcome, absl::Now() + kConnect);
      ASSERT_FALSE(call.failure) << q.function << ": " << call.failure->message;
    }
    EXPECT_TRUE(outcome.checked) << q.function;
    EXPECT_TRUE(outcome.matches) << q.function << ": " << outcome.mismatch;
    ASSERT_EQ(outcome.costs.size(), 2u) << q.function;
    EXPECT_GT(outcome.costs[0], 0) << q.function;
  }
}

TEST(BoardInterrupt, AbandonsALongCallAtOnceAndTheBoardStartsAgain) {
  HostBoard b = MakeBoard("crt/host/board");
  ASSERT_NE(b.board, nullptr);
  EnsureOutcome up = b.board->EnsureImage(b.image, absl::Now() + kConnect);
  ASSERT_FALSE(up.failure) << up.failure->message;
  // conv2d a hundred thousand times per repeat: minutes of work, with a deadline of ten minutes.
  MeasureRequest q = Request("conv2d", {{1, 4, 16, 16}, {8, 4, 3, 3}, {1, 8, 14, 14}});
  q.check = false;
  q.options.number = 100000;
  q.options.repeat = 10;
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(500));
    b.board->Interrupt();
  });
  MeasureOutcome outcome;
  const absl::Time start = absl::Now();
  const Board::CallOutcome call = b.board->MeasureRound(q, 10, &outcome, start + absl::Minutes(10));
  const absl::Duration took = absl::Now() - start;
  canceller.join();
  ASSERT_TRUE(call.failure.has_value());
  EXPECT_EQ(call.failure->kind, BoardFailure::kCancelled) << call.failure->message;
  EXPECT_TRUE(call.reset);
  EXPECT_FALSE(b.board->connected());
  EXPECT_LT(took, absl::Seconds(5)) << "the call was not abandoned at once";
  // The board starts again for the next trial.
  b.board->ClearInterrupt();
  EnsureOutcome next = b.board->EnsureImage(b.image, absl::Now() + kConnect);
  ASSERT_FALSE(next.failure) << next.failure->message;
  EXPECT_TRUE(next.flashed);
  MeasureOutcome add;
  const Board::CallOutcome ok =
      b.board->MeasureRound(Request("add", {{64}, {64}, {64}}), 2, &add, absl::Now() + kConnect);
  EXPECT_FALSE(ok.failure) << ok.failure->message;
  EXPECT_TRUE(add.matches);
}

}  // namespace
}  // namespace benchfarm::device
