#include "agent/attempt_log.h"

#include "absl/strings/str_cat.h"
#include "base/bounded_text.h"
#include "catalog/trial.h"

namespace benchfarm::agent {

void AttemptLog::Add(absl::string_view event, absl::Time at) {
  absl::StrAppend(&text_, absl::FormatTime("%H:%M:%E3S ", at, absl::UTCTimeZone()),
                  base::BoundedText(event, catalog::kMaxAttemptLogBytes));
  if (text_.back() != '\n') text_ += '\n';
}

std::string AttemptLog::Text() const {
  return base::BoundedText(text_, catalog::kMaxAttemptLogBytes);
}

}  // namespace benchfarm::agent
