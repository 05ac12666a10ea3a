// fidelity_bench: how trustworthy the farm's numbers are, per board kind available here (issue 15,
// README "Trustworthy numbers"):
//   host     the host-process board (crt/host board), pinned to a CPU (cpu_affinity "auto");
//   qemu     an emulated Cortex-M3 (qemu-mps2-an385) in host time;
//   icount   the same under QEMU's -icount (timing INSTRUCTIONS, icount_shift 0);
//   cycles   the same in the cycle model's cycles (timing CYCLES: cyclemodel/, the Cortex-M3).
// Three questions, each printed as a table with the targets beside the figures:
//   1. Repeatability: a ~1 ms and a ~50 us matmul (sizes found by timing the default config at a
//      small n and scaling n by the cube root of target/cost, twice; capped by the board's memory
//      pool), number calibrated so one repeat lasts >= 10 ms (device::MeasureRequest in adaptive
//      mode for the calibration only: a target too small to reach, max_repeat = the repeats),
//      with the machine idle and beside a CPU hog (one busy process per online CPU, each pinned
//      to one of the CPUs this process may use). Per cell: the within-run CV and +- (the 95 %
//      interval of the median, relative), the median, and over --runs runs (the board restarted
//      before each) the spread of the run medians (max/min - 1); wall/CPU for the host board.
//   2. Calibration: agent::CalibrateBoard idle and beside the hog, against what the board's clock
//      says (exact under -icount and the cycle model; the measured clock, unjudged, on the host
//      board; the implied clock in QEMU's host time).
//   3. Ranking: 32 distinct matmul configs (the default, then a sample seeded with 15 of the knob
//      grid) built into ONE image, measured twice (the board restarted before each pass), each
//      pass interleaved round by round (device::MeasureRound: a chunk of repeats per candidate
//      per round); Kendall's tau of the two passes' medians and whether the best is the same.
//   4. Coverage (issue 37 §5): do the stated intervals hold? A few configs measured adaptively
//      (+-1 %, interleaved in rounds of 5 as the agent does), idle and beside the hog, then
//      measured again after other work (the board restarted, the other mode's pass in between): how
//      often the second median lands inside the first's interval. A/B in the same run, passes
//      alternating: "old" stops on and states the costs' interval as one sample (stats::Summarize),
//      "new" on the rounds' (stats::IntervalOf, pooled over the batch as the agent reports it; the
//      tracker's CostStats). Target 90 %; below it every miss should at least have been flagged
//      UNSTABLE.
// Not a test: the figures depend on the machine and what else runs on it (the load average is
// printed). `./farm bench fidelity`.
//
//   fidelity_bench [--runs N] [--quick] [--boards host,qemu,icount,cycles] [--verbose]
//                  [--coverage-only] [--pairs N] [--crt DIR] [--templates DIR]
// --quick: one run, 6 repeats, 8 configs, no hog, coverage of 4 configs once (the smoke test).
// --coverage-only: table 4 alone; --pairs N: coverage measurement pairs per mode and load (3).
// Finds crt/ and agent/templates/ in its runfiles (or the working directory) by default. A "-" in a
// table is a figure that could not be taken (the reason is on stderr, and the exit status is 1);
// "n/a" is a figure that does not apply.

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/calibration.h"
#include "agent/firmware.h"
#include "base/data_roots.h"
#include "base/files.h"
#include "catalog/knob_space.h"
#include "device/board.h"
#include "device/host_process_flasher.h"
#include "device/measure.h"
#include "device/rpc_client.h"
#include "proto/config.pb.h"
#include "stats/cost_stats.h"
#include "stats/round_interval.h"
#include "stats/summary.h"

namespace benchfarm {
namespace {

constexpr int64_t kMinRepeatMs = 10;    // one repeat lasts at least this long
constexpr double kLongTarget = 1e-3;    // the ~1 ms kernel
constexpr double kShortTarget = 50e-6;  // the ~50 us kernel
constexpr int kSizingN = 16;            // the matmul size timed first
constexpr int kTuneN = 32;              // the ranking's matmul: knobs.json's default dims
constexpr int kTuneRoundChunk = 3;      // repeats per candidate per round (ranking)
constexpr uint32_t kSampleSeed = 15;    // the configs of the ranking (issue 15)
const absl::Duration kCallTime = absl::Minutes(10);  // deadline of one measurement
constexpr int kCoverageChunk = 5;         // repeats per config per round (the agent's adaptive)
constexpr double kCoverageTarget = 0.01;  // adaptive target (farmctl --target 1)
constexpr int kCoverageMaxRepeat = 100;
const absl::Duration kCoverageBudget = absl::Seconds(3);  // per config

// ---------------------------------------------------------------------------------------------
// Small helpers.

// crt/ and agent/templates/ (the runfiles, or the working directory), as an absolute path.
std::string DataRoot(const char* argv0) {
  const std::string templates = base::FindDataFile(argv0, "agent/templates");
  if (templates.empty()) return ".";
  return base::AbsolutePath(
      templates.substr(0, templates.size() - std::strlen("/agent/templates")));
}

double Median(const std::vector<double>& v) { return stats::Summarize(v).median; }

double Max(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

// max/min - 1 of positive values; 0 for fewer than two.
double Spread(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return *lo > 0 ? *hi / *lo - 1 : 0;
}

std::string LoadAverage() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  if (!(f >> a >> b >> c)) return "unknown";
  return absl::StrCat(a, " ", b, " ", c);
}

std::string Seconds(double s) {
  if (!(s > 0)) return "-";
  if (s < 1e-3) return absl::StrFormat("%.2f us", s * 1e6);
  if (s < 1) return absl::StrFormat("%.4f ms", s * 1e3);
  return absl::StrFormat("%.3f s", s);
}

std::string Percent(double x) { return absl::StrFormat("%.2f %%", x * 100); }

std::string Hz(double hz) {
  if (!(hz > 0)) return "-";
  if (hz >= 1e9) return absl::StrFormat("%.3f GHz", hz / 1e9);
  return absl::StrFormat("%.2f MHz", hz / 1e6);
}

// ---------------------------------------------------------------------------------------------
// The CPU hog: one busy-looping child per online CPU, each pinned to one of the CPUs this process
// may use (so the board's CPU surely has one), killed by Stop() (or with this process).

class Hog {
 public:
  ~Hog() { Stop(); }
  absl::Status Start(const std::vector<int>& cpus) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    const int count = static_cast<int>(std::max(1L, online));
    const pid_t parent = getpid();
    for (int i = 0; i < count; ++i) {
      const pid_t pid = fork();
      if (pid < 0) return absl::InternalError("fork failed");
      if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(0);
        for (int fd = 3; fd < 1024; ++fd) close(fd);  // hold none of the boards' pipes
        if (!cpus.empty()) {
          cpu_set_t set;
          CPU_ZERO(&set);
          CPU_SET(cpus[i % cpus.size()], &set);
          sched_setaffinity(0, sizeof(set), &set);
        }
        for (volatile uint64_t x = 0;; x = x + 1) {
        }
      }
      pids_.push_back(pid);
    }
    absl::SleepFor(absl::Milliseconds(200));  // let them get going
    return absl::OkStatus();
  }
  void Stop() {
    for (pid_t p : pids_) kill(p, SIGKILL);
    for (pid_t p : pids_) waitpid(p, nullptr, 0);
    if (!pids_.empty()) absl::SleepFor(absl::Milliseconds(200));
    pids_.clear();
  }
  int count() const { return static_cast<int>(pids_.size()); }

