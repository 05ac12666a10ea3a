// LoopbackTransport: two byte queues under one mutex. Each end counts its closes so a wait can
// tell "my end was closed (and perhaps reopened) while I waited" from a spurious wake-up.

#include "device/testing/loopback_transport.h"

#include <algorithm>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace benchfarm::device {

struct LoopbackTransport::Link {
  Link(std::string n, size_t cap) : name(std::move(n)), capacity(cap) {}

  const std::string name;
  const size_t capacity;
  absl::Mutex mu;
  absl::CondVar changed;  // signalled on every write, read, open and close
  // inbound[s]: bytes waiting to be read by side s.
  std::deque<uint8_t> inbound[2] ABSL_GUARDED_BY(mu);
  bool open[2] ABSL_GUARDED_BY(mu) = {true, true};
  uint64_t closes[2] ABSL_GUARDED_BY(mu) = {0, 0};
};

LoopbackTransport::LoopbackTransport(std::shared_ptr<Link> link, int side)
    : link_(std::move(link)), side_(side) {}

LoopbackTransport::~LoopbackTransport() { Close(); }

std::string LoopbackTransport::Name() const {
  return absl::StrCat("loopback:", link_->name, side_ == 0 ? ".a" : ".b");
}

absl::Status LoopbackTransport::Open() {
  absl::MutexLock lock(&link_->mu);
  link_->open[side_] = true;
  link_->changed.SignalAll();
  return absl::OkStatus();
}

void LoopbackTransport::Close() {
  absl::MutexLock lock(&link_->mu);
  if (!link_->open[side_]) return;
  link_->open[side_] = false;
  ++link_->closes[side_];
  link_->inbound[side_].clear();
  link_->changed.SignalAll();
}

size_t LoopbackTransport::PendingForPeer() const {
  absl::MutexLock lock(&link_->mu);
  return link_->inbound[1 - side_].size();
}

absl::Status LoopbackTransport::Write(absl::string_view data, absl::Time deadline) {
  Link& l = *link_;
  const int peer = 1 - side_;
  absl::MutexLock lock(&l.mu);
  if (!l.open[side_]) {
    return absl::FailedPreconditionError(absl::StrCat(Name(), ": Write on a closed transport"));
  }
  const uint64_t closes = l.closes[side_];
  size_t done = 0;
  for (;;) {
    if (l.closes[side_] != closes) {
      return absl::FailedPreconditionError(absl::StrCat(Name(), ": closed while writing"));
    }
    if (!l.open[peer]) {
      return absl::UnavailableError(absl::StrCat(Name(), ": closed by the peer (wrote ", done,
                                                 " of ", data.size(), " bytes)"));
    }
    std::deque<uint8_t>& q = l.inbound[peer];
    const size_t room = l.capacity - std::min(l.capacity, q.size());
    const size_t n = std::min(room, data.size() - done);
    q.insert(q.end(), data.begin() + done, data.begin() + done + n);
    done += n;
    if (n > 0) l.changed.SignalAll();
    if (done == data.size()) return absl::OkStatus();
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(Name(), ": wrote ", done, " of ", data.size(),
                                                      " bytes before the deadline"));
    }
    l.changed.WaitWithDeadline(&l.mu, deadline);
  }
}

absl::StatusOr<size_t> LoopbackTransport::Read(absl::Span<uint8_t> out, absl::Time deadline) {
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(Name(), ": Read into 0 bytes"));
  Link& l = *link_;
  const int peer = 1 - side_;
  absl::MutexLock lock(&l.mu);
  if (!l.open[side_]) {
    return absl::FailedPreconditionError(absl::StrCat(Name(), ": Read on a closed transport"));
  }
  const uint64_t closes = l.closes[side_];
  for (;;) {
    if (l.closes[side_] != closes) {
      return absl::FailedPreconditionError(absl::StrCat(Name(), ": closed while reading"));
    }
    std::deque<uint8_t>& q = l.inbound[side_];
    if (!q.empty()) {
      const size_t n = std::min(out.size(), q.size());
      std::copy(q.begin(), q.begin() + n, out.begin());
      q.erase(q.begin(), q.begin() + n);
      l.changed.SignalAll();  // room for a blocked writer
      return n;
    }
    if (!l.open[peer]) {
      return absl::UnavailableError(absl::StrCat(Name(), ": closed by the peer"));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(Name(), ": nothing received before the deadline"));
    }
    l.changed.WaitWithDeadline(&l.mu, deadline);
  }
}

std::pair<std::unique_ptr<LoopbackTransport>, std::unique_ptr<LoopbackTransport>> MakeLoopbackPair(
    absl::string_view name, size_t capacity) {
  auto link =
      std::make_shared<LoopbackTransport::Link>(std::string(name), std::max<size_t>(1, capacity));
  return {std::make_unique<LoopbackTransport>(link, 0),
          std::make_unique<LoopbackTransport>(link, 1)};
}

}  // namespace benchfarm::device
