#include "base/certificate.h"

#include <openssl/pem.h>
#include <time.h>

namespace benchfarm::base {

Certificate ParseCertificate(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = bio != nullptr ? PEM_read_bio_X509(bio, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(bio);
  return Certificate(cert);
}

absl::Time CertificateTime(const ASN1_TIME* t) {
  struct tm tm = {};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return absl::InfinitePast();
  return absl::FromTimeT(timegm(&tm));
}

std::string NameText(const X509_NAME* name) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return "?";
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_ONELINE & ~ASN1_STRFLGS_ESC_MSB);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, n > 0 ? static_cast<size_t>(n) : 0);
  BIO_free(bio);
  return out;
}

}  // namespace benchfarm::base
