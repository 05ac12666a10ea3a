// board_bench: what one trial's stages cost on an emulated Cortex-M board (qemu-mps2-an385:
// crt/boards firmware, QEMU, its UART on a pty) next to the host-process board reached through
// its pty, measured in the same run:
//   image build   cold (empty cache: the runtime is cross-compiled too), a new batch with the
//                 runtime cached, and a cache hit — 16 matmul candidates each;
//   flash         QEMU started with the image until its UART is there / the board process
//                 restarted;
//   handshake     transport open + session handshake + DeviceInfo;
//   link          an empty call's round trip, and CopyToRemote / CopyFromRemote of 64 KiB.
// Prints a table; medians of several runs. Not a test: the figures depend on the machine.
//
//   board_bench [--crt DIR] [--templates DIR] [--runs N]
// Finds crt/ and agent/templates/ in its runfiles (or the working directory) by default.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/firmware.h"
#include "base/data_roots.h"
#include "catalog/knob_space.h"
#include "device/board.h"
#include "device/flasher.h"
#include "device/rpc_client.h"
#include "proto/config.pb.h"

namespace benchfarm {
namespace {

struct Paths {
  std::string crt;
  std::string templates;
  std::string work;
};

// crt/ and agent/templates/ (the runfiles, or the working directory), as an absolute path.
std::string DataRoot(const char* argv0) {
  const std::string templates = base::FindDataFile(argv0, "agent/templates");
  if (templates.empty()) return ".";
  return base::AbsolutePath(
      templates.substr(0, templates.size() - std::strlen("/agent/templates")));
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds `fn` takes, median of `runs` (fn returns false on failure: the figure is then 0).
double Time(int runs, const std::function<bool()>& fn) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const absl::Time start = absl::Now();
    if (!fn()) return 0;
    t.push_back(absl::ToDoubleSeconds(absl::Now() - start));
  }
  return Median(t);
}

agent::BuildUnit Batch(const catalog::KnobSpace& space, int first_unroll_index) {
  std::vector<agent::Candidate> candidates;
  const char* unrolls[] = {"1", "2", "4", "8"};
  for (const char* tm : {"1", "2", "4", "8"}) {
    for (const char* tn : {"4", "8"}) {
      for (const char* order : {"ijk", "ikj"}) {
        v1::TemplateOperator op;
        op.set_op("matmul");
        (*op.mutable_knobs())["tile_m"] = tm;
        (*op.mutable_knobs())["tile_n"] = tn;
        (*op.mutable_knobs())["order"] = order;
        (*op.mutable_knobs())["unroll"] = unrolls[first_unroll_index % 4];
        absl::StatusOr<agent::Candidate> c = agent::ResolveCandidate(space, op);
        if (c.ok()) candidates.push_back(*c);
      }
    }
  }
  return agent::CandidatesUnit(space, candidates);
}

struct Row {
  std::string what;
  std::string qemu;
  std::string host;
};

struct BoardFigures {
  double build_cold = 0, build_warm = 0, build_hit = 0;
  double flash = 0, handshake = 0, call = 0, to_remote = 0, from_remote = 0;
  std::string error;
};

BoardFigures Measure(const Paths& paths, const catalog::KnobSpace& space, v1::BoardConfig config,
                     const std::string& template_name, int runs) {
  BoardFigures f;
  const std::string dir = absl::StrCat(paths.work, "/", config.id());
  agent::ImageBuilderOptions bo;
  bo.cache_dir = dir + "/cache";
  bo.scratch_dir = dir + "/scratch";
  bo.crt_dir = paths.crt;
  bo.time_limit = absl::Minutes(10);
  const std::string tmpl = absl::StrCat(paths.templates, "/", template_name);
  // Cold: a fresh cache each run, so the runtime is compiled too.
  std::vector<double> cold;
  absl::StatusOr<agent::Image> image;
  for (int i = 0; i < std::max(1, runs / 2); ++i) {
    agent::ImageBuilderOptions fresh = bo;
    fresh.cache_dir = absl::StrCat(dir, "/cold-", i);
    agent::ImageBuilder builder(fresh);
    const absl::Time start = absl::Now();
    image = builder.Build(tmpl, Batch(space, 0), absl::Now() + absl::Minutes(10));
    if (!image.ok()) {
      f.error = std::string(image.status().message());
      return f;
    }
    cold.push_back(absl::ToDoubleSeconds(absl::Now() - start));
  }
  f.build_cold = Median(cold);
  agent::ImageBuilder builder(bo);
  image = builder.Build(tmpl, Batch(space, 0), absl::Now() + absl::Minutes(10));
  if (!image.ok()) {
    f.error = std::string(image.status().message());
    return f;
  }
  int variant = 1;
  f.build_warm = Time(runs, [&] {
    return builder.Build(tmpl, Batch(space, variant++), absl::Now() + absl::Minutes(10)).ok();
  });
  // Every variant above is built now; one more pass over them is all cache hits.
  f.build_hit = Time(runs, [&] {
    return builder.Build(tmpl, Batch(space, 0), absl::Now() + absl::Minutes(1)).ok();
  });

  device::BoardOptions o;
  o.config = config;
  o.scratch_dir = dir;
  absl::StatusOr<std::unique_ptr<device::Board>> board = device::Board::Create(o);
  if (!board.ok()) {
    f.error = std::string(board.status().message());
    return f;
  }
  device::FirmwareImage fw{image->path, image->hash};
  std::vector<double> flashes;
  for (int i = 0; i < runs; ++i) {
    (*board)->Reset(device::Board::ResetReason::kHung);  // force a real flash each time
    device::EnsureOutcome out = (*board)->EnsureImage(fw, absl::Now() + absl::Seconds(30));
    if (out.failure) {
      f.error = out.failure->message;
      return f;
    }
    flashes.push_back(absl::ToDoubleSeconds(out.flash_time));
  }
  f.flash = Median(flashes);
  f.handshake =
      Time(runs, [&] { return !(*board)->Connect(absl::Now() + absl::Seconds(30)).has_value(); });
  device::RpcClient* rpc = (*board)->rpc();
  if (rpc == nullptr) return f;
  absl::StatusOr<uint64_t> fn =
      rpc->GetGlobalFunc("tvm.rpc.server.GetCRTMaxPacketSize", absl::Now() + absl::Seconds(5));
  if (!fn.ok()) {
    f.error = std::string(fn.status().message());
    return f;
  }
  const int calls = 50;
  f.call = Time(runs,
                [&] {
                  for (int i = 0; i < calls; ++i) {
                    if (!rpc->CallFunc(*fn, {}, absl::Now() + absl::Seconds(5)).ok()) return false;
                  }
                  return true;
                }) /
           calls;
  const size_t bytes = 64 * 1024;
  absl::StatusOr<device::RemoteTensor> t = rpc->AllocTensor(
      {static_cast<int64_t>(bytes / 4)}, device::DlDataType{}, absl::Now() + absl::Seconds(5));
  if (!t.ok()) {
    f.error = std::string(t.status().message());
    return f;
  }
  const std::string payload(bytes, '\x5a');
  const double up = Time(
      runs, [&] { return rpc->CopyToRemote(*t, payload, absl::Now() + absl::Seconds(60)).ok(); });
  const double down = Time(
      runs, [&] { return rpc->CopyFromRemote(*t, bytes, absl::Now() + absl::Seconds(60)).ok(); });
  f.to_remote = up > 0 ? bytes / up : 0;
  f.from_remote = down > 0 ? bytes / down : 0;
  (*board)->Stop();
  return f;
}

std::string Seconds(double s) {
  if (s <= 0) return "-";
  if (s < 1e-3) return absl::StrFormat("%.0f us", s * 1e6);
  if (s < 1) return absl::StrFormat("%.1f ms", s * 1e3);
  return absl::StrFormat("%.2f s", s);
}

std::string Rate(double bytes_per_s) {
  if (bytes_per_s <= 0) return "-";
  return absl::StrFormat("%.0f KB/s", bytes_per_s / 1e3);
}

int Main(int argc, char** argv) {
  Paths paths;
  const std::string root = DataRoot(argv[0]);
  paths.crt = root + "/crt";
  paths.templates = root + "/agent/templates";
  int runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--crt") paths.crt = argv[i + 1];
    if (flag == "--templates") paths.templates = argv[i + 1];
    if (flag == "--runs") runs = std::max(1, std::atoi(argv[i + 1]));
  }
  char tmpl[] = "/tmp/board_bench.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  paths.work = tmpl;
  absl::StatusOr<catalog::KnobSpace> space =
      catalog::KnobSpace::Load(paths.crt + "/ops/knobs.json");
  if (!space.ok()) {
    std::fprintf(stderr, "board_bench: %s\n", std::string(space.status().message()).c_str());
    return 1;
  }
  v1::BoardConfig qemu;
  qemu.set_id("m3");
  qemu.set_kind("qemu-mps2-an385");
  qemu.mutable_serial();
  qemu.mutable_qemu()->set_machine("mps2-an385");
  // Host time: these stages do not depend on how costs are timed (cycles_bench compares the
  // timing modes' speed).
  qemu.mutable_qemu()->set_timing(v1::QemuMachine::HOST);
  v1::BoardConfig host;
  host.set_id("hp");
  host.set_kind("host-process");
  host.mutable_host_process()->set_use_pty(true);

