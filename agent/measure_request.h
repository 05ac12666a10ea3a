// How the agent measures a trial: the device::MeasureRequest of a trial held to the contract (its
// arguments with dtypes, ranges and the output's tolerance, and its effective measure options),
// all but the function and reference, which the candidate names.
//
// Thread-safety: a pure function.

#ifndef BENCHFARM_AGENT_MEASURE_REQUEST_H_
#define BENCHFARM_AGENT_MEASURE_REQUEST_H_

#include "catalog/trial.h"
#include "device/measure.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::agent {

device::MeasureRequest MeasureRequestFor(const v1::Trial& trial, const catalog::TrialArgs& args);

}  // namespace benchfarm::agent

#endif  // BENCHFARM_AGENT_MEASURE_REQUEST_H_
