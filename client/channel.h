// How clients (farmctl, the agent, tests) reach a tracker: a gRPC channel with TLS and the
// caller's credential — a client certificate (agents; users who have one) or a bearer token
// (users) — or plain text for a tracker started with --insecure.
//
// From the environment, for command-line tools: $BENCHFARM_TRACKER (address), $BENCHFARM_CA (the
// farm's CA, PEM file), $BENCHFARM_TOKEN (a token) or $BENCHFARM_TOKEN_FILE, $BENCHFARM_CERT and
// $BENCHFARM_KEY (a certificate and its key), $BENCHFARM_INSECURE=1.
//
// Thread-safety: plain functions.

#ifndef BENCHFARM_CLIENT_CHANNEL_H_
#define BENCHFARM_CLIENT_CHANNEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "proto/config.pb.h"

namespace benchfarm::client {

// Fills what `credentials` leaves empty from the environment (see above).
v1::TrackerCredentials CredentialsFromEnvironment(v1::TrackerCredentials credentials);

// The gRPC target for `address`: itself for one HOST:PORT; for several, comma-separated
// ("10.0.0.1:7070,10.0.0.2:7070": active/standby trackers), one ipv4:/ipv6: target over every
// address (names resolved now), which gRPC's pick_first policy tries in order — a channel
// follows the tracker that serves (a standby does not listen) without being made again.
// InvalidArgument for a part that is not HOST:PORT or does not resolve, or mixed families.
absl::StatusOr<std::string> TrackerTarget(const std::string& address);

// A channel to `address` (one tracker or several: TrackerTarget). Errors: InvalidArgument naming
// what is missing or contradictory (a secure channel needs ca_cert; a certificate needs its key),
// NotFound for a file that cannot be read. `args` may carry the caller's own channel settings
// (reconnect backoff, ...).
absl::StatusOr<std::shared_ptr<grpc::Channel>> TrackerChannel(
    const std::string& address, const v1::TrackerCredentials& credentials,
    grpc::ChannelArguments args = grpc::ChannelArguments());

}  // namespace benchfarm::client

#endif  // BENCHFARM_CLIENT_CHANNEL_H_
