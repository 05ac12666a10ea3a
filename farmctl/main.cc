// farmctl: benchfarm's command-line tool. This file only parses flags and wires things up.
//
// Board commands (one board, directly):
//   farmctl board info  (--port PATH [--baud B] | --host-process [--pty] |
//                        --qemu MACHINE --image FIRMWARE.elf [--timing cycles|instructions|host])
//                       [--json]
//   farmctl board time  ... --op NAME [--shape 32x32,32x32,32x32] [--number N] [--repeat R]
//                       [--min-repeat-ms M] [--target PCT [--budget-ms B] [--max-repeat N]]
//                       [--no-check] [--seed S] [--json]
//   farmctl board call  ... NAME [ARG...]     ARG: int:N, float:X, str:TEXT or a number
//   farmctl board check-model --qemu MACHINE --image FIRMWARE.elf
//                       (--against-port PATH [--against-baud B] |
//                        --against-qemu MACHINE --against-image FIRMWARE.elf [--against-timing T])
//                       [--iterations N] [--json]
//
// Tracker commands (--tracker HOST:PORT, else $BENCHFARM_TRACKER, else localhost:7070; TLS with
// --ca/$BENCHFARM_CA and a credential: --token/$BENCHFARM_TOKEN, --token-file/$BENCHFARM_TOKEN_FILE
// or --cert/--key; --insecure for a tracker started with --insecure):
//   farmctl boards [--kind K] [--json]
//   farmctl queue [--json]
//   farmctl submit --kind K --op OP [--knob name=value ... | --knobs a=1,b=2] [--shape S]
//                  [--number N --repeat R --min-repeat-ms M --cooldown-ms C --timeout-ms T]
//                  [--target PCT --budget-ms B --max-repeat N]
//                  [--no-check] [--seed S] [--priority P] [--board ID] [--label k=v ...]
//                  [--client C] [--request-id R]
//   farmctl submit --file trials.textproto|trials.json [--client C] [--request-id R]
//   farmctl watch [JOB...] [--client C]
//   farmctl get JOB... [--json]
//   farmctl results [--client C] [--kind K] [--op OP] [--limit N] [--json | --autotvm]
//   farmctl cancel JOB...
//   farmctl logs JOB [--attempt N] [--json]
//   farmctl op add DIR|op.json | op show NAME [--version V] | op chown NAME CLIENT |
//   ops [--op NAME] [--all-versions]
//   farmctl import-log LOG --op OP --kind K [--shape S] [--out DIR] (the tune run to restore)
//   farmctl tune --op OP --kind K [...] [--target PCT ...] [--recheck K] --out DIR
//
// Flags may be spelled with dashes or underscores; --knob and --label may be repeated. Exit
// status: 0 on success, 1 on a failure (the message on stderr), 2 on a usage error.

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "base/build_info.h"
#include "base/command_line.h"
#include "base/data_roots.h"
#include "base/status_macros.h"
#include "catalog/knob_space.h"
#include "catalog/operator.h"
#include "client/channel.h"
#include "client/diagnose.h"
#include "farmctl/board_commands.h"
#include "farmctl/board_link.h"
#include "farmctl/model_check.h"
#include "farmctl/op_check.h"
#include "farmctl/tracker_commands.h"
#include "farmctl/tune.h"
#include "grpcpp/grpcpp.h"
#include "proto/benchfarm.grpc.pb.h"

ABSL_FLAG(std::string, port, "",
          "serial port or pty of the board (/dev/ttyACM0, /dev/serial/by-id/...)");
ABSL_FLAG(int, baud, 115200, "baud rate of --port");
ABSL_FLAG(bool, host_process, false,
          "start a host-process board (//crt/host:board) for the command");
ABSL_FLAG(bool, pty, false, "with --host-process: reach the board through its pseudo-terminal");
ABSL_FLAG(std::string, board_binary, "",
          "the host-process board executable (default: farmctl's runfiles)");
ABSL_FLAG(std::string, qemu, "",
          "start an emulated board: qemu-system-arm -M MACHINE (mps2-an385, netduinoplus2, ...)");
ABSL_FLAG(std::string, image, "", "with --qemu: the firmware to run (an ELF from ./farm firmware)");
ABSL_FLAG(std::string, timing, "",
          "with --qemu: cycles (the cycle model, the default), instructions (-icount) or host "
          "(host time)");
ABSL_FLAG(bool, icount, false, "with --qemu: the same as --timing instructions");
ABSL_FLAG(std::string, against_port, "", "board check-model: the real board's serial port");
ABSL_FLAG(int, against_baud, 115200, "board check-model: baud rate of --against-port");
ABSL_FLAG(std::string, against_qemu, "",
          "board check-model: an emulated board standing in for the real one");
ABSL_FLAG(std::string, against_image, "", "board check-model: --against-qemu's firmware");
ABSL_FLAG(std::string, against_timing, "instructions",
          "board check-model: --against-qemu's timing");
ABSL_FLAG(int64_t, iterations, 1000,
          "board check-model: loop iterations per timing (and twice as many)");
ABSL_FLAG(bool, json, false, "print JSON instead of a table");
ABSL_FLAG(double, timeout_s, 60, "deadline of the whole command, seconds");
ABSL_FLAG(std::string, op, "", "board time: the operator to time (add, matmul, conv2d, ...)");
ABSL_FLAG(std::string, shape, "",
          "board time: argument shapes, e.g. 32x32,32x32,32x32 (default: the sample operator's)");
ABSL_FLAG(std::string, dtype, "",
          "submit/tune: the arguments' dtypes with --shape, one for all or one each (int8, uint8, "
          "int16, uint16, int32, uint32, float16, float32, float64; default: the operator's)");
ABSL_FLAG(std::string, atol, "",
          "submit --c-source: a float output matches within atol + rtol * |reference| (default by "
          "dtype: float16 1e-2, float32 1e-4, float64 1e-9); integer outputs must be equal");
ABSL_FLAG(std::string, rtol, "", "submit --c-source: see --atol");
ABSL_FLAG(std::string, cflags, "",
          "submit --c-source: compile options, e.g. \"-O3 -funroll-loops\" (only -O, -f code "
          "generation and -m target options; an operator's are its op.json's cflags and knobs)");