 private:
  std::vector<pid_t> pids_;
};

// ---------------------------------------------------------------------------------------------
// Configuration.

struct Settings {
  int runs = 3;
  bool quick = false;
  int repeats = 15;       // costs per repeatability cell
  int configs = 32;       // ranking candidates
  int tune_repeats = 12;  // costs per candidate per ranking pass (in rounds of kTuneRoundChunk)
  bool hog = true;
  bool verbose = false;  // every cell's costs on stderr
  bool coverage_only = false;
  int coverage_configs = 8;
  int pairs = 3;  // coverage: measurement pairs per mode and load
  std::vector<std::string> boards = {"host", "qemu", "icount", "cycles"};
  std::string crt, templates, work;
  std::string plugin;  // the cycle model (the cycles board)
};

struct Kind {
  std::string key;    // host, qemu, icount, cycles: the first column
  std::string label;  // for the legend
  std::string template_name;
  v1::BoardConfig config;
  int max_n = 512;  // matmul size cap (memory pool)
};

std::optional<Kind> KindFor(const std::string& key) {
  Kind k;
  k.key = key;
  if (key == "host") {
    k.label = "host-process board (crt/host board), cpu_affinity \"auto\", pipes";
    k.template_name = "host-process";
    k.config.set_id("hp-fidelity");
    k.config.set_kind("host-process");
    k.config.mutable_host_process();
    k.config.set_cpu_affinity("auto");
    k.max_n = 512;  // 3 n^2 floats in a 32 MiB pool
  } else if (key == "qemu" || key == "icount" || key == "cycles") {
    v1::QemuMachine::Timing timing = v1::QemuMachine::HOST;
    if (key == "icount") {
      k.label = "emulated Cortex-M3, QEMU mps2-an385 -icount shift=0 (1 ns/instruction)";
      timing = v1::QemuMachine::INSTRUCTIONS;
    } else if (key == "cycles") {
      k.label =
          "emulated Cortex-M3, QEMU mps2-an385 with the cycle model (Cortex-M3 cycles at 25 MHz)";
      timing = v1::QemuMachine::CYCLES;
    } else {
      k.label = "emulated Cortex-M3, QEMU mps2-an385 in host time (SysTick at 25 MHz)";
    }
    k.template_name = "qemu-mps2-an385";
    k.config.set_id(absl::StrCat("m3-", key));
    k.config.set_kind("qemu-mps2-an385");
    k.config.mutable_serial();
    k.config.mutable_qemu()->set_machine("mps2-an385");
    k.config.mutable_qemu()->set_timing(timing);
    k.config.mutable_qemu()->set_icount_shift(0);
    k.max_n = 128;  // 3 n^2 floats (192 KiB at 128) in the 256 KiB pool
  } else {
    return std::nullopt;
  }
  return k;
}

// ---------------------------------------------------------------------------------------------
// Candidates.

std::string KnobText(const agent::Candidate& c) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : c.knobs) parts.push_back(value);
  return absl::StrJoin(parts, ",");
}

// The default config, then distinct configs drawn uniformly from matmul's knob grid (seeded).
absl::StatusOr<std::vector<agent::Candidate>> SampleConfigs(const catalog::KnobSpace& space,
                                                            int count) {
  const v1::Operator* entry = space.Find("matmul");
  if (entry == nullptr) return absl::NotFoundError("knobs.json has no matmul");
  const v1::OpTemplate* op = &entry->spec();
  std::vector<agent::Candidate> out;
  std::set<std::string> seen;
  v1::TemplateOperator def;
  def.set_op("matmul");
  absl::StatusOr<agent::Candidate> c = agent::ResolveCandidate(space, def);
  if (!c.ok()) return c.status();
  out.push_back(*c);
  seen.insert(c->function);
  std::mt19937 rng(kSampleSeed);
  for (int tries = 0; static_cast<int>(out.size()) < count && tries < 100000; ++tries) {
    v1::TemplateOperator t;
    t.set_op("matmul");
    for (const v1::Knob& k : op->knobs()) {
      std::uniform_int_distribution<int> pick(0, k.values_size() - 1);
      (*t.mutable_knobs())[k.name()] = catalog::ValueText(k.values(pick(rng)));
    }
    c = agent::ResolveCandidate(space, t);
    if (!c.ok()) return c.status();
    if (seen.insert(c->function).second) out.push_back(*c);
  }
  return out;
}

