// cycles_bench: what the cycle model costs and what it changes (issue 33), on this machine,
// side by side in one run:
//   1. Emulation speed: the same matmul calls on an emulated Cortex-M3 (QEMU mps2-an385) and
//      STM32F4 (netduinoplus2) in each timing mode — host time, -icount instructions, the cycle
//      model — as million guest instructions per host second (the instructions the model counted
//      for the calls, over each mode's wall time), rounds alternating between the modes; the
//      model's wall time over the instruction mode's (target: at most 2x).
//   2. Idle: each mode's QEMU with the firmware waiting for the host, its CPU share of one host
//      core over a few seconds (target: under 2 %).
//   3. The spaces: every config of matmul (1,728) and conv2d (200) on both parts, measured by the
//      instruction mode and by the cycle model (both deterministic: one cost each): how wide each
//      mode sees the space (slowest / fastest), how far the default is from the best, how many
//      configs are within 2 % of the best, and Kendall's tau between the two rankings, with how
//      much slower (by the model) the instruction mode's best is than the model's best.
// Not a test: the figures depend on the machine. `./farm bench cycles` (--quick: a sample of 24
// configs of matmul on the Cortex-M3 and short rounds, the smoke test's).
//
// --table=FILE: instead, a ground-truth table for the tuner's replay benchmark (tuner_bench,
// benchmarks/data/*.tsv): every config of the first of --ops on the first of --targets measured
// once by the cycle model (deterministic), written as tuner/table.h's TSV ("# knob" lines, then
// "index<TAB>cost_s" rows in index order, AutoTVM's numbering). Always the whole space.
//
// --op-dir=DIR: a user operator (its op.json and sources, as `farmctl op add DIR` takes them) is
// measured too: after --ops in the comparison, instead of them with --table. Its candidates are
// built into images as the agent builds them (agent::UserOperatorUnit, 64 to an image), its
// arguments have the manifest's dtypes, ranges and default shapes, and every candidate's output is
// checked against its reference (exactly, for an integer output) before it is timed. A candidate
// that computes a wrong answer, faults or hangs is a failed config: "inf" in the table, named on
// stderr (an image that does not build stops the run).
//
//   cycles_bench [--quick] [--configs N] [--targets m3,f4] [--ops matmul,conv2d]
//                [--op-dir=DIR] [--rounds R] [--crt DIR] [--templates DIR] [--table=FILE]

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/firmware.h"
#include "agent/measure_request.h"
#include "base/data_roots.h"
#include "base/files.h"
#include "base/process_stat.h"
#include "catalog/knob_space.h"
#include "catalog/operator.h"
#include "catalog/trial.h"
#include "device/board.h"
#include "device/measure.h"
#include "google/protobuf/util/json_util.h"
#include "proto/config.pb.h"
#include "stats/summary.h"
#include "tuner/strategy.h"
#include "tuner/table.h"