ABSL_FLAG(int64_t, number, 10, "board time: calls per repeat");
ABSL_FLAG(int64_t, repeat, 3, "board time: repeats (one cost each)");
ABSL_FLAG(int64_t, min_repeat_ms, 0, "board time: grow number until a repeat lasts this long");
ABSL_FLAG(double, target, 0,
          "board time/submit/tune: adaptive mode: repeat until the median's 95% interval is within "
          "+-PCT % (1: +-1 %); 0: fixed --number/--repeat");
ABSL_FLAG(int64_t, budget_ms, 0, "with --target: time spent timing at most, ms (0: the default)");
ABSL_FLAG(int64_t, max_repeat, 0, "with --target: costs at most (0: the default, 200)");
ABSL_FLAG(
    int, recheck, 0,
    "tune: re-measure the top K configs (adaptive, --target or 1 %) and compare the two rankings");
ABSL_FLAG(bool, check, true, "board time: compare the output with <op>_reference on the board");
ABSL_FLAG(uint64_t, seed, 1,
          "board time, submit: seed of the random inputs; tune: seed of the search (its inputs: "
          "--data-seed)");
ABSL_FLAG(uint64_t, data_seed, 1,
          "tune: seed of the trials' input data (the same for any --seed or --strategy)");
ABSL_FLAG(std::string, tracker, "",
          "tracker commands: HOST:PORT of the tracker (default: $BENCHFARM_TRACKER, else "
          "localhost:7070)");
ABSL_FLAG(std::string, kind, "",
          "boards/results: only this board kind; submit: the board kind (queue) of the trial");
ABSL_FLAG(std::string, screen, "",
          "tune, two-stage: the board kind the search runs on (fast boards; --kind's other name)");
ABSL_FLAG(std::string, confirm, "",
          "tune, two-stage: the board kind the top --top configs are measured on afterwards");
ABSL_FLAG(int, top, 0, "tune, two-stage: how many of the search's best configs --confirm measures");
ABSL_FLAG(std::string, knobs, "",
          "submit: knob values, e.g. tile_m=8,tile_n=8,order=ikj (see also --knob)");
ABSL_FLAG(int64_t, cooldown_ms, 0, "submit: pause between repeats");
ABSL_FLAG(int64_t, timeout_ms, 0,
          "submit: time limit of the measurement on the board (0: the agent's default)");
ABSL_FLAG(int64_t, priority, 0, "submit: 0..100, higher runs first");
ABSL_FLAG(std::string, board, "", "submit: pin the trial to this board id");
ABSL_FLAG(std::string, client, "",
          "submit: client id (default: $USER); watch/results: only this client's jobs");
ABSL_FLAG(std::string, request_id, "",
          "submit: request id; a retry with the same one returns the same jobs (default: new)");
ABSL_FLAG(std::string, file, "", "submit: a SubmitTrialsRequest file, text format or .json");
ABSL_FLAG(int64_t, limit, 0, "results: at most this many jobs (0: all)");
ABSL_FLAG(int, attempt, 0, "logs: only this attempt's log (1, 2, ...; 0: every attempt's)");
ABSL_FLAG(std::string, strategy, "model",
          "tune: grid, random, model (per-knob-value averages) or gbt (a learned cost model: "
          "XGBoost, tuner/)");
ABSL_FLAG(int, trials, 64, "tune: how many configs to measure, the default one included");
ABSL_FLAG(int, batch, 16, "tune: configs per submission (an agent builds a batch into one image)");
ABSL_FLAG(std::vector<std::string>, transfer, {},
          "tune --strategy gbt: AutoTVM logs (comma-separated) of the same operator and version "
          "on other shapes or board kinds that pre-train the learned model");
ABSL_FLAG(int, max_flashes, 0,
          "tune: image rounds: at most K flashes per board — each round the strategy picks "
          "ceil(trials / K) configs that boards holding that many candidates per image build into "
          "one image (0: a batch per image)");
ABSL_FLAG(std::string, out, "",
          "tune: directory for the state, AutoTVM log and plot (default: tune-<op>-<kind>)");
ABSL_FLAG(bool, autotvm, false, "results: print AutoTVM log records (JSON lines, log version 0.2)");
ABSL_FLAG(std::string, ca, "",
          "tracker commands: the farm's CA (PEM) to verify the tracker (default: $BENCHFARM_CA)");
ABSL_FLAG(std::string, token, "", "tracker commands: a bearer token (default: $BENCHFARM_TOKEN)");
ABSL_FLAG(std::string, token_file, "",
          "tracker commands: a file holding the token (default: $BENCHFARM_TOKEN_FILE)");
ABSL_FLAG(std::string, cert, "",
          "tracker commands: a client certificate (PEM; default: $BENCHFARM_CERT), with --key");
ABSL_FLAG(std::string, key, "",
          "tracker commands: the certificate's key (default: $BENCHFARM_KEY)");
ABSL_FLAG(bool, insecure, false,
          "tracker commands: plain text, for a tracker started with --insecure (default: "
          "$BENCHFARM_INSECURE)");
ABSL_FLAG(std::string, reason, "", "quarantine: why the board is taken out of service");
ABSL_FLAG(std::string, c_source, "",
          "submit: a one-off C source trial: the C99 file (with --entry, --reference, --shape)");
ABSL_FLAG(std::string, entry, "", "submit --c-source: the function to time");
ABSL_FLAG(std::string, reference, "",
          "submit --c-source: the reference to check against (in the file, or add_reference ...)");
ABSL_FLAG(std::string, version, "",
          "submit / tune / op show / op retire: a catalog version of the operator (default: the "
          "latest)");
ABSL_FLAG(bool, all_versions, false, "ops: list every version, not only the latest");