device::MeasureRequest Request(const agent::Candidate& c, int n, int repeats, bool check) {
  device::MeasureRequest q;
  q.function = c.function;
  q.reference = "matmul_reference";
  q.args = device::Float32Args({{n, n}, {n, n}, {n, n}});
  q.check = check;
  q.options.min_repeat_ms = kMinRepeatMs;
  // Adaptive mode for its calibration of number only: a target no measurement reaches (but a
  // deterministic one: all costs equal), every repeat of the calibrated number.
  q.target_rel_ci = 1e-12;
  q.max_repeat = repeats;
  q.budget = absl::Hours(10);
  return q;
}

// ---------------------------------------------------------------------------------------------
// One board kind.

struct Cell {  // one repeatability cell over the runs
  int n = 0;
  std::vector<double> medians, cvs, rhws, wall_over_cpu;
  std::vector<int64_t> numbers;
  std::vector<int> counts;
  bool identical = true;  // every run's costs all equal (deterministic timing)
  bool failed = false;
};

struct CalibrationCell {
  std::vector<double> measured_s, measured_hz, expected_s;
  int64_t iterations = 0;
  std::string basis;
  bool failed = false;
};

struct Ranking {
  int configs = 0;
  int repeats = 0;
  int rounds = 0;
  double tau = 0;
  int best1 = -1, best2 = -1;
  double regret = 0;  // pass 1's cost of pass 2's best over pass 1's best, - 1
  double range = 0;   // slowest / fastest config (pass 1)
  std::string best1_text, best2_text;
  bool failed = false;
};

enum Load { kIdle = 0, kHogged = 1 };

// Coverage of one mode under one load: a sample per config per pair.
struct CoverageCell {
  int samples = 0, covered = 0, flagged = 0, silent_misses = 0;
  int contended = 0;                // flagged because the board shared its CPU (wall/CPU)
  std::vector<double> half_widths;  // stated, relative
  std::vector<double> costs;        // taken per config
  std::vector<double> shifts;       // |second / first - 1|
  bool failed = false;
};

struct Figures {
  Kind kind;
  std::string description;  // Board::Description(), pinned CPU
  double cpu_hz_nominal = 0;
  Cell cells[2][2];        // [kernel: 0 ~1 ms, 1 ~50 us][load]
  CalibrationCell cal[2];  // [load]
  Ranking ranking;
  CoverageCell coverage[2][2];  // [load][mode: 0 old, 1 new]
  std::vector<std::string> errors;
};

class BoardRun {
 public:
  BoardRun(const Settings& s, const catalog::KnobSpace& space, agent::ImageBuilder* builder,
           Figures* f)
      : s_(s), space_(space), builder_(builder), f_(f) {}

  void Run() {
    absl::StatusOr<std::vector<agent::Candidate>> cands = SampleConfigs(space_, s_.configs);
    if (!cands.ok()) return Fail("configs", cands.status());
    cands_ = *std::move(cands);
    const std::string tmpl = absl::StrCat(s_.templates, "/", f_->kind.template_name);
    std::fprintf(stderr, "fidelity_bench: %s: building one image of %zu matmul configs\n",
                 f_->kind.key.c_str(), cands_.size());
    absl::StatusOr<agent::Image> image = builder_->Build(
        tmpl, agent::CandidatesUnit(space_, cands_), absl::Now() + absl::Minutes(15));
    if (!image.ok()) return Fail("image build", image.status());
    image_ = device::FirmwareImage{image->path, image->hash};

    device::BoardOptions o;
    o.config = f_->kind.config;
    o.config.set_build_template(tmpl);
    o.config.set_image_candidates(static_cast<int>(cands_.size()));
    o.config.set_batch_size(static_cast<int>(cands_.size()));
    o.scratch_dir = absl::StrCat(s_.work, "/", o.config.id());
    o.connect_timeout = absl::Seconds(30);
    o.cycle_model_plugin = s_.plugin;
    (void)base::MakeDirs(o.scratch_dir);
    absl::StatusOr<std::unique_ptr<device::Board>> board = device::Board::Create(o);
    if (!board.ok()) return Fail("board", board.status());
    board_ = *std::move(board);
    if (!Restart()) return;
    f_->description = board_->Description();
    if (f_->kind.config.has_host_process()) {
      absl::StatusOr<std::vector<int>> allowed = device::AllowedCpus();
      if (allowed.ok()) {
        absl::StatusOr<std::optional<int>> cpu =
            device::ResolveCpuAffinity("auto", f_->kind.config.id(), *allowed);
        if (cpu.ok() && cpu->has_value())
          absl::StrAppend(&f_->description, ", pinned to CPU ", **cpu);
      }
    }
    if (board_->info()) {
      f_->cpu_hz_nominal = static_cast<double>(board_->info()->cpu_hz);
      absl::StrAppend(
          &f_->description, ", timer ",
          board_->info()->fields.count("timer") ? board_->info()->fields.at("timer") : "?");
    }

    // Sizes: the default config at kSizingN, then n scaled by the cube root, twice.
    const int n_long = Size(kLongTarget);
    const int n_short = Size(kShortTarget);
    if (n_long == 0 || n_short == 0) return;
    f_->cells[0][kIdle].n = f_->cells[0][kHogged].n = n_long;
    f_->cells[1][kIdle].n = f_->cells[1][kHogged].n = n_short;

    for (int run = 0; run < s_.runs && !s_.coverage_only; ++run) {
      std::fprintf(stderr, "fidelity_bench: %s: run %d of %d (load average %s)\n",
                   f_->kind.key.c_str(), run + 1, s_.runs, LoadAverage().c_str());
      if (run > 0 && !Restart()) return;
      const bool ran = UnderEachLoad([&](int load) {
        for (int kernel = 0; kernel < 2; ++kernel) Repeat(&f_->cells[kernel][load]);
        Calibrate(&f_->cal[load]);
      });
      if (!ran) return;
    }
    if (!s_.coverage_only) Rank();
    if (!UnderEachLoad([&](int load) { Cover(load); })) return;
    board_->Stop();
  }

