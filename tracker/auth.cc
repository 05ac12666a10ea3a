#include "tracker/auth.h"

#include <fnmatch.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "base/certificate.h"
#include "base/time_proto.h"
#include "spdlog/spdlog.h"

namespace benchfarm::tracker {
namespace {

constexpr char kBoardUriPrefix[] = "urn:benchfarm:board:";
constexpr char kServeUriPrefix[] = "urn:benchfarm:serve:";

bool ParseRole(absl::string_view text, Role* role) {
  if (text == "agent")
    *role = Role::kAgent;
  else if (text == "user")
    *role = Role::kUser;
  else if (text == "admin")
    *role = Role::kAdmin;
  else
    return false;
  return true;
}

std::string Hex(const unsigned char* bytes, unsigned int n) {
  std::string out;
  for (unsigned int i = 0; i < n; ++i) absl::StrAppendFormat(&out, "%02x", bytes[i]);
  return out;
}

// The SHA-256 fingerprint (of the DER form) of a PEM certificate; "" if it does not parse.
std::string Fingerprint(const std::string& pem) {
  base::Certificate cert = base::ParseCertificate(pem);
  if (cert == nullptr) return "";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  return X509_digest(cert.get(), EVP_sha256(), md, &n) == 1 ? Hex(md, n) : "";
}

std::vector<std::string> Values(const grpc::AuthContext& auth, const char* property) {
  std::vector<std::string> out;
  for (const grpc::string_ref& v : auth.FindPropertyValues(property))
    out.emplace_back(v.data(), v.size());
  return out;
}

}  // namespace

absl::Status VerifyClientCertificate(const std::string& pem, const std::string& ca_pem,
                                     absl::Time now, absl::Time* not_after, const char** reason) {
  *reason = kRefusedCertUntrusted;
  base::Certificate cert = base::ParseCertificate(pem);
  if (cert == nullptr) return absl::UnauthenticatedError("the client certificate does not parse");
  const std::string who = base::NameText(X509_get_subject_name(cert.get()));
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), &X509_STORE_free);
  BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  int cas = 0;
  while (bio != nullptr) {
    X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    if (ca == nullptr) break;
    cas += X509_STORE_add_cert(store.get(), ca) == 1;
    X509_free(ca);
  }
  BIO_free(bio);
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(),
                                                                      &X509_STORE_CTX_free);
  if (cas == 0 || ctx == nullptr ||
      X509_STORE_CTX_init(ctx.get(), store.get(), cert.get(), nullptr) != 1) {
    return absl::UnauthenticatedError("the tracker has no CA to verify client certificates with");
  }
  X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_CLIENT);
  X509_STORE_CTX_set_time(ctx.get(), 0, absl::ToTimeT(now));
  if (X509_verify_cert(ctx.get()) == 1) {
    *not_after = base::CertificateTime(X509_get0_notAfter(cert.get()));
    return absl::OkStatus();
  }
  const int error = X509_STORE_CTX_get_error(ctx.get());
  switch (error) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
      *reason = kRefusedCertExpired;
      return absl::UnauthenticatedError(
          absl::StrCat("your certificate (", who, ") expired on ",
                       base::FormatUtc(base::CertificateTime(X509_get0_notAfter(cert.get()))),
                       ": ask the farm's admin for a new one (deploy/pki.sh user|agent DIR NAME)"));
    case X509_V_ERR_CERT_NOT_YET_VALID:
      *reason = kRefusedCertNotYetValid;
      return absl::UnauthenticatedError(
          absl::StrCat("your certificate (", who, ") is not valid before ",
                       base::FormatUtc(base::CertificateTime(X509_get0_notBefore(cert.get()))),
                       " (is the clock of this machine or the tracker's wrong?)"));
    default:
      return absl::UnauthenticatedError(
          absl::StrCat("your certificate (", who, ", issued by ",
                       base::NameText(X509_get_issuer_name(cert.get())),
                       ") is not one of this farm's CA: ", X509_verify_cert_error_string(error)));
  }
}