namespace benchfarm::farmctl {
namespace {

constexpr char kUsage[] =
    "farmctl board info|time|call (--port PATH [--baud B] | --host-process [--pty] |\n"
    "                              --qemu MACHINE --image FIRMWARE.elf\n"
    "                              [--timing cycles|instructions|host]) [--json]\n"
    "  board info                       what the board reports (kind, firmware hash, ...)\n"
    "  board time --op NAME [--shape S] [--number N --repeat R --min-repeat-ms M]\n"
    "             [--target PCT [--budget-ms B] [--max-repeat N]]\n"
    "                                   time an operator on the board, output checked;\n"
    "                                   --target: repeat until the median is known to +-PCT %\n"
    "  board call NAME [ARG...]         call a global or system-library function\n"
    "  board check-model --qemu M --image F (--against-port P | --against-qemu M2\n"
    "             --against-image F2 [--against-timing T]) [--iterations N]\n"
    "                                   the microbenchmark suite (one loop per timing rule)\n"
    "                                   under the cycle model and on the real board: cycles\n"
    "                                   per iteration side by side, the model's error\n"
    "\n"
    "farmctl COMMAND [--tracker HOST:PORT]   (default $BENCHFARM_TRACKER, else localhost:7070)\n"
    "        [--ca CA.pem] [--token T | --token-file F | --cert C --key K] [--insecure]\n"
    "                                   (default $BENCHFARM_CA, $BENCHFARM_TOKEN, ...)\n"
    "  whoami [--json]                  who the tracker takes you for: name, role, credential and\n"
    "                                   when it expires\n"
    "  boards [--kind K] [--json]       the tracker's boards: state, agent, job, slots, flashes\n"
    "  queue [--json]                   per board kind: boards free/quarantined, jobs queued by\n"
    "                                   priority and running\n"
    "  submit --kind K --op OP [--version V] [--knob name=value ...] [--knobs a=1,b=2]\n"
    "         [--shape S] [--number N --repeat R --min-repeat-ms M --cooldown-ms C\n"
    "         --timeout-ms T] [--target PCT [--budget-ms B] [--max-repeat N]]\n"
    "         [--no-check] [--seed S] [--priority P] [--board ID] [--label k=v ...]\n"
    "         [--client C] [--request-id R]\n"
    "  submit --file trials.textproto|trials.json [--client C] [--request-id R]\n"
    "                                   queue trials; prints their job ids; --version V: that\n"
    "                                   catalog version of OP (default: the latest; a retired\n"
    "                                   version is refused)\n"
    "  watch [JOB...] [--client C]      one line per job event, until the jobs finish\n"
    "                                   (no JOB: every job, until Ctrl-C)\n"
    "  get JOB... [--json]              one job in full: its result's median +- interval,\n"
    "                                   spread, repeats and why they stopped, clock\n"
    "  results [--client C] [--kind K] [--op OP] [--limit N] [--json | --autotvm]\n"
    "                                   finished and pending jobs; --autotvm: AutoTVM log records\n"
    "  cancel JOB...                    cancel queued or running jobs\n"
    "  logs JOB [--attempt N] [--json]  each attempt's log (or attempt N's): the build command\n"
    "                                   and compiler output, the flash, the link's events and\n"
    "                                   fault lines; the job's owner and admins only\n"
    "  submit --kind K --c-source FILE --entry F --reference G --shape S [...]\n"
    "         [--dtype D[,D...]] [--atol A] [--rtol R] [--cflags \"-O3 ...\"]\n"
    "                                   a one-off C source trial (no knobs); dtypes int8, uint8,\n"
    "                                   int16, uint16, int32, uint32, float16, float32, float64\n"
    "  op add DIR|op.json               register a user operator (its op.json, C files and\n"
    "                                   headers); a changed source makes a new version, an\n"
    "                                   earlier source added again is the latest again\n"
    "  op retire NAME [--version V]     hide a version (default: the latest) from new trials;\n"
    "                                   its results stay (the owner or an admin)\n"
    "  ops [--op NAME] [--all-versions] [--json]\n"
    "                                   the operator catalog: versions, shapes, knobs\n"
    "  op show NAME [--version V] [--json]\n"
    "                                   one operator: owner, who added it when, entry,\n"
    "                                   reference, args, knobs, cflags, files\n"
    "  op chown NAME CLIENT             (admins) give an operator name to a client: only its\n"
    "                                   owner (and admins) may add versions\n"
    "  board move BOARD AGENT           (admins) let another agent serve a board: on a secure\n"
    "                                   tracker a board is served only by the agent that\n"
    "                                   registered it\n"
    "  quarantine BOARD [--reason R] | release BOARD\n"
    "                                   (admins) take a board out of service, or back in\n"
    "  import-log LOG --op OP --kind K [--shape S ...] [--out DIR]\n"
    "                                   restore an AutoTVM log's records of that run into a\n"
    "                                   tune directory, so tune resumes without re-measuring\n"
    "  tune --op OP [--version V] --kind K [--strategy grid|random|model|gbt] [--trials N]\n"
    "       [--batch B | --max-flashes K] [--seed S] [--data-seed D] [--transfer LOG,...]\n"
    "       [--out DIR] [--shape S]\n"
    "       [--number N --repeat R\n"
    "       --min-repeat-ms M] [--no-check] [--target PCT [--budget-ms B] [--max-repeat N]]\n"
    "       [--recheck K | --screen KIND_A --confirm KIND_B --top K]\n"
    "                                   search the op's knob space on the farm (--version V:\n"
    "                                   that catalog version; default: the latest); resumable\n"
    "                                   from DIR; prints the best configs and their speed-up\n"
    "                                   over the default, writes an AutoTVM log and a plot;\n"
    "                                   --recheck K measures the top K again and says whether\n"
    "                                   the ranking held (top-1, Kendall tau); two-stage:\n"
    "                                   search on KIND_A's fast boards, measure the top K on\n"
    "                                   KIND_B's, and compare the two rankings\n"
    "\n"
    "Costs show as the median per call and its 95 % interval: \"12.3 us +-0.4 %\"; UNSTABLE\n"
    "when the interval is wider than the tracker's threshold (+-3 % by default).\n"
    "\n"
    "farmctl --help                     this text and every flag; farmctl --version: the\n"
    "                                   version and source commit farmctl was built from\n";

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "farmctl: %s\n", std::string(status.message()).c_str());
  return 1;
}

