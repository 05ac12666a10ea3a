// X.509 certificates as the tracker and its clients read them (OpenSSL): parsed from PEM, their
// times as absl::Time, their names as text for messages.
//
// Thread-safety: plain functions.

#ifndef BENCHFARM_BASE_CERTIFICATE_H_
#define BENCHFARM_BASE_CERTIFICATE_H_

#include <openssl/x509.h>

#include <memory>
#include <string>

#include "absl/time/time.h"

namespace benchfarm::base {

struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
using Certificate = std::unique_ptr<X509, X509Free>;

// The first certificate of `pem`, or null when there is none that parses.
Certificate ParseCertificate(const std::string& pem);

// An ASN1 time (notBefore, notAfter) as absl::Time; InfinitePast when missing or malformed.
absl::Time CertificateTime(const ASN1_TIME* t);

// "O = benchfarm, OU = user, CN = alice": a subject or issuer, for messages.
std::string NameText(const X509_NAME* name);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_CERTIFICATE_H_
