#include "tracker/pin_queues.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace benchfarm::tracker {
namespace {

// A label set as one string, the same for equal sets whatever their order ("" for none).
std::string LabelsKey(const google::protobuf::Map<std::string, std::string>& labels) {
  if (labels.empty()) return "";
  std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  std::string key;
  for (const auto& [k, v] : sorted) absl::StrAppend(&key, k.size(), ":", k, v.size(), ":", v);
  return key;
}

}  // namespace

bool HasLabels(const v1::Board& board, const std::map<std::string, std::string>& labels) {
  for (const auto& [key, value] : labels) {
    auto it = board.labels().find(key);
    if (it == board.labels().end() || it->second != value) return false;
  }
  return true;
}

bool Eligible(const v1::Trial& trial, const v1::Board& board) {
  if (!trial.board_id().empty() && trial.board_id() != board.board_id()) return false;
  for (const auto& [key, value] : trial.labels()) {
    auto it = board.labels().find(key);
    if (it == board.labels().end() || it->second != value) return false;
  }
  return true;
}

void PinQueues::Add(LiveJob* job) {
  const v1::Trial& t = job->job.trial();
  Level& level = kinds_[t.board_kind()][t.priority()];
  PinQueue& pin = level.by_pin[t.board_id()][LabelsKey(t.labels())];
  if (pin.size == 0)
    pin.labels = std::map<std::string, std::string>(t.labels().begin(), t.labels().end());
  std::deque<QueuedJob>& q = pin.by_client[job->job.client_id()];
  // Keep submission order even for re-queued jobs.
  auto at = std::upper_bound(q.begin(), q.end(), job->seq,
                             [](int64_t seq, const QueuedJob& queued) { return seq < queued.seq; });
  q.insert(at, QueuedJob{job->seq, job});
  ++pin.size;
  ++level.size;
  ++size_;
}

void PinQueues::Remove(const LiveJob& job) {
  const v1::Trial& t = job.job.trial();
  auto kind = kinds_.find(t.board_kind());
  if (kind == kinds_.end()) return;
  auto level = kind->second.find(t.priority());
  if (level == kind->second.end()) return;
  auto board = level->second.by_pin.find(t.board_id());
  if (board == level->second.by_pin.end()) return;
  auto pin = board->second.find(LabelsKey(t.labels()));
  if (pin == board->second.end()) return;
  auto client = pin->second.by_client.find(job.job.client_id());
  if (client == pin->second.by_client.end()) return;
  auto& q = client->second;
  auto it = std::lower_bound(q.begin(), q.end(), job.seq,
                             [](const QueuedJob& queued, int64_t seq) { return queued.seq < seq; });
  if (it == q.end() || it->seq != job.seq) return;
  q.erase(it);
  --pin->second.size;
  --level->second.size;
  --size_;
  if (q.empty()) pin->second.by_client.erase(client);
  if (pin->second.by_client.empty()) board->second.erase(pin);
  if (board->second.empty()) level->second.by_pin.erase(board);
  if (level->second.by_pin.empty()) kind->second.erase(level);
  if (kind->second.empty()) kinds_.erase(kind);
}

LiveJob* PinQueues::Pick(const v1::Board& board, absl::FunctionRef<bool(const LiveJob&)> ready) {
  auto kind = kinds_.find(board.kind());
  if (kind == kinds_.end()) return nullptr;
  std::vector<PinQueue*> pins;
  for (auto& entry : kind->second) {  // highest priority first
    Level& level = entry.second;
    // The pins this board may serve: unpinned or pinned to it, with labels it has.
    pins.clear();
    auto add_pins = [&](const std::string& board_id) {
      auto by_board = level.by_pin.find(board_id);
      if (by_board == level.by_pin.end()) return;
      for (auto& [key, pin] : by_board->second) {
        if (HasLabels(board, pin.labels)) pins.push_back(&pin);
      }
    };
    add_pins("");
    if (!board.board_id().empty()) add_pins(board.board_id());
    if (pins.empty()) continue;
    // Clients take turns: the first client after the one served last (cyclically) with a job in
    // any of these pins...
    const std::string* next = nullptr;
    bool next_wrapped = false;
    for (PinQueue* pin : pins) {
      auto it = pin->by_client.upper_bound(level.last_client);
      bool wrapped = false;
      if (it == pin->by_client.end()) {
        it = pin->by_client.begin();
        wrapped = true;
      }
      if (it == pin->by_client.end()) continue;
      if (next == nullptr || std::tie(wrapped, it->first) < std::tie(next_wrapped, *next)) {
        next = &it->first;
        next_wrapped = wrapped;
      }
    }
    if (next == nullptr) continue;
    // ...and its first job in submission order among them.
    const QueuedJob* first = nullptr;
    for (PinQueue* pin : pins) {
      auto it = pin->by_client.find(*next);
      if (it != pin->by_client.end() && (first == nullptr || it->second.front().seq < first->seq)) {
        first = &it->second.front();
      }
    }
    LiveJob* job = first->job;
    if (!ready(*job)) return nullptr;
    level.last_client = *next;
    return job;
  }
  return nullptr;
}

std::map<int, int64_t> PinQueues::QueuedByPriority(const std::string& kind) const {
  std::map<int, int64_t> out;
  if (auto levels = kinds_.find(kind); levels != kinds_.end()) {
    for (const auto& [priority, level] : levels->second) out[priority] = level.size;
  }
  return out;
}

std::vector<PinQueues::Pin> PinQueues::Pinned(const std::string& kind) const {
  std::map<std::pair<std::string, std::string>, Pin> pinned;  // (board id, labels key) -> pin
  if (auto levels = kinds_.find(kind); levels != kinds_.end()) {
    for (const auto& [priority, level] : levels->second) {
      for (const auto& [board_id, by_labels] : level.by_pin) {
        for (const auto& [key, queue] : by_labels) {
          if (board_id.empty() && key.empty()) continue;  // not pinned
          Pin& pin = pinned[{board_id, key}];
          pin.board_id = board_id;
          pin.labels = queue.labels;
          pin.jobs += queue.size;
        }
      }
    }
  }
  std::vector<Pin> out;
  for (auto& [key, pin] : pinned) out.push_back(std::move(pin));
  return out;
}

std::vector<std::string> PinQueues::KindsFrom(const std::string& from) const {
  std::vector<std::string> out;
  for (auto it = kinds_.lower_bound(from); it != kinds_.end(); ++it) out.push_back(it->first);
  return out;
}

}  // namespace benchfarm::tracker