std::string DefaultBoardBinary(const char* argv0) {
  if (const char* env = std::getenv("BENCHFARM_BOARD")) return env;
  std::vector<std::string> candidates = {absl::StrCat(argv0, ".runfiles/benchfarm/crt/host/board")};
  for (const char* dir : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* value = std::getenv(dir)) {
      candidates.push_back(absl::StrCat(value, "/benchfarm/crt/host/board"));
    }
  }
  candidates.push_back("bazel-bin/crt/host/board");
  for (const std::string& candidate : candidates) {
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

int Usage(const std::string& message);

// board check-model: the suite under the cycle model (`model`) and on the board --against-*
// names, side by side.
int CheckModelCommand(BoardLinkOptions model, bool json, absl::Time deadline) {
  if (model.qemu_machine.empty()) {
    return Usage("board check-model: --qemu MACHINE --image FIRMWARE.elf is the modeled board");
  }
  if (!model.qemu_timing.empty() && model.qemu_timing != "cycles") {
    return Usage("board check-model: the modeled board runs the cycle model (--timing cycles)");
  }
  BoardLinkOptions real;
  real.port = absl::GetFlag(FLAGS_against_port);
  real.baud = absl::GetFlag(FLAGS_against_baud);
  real.qemu_machine = absl::GetFlag(FLAGS_against_qemu);
  real.image = absl::GetFlag(FLAGS_against_image);
  real.qemu_timing = absl::GetFlag(FLAGS_against_timing);
  real.cycle_model_plugin = model.cycle_model_plugin;
  real.connect_timeout = model.connect_timeout;
  if (real.port.empty() == real.qemu_machine.empty()) {
    return Usage(
        "board check-model: name the real board: --against-port PATH (or an emulated "
        "stand-in: --against-qemu MACHINE --against-image FIRMWARE.elf)");
  }
  const int64_t iterations = absl::GetFlag(FLAGS_iterations);
  if (iterations < 1 || iterations > (int64_t{1} << 30)) {
    return Usage("--iterations: 1 to 2^30");
  }
  absl::StatusOr<std::unique_ptr<device::Board>> modeled = OpenBoard(model);
  if (!modeled.ok()) return Fail(modeled.status());
  absl::StatusOr<std::vector<std::pair<std::string, double>>> model_cycles =
      MicrobenchCycles(**modeled, iterations, deadline);
  if (!model_cycles.ok()) return Fail(model_cycles.status());
  const std::string model_board = (*modeled)->Description();
  modeled->reset();
  absl::StatusOr<std::unique_ptr<device::Board>> measured = OpenBoard(real);
  if (!measured.ok()) return Fail(measured.status());
  absl::StatusOr<std::vector<std::pair<std::string, double>>> measured_cycles =
      MicrobenchCycles(**measured, iterations, deadline);
  if (!measured_cycles.ok()) return Fail(measured_cycles.status());
  std::string measured_board = (*measured)->Description();
  if ((*measured)->info()) {
    auto timer = (*measured)->info()->fields.find("timer");
    if (timer != (*measured)->info()->fields.end()) {
      absl::StrAppend(&measured_board, " (timer ", timer->second, ")");
    }
  }
  std::fputs(FormatModelCheck(CompareMicrobenchmarks(*model_cycles, *measured_cycles), model_board,
                              measured_board, json)
                 .c_str(),
             stdout);
  return 0;
}

// `board time`'s flags: the operator, its shapes (--shape, else the sample operator's default
// shapes) and how to measure. 0, or the exit code after saying what is wrong.
int TimeRequestFromFlags(TimeRequest* time) {
  time->op = absl::GetFlag(FLAGS_op);
  if (time->op.empty()) {
    std::fprintf(stderr, "farmctl: board time needs --op NAME\n");
    return 2;
  }
  absl::StatusOr<std::vector<Shape>> shapes = absl::GetFlag(FLAGS_shape).empty()
                                                  ? DefaultShapes(time->op)
                                                  : ParseShapes(absl::GetFlag(FLAGS_shape));
  if (!shapes.ok()) return Fail(shapes.status());
  time->shapes = *shapes;
  time->measure.number = absl::GetFlag(FLAGS_number);
  time->measure.repeat = absl::GetFlag(FLAGS_repeat);
  time->measure.min_repeat_ms = absl::GetFlag(FLAGS_min_repeat_ms);
  v1::MeasureOptions adaptive;
  if (absl::Status s = SetAdaptive(absl::GetFlag(FLAGS_target), absl::GetFlag(FLAGS_budget_ms),
                                   absl::GetFlag(FLAGS_max_repeat), &adaptive);
      !s.ok()) {
    return Fail(s);
  }
  time->target_rel_ci = adaptive.target_rel_ci();
  time->budget = absl::Milliseconds(adaptive.budget_ms());
  time->max_repeat = adaptive.max_repeat();
  time->check = absl::GetFlag(FLAGS_check);
  time->seed = absl::GetFlag(FLAGS_seed);
  return 0;
}

// `board time` on the opened board (`board`: its description): prints the result; 1 when the
// outputs do not match.
int TimeCommand(device::Board& opened, const std::string& board, const TimeRequest& time, bool json,
                absl::Time deadline) {
  absl::StatusOr<TimeResult> result = TimeOperator(*opened.rpc(), opened.timer(), time, deadline);
  if (!result.ok()) return Fail(result.status());
  result->emulation = opened.emulation();
  result->timer = opened.timer().name();
  result->units_hz = static_cast<double>(result->info.cpu_hz);
  if (result->emulation == "qemu-icount") {
    result->units_hz = 1e9 / std::ldexp(1.0, opened.config().qemu().icount_shift());
  }
  std::fputs(FormatTime(*result, board, json).c_str(), stdout);
  return result->check == "mismatch" ? 1 : 0;
}

int BoardCommand(const std::vector<std::string>& args, const char* argv0) {
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string& command = args[0];
  if (command != "info" && command != "time" && command != "call" && command != "check-model") {
    std::fprintf(stderr, "farmctl: unknown board command \"%s\"\n%s", command.c_str(), kUsage);
    return 2;
  }
  BoardLinkOptions options;
  options.port = absl::GetFlag(FLAGS_port);
  options.baud = absl::GetFlag(FLAGS_baud);
  options.host_process = absl::GetFlag(FLAGS_host_process);
  options.host_process_pty = absl::GetFlag(FLAGS_pty);
  options.board_binary = absl::GetFlag(FLAGS_board_binary);
  if (options.board_binary.empty()) options.board_binary = DefaultBoardBinary(argv0);
  options.qemu_machine = absl::GetFlag(FLAGS_qemu);
  options.qemu_timing = absl::GetFlag(FLAGS_timing);
  if (absl::GetFlag(FLAGS_icount)) {
    if (!options.qemu_timing.empty() && options.qemu_timing != "instructions") {
      return Usage("--icount means --timing instructions: give one");
    }
    options.qemu_timing = "instructions";
  }
  // The cycle model's plugin: $BENCHFARM_CYCLE_MODEL (the installed farmctl's wrapper sets it),
  // else farmctl's runfiles.
  const char* plugin = std::getenv("BENCHFARM_CYCLE_MODEL");
  options.cycle_model_plugin =
      plugin != nullptr && plugin[0] != '\0'
          ? std::string(plugin)
          : base::FindDataFile(argv0, "cyclemodel/libbenchfarm_cyclemodel.so");
  options.image = absl::GetFlag(FLAGS_image);
  const bool json = absl::GetFlag(FLAGS_json);
  const absl::Time deadline = absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_timeout_s));

  // Validate the command's own flags before touching the board.
  TimeRequest time;
  if (command == "time") {
    if (int code = TimeRequestFromFlags(&time); code != 0) return code;
  }
  std::vector<device::Arg> call_args;
  if (command == "call") {
    if (args.size() < 2) {
      std::fprintf(stderr, "farmctl: board call needs a function name\n");
      return 2;
    }
    for (size_t i = 2; i < args.size(); ++i) {
      absl::StatusOr<device::Arg> arg = ParseCallArg(args[i]);
      if (!arg.ok()) return Fail(arg.status());
      call_args.push_back(*arg);
    }
  }

  if (command == "check-model") return CheckModelCommand(options, json, deadline);

  absl::StatusOr<std::unique_ptr<device::Board>> opened = OpenBoard(options);
  if (!opened.ok()) return Fail(opened.status());
  device::RpcClient& rpc = *(*opened)->rpc();
  const std::string board = (*opened)->Description();

  if (command == "info") {
    // What Connect read: a board without benchfarm.DeviceInfo says what is unknown.
    std::fputs(FormatInfo(*(*opened)->info(), board, json).c_str(), stdout);
  } else if (command == "time") {
    return TimeCommand(**opened, board, time, json, deadline);
  } else {
    absl::StatusOr<uint64_t> fn = rpc.GetGlobalFunc(args[1], deadline);
    if (absl::IsNotFound(fn.status())) fn = rpc.GetFunction(args[1], deadline);
    if (!fn.ok()) return Fail(fn.status());
    absl::StatusOr<device::Arg> value = rpc.CallFunc(*fn, call_args, deadline);
    if (!value.ok()) return Fail(value.status());
    std::fputs(FormatCallResult(*value, json).c_str(), stdout);
  }
  return 0;
}

