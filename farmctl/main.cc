// farmctl: benchfarm's command-line tool. This file only parses flags and wires things up.
//
//   farmctl board info  (--port PATH [--baud B] | --host-process [--pty]) [--json]
//   farmctl board time  ... --op NAME [--shape 32x32,32x32,32x32] [--number N] [--repeat R]
//                       [--min-repeat-ms M] [--no-check] [--seed S] [--json]
//   farmctl board call  ... NAME [ARG...]     ARG: int:N, float:X, str:TEXT or a number
//
// Flags may be spelled with dashes or underscores. Exit status: 0 on success, 1 on a failure
// (the message on stderr), 2 on a usage error.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "farmctl/board_commands.h"
#include "farmctl/board_link.h"

ABSL_FLAG(std::string, port, "", "serial port or pty of the board (/dev/ttyACM0, /dev/serial/by-id/...)");
ABSL_FLAG(int, baud, 115200, "baud rate of --port");
ABSL_FLAG(bool, host_process, false, "start a host-process board (//crt/host:board) for the command");
ABSL_FLAG(bool, pty, false, "with --host-process: reach the board through its pseudo-terminal");
ABSL_FLAG(std::string, board_binary, "", "the host-process board executable (default: farmctl's runfiles)");
ABSL_FLAG(bool, json, false, "print JSON instead of a table");
ABSL_FLAG(double, timeout_s, 60, "deadline of the whole command, seconds");
ABSL_FLAG(std::string, op, "", "board time: the operator to time (add, matmul, conv2d, ...)");
ABSL_FLAG(std::string, shape, "", "board time: argument shapes, e.g. 32x32,32x32,32x32 (default: the sample operator's)");
ABSL_FLAG(int64_t, number, 10, "board time: calls per repeat");
ABSL_FLAG(int64_t, repeat, 3, "board time: repeats (one cost each)");
ABSL_FLAG(int64_t, min_repeat_ms, 0, "board time: grow number until a repeat lasts this long");
ABSL_FLAG(bool, check, true, "board time: compare the output with <op>_reference on the board");
ABSL_FLAG(uint64_t, seed, 1, "board time: seed of the random inputs");

namespace benchfarm::farmctl {
namespace {

constexpr char kUsage[] =
    "farmctl board info|time|call (--port PATH [--baud B] | --host-process [--pty]) [--json]\n"
    "  board info                       what the board reports (kind, firmware hash, ...)\n"
    "  board time --op NAME [--shape S] [--number N --repeat R --min-repeat-ms M]\n"
    "                                   time an operator on the board, output checked\n"
    "  board call NAME [ARG...]         call a global or system-library function\n";

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

int BoardCommand(const std::vector<std::string>& args, const char* argv0) {
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string& command = args[0];
  if (command != "info" && command != "time" && command != "call") {
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
  const bool json = absl::GetFlag(FLAGS_json);
  const absl::Time deadline = absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_timeout_s));

  // Validate the command's own flags before touching the board.
  TimeRequest time;
  if (command == "time") {
    time.op = absl::GetFlag(FLAGS_op);
    if (time.op.empty()) {
      std::fprintf(stderr, "farmctl: board time needs --op NAME\n");
      return 2;
    }
    absl::StatusOr<std::vector<Shape>> shapes = absl::GetFlag(FLAGS_shape).empty()
                                                    ? DefaultShapes(time.op)
                                                    : ParseShapes(absl::GetFlag(FLAGS_shape));
    if (!shapes.ok()) return Fail(shapes.status());
    time.shapes = *shapes;
    time.measure.number = absl::GetFlag(FLAGS_number);
    time.measure.repeat = absl::GetFlag(FLAGS_repeat);
    time.measure.min_repeat_ms = absl::GetFlag(FLAGS_min_repeat_ms);
    time.check = absl::GetFlag(FLAGS_check);
    time.seed = absl::GetFlag(FLAGS_seed);
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

  absl::StatusOr<std::unique_ptr<BoardLink>> link = BoardLink::Open(options);
  if (!link.ok()) return Fail(link.status());
  device::RpcClient& rpc = (*link)->rpc();
  const std::string& board = (*link)->name();

  if (command == "info") {
    absl::StatusOr<device::DeviceInfo> info = rpc.GetDeviceInfo(deadline);
    if (!info.ok()) return Fail(info.status());
    std::fputs(FormatInfo(*info, board, json).c_str(), stdout);
  } else if (command == "time") {
    absl::StatusOr<TimeResult> result = TimeOperator(rpc, time, deadline);
    if (!result.ok()) return Fail(result.status());
    std::fputs(FormatTime(*result, board, json).c_str(), stdout);
    if (result->check == "mismatch") return 1;
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

}  // namespace
}  // namespace benchfarm::farmctl

int main(int argc, char** argv) {
  // Accept --min-repeat-ms as well as --min_repeat_ms.
  std::vector<std::string> storage(argv, argv + argc);
  std::vector<char*> fixed;
  for (std::string& arg : storage) {
    if (absl::StartsWith(arg, "--")) {
      size_t end = arg.find('=');
      std::string name = arg.substr(0, end);
      arg = absl::StrReplaceAll(name, {{"-", "_"}}).replace(0, 2, "--") +
            (end == std::string::npos ? "" : arg.substr(end));
    }
    fixed.push_back(arg.data());
  }
  absl::SetProgramUsageMessage(benchfarm::farmctl::kUsage);
  std::vector<char*> positional = absl::ParseCommandLine(static_cast<int>(fixed.size()), fixed.data());
  std::vector<std::string> args(positional.begin() + 1, positional.end());
  if (args.empty() || args[0] != "board") {
    std::fputs(benchfarm::farmctl::kUsage, stderr);
    return 2;
  }
  args.erase(args.begin());
  return benchfarm::farmctl::BoardCommand(args, argv[0]);
}