namespace benchfarm {
namespace {

constexpr int kCandidatesPerImage = 64;
const absl::Duration kCallTime = absl::Minutes(5);

struct Target {
  std::string key;      // "m3", "f4"
  std::string machine;  // QEMU -M
  std::string tmpl;     // agent/templates/<tmpl>
  std::string label;
};

const std::vector<Target>& Targets() {
  static const std::vector<Target> t = {
      {"m3", "mps2-an385", "qemu-mps2-an385", "Cortex-M3, 25 MHz, SSRAM (mps2-an385)"},
      {"f4", "netduinoplus2", "qemu-netduinoplus2",
       "STM32F405, Cortex-M4F 168 MHz, flash 5 WS + ART (netduinoplus2)"},
  };
  return t;
}

struct Settings {
  bool quick = false;
  int configs = 0;  // 0: the whole space
  int rounds = 3;
  std::vector<std::string> targets = {"m3", "f4"};
  std::vector<std::string> ops = {"matmul", "conv2d"};
  std::string crt, templates, work, plugin;
  std::string table;   // --table: write a ground-truth table instead of the three tables
  std::string op_dir;  // --op-dir: a user operator's directory, the op measured
  // The user operator of --op-dir and how each of its candidates is measured (checked, one call;
  // the function set per candidate).
  std::optional<v1::Operator> user_op;
  device::MeasureRequest user_request;
};

// The user operator in `dir` (op.json and the sources it names, with any headers beside them), as
// `farmctl op add DIR` reads it; the errors name the file.
absl::StatusOr<v1::Operator> LoadOperatorDir(const std::string& dir) {
  const std::string manifest = dir + "/op.json";
  absl::StatusOr<std::string> json = base::ReadFile(manifest);
  if (!json.ok()) return json.status();
  v1::OpTemplate spec;
  if (!google::protobuf::util::JsonStringToMessage(*json, &spec).ok()) {
    absl::StatusOr<v1::Operator> op = catalog::OperatorFromManifest(*json, {});
    return absl::InvalidArgumentError(absl::StrCat(manifest, ": ", op.status().message()));
  }
  std::map<std::string, std::string> files;
  for (const std::string& source : spec.sources()) {
    absl::StatusOr<std::string> text = base::ReadFile(dir + "/" + source);
    if (!text.ok()) return text.status();
    files[source] = *std::move(text);
  }
  absl::StatusOr<v1::Operator> op = catalog::OperatorFromManifest(*json, std::move(files));
  if (!op.ok())
    return absl::InvalidArgumentError(absl::StrCat(manifest, ": ", op.status().message()));
  return op;
}

// Sets s->user_op and s->user_request from s->op_dir: the manifest's default shapes, its dtypes and
// ranges, data seed 1, outputs checked, one cost of one call.
absl::Status LoadUserOperator(Settings* s) {
  absl::StatusOr<v1::Operator> op = LoadOperatorDir(s->op_dir);
  if (!op.ok()) return op.status();
  absl::StatusOr<std::vector<std::vector<int64_t>>> shapes = catalog::DefaultShapes(op->spec());
  if (!shapes.ok()) return shapes.status();
  absl::StatusOr<catalog::TrialArgs> args = catalog::TemplateArgs(op->spec(), *shapes);
  if (!args.ok()) return args.status();
  v1::Trial trial;
  trial.set_seed(1);
  trial.set_check_outputs(true);
  trial.mutable_measure()->set_number(1);
  trial.mutable_measure()->set_repeat(1);
  trial.mutable_measure()->set_min_repeat_ms(0);
  s->user_request = agent::MeasureRequestFor(trial, *args);
  s->user_request.reference = op->spec().reference_entry();
  s->user_op = *std::move(op);
  return absl::OkStatus();
}

bool IsUserOp(const Settings& s, const std::string& op) {
  return s.user_op && s.user_op->spec().op() == op;
}

std::string DataRoot(const char* argv0) {
  const std::string templates = base::FindDataFile(argv0, "agent/templates");
  if (templates.empty()) return ".";
  return base::AbsolutePath(
      templates.substr(0, templates.size() - std::strlen("/agent/templates")));
}

const char* TimingName(v1::QemuMachine::Timing t) {
  switch (t) {
    case v1::QemuMachine::CYCLES:
      return "cycles";
    case v1::QemuMachine::INSTRUCTIONS:
      return "instructions";
    default:
      return "host";
  }
}

std::unique_ptr<device::Board> StartBoard(const Settings& s, const Target& t,
                                          v1::QemuMachine::Timing timing,
                                          const device::FirmwareImage& image, std::string* error) {
  v1::BoardConfig c;
  c.set_id(absl::StrCat(t.key, "-", TimingName(timing)));
  c.set_kind(t.tmpl);
  c.mutable_serial();
  c.mutable_qemu()->set_machine(t.machine);
  c.mutable_qemu()->set_timing(timing);
  device::BoardOptions o;
  o.config = c;
  o.scratch_dir = s.work;
  o.cycle_model_plugin = s.plugin;
  absl::StatusOr<std::unique_ptr<device::Board>> board = device::Board::Create(o);
  if (!board.ok()) {
    *error = std::string(board.status().message());
    return nullptr;
  }
  device::EnsureOutcome out = (*board)->EnsureImage(image, absl::Now() + absl::Seconds(30));
  if (out.failure) {
    *error = out.failure->message;
    return nullptr;
  }
  return *std::move(board);
}

std::vector<std::vector<int64_t>> Shapes(const std::string& op) {
  if (op == "matmul") return {{32, 32}, {32, 32}, {32, 32}};
  return {{1, 4, 16, 16}, {8, 4, 3, 3}, {1, 8, 14, 14}};
}

device::MeasureRequest Request(const Settings& s, const std::string& function,
                               const std::string& op, int number) {
  if (IsUserOp(s, op)) {
    device::MeasureRequest q = s.user_request;
    q.function = function;
    q.options.number = number;
    return q;
  }
  device::MeasureRequest q;
  q.function = function;
  q.reference = op + "_reference";
  q.args = device::Float32Args(Shapes(op));
  q.check = false;
  q.options.number = number;
  q.options.repeat = 1;
  q.options.min_repeat_ms = 0;
  return q;
}

// Every config of `op` (the default first), or the default and a seeded sample of `limit`.
absl::StatusOr<std::vector<agent::Candidate>> Configs(const catalog::KnobSpace& space,
                                                      const std::string& op, int limit) {
  const v1::Operator* entry = space.Find(op);
  if (entry == nullptr) return absl::NotFoundError(absl::StrCat("knobs.json has no ", op));
  const v1::OpTemplate* t = &entry->spec();
  std::vector<agent::Candidate> out;
  std::set<std::string> seen;
  v1::TemplateOperator def;
  def.set_op(op);
  absl::StatusOr<agent::Candidate> c = agent::ResolveCandidate(space, def);
  if (!c.ok()) return c.status();
  out.push_back(*c);
  seen.insert(c->function);
  const int64_t size = catalog::SpaceSize(*t);
  std::vector<int64_t> order(size);
  for (int64_t i = 0; i < size; ++i) order[i] = i;
  if (limit > 0) std::shuffle(order.begin(), order.end(), std::mt19937(33));
  for (int64_t index : order) {
    if (limit > 0 && static_cast<int>(out.size()) >= limit) break;
    v1::TemplateOperator to;
    to.set_op(op);
    for (const auto& [name, value] : catalog::KnobsOfIndex(*t, index))
      (*to.mutable_knobs())[name] = value;
    c = agent::ResolveCandidate(space, to);
    if (!c.ok()) return c.status();
    if (seen.insert(c->function).second) out.push_back(*c);
  }
  return out;
}

// CPU seconds of this process's qemu-system-arm descendants.
double QemuCpuSeconds() {
  double total = 0;
  for (const base::ProcessStat& p : base::Descendants(getpid())) {
    if (absl::StartsWith(p.name, "qemu-system")) total += p.cpu_seconds;
  }
  return total;
}

const v1::QemuMachine::Timing kModes[] = {v1::QemuMachine::HOST, v1::QemuMachine::INSTRUCTIONS,
                                          v1::QemuMachine::CYCLES};

// 1 and 2: speed and idle per mode on one target, with its default-config image.
struct SpeedRow {
  std::string target;
  double instructions = 0;  // guest instructions of the timed calls (the model's count)
  std::map<std::string, std::vector<double>> wall;  // mode -> seconds per round
  std::map<std::string, double> idle;               // mode -> share of a core
};

bool Speed(const Settings& s, const Target& t, const device::FirmwareImage& image,
           const std::string& function, SpeedRow* row, std::vector<std::string>* errors) {
  row->target = t.key;
  const int number = s.quick ? 20 : 200;
  std::map<std::string, std::unique_ptr<device::Board>> boards;
  std::map<std::string, device::BoardArgs> args;  // uploaded once: the rounds time the calls
  for (v1::QemuMachine::Timing mode : kModes) {
    std::string error;
    std::unique_ptr<device::Board> b = StartBoard(s, t, mode, image, &error);
    if (b == nullptr) {
      errors->push_back(absl::StrCat(t.key, " ", TimingName(mode), ": ", error));
      return false;
    }
    boards[TimingName(mode)] = std::move(b);
  }
  // One call in each mode first (its arguments uploaded to the board: the UART is slow), and the
  // instructions the calls execute, as the model counts them.
  device::MeasureRequest q = Request(s, function, "matmul", number);
  auto measure = [&](const std::string& mode) -> absl::StatusOr<device::MeasureOutcome> {
    device::Board& b = *boards[mode];
    device::MeasureOutcome o;
    absl::Status st =
        device::MeasureRound(*b.rpc(), q, 1, &o, absl::Now() + kCallTime, &args[mode], &b.timer());
    if (!st.ok()) return st;
    return o;
  };
  for (v1::QemuMachine::Timing mode : kModes) {
    absl::StatusOr<device::MeasureOutcome> o = measure(TimingName(mode));
    if (!o.ok()) {
      errors->push_back(absl::StrCat(t.key, " ", TimingName(mode), ": ", o.status().message()));
      return false;
    }
    if (mode == v1::QemuMachine::CYCLES && !o->instructions.empty()) {
      row->instructions = o->instructions[0] * number;
    }
  }
  for (int r = 0; r < s.rounds; ++r) {
    for (v1::QemuMachine::Timing mode : kModes) {
      const absl::Time t0 = absl::Now();
      absl::StatusOr<device::MeasureOutcome> o = measure(TimingName(mode));
      const double wall = absl::ToDoubleSeconds(absl::Now() - t0);
      if (!o.ok()) {
        errors->push_back(absl::StrCat(t.key, " ", TimingName(mode), ": ", o.status().message()));
        return false;
      }
      row->wall[TimingName(mode)].push_back(wall);
    }
  }
  for (auto& [mode, a] : args) a.Forget();
  // Idle: every board waits for the host; QEMU's CPU over a few seconds, one mode at a time.
  const absl::Duration idle = absl::Seconds(s.quick ? 1 : 4);
  for (v1::QemuMachine::Timing mode : kModes) {
    for (auto& [name, b] : boards) {
      if (name != TimingName(mode)) b->Stop();
    }
    std::string error;
    std::unique_ptr<device::Board>& b = boards[TimingName(mode)];
    b->Stop();
    b = StartBoard(s, t, mode, image, &error);
    if (b == nullptr) {
      errors->push_back(absl::StrCat(t.key, " idle ", TimingName(mode), ": ", error));
      return false;
    }
    absl::SleepFor(absl::Milliseconds(500));  // past the boot
    const double before = QemuCpuSeconds();
    absl::SleepFor(idle);
    row->idle[TimingName(mode)] = (QemuCpuSeconds() - before) / absl::ToDoubleSeconds(idle);
    b->Stop();
  }
  return true;
}

// One image of `part` for `t`, or nullopt with the error in `errors`.
std::optional<device::FirmwareImage> BuildPart(const Settings& s, const Target& t,
                                               const std::string& op,
                                               const catalog::KnobSpace& space,
                                               agent::ImageBuilder* builder,
                                               const std::vector<agent::Candidate>& part,
                                               std::vector<std::string>* errors) {
  absl::StatusOr<agent::Image> image =
      builder->Build(absl::StrCat(s.templates, "/", t.tmpl),
                     IsUserOp(s, op) ? agent::UserOperatorUnit(*s.user_op, part)
                                     : agent::CandidatesUnit(space, part),
                     absl::Now() + absl::Minutes(20));
  if (!image.ok()) {
    errors->push_back(absl::StrCat(t.key, " ", op, ": build: ", image.status().message()));
    return std::nullopt;
  }
  return device::FirmwareImage{image->path, image->hash};
}

// Each candidate of `part` measured once (one call) on a fresh board of `t` in `mode` running
// `fw`, its cost (seconds) appended to `costs`. A failed call (or, for a checked request, a wrong
// answer) is an error; with `failed` (not null) its cost is tuner::kFailed, the failure goes to
// `failed` instead and the rest are measured (on a fresh board if the call lost this one),
// otherwise it returns false there.
bool MeasurePart(const Settings& s, const Target& t, const std::string& op,
                 v1::QemuMachine::Timing mode, const device::FirmwareImage& fw,
                 const std::vector<agent::Candidate>& part, std::vector<std::string>* failed,
                 std::vector<double>* costs, std::vector<std::string>* errors) {
  std::string error;
  std::unique_ptr<device::Board> b = StartBoard(s, t, mode, fw, &error);
  if (b == nullptr) {
    errors->push_back(absl::StrCat(t.key, " ", TimingName(mode), ": ", error));
    return false;
  }
  device::BoardArgs args;
  for (const agent::Candidate& c : part) {
    device::MeasureRequest q = Request(s, c.function, op, 1);
    device::MeasureOutcome o;
    absl::Status st =
        device::MeasureRound(*b->rpc(), q, 1, &o, absl::Now() + kCallTime, &args, &b->timer());
    if (!st.ok() || o.costs.empty()) {
      const std::string why = !st.ok()     ? std::string(st.message())
                              : !o.matches ? absl::StrCat("wrong answer: ", o.mismatch)
                                           : "no cost";
      const std::string message =
          absl::StrCat(t.key, " ", op, " ", c.function, " (", TimingName(mode), "): ", why);
      if (failed == nullptr) {
        errors->push_back(message);
        return false;
      }
      std::fprintf(stderr, "cycles_bench: failed: %s\n", message.c_str());
      failed->push_back(message);
      costs->push_back(tuner::kFailed);  // never the best
      if (!st.ok()) {                    // a fault, a hang, a lost link: the rest on a fresh board
        args.Forget();
        b->Stop();
        b = StartBoard(s, t, mode, fw, &error);
        if (b == nullptr) {
          errors->push_back(absl::StrCat(t.key, " ", TimingName(mode), ": ", error));
          return false;
        }
      }
      continue;
    }
    costs->push_back(o.costs[0]);
  }
  args.Release(*b->rpc(), absl::Now() + kCallTime);
  return true;
}

// 3: one space on one target.
struct SpaceRow {
  std::string target, op;
  int configs = 0;
  std::vector<double> instr, cycles;  // cost of config i, seconds
  std::vector<std::string> names;
};

bool Space(const Settings& s, const Target& t, const std::string& op,
           const catalog::KnobSpace& space, agent::ImageBuilder* builder, SpaceRow* row,
           std::vector<std::string>* errors) {
  row->target = t.key;
  row->op = op;
  absl::StatusOr<std::vector<agent::Candidate>> all = Configs(space, op, s.configs);
  if (!all.ok()) {
    errors->push_back(std::string(all.status().message()));
    return false;
  }
  row->configs = static_cast<int>(all->size());
  std::fprintf(stderr, "cycles_bench: %s %s: %d configs\n", t.key.c_str(), op.c_str(),
               row->configs);
  for (size_t first = 0; first < all->size(); first += kCandidatesPerImage) {
    std::vector<agent::Candidate> part(
        all->begin() + first, all->begin() + std::min(all->size(), first + kCandidatesPerImage));
    std::optional<device::FirmwareImage> image = BuildPart(s, t, op, space, builder, part, errors);
    if (!image) return false;
    const device::FirmwareImage& fw = *image;
    for (v1::QemuMachine::Timing mode : {v1::QemuMachine::INSTRUCTIONS, v1::QemuMachine::CYCLES}) {
      if (!MeasurePart(s, t, op, mode, fw, part, /*failed=*/nullptr,
                       mode == v1::QemuMachine::CYCLES ? &row->cycles : &row->instr, errors)) {
        return false;
      }
    }
    for (const agent::Candidate& c : part) row->names.push_back(c.function);
    std::fprintf(stderr, "cycles_bench: %s %s: %zu of %d measured\n", t.key.c_str(), op.c_str(),
                 row->names.size(), row->configs);
  }
  return true;
}

// --table: every config of `op` by index, measured once by the cycle model on `t`, written to
// `path` as a tuner ground-truth table.
bool Table(const Settings& s, const Target& t, const std::string& op,
           const catalog::KnobSpace& space, agent::ImageBuilder* builder, const std::string& path,
           std::vector<std::string>* errors) {
  const v1::Operator* entry = space.Find(op);
  if (entry == nullptr) {
    errors->push_back(absl::StrCat("knobs.json has no ", op));
    return false;
  }
  tuner::Table table;
  table.spec = entry->spec();
  const int64_t size = catalog::SpaceSize(table.spec);
  std::vector<std::string> failed;
  for (int64_t first = 0; first < size; first += kCandidatesPerImage) {
    std::vector<agent::Candidate> part;
    for (int64_t i = first; i < std::min<int64_t>(size, first + kCandidatesPerImage); ++i) {
      v1::TemplateOperator to;
      to.set_op(op);
      for (const auto& [name, value] : catalog::KnobsOfIndex(table.spec, i))
        (*to.mutable_knobs())[name] = value;
      absl::StatusOr<agent::Candidate> c = agent::ResolveCandidate(space, to);
      if (!c.ok()) {
        errors->push_back(std::string(c.status().message()));
        return false;
      }
      part.push_back(*c);
    }
    std::optional<device::FirmwareImage> fw = BuildPart(s, t, op, space, builder, part, errors);
    if (!fw ||
        !MeasurePart(s, t, op, v1::QemuMachine::CYCLES, *fw, part, &failed, &table.cost, errors)) {
      return false;
    }
    std::fprintf(stderr, "cycles_bench: table %s %s: %zu of %lld measured, %zu failed\n",
                 t.key.c_str(), op.c_str(), table.cost.size(), static_cast<long long>(size),
                 failed.size());
  }
  std::vector<std::string> comment = {
      absl::StrCat("benchfarm tuner ground truth: ", op, " on ", t.label,
                   ", every config measured once by the cycle model (seconds per call)")};
  if (IsUserOp(s, op)) {
    comment.push_back(absl::StrCat(
        "the user operator ", s.op_dir, " (version ", s.user_op->version(),
        "), its default shapes, data seed 1; every config's output checked against ",
        s.user_op->spec().reference_entry(), " first (", failed.size(), " failed: inf)"));
    comment.push_back(absl::StrCat("regenerate: ./farm bench cycles --table=benchmarks/data/", op,
                                   "-", t.key, ".tsv --op-dir=", s.op_dir, " --targets=", t.key));
  } else {
    comment.push_back(absl::StrCat("regenerate: ./farm bench cycles --table=benchmarks/data/", op,
                                   "-", t.key, ".tsv --ops=", op, " --targets=", t.key));
  }
  std::ofstream out(path);
  tuner::WriteTable(table, comment, out);
  out.flush();
  if (!out) {
    errors->push_back(absl::StrCat("cannot write ", path));
    return false;
  }
  return true;
}

double MedianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void PrintSpeed(const std::vector<SpeedRow>& rows) {
  std::printf(
      "\n1. Emulation speed: the same matmul calls in each timing mode (median of the rounds)\n");
  std::printf("   %-6s %-13s %14s %12s %16s\n", "target", "mode", "guest MIPS", "wall (s)",
              "wall / instr.");
  for (const SpeedRow& r : rows) {
    const double base = MedianOf(r.wall.at("instructions"));
    for (v1::QemuMachine::Timing mode : kModes) {
      const double wall = MedianOf(r.wall.at(TimingName(mode)));
      std::printf("   %-6s %-13s %14.0f %12.3f %15.2fx\n", r.target.c_str(), TimingName(mode),
                  wall > 0 ? r.instructions / wall / 1e6 : 0.0, wall, base > 0 ? wall / base : 0.0);
    }
  }
  std::printf("   target: the cycle model at most 2x the instruction mode's wall time\n");
  std::printf("\n2. Idle: an idle board's QEMU, share of one host core\n");
  std::printf("   %-6s %12s %14s %10s\n", "target", "host", "instructions", "cycles");
  for (const SpeedRow& r : rows) {
    std::printf("   %-6s %11.2f%% %13.2f%% %9.2f%%\n", r.target.c_str(), r.idle.at("host") * 100,
                r.idle.at("instructions") * 100, r.idle.at("cycles") * 100);
  }
  std::printf("   target: under 2 %% in every mode\n");
}

void PrintSpaces(const std::vector<SpaceRow>& rows) {
  std::printf(
      "\n3. The spaces: instruction counts (-icount) against the cycle model, every config "
      "measured by both\n");
  std::printf("   %-6s %-7s %7s %-13s %9s %10s %9s %9s\n", "target", "op", "configs", "mode",
              "spread", "default", "within 2%", "best");
  for (const SpaceRow& r : rows) {
    for (int m = 0; m < 2; ++m) {
      const std::vector<double>& c = m == 0 ? r.instr : r.cycles;
      const double best = *std::min_element(c.begin(), c.end());
      const double worst = *std::max_element(c.begin(), c.end());
      const size_t arg = std::min_element(c.begin(), c.end()) - c.begin();
      const int near = static_cast<int>(
          std::count_if(c.begin(), c.end(), [&](double x) { return x <= best * 1.02; }));
      std::printf("   %-6s %-7s %7d %-13s %8.2fx %+9.1f%% %9d %9zu\n", r.target.c_str(),
                  r.op.c_str(), r.configs, m == 0 ? "instructions" : "cycles", worst / best,
                  (c[0] / best - 1) * 100, near, arg);
    }
    const size_t best_i = std::min_element(r.instr.begin(), r.instr.end()) - r.instr.begin();
    const size_t best_c = std::min_element(r.cycles.begin(), r.cycles.end()) - r.cycles.begin();
    std::printf(
        "   %-6s %-7s Kendall tau (instructions vs cycles) %.3f; same best: %s; the instruction "
        "mode's best costs %+.1f%% by the model (%s vs %s)\n",
        r.target.c_str(), r.op.c_str(), stats::KendallTau(r.instr, r.cycles),
        best_i == best_c ? "yes" : "no", (r.cycles[best_i] / r.cycles[best_c] - 1) * 100,
        r.names[best_i].c_str(), r.names[best_c].c_str());
  }
  std::printf(
      "   (config 0 is the default; spread: slowest / fastest; best: the fastest config's "
      "index)\n");
}

}  // namespace
}  // namespace benchfarm

