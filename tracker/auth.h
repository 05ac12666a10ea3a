// Authenticator: who is calling the tracker, from the credential the call came with — never from
// the request. A client certificate of the farm's CA (verified by gRPC's TLS) names its role in
// the subject's OU (agent, user, admin) and the caller in its CN; an agent's certificate also
// lists the boards it may serve, each with the kind they must register as and the most slots
// each may ask for, as URI names "urn:benchfarm:serve:KIND:SLOTS:GLOB" (KIND "*": any kind;
// SLOTS 0: the tracker's cap). Certificates issued before kinds were bound name boards as
// "urn:benchfarm:board:GLOB": those are kept apart (legacy_board_globs) and refused. A bearer token
// ("authorization: Bearer TOKEN") is looked up by its SHA-256 in the tokens file (lines
// "SHA256 ROLE NAME"). The tokens and revoked files (SHA-256 fingerprints of revoked
// certificates) are re-read when they change, so issuing and revoking take effect at once.
//
// Roles: agent (only the agent stream, only for the boards its certificate names), user (submit;
// see and cancel its own jobs; read boards, queue and the operator catalog; add operators),
// admin (everything: any client's jobs). The caller's name is its client_id.
//
// Thread-safety: Identify may be called from any thread.

#ifndef BENCHFARM_TRACKER_AUTH_H_
#define BENCHFARM_TRACKER_AUTH_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"

namespace benchfarm::tracker {

enum class Role { kAgent, kUser, kAdmin };

const char* RoleName(Role role);

// What an agent's certificate lets it serve: boards whose ids match `glob`, registered as `kind`
// ("*": any), with at most `max_slots` slots each (0: no cap but the tracker's).
struct BoardGrant {
  std::string glob;
  std::string kind;
  int max_slots = 0;
};

// "urn:benchfarm:serve:KIND:SLOTS:GLOB" as a grant, or nullopt when malformed.
std::optional<BoardGrant> ParseBoardGrant(absl::string_view uri);

struct Identity {
  Role role = Role::kUser;
  std::string name;                      // the client_id (users, admins) or agent_id
  std::vector<BoardGrant> grants;        // agents: the boards it may serve, and how
  std::vector<std::string> legacy_board_globs;  // agents: boards named without their kinds
  std::string how;                       // "certificate" or "token", for logs and errors
};

struct AuthOptions {
  std::string tokens_file;
  std::string revoked_file;
};

class Authenticator {
 public:
  explicit Authenticator(AuthOptions options);

  // UNAUTHENTICATED when the call carries no credential the tracker accepts (no certificate and
  // no token, an unknown or revoked token, a revoked certificate, a certificate without a role).
  absl::StatusOr<Identity> Identify(const grpc::ServerContextBase& context);

 private:
  struct Token {
    Role role;
    std::string name;
  };
  void Reload() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const AuthOptions options_;
  absl::Mutex mu_;
  int64_t tokens_mtime_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t revoked_mtime_ ABSL_GUARDED_BY(mu_) = -1;
  std::map<std::string, Token> tokens_ ABSL_GUARDED_BY(mu_);  // sha256 hex -> who
  std::vector<std::string> revoked_ ABSL_GUARDED_BY(mu_);
};

// Whether `id` matches a glob with * and ?.
bool GlobMatch(const std::string& glob, const std::string& id);

// SHA-256 of `data`, lowercase hex.
std::string Sha256Hex(const std::string& data);

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_AUTH_H_