// ---- tracker commands ---------------------------------------------------------------------------

// Flags that may be given several times (absl keeps only the last), taken out of argv first.
struct RepeatedFlags {
  std::vector<std::string> knobs;   // --knob
  std::vector<std::string> labels;  // --label
};

int Usage(const std::string& message) {
  std::fprintf(stderr, "farmctl: %s\n%s", message.c_str(), kUsage);
  return 2;
}

std::string TrackerAddress() {
  std::string address = absl::GetFlag(FLAGS_tracker);
  if (address.empty()) {
    const char* env = std::getenv("BENCHFARM_TRACKER");
    address = env != nullptr && env[0] != '\0' ? env : "localhost:7070";
  }
  return address;
}

// --client, else: a secure tracker knows who calls (the credential's name: send none); an
// insecure one is told $USER.
std::string DefaultClient(bool insecure) {
  if (!absl::GetFlag(FLAGS_client).empty()) return absl::GetFlag(FLAGS_client);
  if (!insecure) return "";
  const char* user = std::getenv("USER");
  return user != nullptr && user[0] != '\0' ? user : "farmctl";
}

// `submit`'s trial flags, as TrialFromFlags takes them (--knob given often, or --knobs a,b).
TrialFlags TrialFlagsFromFlags(const RepeatedFlags& repeated) {
  TrialFlags flags;
  flags.kind = absl::GetFlag(FLAGS_kind);
  flags.op = absl::GetFlag(FLAGS_op);
  flags.knobs = repeated.knobs;
  if (!absl::GetFlag(FLAGS_knobs).empty()) {
    for (absl::string_view k : absl::StrSplit(absl::GetFlag(FLAGS_knobs), ',', absl::SkipEmpty())) {
      flags.knobs.emplace_back(k);
    }
  }
  flags.shapes = absl::GetFlag(FLAGS_shape);
  flags.dtypes = absl::GetFlag(FLAGS_dtype);
  flags.atol = absl::GetFlag(FLAGS_atol);
  flags.rtol = absl::GetFlag(FLAGS_rtol);
  flags.cflags = absl::GetFlag(FLAGS_cflags);
  flags.number = absl::GetFlag(FLAGS_number);
  flags.repeat = absl::GetFlag(FLAGS_repeat);
  flags.min_repeat_ms = absl::GetFlag(FLAGS_min_repeat_ms);
  flags.cooldown_ms = absl::GetFlag(FLAGS_cooldown_ms);
  flags.timeout_ms = absl::GetFlag(FLAGS_timeout_ms);
  flags.target_pct = absl::GetFlag(FLAGS_target);
  flags.budget_ms = absl::GetFlag(FLAGS_budget_ms);
  flags.max_repeat = absl::GetFlag(FLAGS_max_repeat);
  flags.check = absl::GetFlag(FLAGS_check);
  flags.seed = absl::GetFlag(FLAGS_seed);
  flags.priority = absl::GetFlag(FLAGS_priority);
  flags.board = absl::GetFlag(FLAGS_board);
  flags.labels = repeated.labels;
  flags.c_source_path = absl::GetFlag(FLAGS_c_source);
  flags.entry = absl::GetFlag(FLAGS_entry);
  flags.reference = absl::GetFlag(FLAGS_reference);
  return flags;
}

