// RefusalLog holds back lines past its burst and says how many; failed handshakes get the reason
// label of OpenSSL's text (issue 38 §2).

#include "tracker/refusal_log.h"

#include "gtest/gtest.h"

namespace benchfarm::tracker {
namespace {

TEST(RefusalLog, LogsABurstPerPeriodAndHoldsBackTheRest) {
  RefusalLog log(3, absl::Seconds(10));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  int logged = 0;
  for (int i = 0; i < 100; ++i) logged += log.Note("refused", t0 + absl::Milliseconds(i));
  EXPECT_EQ(logged, 3);
  EXPECT_FALSE(log.Note("refused", t0 + absl::Seconds(9)));
  EXPECT_TRUE(log.Note("refused", t0 + absl::Seconds(10)));  // a new period
  EXPECT_TRUE(log.Note("refused", t0 + absl::Seconds(11)));
}

TEST(HandshakeFailureReason, NamesPlainTextAndDistrustingClients) {
  EXPECT_STREQ(
      HandshakeFailureReason("SSL_ERROR_SSL: error:0A00010B:SSL routines::wrong version number."),
      "PLAINTEXT_CLIENT");
  EXPECT_STREQ(HandshakeFailureReason("SSL_ERROR_SSL: error:0A000418:SSL routines::tlsv1 alert "
                                      "unknown ca."),
               "CLIENT_REFUSED_CERTIFICATE");
  EXPECT_STREQ(HandshakeFailureReason("SSL_ERROR_SSL: error:0A000412:SSL routines::sslv3 alert "
                                      "bad certificate."),
               "CLIENT_REFUSED_CERTIFICATE");
  EXPECT_STREQ(HandshakeFailureReason("SSL_ERROR_SYSCALL: something else"), "HANDSHAKE_FAILED");
}

}  // namespace
}  // namespace benchfarm::tracker
