// Authenticator: who is calling the tracker, from the credential the call came with — never from
// the request. A client certificate of the farm's CA (verified by gRPC's TLS) names its role in
// the subject's OU (agent, user, admin) and the caller in its CN; an agent's certificate also
// lists the boards it may serve, each with the kind they must register as and the most slots
// each may ask for, as URI names "urn:benchfarm:serve:KIND:SLOTS:GLOB" (KIND "*": any kind;
// SLOTS 0: the tracker's cap). Certificates issued before kinds were bound name boards as
// "urn:benchfarm:board:GLOB": those are kept apart (legacy_board_globs) and refused. A bearer token
// ("authorization: Bearer TOKEN") is looked up by its SHA-256 in the tokens file (lines
// "SHA256 ROLE NAME [EXPIRES]", EXPIRES an RFC 3339 UTC time such as 2026-01-31T00:00:00Z; without
// it the token does not expire). The TLS layer asks for a client certificate but lets any through
// (GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_BUT_DONT_VERIFY): Identify verifies it against the farm's CA
// itself, so an expired certificate or one of another CA is answered UNAUTHENTICATED saying which
// (and when it expired) instead of a handshake the client sees only as "Socket closed". The tokens
// and revoked files (SHA-256 fingerprints of revoked certificates) are re-read when they change —
// when stat says so, and by their content at least every second (a replacement that keeps the
// modification time, `cp -p`, counts too) — so issuing and revoking take effect at once for new
// calls; Revoked() tells whether a credential that was accepted earlier (a stream's) is still good.
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
#include "absl/time/time.h"
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
  std::string name;                             // the client_id (users, admins) or agent_id
  std::vector<BoardGrant> grants;               // agents: the boards it may serve, and how
  std::vector<std::string> legacy_board_globs;  // agents: boards named without their kinds
  std::string how;                              // "certificate" or "token", for logs and errors
  std::string credential;  // its certificate's fingerprint or its token's SHA-256
  absl::Time expires = absl::InfiniteFuture();  // a token's expiry, a certificate's notAfter
};

// Why a credential was refused, as benchfarm_tracker_auth_refusals_total's reason label (upper
// case, base/metrics_http.h).
inline constexpr char kRefusedUnauthenticated[] = "UNAUTHENTICATED";  // none, or unknown
inline constexpr char kRefusedRevoked[] = "REVOKED";
inline constexpr char kRefusedCertExpired[] = "CERT_EXPIRED";
inline constexpr char kRefusedCertNotYetValid[] = "CERT_NOT_YET_VALID";
inline constexpr char kRefusedCertUntrusted[] = "CERT_UNTRUSTED";  // not of the farm's CA
inline constexpr char kRefusedTokenExpired[] = "TOKEN_EXPIRED";
inline constexpr char kRefusedTokenBadExpiry[] = "TOKEN_BAD_EXPIRY";  // the tokens file's fault

// A refused credential: the status for the caller (UNAUTHENTICATED, saying what is wrong) and the
// reason label.
struct Refusal {
  absl::Status status;
  const char* reason = kRefusedUnauthenticated;
};

struct AuthOptions {
  std::string tokens_file;
  std::string revoked_file;
  // The farm's CA certificate(s), PEM: client certificates must be issued by it. Empty: every
  // client certificate is refused.
  std::string ca_pem;
};

// Checks a client certificate (PEM) against the CA (PEM) at `now`, for client authentication.
// OK: sets *not_after. Otherwise UNAUTHENTICATED saying what is wrong — "your certificate (CN=..)
// expired on 2025-01-31 00:00:00 UTC: ...", "... is not valid before ...", "... is not issued by
// this farm's CA (...)" — with the reason label in *reason.
absl::Status VerifyClientCertificate(const std::string& pem, const std::string& ca_pem,
                                     absl::Time now, absl::Time* not_after, const char** reason);

class Authenticator {
 public:
  explicit Authenticator(AuthOptions options);

  // UNAUTHENTICATED when the call carries no credential the tracker accepts (no certificate and
  // no token, an unknown, revoked or expired token, a token whose line in the tokens file has an
  // expiry that does not parse, a revoked, expired or foreign certificate, a certificate without
  // a role); `refusal`, if given, gets the reason label.
  absl::StatusOr<Identity> Identify(const grpc::ServerContextBase& context,
                                    const char** refusal = nullptr);

  // Whether the credential `id` was accepted with has been revoked since (its certificate's
  // fingerprint is in the revoked file; its token is gone from the tokens file, or names someone
  // else now), as the files were when Identify or Generation last read them (a sweep over many
  // streams reads them once).
  bool Revoked(const Identity& id);

  // Counts changes of the files' contents (re-reading them if due): callers holding accepted
  // credentials look again when it moves.
  uint64_t Generation();

 private:
  struct Token {
    Role role;
    std::string name;
    absl::Time expires = absl::InfiniteFuture();
    std::string bad_expiry;  // an EXPIRES field that does not parse (the token is refused)
    int line = 0;            // in the tokens file, for messages
  };

  // What a file was when last read: stat's view, and its content.
  struct FileState {
    int64_t mtime = -1;
    int64_t size = -1;
    uint64_t inode = 0;
    absl::Time read_at = absl::InfinitePast();
    bool content_known = false;
    std::string content;
  };
  // The file's new content when it changed since `state` (or could not be read any more): the
  // stat fields differ, or a second has passed and the bytes differ.
  static std::optional<std::string> Changed(const std::string& path, FileState* state);
  void Reload() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const AuthOptions options_;
  absl::Mutex mu_;
  FileState tokens_file_ ABSL_GUARDED_BY(mu_);
  FileState revoked_file_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, Token> tokens_ ABSL_GUARDED_BY(mu_);  // sha256 hex -> who
  std::vector<std::string> revoked_ ABSL_GUARDED_BY(mu_);
};

// Whether `id` matches a glob with * and ?.
bool GlobMatch(const std::string& glob, const std::string& id);

// SHA-256 of `data`, lowercase hex.
std::string Sha256Hex(const std::string& data);

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_AUTH_H_
