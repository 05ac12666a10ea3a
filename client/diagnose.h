// Why a tracker turned a caller away at the transport, when gRPC can say only "UNAVAILABLE:
// Socket closed": the caller's own certificate has expired, it speaks plain text to a TLS tracker
// (or TLS to a plain-text one), or the tracker's certificate does not verify against the CA the
// caller gave (another farm's ca.pem, a name the certificate does not cover).
//
// DiagnoseTransport looks at the caller's certificate (OpenSSL, before any connection), then
// probes the first address of `address` once: a TCP connection and a TLS handshake that verifies
// nothing but records what it would have found. It returns one sentence for the user, or "" when
// it finds nothing wrong with the transport (nothing listens there: gRPC's own message says so).
//
// Thread-safety: a plain function; it blocks up to about `timeout`.

#ifndef BENCHFARM_CLIENT_DIAGNOSE_H_
#define BENCHFARM_CLIENT_DIAGNOSE_H_

#include <string>

#include "absl/time/time.h"
#include "proto/config.pb.h"

namespace benchfarm::client {

std::string DiagnoseTransport(const std::string& address, const v1::TrackerCredentials& credentials,
                              absl::Duration timeout = absl::Seconds(3));

}  // namespace benchfarm::client

#endif  // BENCHFARM_CLIENT_DIAGNOSE_H_