 private:
  void Fail(const std::string& what, const absl::Status& s) {
    f_->errors.push_back(absl::StrCat(f_->kind.key, ": ", what, ": ", s.message()));
  }

  // `work(load)` idle, then beside the hog (when it is on); false when the hog would not start.
  bool UnderEachLoad(const std::function<void(int)>& work) {
    for (int load : {kIdle, kHogged}) {
      if (load == kHogged && !s_.hog) continue;
      Hog hog;
      if (load == kHogged) {
        absl::StatusOr<std::vector<int>> allowed = device::AllowedCpus();
        absl::Status st = hog.Start(allowed.ok() ? *allowed : std::vector<int>{});
        if (!st.ok()) {
          Fail("hog", st);
          return false;
        }
      }
      work(load);
      hog.Stop();
    }
    return true;
  }

  // A fresh board (host process or QEMU restarted) running the image.
  bool Restart() {
    board_->Reset(device::Board::ResetReason::kHung);
    device::EnsureOutcome out = board_->EnsureImage(image_, absl::Now() + absl::Seconds(60));
    if (out.failure) {
      Fail("flash", absl::UnavailableError(out.failure->message));
      return false;
    }
    return true;
  }

  // Measures until done; the outcome, or nullopt (the error recorded).
  std::optional<device::MeasureOutcome> Measure(const device::MeasureRequest& q, int chunk) {
    device::MeasureOutcome out;
    while (!out.done) {
      absl::Status st = device::MeasureRound(*board_->rpc(), q, chunk, &out,
                                             absl::Now() + kCallTime, nullptr, &board_->timer());
      if (!st.ok()) {
        Fail(absl::StrCat("measure ", q.function, " n=", q.args[0].shape[0]), st);
        return std::nullopt;
      }
    }
    if (!out.matches) {
      Fail(absl::StrCat("measure ", q.function), absl::DataLossError(out.mismatch));
      return std::nullopt;
    }
    return out;
  }

  int Size(double target) {
    const agent::Candidate& def = cands_[0];
    int n = kSizingN;
    for (int step = 0; step < 2; ++step) {
      std::optional<device::MeasureOutcome> out = Measure(Request(def, n, 3, false), 3);
      if (!out) return 0;
      const double cost = Median(out->costs);
      if (!(cost > 0)) {
        Fail("sizing", absl::InternalError("a zero cost"));
        return 0;
      }
      const int next = static_cast<int>(std::lround(n * std::cbrt(target / cost)));
      n = std::clamp(next, 2, f_->kind.max_n);
    }
    return n;
  }

  void Repeat(Cell* cell) {
    if (cell->failed) return;
    std::optional<device::MeasureOutcome> out =
        Measure(Request(cands_[0], cell->n, s_.repeats, true), s_.repeats);
    if (!out) {
      cell->failed = true;
      return;
    }
    const stats::Summary sum = stats::Summarize(out->costs);
    if (s_.verbose) {
      std::vector<std::string> costs;
      for (double c : out->costs) costs.push_back(absl::StrFormat("%.4g", c * 1e6));
      std::fprintf(stderr, "fidelity_bench: %s n=%d number=%lld costs (us): %s\n",
                   f_->kind.key.c_str(), cell->n, static_cast<long long>(out->number),
                   absl::StrJoin(costs, " ").c_str());
    }
    cell->medians.push_back(sum.median);
    cell->cvs.push_back(sum.cv);
    cell->rhws.push_back(sum.rel_half_width);
    cell->wall_over_cpu.push_back(out->WallOverCpu());
    cell->numbers.push_back(out->number);
    cell->counts.push_back(sum.count);
    cell->identical = cell->identical && sum.min == sum.max;
  }

  void Calibrate(CalibrationCell* cal) {
    if (cal->failed || !board_->info()) return;
    agent::CalibrationInput in;
    in.info = &*board_->info();
    in.config = &board_->config();
    in.emulation = board_->emulation();
    absl::StatusOr<agent::Calibration> c =
        agent::CalibrateBoard(*board_->rpc(), board_->timer(), in, absl::Now() + absl::Minutes(2));
    if (!c.ok()) {
      cal->failed = true;
      return Fail("calibration", c.status());
    }
    cal->iterations = c->iterations;
    cal->basis = c->basis;
    cal->measured_s.push_back(c->measured_s);
    cal->measured_hz.push_back(c->measured_hz);
    cal->expected_s.push_back(c->expected_s);
  }

