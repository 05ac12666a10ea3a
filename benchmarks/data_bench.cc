// data_bench: what a trial's data costs on the link and in time, on the emulated Cortex-M3
// (qemu-mps2-an385, its UART on a pty, host timing) — the data made and checked on the board
// (benchfarm.PrepareArgs/CheckCall/TimeArgs, device/board_args.h) beside the host path every board
// took before (inputs generated and uploaded, a poisoned output uploaded, the candidate's and the
// reference's outputs downloaded and compared on the host), alternating in one run:
//   matmul 32x32x32 (float32, the built-in) and dwconv_s8 64x64x4 (int8 in, int32 out,
//   deploy/examples/ops/dwconv_s8).
// Per trial (a fresh argument set, as a lone trial: fill, check, time with number 1, repeat 1):
// bytes on the link, the wall time, and the overhead = wall time minus the board's own time in the
// trial's kernel calls (4 calls: reference, candidate, warm-up, timed; from the measured cost).
// Per candidate of a batch (the set shared, as a tuning batch's candidates share it): its check and
// timing, in bytes and overhead (3 kernel calls: candidate, warm-up, timed). And what a lone
// trial's bytes take on a real board's UART at 115,200 baud (10 bits a byte). Medians of --runs
// runs.
//
//   data_bench [--runs N]

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/firmware.h"
#include "agent/measure_request.h"
#include "base/data_roots.h"
#include "base/files.h"
#include "catalog/knob_space.h"
#include "catalog/operator.h"
#include "catalog/trial.h"
#include "device/board.h"
#include "device/board_args.h"
#include "device/measure.h"
#include "proto/config.pb.h"

namespace benchfarm {
namespace {

constexpr double kUartBytesPerSecond = 115200.0 / 10;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Case {
  std::string name;
  std::string template_name = "qemu-mps2-an385";
  agent::BuildUnit unit;
  device::MeasureRequest request;
};

struct Figures {
  std::vector<double> trial_bytes, requests, wall, overhead;
  std::vector<double> candidate_bytes, candidate_overhead;
};

uint64_t LinkBytes(device::Board& board) {
  const device::LinkCounters c = board.session()->counters();
  return c.bytes_sent + c.bytes_received;
}

// One lone trial, then one more candidate on the same set; false (with a message) on an error.
bool RunOnce(device::Board& board, const device::MeasureRequest& request, Figures* f) {
  device::RpcClient& rpc = *board.rpc();
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  device::BoardArgs args;
  device::MeasureOutcome outcome;
  uint64_t before = LinkBytes(board);
  const uint64_t messages = board.session()->counters().messages_sent;
  const absl::Time start = absl::Now();
  while (!outcome.done) {
    absl::Status s = device::MeasureRound(rpc, request, 1, &outcome, deadline, &args);
    if (!s.ok()) {
      std::fprintf(stderr, "data_bench: %s: %s\n", request.function.c_str(),
                   std::string(s.message()).c_str());
      return false;
    }
  }
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  if (!outcome.matches || outcome.costs.empty()) {
    std::fprintf(stderr, "data_bench: %s: %s\n", request.function.c_str(),
                 outcome.mismatch.c_str());
    return false;
  }
  f->trial_bytes.push_back(static_cast<double>(LinkBytes(board) - before));
  f->requests.push_back(static_cast<double>(board.session()->counters().messages_sent - messages));
  f->wall.push_back(wall);
  f->overhead.push_back(wall - 4 * outcome.costs.front());
  // The next candidate of a batch: the set is there; its check and timing.
  device::MeasureOutcome next;
  before = LinkBytes(board);
  const absl::Time next_start = absl::Now();
  while (!next.done) {
    if (!device::MeasureRound(rpc, request, 1, &next, deadline, &args).ok()) return false;
  }
  if (next.costs.empty()) return false;
  f->candidate_overhead.push_back(absl::ToDoubleSeconds(absl::Now() - next_start) -
                                  3 * next.costs.front());
  f->candidate_bytes.push_back(static_cast<double>(LinkBytes(board) - before));
  args.Release(rpc, deadline);
  return true;
}

std::string Bytes(double b) { return absl::StrFormat("%.0f B", b); }
std::string Ms(double s) { return absl::StrFormat("%.1f ms", s * 1e3); }

int Main(int argc, char** argv) {
  int runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--runs") == 0) runs = std::max(1, std::atoi(argv[i + 1]));
  }
  const std::string templates = base::FindDataFile(argv[0], "agent/templates");
  const std::string ops = base::FindDataFile(argv[0], "deploy/examples/ops/dwconv_s8");
  if (templates.empty() || ops.empty()) {
    std::fprintf(stderr, "data_bench: agent/templates or deploy/examples/ops not found\n");
    return 1;
  }
  const std::string root = templates.substr(0, templates.size() - std::strlen("/agent/templates"));
  char tmp[] = "/tmp/data_bench.XXXXXX";
  if (mkdtemp(tmp) == nullptr) return 1;
  const std::string work = tmp;