std::optional<BoardGrant> ParseBoardGrant(absl::string_view uri) {
  if (!absl::ConsumePrefix(&uri, kServeUriPrefix)) return std::nullopt;
  std::vector<absl::string_view> parts = absl::StrSplit(uri, absl::MaxSplits(':', 2));
  BoardGrant grant;
  if (parts.size() != 3 || parts[0].empty() || parts[2].empty() ||
      !absl::SimpleAtoi(parts[1], &grant.max_slots) || grant.max_slots < 0) {
    return std::nullopt;
  }
  grant.kind = std::string(parts[0]);
  grant.glob = std::string(parts[2]);
  return grant;
}

const char* RoleName(Role role) {
  switch (role) {
    case Role::kAgent:
      return "agent";
    case Role::kUser:
      return "user";
    case Role::kAdmin:
      return "admin";
  }
  return "?";
}

bool GlobMatch(const std::string& glob, const std::string& id) {
  return fnmatch(glob.c_str(), id.c_str(), 0) == 0;
}

std::string Sha256Hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr) != 1) return "";
  return Hex(md, n);
}

Authenticator::Authenticator(AuthOptions options) : options_(std::move(options)) {}

std::optional<std::string> Authenticator::Changed(const std::string& path, FileState* state) {
  struct stat st;
  const bool exists = !path.empty() && stat(path.c_str(), &st) == 0;
  const int64_t mtime =
      exists ? static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec : 0;
  const int64_t size = exists ? static_cast<int64_t>(st.st_size) : -1;
  const uint64_t inode = exists ? static_cast<uint64_t>(st.st_ino) : 0;
  const absl::Time now = absl::Now();
  const bool moved = mtime != state->mtime || size != state->size || inode != state->inode;
  if (!moved && now - state->read_at < absl::Seconds(1)) return std::nullopt;
  state->mtime = mtime;
  state->size = size;
  state->inode = inode;
  state->read_at = now;
  std::string content;
  if (exists) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    content = text.str();
  }
  if (content == state->content && state->content_known) return std::nullopt;
  state->content = content;
  state->content_known = true;
  return content;
}

void Authenticator::Reload() {
  if (std::optional<std::string> text = Changed(options_.tokens_file, &tokens_file_)) {
    ++generation_;
    tokens_.clear();
    std::istringstream in(*text);
    int number = 0;
    for (std::string line; std::getline(in, line);) {
      ++number;
      std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipWhitespace());
      Role role;
      if ((f.size() == 3 || f.size() == 4) && f[0].size() == 64 && ParseRole(f[1], &role)) {
        Token token;
        token.role = role;
        token.name = f[2];
        token.line = number;
        std::string error;
        if (f.size() == 4 && !absl::ParseTime(absl::RFC3339_full, f[3], &token.expires, &error)) {
          token.bad_expiry = f[3];
          spdlog::error(
              "tokens file {} line {}: the expiry \"{}\" of {}'s token is not a UTC time like "
              "2026-01-31T00:00:00Z; that token is refused until the line is fixed",
              options_.tokens_file, number, f[3], f[2]);
        }
        tokens_[f[0]] = std::move(token);
      }
    }
  }
  if (std::optional<std::string> text = Changed(options_.revoked_file, &revoked_file_)) {
    ++generation_;
    revoked_.clear();
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) {
      std::string hash = absl::AsciiStrToLower(absl::StripAsciiWhitespace(line));
      if (!hash.empty()) revoked_.push_back(hash);
    }
  }
}

uint64_t Authenticator::Generation() {
  absl::MutexLock lock(&mu_);
  Reload();
  return generation_;
}

bool Authenticator::Revoked(const Identity& id) {
  absl::MutexLock lock(&mu_);
  if (id.how == "certificate") {
    return std::find(revoked_.begin(), revoked_.end(), id.credential) != revoked_.end();
  }
  auto token = tokens_.find(id.credential);
  return token == tokens_.end() || token->second.name != id.name || token->second.role != id.role ||
         token->second.expires <= absl::Now() || !token->second.bad_expiry.empty();
}