  // Two passes over every config, each interleaved round by round; ranked by median.
  void Rank() {
    Ranking& r = f_->ranking;
    r.configs = static_cast<int>(cands_.size());
    r.repeats = s_.tune_repeats;
    r.rounds = (s_.tune_repeats + kTuneRoundChunk - 1) / kTuneRoundChunk;
    std::vector<double> medians[2];
    for (int pass = 0; pass < 2; ++pass) {
      std::fprintf(stderr, "fidelity_bench: %s: ranking pass %d of 2 (load average %s)\n",
                   f_->kind.key.c_str(), pass + 1, LoadAverage().c_str());
      if (!Restart()) {
        r.failed = true;
        return;
      }
      std::vector<device::MeasureRequest> reqs;
      std::vector<device::MeasureOutcome> outs(cands_.size());
      for (const agent::Candidate& c : cands_) {
        reqs.push_back(Request(c, kTuneN, s_.tune_repeats, true));
      }
      for (bool any = true; any;) {
        any = false;
        for (size_t i = 0; i < cands_.size(); ++i) {
          if (outs[i].done) continue;
          absl::Status st =
              device::MeasureRound(*board_->rpc(), reqs[i], kTuneRoundChunk, &outs[i],
                                   absl::Now() + kCallTime, nullptr, &board_->timer());
          if (!st.ok()) {
            Fail(absl::StrCat("ranking ", cands_[i].function), st);
            r.failed = true;
            return;
          }
          if (!outs[i].matches) {
            Fail(absl::StrCat("ranking ", cands_[i].function),
                 absl::DataLossError(outs[i].mismatch));
            r.failed = true;
            return;
          }
          any = any || !outs[i].done;
        }
      }
      for (const device::MeasureOutcome& o : outs) {
        medians[pass].push_back(stats::Summarize(o.costs).median);
      }
    }
    if (s_.verbose) {
      for (size_t i = 0; i < cands_.size(); ++i) {
        std::fprintf(stderr, "fidelity_bench: %s config %-18s pass 1 %s, pass 2 %s\n",
                     f_->kind.key.c_str(), KnobText(cands_[i]).c_str(),
                     Seconds(medians[0][i]).c_str(), Seconds(medians[1][i]).c_str());
      }
    }
    r.tau = stats::KendallTau(medians[0], medians[1]);
    r.best1 = stats::ArgMin(medians[0]);
    r.best2 = stats::ArgMin(medians[1]);
    r.best1_text = KnobText(cands_[r.best1]);
    r.best2_text = KnobText(cands_[r.best2]);
    r.regret = medians[0][r.best2] / medians[0][r.best1] - 1;
    r.range = Max(medians[0]) / medians[0][r.best1];
  }

  // One interleaved adaptive pass over the first coverage_configs configs (rounds of
  // kCoverageChunk, as the agent takes them), each judged old or new; the stats the tracker would
  // store: old, the costs as one sample; new, with the rounds and the batch's pooled spread.
  std::optional<std::vector<v1::CostStats>> CoveragePass(bool rounds) {
    if (!Restart()) return std::nullopt;
    const size_t n = std::min<size_t>(cands_.size(), s_.coverage_configs);
    std::vector<device::MeasureRequest> reqs;
    std::vector<device::MeasureOutcome> outs(n);
    for (size_t i = 0; i < n; ++i) {
      device::MeasureRequest q = Request(cands_[i], kTuneN, kCoverageMaxRepeat, i == 0);
      q.target_rel_ci = kCoverageTarget;
      q.budget = kCoverageBudget;
      q.rounds_in_interval = rounds;
      reqs.push_back(q);
    }
    auto pool = [&] {
      std::vector<stats::RoundSpread> spreads;
      for (const device::MeasureOutcome& o : outs) {
        spreads.push_back(stats::IntervalOf(o.costs, o.round_sizes).spread);
      }
      return stats::PoolSpreads(spreads);
    };
    for (bool any = true; any;) {
      any = false;
      for (size_t i = 0; i < n; ++i) {
        if (outs[i].done) continue;
        // As the agent does (board_worker.cc): the new stop judges the interval with the batch's
        // spread so far, the one the tracker states.
        if (rounds) outs[i].batch_spread = pool();
        absl::Status st = device::MeasureRound(*board_->rpc(), reqs[i], kCoverageChunk, &outs[i],
                                               absl::Now() + kCallTime, nullptr, &board_->timer());
        if (!st.ok()) {
          Fail(absl::StrCat("coverage ", cands_[i].function), st);
          return std::nullopt;
        }
        if (!outs[i].matches) {
          Fail(absl::StrCat("coverage ", cands_[i].function),
               absl::DataLossError(outs[i].mismatch));
          return std::nullopt;
        }
        any = any || !outs[i].done;
      }
    }
    std::vector<v1::CostStats> out;
    for (const device::MeasureOutcome& o : outs) {
      // new: as the tracker judges a Result (the rounds, the batch's spread at the candidate's
      // last round as the agent reports it, the board's wall/CPU).
      out.push_back(rounds ? stats::CostStatsOf(o.costs, o.round_sizes, o.batch_spread, 0,
                                                stats::kDefaultUnstableThreshold, o.WallOverCpu())
                           : stats::CostStatsOf(o.costs, 0));
    }
    return out;
  }

