// The tracker's side of security: its server credentials and its Authenticator, from
// TrackerConfig.security (proto/config.proto). Secure by default: without explicit certificate
// files, the state directory is initialized on first start with deploy/pki.sh init (a CA, the
// tracker's certificate for its listen host, localhost and the machine's name, and an admin
// token); TLS then asks every client for a certificate of that CA (verified by the Authenticator,
// which says what is wrong with one it refuses) or a bearer token. --insecure (plain text, no
// authentication) is refused unless the listen address is loopback.
#ifndef BENCHFARM_TRACKER_SERVER_SECURITY_H_
#define BENCHFARM_TRACKER_SERVER_SECURITY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "proto/config.pb.h"
#include "tracker/auth.h"

namespace benchfarm::tracker {

struct ServerSecurity {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  std::unique_ptr<Authenticator> auth;  // null: insecure
  std::string state_dir;                // absolute
  std::string ca_cert;                  // what clients need to verify the tracker
  std::string admin_token_file;         // written on first start, if any
  bool initialized_now = false;         // pki.sh init ran on this start
};

// Errors: InvalidArgument for --insecure on a non-loopback address or missing files named in the
// config; FailedPrecondition when the state directory cannot be initialized (pki.sh or openssl
// missing: the message says what to install); NotFound for unreadable certificate files.
// argv0 finds deploy/pki.sh among the program's data files (base/data_roots.h).
absl::StatusOr<ServerSecurity> SetUpServerSecurity(const v1::TrackerConfig& config,
                                                   const char* argv0);

// Whether HOST:PORT names a loopback host (127.x, ::1, localhost).
bool IsLoopbackAddress(const std::string& address);

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_SERVER_SECURITY_H_