int SubmitCommand(const TrackerClient& tracker, const RepeatedFlags& repeated, bool insecure) {
  v1::SubmitTrialsRequest request;
  const std::string file = absl::GetFlag(FLAGS_file);
  if (!file.empty()) {
    if (!absl::GetFlag(FLAGS_op).empty() || !absl::GetFlag(FLAGS_kind).empty()) {
      return Usage("submit: give either --file or the trial flags (--kind, --op, ...), not both");
    }
    std::ifstream in(file);
    if (!in) return Fail(absl::NotFoundError(absl::StrCat("cannot read ", file)));
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<v1::SubmitTrialsRequest> parsed = ParseSubmitFile(file, text.str());
    if (!parsed.ok()) return Fail(parsed.status());
    request = std::move(*parsed);
    if (request.trials_size() == 0) return Fail(absl::InvalidArgumentError(file + ": no trials"));
  } else {
    TrialFlags flags = TrialFlagsFromFlags(repeated);
    if (flags.kind.empty() || (flags.op.empty() && flags.c_source_path.empty())) {
      return Usage("submit needs --kind and --op (or --c-source FILE, or --file)");
    }
    catalog::KnobSpace table;
    if (!flags.c_source_path.empty()) {
      std::ifstream in(flags.c_source_path);
      if (!in)
        return Fail(
            absl::NotFoundError(absl::StrCat("--c-source: cannot read ", flags.c_source_path)));
      std::stringstream text;
      text << in.rdbuf();
      flags.c_source = text.str();
    } else {
      // The catalog's knobs: a misspelt knob is caught here, with the op's knob names (the
      // built-in ones also when the tracker cannot be asked; the submission then says why).
      absl::StatusOr<catalog::KnobSpace> fetched = FetchKnobSpace(tracker);
      table = fetched.ok() ? *std::move(fetched) : catalog::BuiltinKnobSpace();
    }
    absl::StatusOr<v1::Trial> trial = TrialFromFlags(flags, table);
    if (!trial.ok()) return Fail(trial.status());
    if (!absl::GetFlag(FLAGS_version).empty() && trial->op().has_template_op()) {
      trial->mutable_op()->mutable_template_op()->set_version(absl::GetFlag(FLAGS_version));
    }
    *request.add_trials() = std::move(*trial);
  }
  // Flags fill in what a file leaves out; a file's own ids win.
  if (request.client_id().empty()) request.set_client_id(DefaultClient(insecure));
  if (request.request_id().empty()) {
    request.set_request_id(
        absl::GetFlag(FLAGS_request_id).empty() ? NewRequestId() : absl::GetFlag(FLAGS_request_id));
  }
  absl::StatusOr<std::vector<std::string>> ids = Submit(tracker, request, std::cout);
  if (!ids.ok()) return Fail(ids.status());
  std::fprintf(stderr, "farmctl: %zu trial(s) queued for %s (request %s)\n", ids->size(),
               request.client_id().empty() ? "you (the client your credential names)"
                                           : ("client " + request.client_id()).c_str(),
               request.request_id().c_str());
  return 0;
}

absl::StatusOr<TuneOptions> TuneOptionsFromFlags() {
  TuneOptions options;
  options.op = absl::GetFlag(FLAGS_op).empty() ? "matmul" : absl::GetFlag(FLAGS_op);
  const std::string kind = absl::GetFlag(FLAGS_kind), screen = absl::GetFlag(FLAGS_screen);
  if (!kind.empty() && !screen.empty() && kind != screen) {
    return absl::InvalidArgumentError("--screen is the search's board kind: give it or --kind");
  }
  options.kind = !screen.empty() ? screen : !kind.empty() ? kind : "host-process";
  options.confirm = absl::GetFlag(FLAGS_confirm);
  options.strategy = absl::GetFlag(FLAGS_strategy);
  options.trials = absl::GetFlag(FLAGS_trials);
  options.batch = absl::GetFlag(FLAGS_batch);
  options.max_flashes = absl::GetFlag(FLAGS_max_flashes);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.data_seed = absl::GetFlag(FLAGS_data_seed);
  options.transfer = absl::GetFlag(FLAGS_transfer);
  options.out_dir = absl::GetFlag(FLAGS_out).empty()
                        ? absl::StrCat("tune-", options.op, "-", options.kind)
                        : absl::GetFlag(FLAGS_out);
  options.client_id = absl::GetFlag(FLAGS_client);
  options.measure.set_number(static_cast<int32_t>(absl::GetFlag(FLAGS_number)));
  options.measure.set_repeat(static_cast<int32_t>(absl::GetFlag(FLAGS_repeat)));
  options.measure.set_min_repeat_ms(static_cast<int32_t>(absl::GetFlag(FLAGS_min_repeat_ms)));
  options.measure.set_cooldown_ms(static_cast<int32_t>(absl::GetFlag(FLAGS_cooldown_ms)));
  options.measure.set_timeout_ms(static_cast<int32_t>(absl::GetFlag(FLAGS_timeout_ms)));
  options.recheck = absl::GetFlag(FLAGS_recheck);
  if (absl::GetFlag(FLAGS_top) != 0) {
    if (options.recheck != 0 || options.confirm.empty()) {
      return absl::InvalidArgumentError(
          "--top K goes with --confirm KIND (two-stage tuning); --recheck K measures again on "
          "the search's own kind");
    }
    options.recheck = absl::GetFlag(FLAGS_top);
  }
  if (absl::GetFlag(FLAGS_target) > 0 || options.recheck == 0) {
    RETURN_IF_ERROR(SetAdaptive(absl::GetFlag(FLAGS_target), absl::GetFlag(FLAGS_budget_ms),
                                absl::GetFlag(FLAGS_max_repeat), &options.measure));
  } else {
    // --budget-ms/--max-repeat without --target bound the recheck only (adaptive at 1 %).
    v1::MeasureOptions recheck;
    RETURN_IF_ERROR(
        SetAdaptive(1, absl::GetFlag(FLAGS_budget_ms), absl::GetFlag(FLAGS_max_repeat), &recheck));
    options.recheck_budget_ms = recheck.budget_ms();
    options.recheck_max_repeat = recheck.max_repeat();
  }
  options.check = absl::GetFlag(FLAGS_check);
  options.priority = static_cast<int>(absl::GetFlag(FLAGS_priority));
  absl::StatusOr<std::vector<v1::ArgSpec>> args =
      ArgSpecs(absl::GetFlag(FLAGS_shape), absl::GetFlag(FLAGS_dtype));
  if (!args.ok()) return args.status();
  options.args = *std::move(args);
  options.tty = isatty(STDERR_FILENO);
  return options;
}