int main(int argc, char** argv) {
  using namespace benchfarm;
  Settings s;
  const std::string root = DataRoot(argv[0]);
  s.crt = root + "/crt";
  s.templates = root + "/agent/templates";
  s.plugin = base::FindDataFile(argv[0], "cyclemodel/libbenchfarm_cyclemodel.so");
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> std::string {
      const std::string prefix = std::string(flag) + "=";
      return absl::StartsWith(a, prefix) ? a.substr(prefix.size()) : "";
    };
    if (a == "--quick") {
      s.quick = true;
    } else if (!value("--configs").empty()) {
      s.configs = atoi(value("--configs").c_str());
    } else if (!value("--rounds").empty()) {
      s.rounds = std::max(1, atoi(value("--rounds").c_str()));
    } else if (!value("--targets").empty()) {
      s.targets = absl::StrSplit(value("--targets"), ',');
    } else if (!value("--ops").empty()) {
      s.ops = absl::StrSplit(value("--ops"), ',');
    } else if (!value("--crt").empty()) {
      s.crt = value("--crt");
    } else if (!value("--templates").empty()) {
      s.templates = value("--templates");
    } else if (!value("--table").empty()) {
      s.table = value("--table");
    } else if (!value("--op-dir").empty()) {
      s.op_dir = value("--op-dir");
      while (s.op_dir.size() > 1 && s.op_dir.back() == '/') s.op_dir.pop_back();
    } else {
      std::fprintf(stderr,
                   "usage: cycles_bench [--quick] [--configs=N] [--targets=m3,f4] "
                   "[--ops=matmul,conv2d] [--op-dir=DIR] [--rounds=R] [--crt=DIR] "
                   "[--templates=DIR] [--table=FILE]\n");
      return 2;
    }
  }
  if (s.quick) {
    if (s.configs == 0) s.configs = 24;
    s.rounds = 1;
    s.targets = {"m3"};
    s.ops = {"matmul"};
  }
  if (!s.op_dir.empty()) {
    absl::Status loaded = LoadUserOperator(&s);
    if (!loaded.ok()) {
      std::fprintf(stderr, "cycles_bench: --op-dir: %s\n", std::string(loaded.message()).c_str());
      return 2;
    }
    // The op of a table; beside the built-ins in the comparison.
    if (s.table.empty()) {
      s.ops.push_back(s.user_op->spec().op());
    } else {
      s.ops = {s.user_op->spec().op()};
    }
  }
  if (s.plugin.empty()) {
    std::fprintf(stderr,
                 "cycles_bench: no cycle model plugin (cyclemodel/libbenchfarm_cyclemodel.so)\n");
    return 1;
  }
  char tmpl[] = "/tmp/cycles_bench.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  s.work = tmpl;
  absl::StatusOr<catalog::KnobSpace> space = catalog::KnobSpace::Load(s.crt + "/ops/knobs.json");
  if (!space.ok()) {
    std::fprintf(stderr, "cycles_bench: %s\n", std::string(space.status().message()).c_str());
    return 1;
  }
  // The space each op's candidates come from: the built-ins', or the user operator's own.
  const catalog::KnobSpace user_space(s.user_op ? std::vector<v1::Operator>{*s.user_op}
                                                : std::vector<v1::Operator>{});
  auto op_space = [&](const std::string& op) -> const catalog::KnobSpace& {
    return IsUserOp(s, op) ? user_space : *space;
  };
  agent::ImageBuilderOptions bo;
  bo.cache_dir = s.work + "/cache";
  bo.scratch_dir = s.work + "/scratch";
  bo.crt_dir = s.crt;
  bo.time_limit = absl::Minutes(15);
  agent::ImageBuilder builder(bo);
  std::vector<std::string> errors;
  if (!s.table.empty()) {
    const Target* target = nullptr;
    for (const Target& t : Targets()) {
      if (t.key == s.targets[0]) target = &t;
    }
    if (target == nullptr || s.ops.empty()) {
      std::fprintf(stderr, "cycles_bench: --table: unknown target %s\n", s.targets[0].c_str());
      return 2;
    }
    Table(s, *target, s.ops[0], op_space(s.ops[0]), &builder, s.table, &errors);
    for (const std::string& e : errors) std::fprintf(stderr, "cycles_bench: %s\n", e.c_str());
    const std::string cleanup = absl::StrCat("rm -rf '", s.work, "'");
    (void)!std::system(cleanup.c_str());
    return errors.empty() ? 0 : 1;
  }
  std::vector<SpeedRow> speed;
  std::vector<SpaceRow> spaces;
  for (const Target& t : Targets()) {
    if (std::find(s.targets.begin(), s.targets.end(), t.key) == s.targets.end()) continue;
    std::printf("cycles_bench: %s: %s\n", t.key.c_str(), t.label.c_str());
    std::fflush(stdout);
    absl::StatusOr<std::vector<agent::Candidate>> def = Configs(*space, "matmul", 1);
    absl::StatusOr<agent::Image> image =
        def.ok()
            ? builder.Build(absl::StrCat(s.templates, "/", t.tmpl),
                            agent::CandidatesUnit(*space, *def), absl::Now() + absl::Minutes(20))
            : absl::StatusOr<agent::Image>(def.status());
    if (!image.ok()) {
      errors.push_back(absl::StrCat(t.key, ": ", image.status().message()));
      continue;
    }
    SpeedRow row;
    if (Speed(s, t, device::FirmwareImage{image->path, image->hash}, (*def)[0].function, &row,
              &errors)) {
      speed.push_back(row);
    }
    for (const std::string& op : s.ops) {
      SpaceRow sr;
      if (Space(s, t, op, op_space(op), &builder, &sr, &errors)) spaces.push_back(sr);
    }
  }
  PrintSpeed(speed);
  PrintSpaces(spaces);
  for (const std::string& e : errors) std::fprintf(stderr, "cycles_bench: %s\n", e.c_str());
  const std::string cleanup = absl::StrCat("rm -rf '", s.work, "'");
  (void)!std::system(cleanup.c_str());
  return errors.empty() ? 0 : 1;
}
