// absl::Time as a protobuf Timestamp and back, the one conversion every layer uses; and as people
// read it in messages (FormatUtc).
#ifndef BENCHFARM_BASE_TIME_PROTO_H_
#define BENCHFARM_BASE_TIME_PROTO_H_

#include <string>

#include "absl/time/time.h"
#include "google/protobuf/timestamp.pb.h"
#include "google/protobuf/util/time_util.h"

namespace benchfarm::base {

inline google::protobuf::Timestamp ToProto(absl::Time t) {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

// "2025-01-31 00:00:00 UTC".
inline std::string FormatUtc(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", t, absl::UTCTimeZone());
}

inline absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_TIME_PROTO_H_