// A tracker command's exit code: 0, or 1 after saying why (its output flushed first).
int Done(const absl::Status& status) {
  std::cout.flush();
  return status.ok() ? 0 : Fail(status);
}

// `op add DIR|op.json`: the operator read, compiled for the host (op_check.h) and sent.
absl::Status AddOperatorCommand(const TrackerClient& tracker, const std::string& path, bool json,
                                const char* argv0) {
  std::string dir;
  ASSIGN_OR_RETURN(v1::Operator op, LoadOperator(path, &dir));
  OpCheckOptions options;
  options.crt_dir = FindCrtTree(argv0);
  if (const char* cc = std::getenv("CC"); cc != nullptr && cc[0] != '\0') options.cc = cc;
  ASSIGN_OR_RETURN(OpCheck check, CheckOperatorBuilds(op, dir, options));
  for (const std::string& skipped : check.skipped) {
    std::fprintf(stderr, "farmctl: note: %s\n", skipped.c_str());
  }
  return AddOperator(tracker, std::move(op), json, std::cout);
}

// `op add DIR|op.json`, `op show NAME`, `op retire NAME`, `op chown NAME CLIENT`.
int OpCommand(const TrackerClient& tracker, const std::vector<std::string>& operands, bool json,
              const char* argv0) {
  absl::Status status;
  if (operands.size() == 2 && operands[0] == "add") {
    status = AddOperatorCommand(tracker, operands[1], json, argv0);
  } else if (operands.size() == 2 && operands[0] == "show") {
    status = ShowOperator(tracker, operands[1], absl::GetFlag(FLAGS_version), json, std::cout);
  } else if (operands.size() == 3 && operands[0] == "chown") {
    status = SetOperatorOwner(tracker, operands[1], operands[2], std::cout);
  } else if (operands.size() == 2 && operands[0] == "retire") {
    status = RetireOperator(tracker, operands[1], absl::GetFlag(FLAGS_version), json, std::cout);
  } else {
    return Usage(
        "op add DIR|op.json, op show NAME, op retire NAME [--version V], or op chown NAME CLIENT");
  }
  return Done(status);
}

// `results`: the finished jobs as a table, JSON or AutoTVM records.
int ResultsCommand(const TrackerClient& tracker, bool json) {
  if (json && absl::GetFlag(FLAGS_autotvm)) return Usage("results: --json or --autotvm, not both");
  ResultsOptions options;
  // AutoTVM records list every knob of the op (catalog entries, built-in and user).
  absl::StatusOr<catalog::KnobSpace> table = catalog::KnobSpace();
  if (absl::GetFlag(FLAGS_autotvm)) {
    table = FetchKnobSpace(tracker);
    if (!table.ok()) return Fail(table.status());
    options.knobs = &*table;
  }
  options.client_id = absl::GetFlag(FLAGS_client);
  options.board_kind = absl::GetFlag(FLAGS_kind);
  options.op = absl::GetFlag(FLAGS_op);
  options.limit = absl::GetFlag(FLAGS_limit);
  if (options.limit < 0) return Usage("results: --limit must be 0 or more");
  options.format = json                           ? ResultsFormat::kJson
                   : absl::GetFlag(FLAGS_autotvm) ? ResultsFormat::kAutoTvm
                                                  : ResultsFormat::kTable;
  options.notes = &std::cerr;
  return Done(PrintResults(tracker, options, std::cout));
}

// `tune`, or `import-log FILE` (operands: the file): a search of the operator's knob space.
int TuneCommand(const TrackerClient& tracker, const std::string& command,
                const std::vector<std::string>& operands, bool insecure) {
  if (command == "import-log" && operands.size() != 1) {
    return Usage("import-log needs one AutoTVM log file");
  }
  absl::StatusOr<TuneOptions> options = TuneOptionsFromFlags();
  if (!options.ok()) return Fail(options.status());
  absl::StatusOr<v1::Operator> op =
      FetchOperator(tracker, options->op, absl::GetFlag(FLAGS_version));
  if (!op.ok()) return Fail(op.status());
  if (command == "tune" && op->state().retired()) {
    return Fail(absl::FailedPreconditionError(absl::StrCat(
        "operator ", op->name(), " version ", op->version(),
        " is retired (farmctl op retire): new trials may not run it; tune the latest (no "
        "--version) or add its source again")));
  }
  absl::Status status;
  if (command == "import-log") {
    // The kind's core: records of another core are another run's.
    absl::StatusOr<BoardCores> cores = FetchBoardCores(tracker);
    if (!cores.ok()) return Fail(cores.status());
    auto core = cores->find(options->kind);
    status =
        ImportLog(*op, *options, core == cores->end() ? "" : core->second, operands[0], std::cout);
  } else {
    const catalog::KnobSpace table({*std::move(op)});
    options->derive_client = !insecure;
    status = Tune(tracker, table, *options, std::cout, std::cerr);
  }
  return Done(status);
}

