// The `farmctl` commands that talk to a tracker (benchfarm.v1.Tracker): boards, queue, submit,
// watch, results, cancel. Each is a function over a Tracker stub that prints to an ostream, so
// tests drive them against an in-process or child-process tracker and read what a user would see.
//
// Output: a table for people by default; `json` prints the response messages as proto3 JSON
// (field names as in proto/benchfarm.proto, zero values included) for scripts; `results` can also
// print AutoTVM log records (autotvm_record.h).
//
// Errors: every unary call has a deadline (TrackerClient::timeout). gRPC failures become
// absl::Status with the same code: Unavailable "cannot reach tracker at ADDR: ..." when nothing
// answers there, DeadlineExceeded "tracker at ADDR did not answer within ...", and otherwise the
// tracker's own message (e.g. InvalidArgument naming the field of a bad trial, NotFound for an
// unknown job). Flag and file problems are InvalidArgument naming the flag or file.
//
// Thread-safety: the functions share no state; a stub may be used from several threads.

#ifndef BENCHFARM_FARMCTL_TRACKER_COMMANDS_H_
#define BENCHFARM_FARMCTL_TRACKER_COMMANDS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "catalog/knob_space.h"
#include "farmctl/autotvm_record.h"
#include "grpcpp/grpcpp.h"
#include "proto/benchfarm.grpc.pb.h"

