// FaultInjectingTransport. Each byte consumes exactly kDrawsPerByte draws, used or not, so that
// changing one rate never shifts the decisions made for another fault.

#include "device/fault_injecting_transport.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace benchfarm::device {
namespace {

constexpr int kDrawsPerByte = 6;
// Decorrelates the read direction's generator from the write direction's.
constexpr uint64_t kReadSeedOffset = 0x9E3779B97F4A7C15ull;

// A uniform double in [0, 1) from the top 53 bits of a draw: identical on every platform.
double Unit(uint64_t draw) { return static_cast<double>(draw >> 11) * 0x1.0p-53; }

double ClampRate(double rate) {
  if (!(rate > 0.0)) return 0.0;  // also NaN
  return std::min(rate, 1.0);
}

FaultOptions Clamped(FaultOptions o) {
  o.drop_rate = ClampRate(o.drop_rate);
  o.flip_rate = ClampRate(o.flip_rate);
  o.duplicate_rate = ClampRate(o.duplicate_rate);
  o.delay_rate = ClampRate(o.delay_rate);
  o.max_delay = std::max(o.max_delay, absl::ZeroDuration());
  return o;
}

}  // namespace

FaultInjectingTransport::FaultInjectingTransport(std::unique_ptr<Transport> inner,
                                                 FaultOptions options)
    : FaultInjectingTransport(inner.get(), options) {
  owned_ = std::move(inner);
}

FaultInjectingTransport::FaultInjectingTransport(Transport* inner, FaultOptions options)
    : inner_(inner),
      options_(Clamped(options)),
      read_(options.seed + kReadSeedOffset),
      write_(options.seed) {}

std::string FaultInjectingTransport::Name() const {
  return absl::StrCat("faulty:", inner_->Name());
}

FaultCounters FaultInjectingTransport::counters() const {
  FaultCounters c;
  c.dropped = dropped_.load(std::memory_order_relaxed);
  c.flipped = flipped_.load(std::memory_order_relaxed);
  c.duplicated = duplicated_.load(std::memory_order_relaxed);
  c.delayed = delayed_.load(std::memory_order_relaxed);
  return c;
}

void FaultInjectingTransport::Close() {
  {
    absl::MutexLock lock(&mu_);
    ++close_count_;
    read_queue_.clear();
    closed_.SignalAll();
  }
  inner_->Close();
}

uint64_t FaultInjectingTransport::CloseCount() const {
  absl::MutexLock lock(&mu_);
  return close_count_;
}

FaultInjectingTransport::Fate FaultInjectingTransport::Decide(Direction& direction, uint8_t byte) {
  uint64_t draws[kDrawsPerByte];
  for (uint64_t& d : draws) d = direction.rng();
  Fate fate;
  fate.byte = byte;
  if (Unit(draws[0]) < options_.drop_rate) {
    fate.drop = true;
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return fate;
  }
  if (Unit(draws[1]) < options_.flip_rate) {
    fate.byte = static_cast<uint8_t>(byte ^ (1u << (draws[2] % 8)));
    flipped_.fetch_add(1, std::memory_order_relaxed);
  }
  if (Unit(draws[3]) < options_.duplicate_rate) {
    fate.duplicate = true;
    duplicated_.fetch_add(1, std::memory_order_relaxed);
  }
  if (Unit(draws[4]) < options_.delay_rate) {
    fate.delay = options_.max_delay * Unit(draws[5]);
    delayed_.fetch_add(1, std::memory_order_relaxed);
  }
  return fate;
}

absl::Status FaultInjectingTransport::WaitUntil(absl::Time until, absl::Time deadline,
                                                uint64_t close_count) {
  absl::MutexLock lock(&mu_);
  const absl::Time end = std::min(until, deadline);
  while (close_count_ == close_count && absl::Now() < end) {
    closed_.WaitWithDeadline(&mu_, end);
  }
  if (close_count_ != close_count) {
    return absl::FailedPreconditionError(absl::StrCat(Name(), ": closed during an injected delay"));
  }
  if (until > deadline) {
    return absl::DeadlineExceededError(
        absl::StrCat(Name(), ": an injected delay reaches past the deadline"));
  }
  return absl::OkStatus();
}

absl::Status FaultInjectingTransport::Write(absl::string_view data, absl::Time deadline) {
  if (!options_.on_write || data.empty()) return inner_->Write(data, deadline);
  const uint64_t close_count = CloseCount();
  std::string chunk;
  chunk.reserve(data.size());
  for (char c : data) {
    const Fate fate = Decide(write_, static_cast<uint8_t>(c));
    if (fate.drop) continue;
    if (fate.delay > absl::ZeroDuration()) {
      if (!chunk.empty()) {
        RETURN_IF_ERROR(inner_->Write(chunk, deadline));
        chunk.clear();
      }
      RETURN_IF_ERROR(WaitUntil(absl::Now() + fate.delay, deadline, close_count));
    }
    chunk.push_back(static_cast<char>(fate.byte));
    if (fate.duplicate) chunk.push_back(static_cast<char>(fate.byte));
  }
  if (chunk.empty()) return absl::OkStatus();
  return inner_->Write(chunk, deadline);
}

absl::StatusOr<size_t> FaultInjectingTransport::Read(absl::Span<uint8_t> out, absl::Time deadline) {
  if (!options_.on_read) return inner_->Read(out, deadline);
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(Name(), ": Read into 0 bytes"));
  const uint64_t close_count = CloseCount();
  std::vector<uint8_t> buf(out.size());
  for (;;) {
    absl::Time first_release = absl::InfinitePast();
    {
      absl::MutexLock lock(&mu_);
      if (!read_queue_.empty()) {
        const absl::Time now = absl::Now();
        size_t n = 0;
        while (n < out.size() && n < read_queue_.size() && read_queue_[n].release <= now) {
          out[n] = read_queue_[n].byte;
          ++n;
        }
        if (n > 0) {
          read_queue_.erase(read_queue_.begin(), read_queue_.begin() + n);
          return n;
        }
        first_release = read_queue_.front().release;
      }
    }
    if (first_release != absl::InfinitePast()) {
      RETURN_IF_ERROR(WaitUntil(first_release, deadline, close_count));
      continue;
    }
    ASSIGN_OR_RETURN(const size_t got, inner_->Read(absl::MakeSpan(buf), deadline));
    absl::MutexLock lock(&mu_);
    if (close_count_ != close_count) {
      return absl::FailedPreconditionError(absl::StrCat(Name(), ": closed while reading"));
    }
    const absl::Time now = absl::Now();
    absl::Time release = read_queue_.empty() ? now : std::max(now, read_queue_.back().release);
    for (size_t i = 0; i < got; ++i) {
      const Fate fate = Decide(read_, buf[i]);
      if (fate.drop) continue;
      release += fate.delay;
      read_queue_.push_back({fate.byte, release});
      if (fate.duplicate) read_queue_.push_back({fate.byte, release});
    }
    // Everything dropped: read again (the inner Read reports the deadline).
  }
}

}  // namespace benchfarm::device