int TrackerCommand(const std::vector<std::string>& args, const RepeatedFlags& repeated,
                   const char* argv0) {
  const std::string& command = args[0];
  const std::vector<std::string> operands(args.begin() + 1, args.end());
  const std::string address = TrackerAddress();
  v1::TrackerCredentials flags;
  flags.set_ca_cert(absl::GetFlag(FLAGS_ca));
  flags.set_token(absl::GetFlag(FLAGS_token));
  flags.set_token_file(absl::GetFlag(FLAGS_token_file));
  flags.set_cert(absl::GetFlag(FLAGS_cert));
  flags.set_key(absl::GetFlag(FLAGS_key));
  flags.set_insecure(absl::GetFlag(FLAGS_insecure));
  const v1::TrackerCredentials credentials = client::CredentialsFromEnvironment(flags);
  // A long `tune` or `watch` finds a restarted tracker within seconds (gRPC's own backoff grows
  // to two minutes).
  grpc::ChannelArguments channel_args;
  channel_args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  channel_args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      client::TrackerChannel(address, credentials, channel_args);
  if (!channel.ok()) return Fail(channel.status());
  std::unique_ptr<v1::Tracker::Stub> stub = v1::Tracker::NewStub(*channel);
  TrackerClient tracker;
  tracker.stub = stub.get();
  tracker.address = address;
  tracker.timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout_s));
  tracker.diagnose = [address, credentials] {
    return client::DiagnoseTransport(address, credentials);
  };
  const bool json = absl::GetFlag(FLAGS_json);

  if (command != "submit" && (!repeated.knobs.empty() || !repeated.labels.empty())) {
    return Usage(absl::StrCat(command, ": --knob and --label belong to submit"));
  }
  if (command != "watch" && command != "cancel" && command != "get" && command != "logs" &&
      command != "op" && command != "import-log" && command != "quarantine" &&
      command != "release" && command != "move" && !operands.empty()) {
    return Usage(absl::StrCat(command, ": unexpected argument \"", operands[0], "\""));
  }
  absl::Status status;
  if (command == "whoami") {
    status = PrintWhoAmI(tracker, absl::GetFlag(FLAGS_client), json, std::cout);
  } else if (command == "boards") {
    status = PrintBoards(tracker, absl::GetFlag(FLAGS_kind), json, std::cout);
  } else if (command == "queue") {
    status = PrintQueue(tracker, json, std::cout);
  } else if (command == "submit") {
    return SubmitCommand(tracker, repeated, credentials.insecure());
  } else if (command == "get") {
    if (operands.empty()) return Usage("get needs at least one job id");
    status = ShowJobs(tracker, operands, json, std::cout);
  } else if (command == "logs") {
    if (operands.size() != 1) return Usage("logs needs one job id");
    if (absl::GetFlag(FLAGS_attempt) < 0) return Usage("logs: --attempt is 1, 2, ... (0: all)");
    status = PrintJobLog(tracker, operands[0], absl::GetFlag(FLAGS_attempt), json, std::cout);
  } else if (command == "watch") {
    WatchOptions options;
    options.client_id = absl::GetFlag(FLAGS_client);
    options.job_ids = operands;
    status = Watch(tracker, options, std::cout);
  } else if (command == "move") {
    if (operands.size() != 2) return Usage("board move needs a board id and an agent id");
    status = MoveBoard(tracker, operands[0], operands[1], std::cout);
  } else if (command == "quarantine" || command == "release") {
    if (operands.size() != 1) return Usage(absl::StrCat(command, " needs one board id"));
    status = SetBoardQuarantine(tracker, operands[0], command == "quarantine",
                                absl::GetFlag(FLAGS_reason), std::cout);
  } else if (command == "ops") {
    status = PrintOperators(tracker, absl::GetFlag(FLAGS_op), absl::GetFlag(FLAGS_all_versions),
                            json, std::cout);
  } else if (command == "op") {
    return OpCommand(tracker, operands, json, argv0);
  } else if (command == "results") {
    return ResultsCommand(tracker, json);
  } else if (command == "tune" || command == "import-log") {
    return TuneCommand(tracker, command, operands, credentials.insecure());
  } else {  // cancel
    if (operands.empty()) return Usage("cancel needs at least one job id");
    status = Cancel(tracker, operands, std::cout);
  }
  return Done(status);
}

// Rewrites --foo-bar as --foo_bar (so --min-repeat-ms works too) and takes out the repeatable
// flags --knob and --label (as "--knob X" or "--knob=X").
std::vector<std::string> PrepareArgs(int argc, char** argv, RepeatedFlags* repeated,
                                     std::string* error) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {  // everything after is positional
      for (; i < argc; ++i) out.push_back(argv[i]);
      break;
    }
    if (absl::StartsWith(arg, "--")) {
      size_t end = arg.find('=');
      std::string name = absl::StrReplaceAll(arg.substr(0, end), {{"-", "_"}}).replace(0, 2, "--");
      if (absl::StartsWith(name, "--no_")) name.erase(4, 1);  // --no-check: absl's --nocheck
      std::vector<std::string>* target = name == "--knob"    ? &repeated->knobs
                                         : name == "--label" ? &repeated->labels
                                                             : nullptr;
      if (target != nullptr) {
        if (end != std::string::npos) {
          target->push_back(arg.substr(end + 1));
        } else if (i + 1 < argc) {
          target->push_back(argv[++i]);
        } else {
          *error = absl::StrCat(name, " needs a value (name=value)");
        }
        continue;
      }
      arg = name + (end == std::string::npos ? "" : arg.substr(end));
    }
    out.push_back(arg);
  }
  return out;
}

}  // namespace
}  // namespace benchfarm::farmctl

int main(int argc, char** argv) {
  using namespace benchfarm::farmctl;
  RepeatedFlags repeated;
  std::string error;
  std::vector<std::string> storage = PrepareArgs(argc, argv, &repeated, &error);
  if (!error.empty()) return Usage(error);
  // A bare --version is farmctl's own; with a command, --version V names a catalog version.
  if (storage.size() == 2 && storage[1] == "--version") {
    std::printf("%s\n", benchfarm::base::VersionLine("farmctl").c_str());
    return 0;
  }
  std::vector<char*> fixed;
  for (std::string& arg : storage) fixed.push_back(arg.data());
  benchfarm::base::SetUpCommandLine("farmctl", kUsage, __FILE__);
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(fixed.size()), fixed.data());
  std::vector<std::string> args(positional.begin() + 1, positional.end());
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (args.size() >= 2 && args[0] == "board" && args[1] == "move") {  // the tracker's
    args.erase(args.begin());
    return TrackerCommand(args, repeated, argv[0]);
  }
  if (args[0] == "board") {
    args.erase(args.begin());
    return BoardCommand(args, argv[0]);
  }
  for (const char* command :
       {"whoami", "boards", "queue", "submit", "watch", "get", "results", "cancel", "logs", "tune",
        "op", "ops", "import-log", "quarantine", "release"}) {
    if (args[0] == command) return TrackerCommand(args, repeated, argv[0]);
  }
  return Usage(absl::StrCat("unknown command \"", args[0], "\""));
}