absl::StatusOr<Identity> Authenticator::Identify(const grpc::ServerContextBase& context,
                                                 const char** refusal) {
  const char* ignored;
  const char*& reason = refusal != nullptr ? *refusal : ignored;
  reason = kRefusedUnauthenticated;
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  absl::MutexLock lock(&mu_);
  Reload();
  // A client certificate: TLS proved the caller holds its key; whether the farm's CA issued it,
  // and when, is checked here (server_security.cc lets every certificate through the handshake).
  std::vector<std::string> pem;
  if (auth != nullptr) pem = Values(*auth, GRPC_X509_PEM_CERT_PROPERTY_NAME);
  if (!pem.empty()) {
    Identity id;
    id.how = "certificate";
    id.credential = Fingerprint(pem[0]);
    if (id.credential.empty() ||
        std::find(revoked_.begin(), revoked_.end(), id.credential) != revoked_.end()) {
      reason = kRefusedRevoked;
      return absl::UnauthenticatedError("this certificate has been revoked");
    }
    if (absl::Status s =
            VerifyClientCertificate(pem[0], options_.ca_pem, absl::Now(), &id.expires, &reason);
        !s.ok()) {
      return s;
    }
    reason = kRefusedUnauthenticated;
    bool has_role = false;
    for (const std::string& subject : Values(*auth, GRPC_X509_SUBJECT_PROPERTY_NAME)) {
      for (absl::string_view part : absl::StrSplit(subject, ',')) {
        part = absl::StripAsciiWhitespace(part);
        if (absl::ConsumePrefix(&part, "OU=")) has_role = ParseRole(part, &id.role);
        if (absl::ConsumePrefix(&part, "CN=")) id.name = std::string(part);
      }
    }
    if (!has_role || id.name.empty()) {
      return absl::UnauthenticatedError(
          "the certificate names no benchfarm role (OU=agent|user|admin) and name (CN)");
    }
    for (const std::string& uri : Values(*auth, GRPC_PEER_URI_PROPERTY_NAME)) {
      absl::string_view u = uri;
      if (absl::ConsumePrefix(&u, kBoardUriPrefix)) id.legacy_board_globs.emplace_back(u);
      if (std::optional<BoardGrant> grant = ParseBoardGrant(uri)) id.grants.push_back(*grant);
    }
    return id;
  }
  // A bearer token.
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it != metadata.end()) {
    absl::string_view value(it->second.data(), it->second.size());
    if (!absl::ConsumePrefix(&value, "Bearer ")) {
      return absl::UnauthenticatedError("authorization: expected \"Bearer TOKEN\"");
    }
    const std::string hash = Sha256Hex(std::string(absl::StripAsciiWhitespace(value)));
    auto token = tokens_.find(hash);
    if (token == tokens_.end()) {
      return absl::UnauthenticatedError("unknown or revoked token");
    }
    const Token& t = token->second;
    if (t.role == Role::kAgent) {
      return absl::UnauthenticatedError("agents authenticate with certificates, not tokens");
    }
    if (!t.bad_expiry.empty()) {
      reason = kRefusedTokenBadExpiry;
      return absl::UnauthenticatedError(absl::StrCat(
          "the token of ", t.name, " has an expiry that does not parse (\"", t.bad_expiry,
          "\", line ", t.line,
          " of the tracker's tokens file; expected a UTC time like "
          "2026-01-31T00:00:00Z): ask the farm's admin to fix the line or issue a new token"));
    }
    if (t.expires <= absl::Now()) {
      reason = kRefusedTokenExpired;
      return absl::UnauthenticatedError(absl::StrCat(
          "the token of ", t.name, " expired on ", base::FormatUtc(t.expires),
          ": ask the farm's admin for a new one (deploy/pki.sh token DIR ", t.name, " --days N)"));
    }
    Identity id;
    id.role = t.role;
    id.name = t.name;
    id.how = "token";
    id.credential = hash;
    id.expires = t.expires;
    return id;
  }
  return absl::UnauthenticatedError(
      "no credential: present a bearer token (--token, $BENCHFARM_TOKEN) or a client "
      "certificate of the farm's CA");
}

}  // namespace benchfarm::tracker
