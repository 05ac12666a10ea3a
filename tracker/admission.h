// Admission: what the tracker refuses at its door whatever its state — an agent's registration,
// a reported result — and the byte caps of the strings it stores besides a trial's (a trial's,
// and board ids, kinds and labels, which boards share with trials: catalog/trial.h). No lock, no
// store; the checks that depend on the farm (a kind that exists, boards that fit, pins, owners)
// stay with JobQueue.

#ifndef BENCHFARM_TRACKER_ADMISSION_H_
#define BENCHFARM_TRACKER_ADMISSION_H_

#include <cstddef>
#include <string>

#include "proto/benchfarm.pb.h"

namespace benchfarm::tracker {

inline constexpr size_t kMaxIdBytes = 128;   // client_id, request_id, agent_id
inline constexpr int kMaxCapabilities = 32;  // per board
inline constexpr size_t kMaxCapabilityBytes = 128;
inline constexpr int kMaxBoardsPerAgent = 1024;
inline constexpr size_t kMaxResultMessageBytes = 4096;
inline constexpr size_t kMaxResultFieldBytes = 128;  // Result.firmware_hash, timer, emulation

// What is wrong with a registration ("register.FIELD: ..."; "" if nothing is): ids, kinds,
// labels and capabilities over their caps or missing, slots outside 0..max_slots, negative
// counts or sizes, a cpu that is not a core's name (catalog::CpuNameProblem), two boards of one
// kind naming different cores.
std::string RegistrationProblem(const v1::Register& reg, int max_slots);

// The longest a trial's measurement may take on the board, in seconds (its effective timeout).
double TimeoutSeconds(const v1::MeasureOptions& m);

// What makes a reported result unfit to store ("result.FIELD: ..."; "" if nothing does): an
// error code outside ErrorCode, more than max_costs costs, a cost that is not a finite,
// non-negative number of seconds or is more than the trial's measurement could have taken
// (timeout_s; for an emulator's modeled time — the cycle model's cycles, -icount's instructions,
// which pass many times slower than the host's — 1000 times that), strings over their caps,
// stage times or a timer resolution that are not finite numbers, invalid timestamps.
std::string ResultProblem(const v1::Result& r, int max_costs, double timeout_s);

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_ADMISSION_H_