  // Pairs of passes per mode, alternating A/B (A1 B1 A2 B2, then B1 A1 B2 A2, ...): each mode's
  // re-measurement comes after the other mode's pass and a board restart.
  void Cover(int load) {
    std::fprintf(stderr, "fidelity_bench: %s: coverage %s (load average %s)\n",
                 f_->kind.key.c_str(), load == kIdle ? "idle" : "beside the hog",
                 LoadAverage().c_str());
    for (int pair = 0; pair < s_.pairs; ++pair) {
      std::optional<std::vector<v1::CostStats>> first[2], second[2];
      const int order[2] = {pair % 2, 1 - pair % 2};
      for (int mode : order) {
        if (!(first[mode] = CoveragePass(mode == 1))) return Failed(load);
      }
      for (int mode : order) {
        if (!(second[mode] = CoveragePass(mode == 1))) return Failed(load);
      }
      for (int mode : {0, 1}) {
        CoverageCell& c = f_->coverage[load][mode];
        for (size_t i = 0; i < first[mode]->size(); ++i) {
          const v1::CostStats& a = (*first[mode])[i];
          const double m = (*second[mode])[i].median_s();
          const bool in = a.ci_low_s() <= m && m <= a.ci_high_s();
          c.samples++;
          c.covered += in;
          c.flagged += a.unstable();
          c.contended += a.contended();
          c.silent_misses += !in && !a.unstable();
          c.half_widths.push_back(a.rel_half_width());
          c.costs.push_back(a.count());
          c.shifts.push_back(a.median_s() > 0 ? std::fabs(m / a.median_s() - 1) : 0);
          if (s_.verbose) {
            std::fprintf(stderr, "fidelity_bench: %s %s %s: %s then %s: %s\n", f_->kind.key.c_str(),
                         mode == 0 ? "old" : "new", KnobText(cands_[i]).c_str(),
                         stats::CostText(a).c_str(), Seconds(m).c_str(), in ? "inside" : "OUTSIDE");
          }
        }
      }
    }
  }
  void Failed(int load) { f_->coverage[load][0].failed = f_->coverage[load][1].failed = true; }

  const Settings& s_;
  const catalog::KnobSpace& space_;
  agent::ImageBuilder* builder_;
  Figures* f_;
  std::vector<agent::Candidate> cands_;
  device::FirmwareImage image_;
  std::unique_ptr<device::Board> board_;
};

// ---------------------------------------------------------------------------------------------
// Tables.