namespace benchfarm::farmctl {

// The tracker a command talks to.
struct TrackerClient {
  v1::Tracker::StubInterface* stub = nullptr;  // borrowed; outlives the calls
  std::string address;                         // "host:port", named in error messages
  absl::Duration timeout = absl::Seconds(30);  // deadline of each unary call
  // Set by the first call that reached the tracker (see CallTracker).
  std::shared_ptr<std::atomic<bool>> reached = std::make_shared<std::atomic<bool>>(false);
  // Why a tracker never reached turned the caller away, when the transport or the caller's
  // certificate is at fault (client::DiagnoseTransport), or ""; null: nothing to ask.
  std::function<std::string()> diagnose;
};

// Makes one unary call (`call` with a fresh context and the client's deadline). Once a call of
// this client has reached the tracker, an UNAVAILABLE answer — the tracker restarting, or a
// standby taking over (several addresses: TrackerChannel) — is tried again with backoff until the
// client's timeout; every tracker call may be (submissions carry their request id). A tracker
// never reached fails at once: a wrong address is said without waiting.
grpc::Status CallTracker(const TrackerClient& tracker,
                         const std::function<grpc::Status(grpc::ClientContext*)>& call);

// grpc::Status -> absl::Status (same code), with the messages described above. `what` names
// the call ("ListBoards"). UNAVAILABLE from a tracker never reached says what `diagnose` finds,
// if anything ("the tracker at ADDR speaks TLS: give --ca ...").
absl::Status FromGrpc(const grpc::Status& status, const TrackerClient& tracker,
                      absl::string_view what);

// WhoAmI: who the tracker takes the caller for, as "alice: user, by token, expires 2027-01-31
// 00:00:00 UTC" ("never expires"; on an insecure tracker, "insecure tracker: ...").
absl::Status PrintWhoAmI(const TrackerClient& tracker, const std::string& client_id, bool json,
                         std::ostream& out);

// ---- boards, queue ---------------------------------------------------------------------------

// ListBoards (kind empty: every kind). Table columns: BOARD KIND CPU (the core) TIMING LABELS
// STATE AGENT JOB JOBS/SLOTS FLASHES FAILS (consecutive infrastructure failures).
absl::Status PrintBoards(const TrackerClient& tracker, const std::string& kind, bool json,
                         std::ostream& out);

// QueueSummary: per board kind, boards total/free/quarantined, jobs queued (in all and by
// priority, highest first) and running, and a TOTAL row when there are several kinds; then a
// "<kind>: waiting: ..." line for each reason queued jobs wait (KindSummary.waiting).
absl::Status PrintQueue(const TrackerClient& tracker, bool json, std::ostream& out);

// The core of every board kind the tracker has boards of (one ListBoards; autotvm_record.h
// CoresOfBoards), for AutoTVM targets. The tracker's errors, and FailedPrecondition for a kind
// whose boards name different cores.
absl::StatusOr<BoardCores> FetchBoardCores(const TrackerClient& tracker);

// MoveBoard (admins): "<board> OFFLINE, held by agent <agent>".
absl::Status MoveBoard(const TrackerClient& tracker, const std::string& board_id,
                       const std::string& agent_id, std::ostream& out);
// SetBoardQuarantine (admins): takes the board out of service (quarantine) or releases it;
// prints "<board> QUARANTINED (held: reason)" or "<board> IDLE".
absl::Status SetBoardQuarantine(const TrackerClient& tracker, const std::string& board_id,
                                bool quarantine, const std::string& reason, std::ostream& out);

// ---- submit ----------------------------------------------------------------------------------

// One trial as `farmctl submit` flags describe it.
struct TrialFlags {
  std::string kind;  // --kind (required)
  std::string op;    // --op: an operator of the catalog (built-in or user)
  // Or a one-off C source trial: --c-source FILE (its path and contents), --entry F, and
  // --reference G (a function in the file or a built-in reference such as add_reference).
  std::string c_source_path;
  std::string c_source;
  std::string entry;
  std::string reference;
  std::string atol, rtol;  // --atol/--rtol: a C source trial's output check; empty: the dtype's
  // --cflags "-O3 -funroll-loops": a C source trial's compile options, separated by spaces
  // (catalog/cflags.h's allow-list); an operator's are its manifest's and its cflag knobs'.
  std::string cflags;
  std::vector<std::string> knobs;  // --knob name=value (repeated) and --knobs a=1,b=2 split up
  std::string shapes;              // --shape 32x32,32x32,32x32; empty: the op's default shapes
                                   // (required with --c-source)
  std::string dtypes;              // --dtype int8 or int8,int8,int32; empty: the op's
  int64_t number = 10;
  int64_t repeat = 3;
  int64_t min_repeat_ms = 0;
  int64_t cooldown_ms = 0;
  int64_t timeout_ms = 0;  // 0: the agent's default
  // Adaptive mode (MeasureOptions.target_rel_ci): --target PCT, the interval of the median to
  // reach in percent of it (1: +-1 %, target_rel_ci 0.01); 0: the fixed number/repeat mode.
  // --budget-ms and --max-repeat bound it (0: the agent's defaults).
  double target_pct = 0;
  int64_t budget_ms = 0;
  int64_t max_repeat = 0;
  bool check = true;
  uint64_t seed = 1;
  int64_t priority = 0;
  std::string board;                // --board: pin to one board id
  std::vector<std::string> labels;  // --label k=v (repeated): pin to boards with these labels
};

// Sets the adaptive fields of `measure` from --target PCT, --budget-ms, --max-repeat (shared by
// submit, tune and board time). InvalidArgument naming the flag: PCT in 0..50, budget in
// 0..3600000 ms, max-repeat in 0..1024; --budget-ms/--max-repeat without --target.
absl::Status SetAdaptive(double target_pct, int64_t budget_ms, int64_t max_repeat,
                         v1::MeasureOptions* measure);

// Builds the trial. Knob values are checked against the op's knobs when `knobs` knows the op;
// other ops' knobs are passed on as given. InvalidArgument naming the flag.
absl::StatusOr<v1::Trial> TrialFromFlags(const TrialFlags& flags, const catalog::KnobSpace& knobs);

// A SubmitTrialsRequest from a file's contents: JSON (proto3 JSON mapping) if `path` ends in
// ".json", else text format. InvalidArgument with the parser's message and the path.
absl::StatusOr<v1::SubmitTrialsRequest> ParseSubmitFile(absl::string_view path,
                                                        absl::string_view contents);

// A request id unique to this invocation: "farmctl-<host>-<pid>-<unix nanos>".
std::string NewRequestId();

// SubmitTrials; prints the job ids, one per line, in trial order.
absl::StatusOr<std::vector<std::string>> Submit(const TrackerClient& tracker,
                                                const v1::SubmitTrialsRequest& request,
                                                std::ostream& out);

// ---- the operator catalog -------------------------------------------------------------------

// A user operator from disk, as `farmctl op add PATH` sends it: PATH is a directory holding
// op.json, or an op.json file; op.json is one knobs.json op plus "sources" (its C files, beside
// it); every *.h beside it goes along too. Checked here as the tracker will check it.
// InvalidArgument naming the file or field; NotFound for a missing file. `dir`, if given: the
// directory the files are in.
absl::StatusOr<v1::Operator> LoadOperator(const std::string& path, std::string* dir = nullptr);

// AddOperator of `op` (LoadOperator's); prints "<name> version <v>: added", "already in the
// catalog", or "already in the catalog; the latest again" (an earlier or retired version added
// again).
absl::Status AddOperator(const TrackerClient& tracker, v1::Operator op, bool json,
                         std::ostream& out);
// RetireOperator (the owner or an admin): "<name> version <v>: retired; new trials of <name> run
// version <w> (the latest); its results stay", or that every version is now retired, or
// "already retired".
absl::Status RetireOperator(const TrackerClient& tracker, const std::string& name,
                            const std::string& version, bool json, std::ostream& out);
// ListOperators: NAME VERSION SOURCE (built-in/user) OWNER [ADDED BY, ADDED with all_versions]
// ARGS KNOBS (name=values, * the default).
absl::Status PrintOperators(const TrackerClient& tracker, const std::string& name,
                            bool all_versions, bool json, std::ostream& out);
// SetOperatorOwner (admins): "<name>: owner <client>".
absl::Status SetOperatorOwner(const TrackerClient& tracker, const std::string& name,
                              const std::string& owner, std::ostream& out);
// GetOperator: the entry, its owner and who added it when, its knobs and default shapes, and its
// files (names and sizes).
absl::Status ShowOperator(const TrackerClient& tracker, const std::string& name,
                          const std::string& version, bool json, std::ostream& out);
// The catalog's knob space: every operator's latest version (ListOperators); or one operator
// (GetOperator, version "" for the latest).
absl::StatusOr<catalog::KnobSpace> FetchKnobSpace(const TrackerClient& tracker);
absl::StatusOr<v1::Operator> FetchOperator(const TrackerClient& tracker, const std::string& name,
                                           const std::string& version = "");

// ---- a result's quality ----------------------------------------------------------------------

// "200 us +-0.4 %", " UNSTABLE" past the tracker's threshold, and " = 12,345 cycles" when the
// board's clock is known (Result.cpu_hz > 0): stats::CostText of the result's stats (stored, or
// computed from the costs of a result stored before stats existed). "-" without costs.
std::string ResultCostText(const v1::Result& result);

// ---- watch -----------------------------------------------------------------------------------

struct WatchOptions {
  std::string client_id;             // empty: every client
  std::vector<std::string> job_ids;  // empty: every job (of the client), until the stream ends
  int64_t max_events = 0;            // stop after this many events; 0: no limit
};

// Streams WatchJobs and prints one line per event:
//   <time> <job> <STATE> <kind>/<op> [on <board>] [attempt N] [<cost> | <ERROR>: <message>]
// where <cost> is ResultCostText: "200 us +-0.4 %" (the median and its interval), maybe
// "UNSTABLE" and "= N cycles".
// Named jobs are looked up first (NotFound for an unknown one); the watch ends when every one of
// them is DONE or CANCELLED. A client-wide watch runs until the tracker ends the stream (or
// max_events). The stream itself has no deadline.
absl::Status Watch(const TrackerClient& tracker, const WatchOptions& options, std::ostream& out);

// One watch line (without the newline), as Watch prints it.
std::string FormatJobEvent(const v1::Job& job);
// A job's state as farmctl prints it: QUEUED, RUNNING, DONE, CANCELLED (JSON keeps the proto's
// enum names: CANCELLED_STATE).
std::string JobStateText(v1::JobState state);

// ---- results ---------------------------------------------------------------------------------

enum class ResultsFormat { kTable, kJson, kAutoTvm };

struct ResultsOptions {
  std::string client_id;
  std::string board_kind;
  std::string op;
  int64_t limit = 0;  // jobs in all; 0: every job
  ResultsFormat format = ResultsFormat::kTable;
  const catalog::KnobSpace* knobs = nullptr;  // for kAutoTvm; null: the built-in operators
  // kAutoTvm: where a kind with no registered board is said (its records' target names no core);
  // null: not said.
  std::ostream* notes = nullptr;
};

// ListResults, following next_page_token. kTable: JOB CLIENT STATE KIND OP KNOBS BOARD ATTEMPTS
// RESULT (ResultCostText: the median per call +- its interval, or the error name); kJson: one
// ListResultsResponse with every page's jobs (each result with its stats, measured, cpu_hz);
// kAutoTvm: one AutoTVM record per DONE job (unfinished jobs are skipped; costs as measured),
// each target naming its kind's core (FetchBoardCores: one ListBoards).
absl::Status PrintResults(const TrackerClient& tracker, const ResultsOptions& options,
                          std::ostream& out);

// ---- get -------------------------------------------------------------------------------------

// GetJob for each id: the trial, its state and attempts, and the result in full: the median
// +- its interval, count, mean, median, min, max, stddev, CV, the interval and its level, how
// the costs were taken (calls per repeat, repeats, rounds, why it stopped), the clock (cycles,
// wall/CPU) and the stage times. `json`: the jobs as one ListResultsResponse. NotFound naming an
// unknown job.
absl::Status ShowJobs(const TrackerClient& tracker, const std::vector<std::string>& job_ids,
                      bool json, std::ostream& out);

// One job as ShowJobs prints it.
std::string FormatJob(const v1::Job& job, const catalog::KnobSpace& knobs);

// ---- logs ------------------------------------------------------------------------------------

// GetJobLog: each attempt's log (attempt 0: every attempt that has one; else that attempt's),
// each under a line "--- job JOB attempt N on board B ---"; `json`: the GetJobLogResponse. The
// tracker's refusals as they come (NotFound for a job that does not exist or an attempt without a
// log; PermissionDenied for another user's job), their message naming the job.
absl::Status PrintJobLog(const TrackerClient& tracker, const std::string& job_id, int attempt,
                         bool json, std::ostream& out);

// ---- cancel ----------------------------------------------------------------------------------

// CancelJob for each id in turn; prints "<job> <STATE>" for each cancelled one. Tries every id;
// returns the first failure, its message naming the job.
absl::Status Cancel(const TrackerClient& tracker, const std::vector<std::string>& job_ids,
                    std::ostream& out);

}  // namespace benchfarm::farmctl

#endif  // BENCHFARM_FARMCTL_TRACKER_COMMANDS_H_