  std::printf("board_bench: %d runs each (medians); 16 matmul candidates per image\n", runs);
  std::fflush(stdout);
  BoardFigures q = Measure(paths, *space, qemu, "qemu-mps2-an385", runs);
  BoardFigures h = Measure(paths, *space, host, "host-process", runs);
  for (const BoardFigures* f : {&q, &h}) {
    if (!f->error.empty()) std::fprintf(stderr, "board_bench: %s\n", f->error.c_str());
  }
  std::vector<Row> rows = {
      {"image build, cold (runtime too)", Seconds(q.build_cold), Seconds(h.build_cold)},
      {"image build, runtime cached", Seconds(q.build_warm), Seconds(h.build_warm)},
      {"image build, cache hit", Seconds(q.build_hit), Seconds(h.build_hit)},
      {"flash (start the image)", Seconds(q.flash), Seconds(h.flash)},
      {"handshake + DeviceInfo", Seconds(q.handshake), Seconds(h.handshake)},
      {"empty call round trip", Seconds(q.call), Seconds(h.call)},
      {"CopyToRemote 64 KiB", Rate(q.to_remote), Rate(h.to_remote)},
      {"CopyFromRemote 64 KiB", Rate(q.from_remote), Rate(h.from_remote)},
  };
  std::printf("%-34s %-22s %-22s\n", "stage", "qemu-mps2-an385 (UART)", "host-process (pty)");
  for (const Row& r : rows)
    std::printf("%-34s %-22s %-22s\n", r.what.c_str(), r.qemu.c_str(), r.host.c_str());
  const std::string cleanup = absl::StrCat("rm -rf '", paths.work, "'");
  (void)!std::system(cleanup.c_str());
  return q.error.empty() && h.error.empty() ? 0 : 1;
}

}  // namespace
}  // namespace benchfarm

int main(int argc, char** argv) { return benchfarm::Main(argc, argv); }