  // dwconv_s8 from its example directory; matmul from the built-ins.
  std::map<std::string, std::string> files;
  absl::StatusOr<std::string> manifest = base::ReadFile(ops + "/op.json");
  absl::StatusOr<std::string> source = base::ReadFile(ops + "/dwconv_s8.c");
  if (!manifest.ok() || !source.ok()) return 1;
  files["dwconv_s8.c"] = *source;
  absl::StatusOr<v1::Operator> dwconv = catalog::OperatorFromManifest(*manifest, files);
  if (!dwconv.ok()) {
    std::fprintf(stderr, "data_bench: %s\n", std::string(dwconv.status().message()).c_str());
    return 1;
  }
  const catalog::KnobSpace user_space({*dwconv});
  const catalog::KnobSpace& builtins = catalog::BuiltinKnobSpace();
  std::vector<Case> cases;
  for (const char* name : {"matmul", "dwconv_s8"}) {
    const bool user = std::strcmp(name, "dwconv_s8") == 0;
    const catalog::KnobSpace& space = user ? user_space : builtins;
    v1::TemplateOperator op;
    op.set_op(name);
    absl::StatusOr<agent::Candidate> c = agent::ResolveCandidate(space, op);
    if (!c.ok()) return 1;
    Case k;
    k.name = user ? "dwconv_s8 64x64x4 int8" : "matmul 32x32x32 float32";
    k.unit = user ? agent::UserOperatorUnit(*dwconv, {*c}) : agent::CandidatesUnit(space, {*c});
    std::vector<std::vector<int64_t>> shapes =
        user ? std::vector<std::vector<int64_t>>{{64, 64, 4}, {3, 3, 4}, {62, 62, 4}}
             : std::vector<std::vector<int64_t>>{{32, 32}, {32, 32}, {32, 32}};
    absl::StatusOr<catalog::TrialArgs> targs = catalog::TemplateArgs(*c->op, shapes);
    if (!targs.ok()) return 1;
    v1::Trial trial;  // checked, one cost of one call
    trial.set_seed(1);
    trial.set_check_outputs(true);
    trial.mutable_measure()->set_number(1);
    trial.mutable_measure()->set_repeat(1);
    k.request = agent::MeasureRequestFor(trial, *targs);
    k.request.function = c->function;
    k.request.reference = c->op->reference_entry();
    cases.push_back(std::move(k));
  }

  std::printf(
      "data_bench: %d runs each (medians); the emulated Cortex-M3 (qemu-mps2-an385) in host time; "
      "a lone trial: fill, check, time (number 1, repeat 1)\n",
      runs);
  std::printf("%-26s %-9s %11s %9s %11s %10s %11s %14s %16s\n", "lone trial", "data", "link",
              "requests", "wall", "overhead", "link/cand.", "overhead/cand.", "at 115,200 baud");
  int failures = 0;
  for (Case& k : cases) {
    agent::ImageBuilderOptions bo;
    bo.cache_dir = work + "/cache";
    bo.scratch_dir = work + "/scratch";
    bo.crt_dir = root + "/crt";
    bo.time_limit = absl::Minutes(10);
    agent::ImageBuilder builder(bo);
    absl::StatusOr<agent::Image> image =
        builder.Build(templates + "/" + k.template_name, k.unit, absl::Now() + absl::Minutes(10));
    if (!image.ok()) {
      std::fprintf(stderr, "data_bench: %s\n", std::string(image.status().message()).c_str());
      return 1;
    }
    v1::BoardConfig config;
    config.set_id("m3");
    config.set_kind("qemu-mps2-an385");
    config.mutable_serial();
    config.mutable_qemu()->set_machine("mps2-an385");
    config.mutable_qemu()->set_timing(v1::QemuMachine::HOST);
    device::BoardOptions o;
    o.config = config;
    o.scratch_dir = work;
    absl::StatusOr<std::unique_ptr<device::Board>> board = device::Board::Create(o);
    if (!board.ok()) return 1;
    device::EnsureOutcome out = (*board)->EnsureImage(
        device::FirmwareImage{image->path, image->hash}, absl::Now() + absl::Seconds(30));
    if (out.failure) {
      std::fprintf(stderr, "data_bench: %s\n", out.failure->message.c_str());
      return 1;
    }
    Figures on_board, on_host;
    for (int r = 0; r < runs; ++r) {  // alternating, so drift hits both alike
      for (bool host : {false, true}) {
        k.request.data_on_host = host;
        if (!RunOnce(**board, k.request, host ? &on_host : &on_board)) ++failures;
      }
    }
    for (bool host : {true, false}) {
      const Figures& f = host ? on_host : on_board;
      std::printf("%-26s %-9s %11s %9.0f %11s %10s %11s %14s %16s\n", k.name.c_str(),
                  host ? "host" : "on board", Bytes(Median(f.trial_bytes)).c_str(),
                  Median(f.requests), Ms(Median(f.wall)).c_str(), Ms(Median(f.overhead)).c_str(),
                  Bytes(Median(f.candidate_bytes)).c_str(),
                  Ms(Median(f.candidate_overhead)).c_str(),
                  Ms(Median(f.trial_bytes) / kUartBytesPerSecond).c_str());
    }
    (*board)->Stop();
  }
  const std::string cleanup = absl::StrCat("rm -rf '", work, "'");
  (void)!std::system(cleanup.c_str());
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace benchfarm

int main(int argc, char** argv) { return benchfarm::Main(argc, argv); }