void PrintRow(const std::vector<std::string>& cols, const std::vector<int>& widths) {
  std::string line;
  for (size_t i = 0; i < cols.size(); ++i) {
    const int w = i < widths.size() ? widths[i] : 0;
    absl::StrAppend(&line, absl::StrFormat("%-*s", w, cols[i]), i + 1 < cols.size() ? " " : "");
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  std::printf("%s\n", line.c_str());
}

void PrintRepeatability(const Settings& s, const std::vector<Figures>& all) {
  std::printf(
      "\n1. Repeatability: the default matmul config (8,8,16,4,ikj), n x n x n; number calibrated "
      "so a repeat lasts >= %lld ms; %d repeats per run; %d run(s), the board restarted before "
      "each.\n   median: of the run medians; CV worst, CV med: the worst run's and the median "
      "run's "
      "within-run CV; +-: the worst run's 95 %% interval of the median, relative; spread: max/min "
      "- 1 of the run medians; wall/CPU: the worst run's "
      "(host board). Targets are judged on the worst run.\n",
      static_cast<long long>(kMinRepeatMs), s.repeats, s.runs);
  const std::vector<int> w = {7, 7, 5, 4, 7, 12, 9, 9, 8, 12, 9, 24};
  PrintRow({"board", "kernel", "load", "n", "number", "median", "CV worst", "CV med", "+-",
            "spread", "wall/CPU", "target: met?"},
           w);
  for (const Figures& f : all) {
    for (int kernel = 0; kernel < 2; ++kernel) {
      for (int load : {kIdle, kHogged}) {
        if (load == kHogged && !s.hog) continue;
        const Cell& c = f.cells[kernel][load];
        const bool ok = !c.failed && !c.medians.empty();
        const double cv = Max(c.cvs), spread = Spread(c.medians);
        std::string target = "n/a (only for >= 1 ms)";
        if (f.kind.key == "icount" || f.kind.key == "cycles") {
          // Identical costs: a mean of equal doubles may still give a stddev of 1e-20.
          target = absl::StrCat("CV 0, spread 0: ", !ok                          ? "-"
                                                    : c.identical && spread == 0 ? "yes"
                                                                                 : "no");
        } else if (f.kind.key == "qemu") {
          target = "n/a (host time)";
        } else if (kernel == 0) {
          const double limit = load == kIdle ? 0.01 : 0.03;
          target =
              absl::StrCat(load == kIdle ? "CV <= 1 %: " : "CV <= 3 %: ", !ok           ? "-"
                                                                          : cv <= limit ? "yes"
                                                                                        : "no");
        }
        std::string spread_text = !ok                    ? "-"
                                  : c.medians.size() < 2 ? "n/a (1 run)"
                                                         : Percent(spread);
        std::string woc = "n/a";
        if (f.kind.key == "host") {
          woc =
              ok && Max(c.wall_over_cpu) > 0 ? absl::StrFormat("%.3f", Max(c.wall_over_cpu)) : "-";
        }
        std::string number = "-";
        if (ok) {
          const auto [lo, hi] = std::minmax_element(c.numbers.begin(), c.numbers.end());
          number = *lo == *hi ? absl::StrCat(*lo) : absl::StrCat(*lo, "-", *hi);
        }
        PrintRow({f.kind.key, kernel == 0 ? "~1 ms" : "~50 us", load == kIdle ? "idle" : "hog",
                  c.n > 0 ? absl::StrCat(c.n) : "-", number, ok ? Seconds(Median(c.medians)) : "-",
                  ok ? Percent(cv) : "-", ok ? Percent(Median(c.cvs)) : "-",
                  ok ? Percent(Max(c.rhws)) : "-", spread_text, woc, target},
                 w);
      }
    }
  }
}

void PrintCalibration(const Settings& s, const std::vector<Figures>& all) {
  std::printf(
      "\n2. Calibration kernel (agent::CalibrateBoard: iterations grown to ~2 ms, median of 5): "
      "measured vs expected; median over the runs; runs spread: max/min - 1 of the clock the runs "
      "measured.\n");
  const std::vector<int> w = {7, 5, 11, 12, 16, 32, 27, 12, 18};
  PrintRow({"board", "load", "iterations", "measured", "expected", "clock", "ratio", "runs spread",
            "target: met?"},
           w);
  for (const Figures& f : all) {
    const CalibrationCell& idle = f.cal[kIdle];
    const double idle_hz = Median(idle.measured_hz);
    for (int load : {kIdle, kHogged}) {
      if (load == kHogged && !s.hog) continue;
      const CalibrationCell& c = f.cal[load];
      const bool ok = !c.failed && !c.measured_s.empty();
      const double measured = Median(c.measured_s), hz = Median(c.measured_hz);
      const double expected = Median(c.expected_s);
      std::string clock = "-", ratio = "-", expect = "-", target = "n/a";
      if (ok && f.kind.key == "host") {
        clock = absl::StrCat(Hz(hz), " measured");
        expect = "n/a (none)";
        ratio = load == kIdle ? "n/a (no clock declared)"
                              : absl::StrFormat("hog/idle %.4f", idle_hz > 0 ? hz / idle_hz : 0);
      } else if (ok && f.kind.key == "qemu") {
        clock = absl::StrCat(Hz(hz), " implied");
        expect = "n/a (host time)";
        ratio = f.cpu_hz_nominal > 0 ? absl::StrFormat("n/a (x%.2f of %s)", hz / f.cpu_hz_nominal,
                                                       Hz(f.cpu_hz_nominal))
                                     : "n/a";
      } else if (ok) {
        clock = f.kind.key == "icount"
                    ? absl::StrCat(Hz(hz), " (icount ", Hz(1e9), ")")
                    : absl::StrCat(Hz(hz), " (model at ", Hz(f.cpu_hz_nominal), ")");
        expect = Seconds(expected);
        const double x = expected > 0 ? measured / expected : 0;
        ratio = x > 0 ? absl::StrFormat("%.5f", x) : "-";
        target = absl::StrCat("+-2 %: ", x > 0 ? (std::fabs(x - 1) <= 0.02 ? "yes" : "no") : "-");
      }
      const std::string spread = !ok                        ? "-"
                                 : c.measured_hz.size() < 2 ? "n/a (1 run)"
                                                            : Percent(Spread(c.measured_hz));
      PrintRow({f.kind.key, load == kIdle ? "idle" : "hog", ok ? absl::StrCat(c.iterations) : "-",
                ok ? Seconds(measured) : "-", expect, clock, ratio, spread, target},
               w);
    }
  }
}

void PrintRanking(const Settings& s, const std::vector<Figures>& all) {
  std::printf(
      "\n3. Ranking: %d distinct matmul configs 32x32x32 (the default, then a sample of the knob "
      "grid seeded with %u; knobs tile_m,tile_n,tile_k,unroll,order) in one image, measured "
      "twice (board restarted before each pass), each pass in rounds of %d repeats per config "
      "(A B C ... A B C ...), ranked by median.\n   regret: pass 1's cost of pass 2's best over "
      "pass 1's best; range: slowest/fastest config (pass 1).\n",
      s.configs, kSampleSeed, kTuneRoundChunk);
  const std::vector<int> w = {7, 8, 16, 7, 10, 17, 17, 9, 7, 16};
  PrintRow({"board", "configs", "repeats x rounds", "tau", "same best", "best (pass 1)",
            "best (pass 2)", "regret", "range", "target: met?"},
           w);
  for (const Figures& f : all) {
    const Ranking& r = f.ranking;
    const bool ok = !r.failed && r.best1 >= 0;
    PrintRow(
        {f.kind.key, ok ? absl::StrCat(r.configs) : "-",
         ok ? absl::StrCat(r.repeats, " x ", r.rounds) : "-",
         ok ? absl::StrFormat("%.3f", r.tau) : "-", ok ? (r.best1 == r.best2 ? "yes" : "no") : "-",
         ok ? r.best1_text : "-", ok ? r.best2_text : "-", ok ? Percent(r.regret) : "-",
         ok ? absl::StrFormat("x%.1f", r.range) : "-",
         absl::StrCat("tau >= 0.9: ", !ok            ? "-"
                                      : r.tau >= 0.9 ? "yes"
                                                     : "no")},
        w);
  }
}

void PrintCoverage(const Settings& s, const std::vector<Figures>& all) {
  std::printf(
      "\n4. Coverage (issue 37 sec. 5): %d matmul configs %dx%dx%d measured adaptively (+-%g %%, "
      "rounds of %d interleaved, at most %d costs or %lld ms each), then again after other work "
      "(board restarted, the other mode's pass between); %d pair(s) per mode and load, modes "
      "alternating A/B. old: stop and interval on the costs as one sample; new: on the rounds "
      "(pooled over the configs).\n   cover: second median inside the first's interval; +- "
      "med: the median stated half-width; shift med/max: |second/first - 1|; UNSTABLE: first "
      "results flagged (contended: of them, because the board shared its CPU: wall/CPU > %.2f); "
      "silent: misses not flagged.\n",
      s.coverage_configs, kTuneN, kTuneN, kTuneN, kCoverageTarget * 100, kCoverageChunk,
      kCoverageMaxRepeat, static_cast<long long>(absl::ToInt64Milliseconds(kCoverageBudget)),
      s.pairs, stats::kContendedWallOverCpu);
  const std::vector<int> w = {7, 5, 5, 8, 8, 9, 8, 16, 9, 10, 7, 30};
  PrintRow({"board", "load", "mode", "samples", "cover", "+- med", "costs", "shift med/max",
            "UNSTABLE", "contended", "silent", "target: cover >= 90 %?"},
           w);
  for (const Figures& f : all) {
    for (int load : {kIdle, kHogged}) {
      if (load == kHogged && !s.hog) continue;
      for (int mode : {0, 1}) {
        const CoverageCell& c = f.coverage[load][mode];
        const bool ok = !c.failed && c.samples > 0;
        auto pct = [&](int k) { return ok ? Percent(static_cast<double>(k) / c.samples) : "-"; };
        std::string verdict = "-";
        if (ok) {
          const bool met = c.covered >= 0.9 * c.samples;
          verdict = met ? "yes"
                    : c.silent_misses == 0
                        ? "no (every miss flagged UNSTABLE)"
                        : absl::StrCat("no: UNSTABLE (", c.silent_misses, " silent misses)");
        }
        PrintRow({f.kind.key, load == kIdle ? "idle" : "hog", mode == 0 ? "old" : "new",
                  ok ? absl::StrCat(c.samples) : "-", pct(c.covered),
                  ok ? Percent(Median(c.half_widths)) : "-",
                  ok ? absl::StrFormat("%.0f", Median(c.costs)) : "-",
                  ok ? absl::StrCat(Percent(Median(c.shifts)), "/", Percent(Max(c.shifts))) : "-",
                  pct(c.flagged), pct(c.contended), pct(c.silent_misses), verdict},
                 w);
      }
    }
  }
}

int Main(int argc, char** argv) {
  Settings s;
  const std::string root = DataRoot(argv[0]);
  s.crt = root + "/crt";
  s.templates = root + "/agent/templates";
  s.plugin = base::FindDataFile(argv[0], "cyclemodel/libbenchfarm_cyclemodel.so");
  bool runs_set = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--quick") {
      s.quick = true;
    } else if (flag == "--verbose") {
      s.verbose = true;
    } else if (flag == "--coverage-only") {
      s.coverage_only = true;
    } else if (flag == "--pairs" && has_value) {
      s.pairs = std::max(1, std::atoi(argv[++i]));
    } else if (flag == "--runs" && has_value) {
      s.runs = std::max(1, std::atoi(argv[++i]));
      runs_set = true;
    } else if (flag == "--boards" && has_value) {
      s.boards = absl::StrSplit(argv[++i], ',', absl::SkipEmpty());
    } else if (flag == "--crt" && has_value) {
      s.crt = argv[++i];
    } else if (flag == "--templates" && has_value) {
      s.templates = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: fidelity_bench [--runs N] [--quick] [--boards host,qemu,icount,cycles] "
                   "[--verbose] [--coverage-only] [--pairs N] [--crt DIR] [--templates DIR]\n");
      return 2;
    }
  }
  if (s.quick) {
    if (!runs_set) s.runs = 1;
    s.repeats = 6;
    s.configs = 8;
    s.tune_repeats = 6;
    s.hog = false;
    s.coverage_configs = 4;
    s.pairs = 1;
  }
  std::vector<Kind> kinds;
  for (const std::string& b : s.boards) {
    std::optional<Kind> k = KindFor(b);
    if (!k) {
      std::fprintf(stderr, "fidelity_bench: unknown board kind '%s' (host, qemu, icount, cycles)\n",
                   b.c_str());
      return 2;
    }
    kinds.push_back(*k);
  }
  char tmpl[] = "/tmp/fidelity_bench.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  s.work = tmpl;
  absl::StatusOr<catalog::KnobSpace> space = catalog::KnobSpace::Load(s.crt + "/ops/knobs.json");
  if (!space.ok()) {
    std::fprintf(stderr, "fidelity_bench: %s\n", std::string(space.status().message()).c_str());
    return 1;
  }
  agent::ImageBuilderOptions bo;
  bo.cache_dir = s.work + "/cache";
  bo.scratch_dir = s.work + "/scratch";
  bo.crt_dir = s.crt;
  bo.time_limit = absl::Minutes(10);
  agent::ImageBuilder builder(bo);

  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  absl::StatusOr<std::vector<int>> allowed = device::AllowedCpus();
  const std::string load_start = LoadAverage();
  std::printf(
      "fidelity_bench: %d run(s)%s; %ld online CPUs (this process may use %s); CPU hog: %s\n",
      s.runs, s.quick ? " (--quick)" : "", online,
      allowed.ok() ? absl::StrJoin(*allowed, ",").c_str() : "?",
      s.hog ? absl::StrCat(online, " busy processes, one pinned per CPU").c_str() : "off");
  std::printf("load average at start: %s (other builds or tests may be running on this machine)\n",
              load_start.c_str());
  std::fflush(stdout);

  std::vector<Figures> all;
  for (const Kind& k : kinds) {
    Figures f;
    f.kind = k;
    BoardRun(s, *space, &builder, &f).Run();
    for (const std::string& e : f.errors) std::fprintf(stderr, "fidelity_bench: %s\n", e.c_str());
    all.push_back(std::move(f));
  }
  std::printf("load average at end: %s\n\nboards:\n", LoadAverage().c_str());
  for (const Figures& f : all) {
    std::printf("  %-7s %s%s%s\n", f.kind.key.c_str(), f.kind.label.c_str(),
                f.description.empty() ? "" : "; ", f.description.c_str());
  }
  if (!s.coverage_only) {
    PrintRepeatability(s, all);
    PrintCalibration(s, all);
    PrintRanking(s, all);
  }
  PrintCoverage(s, all);
  std::fflush(stdout);
  const std::string cleanup = absl::StrCat("rm -rf '", s.work, "'");
  (void)!std::system(cleanup.c_str());
  for (const Figures& f : all) {
    if (!f.errors.empty()) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace benchfarm

int main(int argc, char** argv) { return benchfarm::Main(argc, argv); }
