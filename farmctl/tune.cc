#include "farmctl/tune.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/content_hash.h"
#include "base/status_macros.h"
#include "catalog/knob_space.h"
#include "catalog/trial.h"
#include "farmctl/autotvm_record.h"
#include "farmctl/board_commands.h"
#include "farmctl/tune_log.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/grpcpp.h"
#include "stats/cost_stats.h"
#include "stats/summary.h"
#include "tuner/additive.h"
#include "tuner/space.h"
#include "tuner/strategy.h"

namespace benchfarm::farmctl {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A finished job as a point: its median cost (the tracker's stats, or computed from the costs
// of a result stored before stats existed), +inf when it failed.
// A message's first line, at most 160 bytes (cut on a UTF-8 boundary).
std::string FirstLine(absl::string_view message) {
  std::string line(message.substr(0, message.find('\n')));
  if (line.size() > 160) {
    size_t cut = 157;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
    line = line.substr(0, cut) + "...";
  }
  return line;
}

TunePoint PointOf(int64_t index, const v1::Job& job) {
  TunePoint p;
  p.index = index;
  p.error = job.state() == v1::DONE ? job.result().error_code() : v1::CANCELLED;
  const v1::Result& r = job.result();
  if (job.state() != v1::DONE || r.error_code() != v1::NO_ERROR || r.costs_s().empty()) {
    p.cost = kInf;
    p.message = job.state() != v1::DONE          ? "the job was cancelled"
                : r.error_code() == v1::NO_ERROR ? "no costs reported"
                                                 : FirstLine(r.message());
    return p;
  }
  p.stats = stats::StatsOf(r);
  p.cost = p.stats.median_s();
  p.cpu_hz = r.cpu_hz();
  p.emulation = r.emulation();
  return p;
}

// " n=3 hw=0.004 u=0 hz=1.68e+08": what a state line keeps of a point's quality; a failure's
// " msg=<its first line, web-safe base64>".
std::string QualityFields(const TunePoint& p) {
  if (!p.message.empty()) return absl::StrCat(" msg=", absl::WebSafeBase64Escape(p.message));
  if (p.stats.count() == 0) return "";
  return absl::StrCat(" n=", p.stats.count(), " hw=", p.stats.rel_half_width(),
                      " u=", p.stats.unstable() ? 1 : 0, " hz=", p.cpu_hz,
                      p.emulation.empty() ? "" : absl::StrCat(" emu=", p.emulation));
}

// A state line's "<index> <cost|inf> <ErrorCode> [k=v ...]" fields (from `f[first]` on).
bool ParsePoint(const std::vector<std::string>& f, size_t first, TunePoint* p) {
  if (f.size() < first + 3 || !absl::SimpleAtoi(f[first], &p->index)) return false;
  if (f[first + 1] == "inf" || !absl::SimpleAtod(f[first + 1], &p->cost)) p->cost = kInf;
  v1::ErrorCode code;
  p->error = v1::ErrorCode_Parse(f[first + 2], &code) ? code : v1::UNKNOWN_ERROR;
  for (size_t i = first + 3; i < f.size(); ++i) {
    std::pair<std::string, std::string> kv = absl::StrSplit(f[i], absl::MaxSplits('=', 1));
    if (kv.first == "emu") p->emulation = kv.second;
    if (kv.first == "msg") (void)absl::WebSafeBase64Unescape(kv.second, &p->message);
    double v = 0;
    if (!absl::SimpleAtod(kv.second, &v)) continue;
    if (kv.first == "n") p->stats.set_count(static_cast<int32_t>(v));
    if (kv.first == "hw") p->stats.set_rel_half_width(v);
    if (kv.first == "u") p->stats.set_unstable(v != 0);
    if (kv.first == "hz") p->cpu_hz = v;
  }
  if (std::isfinite(p->cost)) p->stats.set_median_s(p->cost);
  return true;
}

std::string PointLine(const TunePoint& p) {
  return absl::StrCat(p.index, " ", std::isfinite(p.cost) ? absl::StrCat(p.cost) : "inf", " ",
                      v1::ErrorCode_Name(p.error), QualityFields(p));
}

// The job if it has finished (DONE or cancelled); nullopt while it runs.
absl::StatusOr<std::optional<v1::Job>> FinishedJob(const TrackerClient& tracker,
                                                   const std::string& job_id) {
  v1::GetJobRequest req;
  req.set_job_id(job_id);
  v1::Job job;
  grpc::Status s = CallTracker(tracker, [&](grpc::ClientContext* context) {
    return tracker.stub->GetJob(context, req, &job);
  });
  if (!s.ok()) return FromGrpc(s, tracker, "GetJob");
  if (job.state() != v1::DONE && job.state() != v1::CANCELLED_STATE) return std::nullopt;
  return job;
}

// A user operator's version this run measured (pinned when it started) against the catalog's
// latest now: a line saying a newer one was added meanwhile, by whom and when; "" when none was
// (or the catalog cannot say: the run's own results do not depend on it).
std::string NewerVersionNote(const TrackerClient& tracker, const v1::Operator& op) {
  if (op.version().empty()) return "";
  v1::GetOperatorRequest req;
  req.set_name(op.name());
  v1::Operator latest;
  grpc::Status s = CallTracker(tracker, [&](grpc::ClientContext* context) {
    return tracker.stub->GetOperator(context, req, &latest);
  });
  if (!s.ok() || latest.builtin() || latest.version() == op.version()) return "";
  // An earlier version added again is the latest since then, not since it was first added.
  const bool again = latest.state().has_readded_at();
  const google::protobuf::Timestamp& at = again ? latest.state().readded_at() : latest.added_at();
  std::string when = "-";
  if (at.seconds() != 0) {
    when = absl::FormatTime("%Y-%m-%d %H:%M:%S %Z", absl::FromUnixSeconds(at.seconds()),
                            absl::UTCTimeZone());
  }
  return absl::StrCat(
      "note: ", op.name(), " version ", latest.version(), " was added",
      again ? " again, as the latest," : "", " (",
      again ? when
            : absl::StrCat("by ", latest.added_by().empty() ? "?" : latest.added_by(), ", ", when),
      ") after this run began; every trial of it measured version ", op.version(),
      " (farmctl tune --version ", latest.version(), " to tune the new one)\n");
}

// The search state, kept in out_dir.
class TuneState {
 public:
  // `run`: the run's key (RunKey); a state file of another run is set aside, not resumed.
  TuneState(std::string dir, std::string run) : dir_(std::move(dir)), run_(std::move(run)) {}

  // Loads the state of this run. Returns the file it set aside when the state in dir was of
  // another run (other shapes, options or operator version), else "".
  absl::StatusOr<std::string> Load() {
    std::ifstream in(StatePath());
    std::string line;
    if (in && std::getline(in, line) && line != "run " + run_) {
      in.close();
      const std::string aside =
          absl::StrCat(dir_, "/tune-state.", absl::ToUnixSeconds(absl::Now()), ".txt");
      if (rename(StatePath().c_str(), aside.c_str()) != 0) {
        return absl::InternalError(absl::StrCat("cannot move ", StatePath(), " aside"));
      }
      RETURN_IF_ERROR(Append("run " + run_));
      return aside;
    }
    if (!in) {
      RETURN_IF_ERROR(Append("run " + run_));
      return std::string();
    }
    while (std::getline(in, line)) {
      std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
      int64_t index;
      TunePoint p;
      if (f.size() >= 4 && f[0] == "done" && ParsePoint(f, 1, &p)) {
        if (done_.insert(p.index).second) points_.push_back(p);
        pending_.erase(p.index);
      } else if (f.size() == 3 && f[0] == "pending" && absl::SimpleAtoi(f[1], &index)) {
        if (done_.count(index) == 0) pending_[index] = f[2];
      } else if (f.size() == 5 && f[0] == "recheck" && f[2] == "pending" &&
                 absl::SimpleAtoi(f[3], &index)) {
        Recheck& r = rechecks_[f[1]];
        if (r.done.count(index) == 0) r.pending[index] = f[4];
      } else if (f.size() >= 6 && f[0] == "recheck" && f[2] == "done" && ParsePoint(f, 3, &p)) {
        Recheck& r = rechecks_[f[1]];
        r.done[p.index] = p;
        r.pending.erase(p.index);
      }
    }
    return std::string();
  }

  absl::Status AddPending(int64_t index, const std::string& job_id) {
    pending_[index] = job_id;
    return Append(absl::StrCat("pending ", index, " ", job_id));
  }

  absl::Status AddDone(const TunePoint& p, const std::string& record) {
    pending_.erase(p.index);
    if (!done_.insert(p.index).second) return absl::OkStatus();
    points_.push_back(p);
    RETURN_IF_ERROR(AppendLog(record));
    return Append(absl::StrCat("done ", PointLine(p)));
  }

  // A recheck (its key: a hash of its trials): the configs measured again, by config index.
  struct Recheck {
    std::map<int64_t, std::string> pending;  // job ids
    std::map<int64_t, TunePoint> done;
  };
  const Recheck& recheck(const std::string& key) { return rechecks_[key]; }

  absl::Status AddRecheckPending(const std::string& key, int64_t index, const std::string& job_id) {
    rechecks_[key].pending[index] = job_id;
    return Append(absl::StrCat("recheck ", key, " pending ", index, " ", job_id));
  }

  absl::Status AddRecheckDone(const std::string& key, const TunePoint& p,
                              const std::string& record) {
    Recheck& r = rechecks_[key];
    r.pending.erase(p.index);
    if (!r.done.emplace(p.index, p).second) return absl::OkStatus();
    RETURN_IF_ERROR(AppendLog(record));
    return Append(absl::StrCat("recheck ", key, " done ", PointLine(p)));
  }

  const std::vector<TunePoint>& points() const { return points_; }
  const std::map<int64_t, std::string>& pending() const { return pending_; }
  bool Known(int64_t index) const {
    return done_.count(index) > 0 || pending_.count(index) > 0 || reserved_.count(index) > 0;
  }
  // Configs already in the batch being put together: the searcher must not pick them again.
  void Reserve(int64_t index) { reserved_.insert(index); }
  void ClearReserved() { reserved_.clear(); }
  std::string StatePath() const { return dir_ + "/tune-state.txt"; }
  std::string LogPath() const { return log_path_; }
  void set_log_path(std::string p) { log_path_ = std::move(p); }

 private:
  absl::Status AppendLog(const std::string& record) {
    std::ofstream log(LogPath(), std::ios::app);
    log << record << "\n";
    if (!log.flush()) return absl::InternalError(absl::StrCat("cannot write ", LogPath()));
    return absl::OkStatus();
  }

  absl::Status Append(const std::string& line) {
    std::ofstream out(StatePath(), std::ios::app);
    out << line << "\n";
    if (!out.flush()) return absl::InternalError(absl::StrCat("cannot write ", StatePath()));
    return absl::OkStatus();
  }

  const std::string dir_;
  const std::string run_;
  std::string log_path_;
  std::set<int64_t> done_;
  std::vector<TunePoint> points_;
  std::map<int64_t, std::string> pending_;
  std::set<int64_t> reserved_;
  std::map<std::string, Recheck> rechecks_;
};

// Picks the next configs to measure: grid, random, "model" (tuner::AdditiveScore) or "gbt" (the
// learned model, tuner/strategy.h, told every result the run holds before each batch). The tuner/
// package holds both models; ./farm bench tuner replays them.
class Searcher {
 public:
  Searcher(const v1::Operator& op, std::string strategy, uint64_t seed)
      : op_(op),
        strategy_(std::move(strategy)),
        seed_(seed),
        rng_(seed),
        size_(catalog::SpaceSize(op.spec())) {}

  // Results from other runs (--transfer) that pre-train the learned model.
  void set_prior(std::vector<TransferSet> prior) { prior_ = std::move(prior); }

  std::vector<int64_t> Next(int n, const TuneState& state) {
    // A function of the seed and the results: a resumed run picks what the uninterrupted one would.
    rng_.seed(tuner::BatchSeed(seed_, state.points().size()));
    std::vector<int64_t> out;
    auto take = [&](int64_t index) {
      if (static_cast<int>(out.size()) < n && !state.Known(index) &&
          std::find(out.begin(), out.end(), index) == out.end()) {
        out.push_back(index);
      }
    };
    if (strategy_ == "grid") {
      for (; cursor_ < size_ && static_cast<int>(out.size()) < n; ++cursor_) take(cursor_);
      return out;
    }
    if (strategy_ == "gbt") return NextByModel(n, state);
    const int measured = static_cast<int>(state.points().size());
    int explore = n;
    if (strategy_ == "model" && measured >= 8) {
      explore = std::max(1, n / 4);
      // Lower is better: tuner/additive.h's per-knob-value score.
      std::vector<std::pair<int64_t, double>> results;
      for (const TunePoint& p : state.points()) results.emplace_back(p.index, p.cost);
      const tuner::AdditiveScore additive(op_.spec(), results);
      std::vector<std::pair<double, int64_t>> scored;
      for (int64_t index : RandomPool(4000, state)) scored.emplace_back(additive(index), index);
      std::sort(scored.begin(), scored.end());
      for (const auto& [score, index] : scored) {
        if (static_cast<int>(out.size()) >= n - explore) break;
        take(index);
      }
    }
    for (int64_t index : RandomPool(n * 4 + 16, state)) take(index);
    return out;
  }

 private:
  std::vector<int64_t> NextByModel(int n, const TuneState& state) {
    if (learned_ == nullptr) {
      space_ = std::make_unique<tuner::Space>(op_.spec());
      tuner::StrategyOptions options;
      options.seed = seed_;
      options.prior = prior_;
      learned_ = *tuner::MakeStrategy("gbt", *space_, options);
    }
    // Every result the run holds (the strategy counts each config's first and ignores repeats).
    for (const TunePoint& p : state.points()) learned_->Observe(p.index, p.cost);
    std::vector<int64_t> out;
    // Configs the run already holds (pending ones) are skipped; the model never proposes them
    // again.
    for (int tries = 0; tries < 8 && static_cast<int>(out.size()) < n; ++tries) {
      const std::vector<int64_t> proposed = learned_->Propose(n - static_cast<int>(out.size()));
      if (proposed.empty()) break;
      for (int64_t index : proposed) {
        if (static_cast<int>(out.size()) < n && !state.Known(index)) out.push_back(index);
      }
    }
    return out;
  }

  std::vector<int64_t> RandomPool(int n, const TuneState& state) {
    std::vector<int64_t> pool;
    if (size_ <= 0) return pool;
    std::uniform_int_distribution<int64_t> pick(0, size_ - 1);
    for (int tries = 0; static_cast<int>(pool.size()) < n && tries < n * 8; ++tries) {
      const int64_t i = pick(rng_);
      if (!state.Known(i)) pool.push_back(i);
    }
    return pool;
  }

  const v1::Operator& op_;
  const std::string strategy_;
  const uint64_t seed_;
  std::mt19937_64 rng_;
  const int64_t size_;
  int64_t cursor_ = 0;
  std::unique_ptr<tuner::Space> space_;  // gbt
  std::unique_ptr<tuner::Strategy> learned_;
  std::vector<TransferSet> prior_;
};

std::string Deterministic(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  m.SerializeToCodedStream(&coded);
  return out;
}

std::string AbsolutePath(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return path;
  return absl::StrCat(cwd, "/", path);
}

}  // namespace

std::string RunKey(const v1::Operator& op, const TuneOptions& options) {
  v1::Trial t = TrialTemplate(op, options);
  return base::HashBytes(absl::StrCat(Deterministic(t), "\n", AbsolutePath(options.out_dir)));
}

v1::Trial TrialTemplate(const v1::Operator& op, const TuneOptions& options) {
  v1::Trial t;
  t.set_board_kind(options.kind);
  t.mutable_op()->mutable_template_op()->set_op(options.op);
  t.mutable_op()->mutable_template_op()->set_version(op.version());
  for (const v1::ArgSpec& a : options.args) *t.add_args() = a;
  *t.mutable_measure() = options.measure;
  if (t.measure().number() == 0) t.mutable_measure()->set_number(catalog::kDefaultNumber);
  if (t.measure().repeat() == 0) t.mutable_measure()->set_repeat(3);
  t.set_check_outputs(options.check);
  t.set_priority(options.priority);
  t.set_seed(options.data_seed);
  return t;
}

std::string PlotSvg(const std::string& title, const std::vector<TunePoint>& points) {
  const double w = 640, h = 400, left = 70, right = 20, top = 40, bottom = 50;
  std::vector<double> best;
  double b = kInf;
  double ymax = 0, ymin = kInf;
  for (const TunePoint& p : points) {
    b = std::min(b, p.cost);
    best.push_back(b * 1e6);
    if (std::isfinite(p.cost)) {
      ymax = std::max(ymax, p.cost * 1e6);
      ymin = std::min(ymin, p.cost * 1e6);
    }
  }
  if (!std::isfinite(ymin)) ymin = 0, ymax = 1;
  ymin = std::max(0.0, ymin * 0.9);
  ymax = ymax * 1.05 + 1e-9;
  const double n = std::max<size_t>(points.size(), 2);
  auto x = [&](double i) { return left + (w - left - right) * i / (n - 1); };
  auto y = [&](double v) { return top + (h - top - bottom) * (1 - (v - ymin) / (ymax - ymin)); };
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"24\" font-size=\"15\">%s</text>\n",
      w, h, left, title);
  absl::StrAppendFormat(
      &svg,
      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n"
      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
      left, h - bottom, w - right, h - bottom, left, top, left, h - bottom);
  for (int t = 0; t <= 4; ++t) {
    double v = ymin + (ymax - ymin) * t / 4;
    absl::StrAppendFormat(
        &svg,
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n"
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
        left - 6, y(v) + 4, v, left, y(v), w - right, y(v));
  }
  for (int t = 0; t <= 4; ++t) {
    double i = (n - 1) * t / 4;
    absl::StrAppendFormat(&svg, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n",
                          x(i), h - bottom + 18, i + 1);
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">trials</text>\n"
                        "<text x=\"16\" y=\"%.1f\" transform=\"rotate(-90 16 %.1f)\" "
                        "text-anchor=\"middle\">cost (µs per call)</text>\n",
                        (left + w - right) / 2, h - 10, (top + h - bottom) / 2,
                        (top + h - bottom) / 2);
  // Every trial: a grey dot at its cost, or a red cross on the top edge for a failure.
  for (size_t i = 0; i < points.size(); ++i) {
    if (std::isfinite(points[i].cost)) {
      absl::StrAppendFormat(&svg,
                            "<circle class=\"trial\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" "
                            "fill=\"#999\"/>\n",
                            x(i), y(points[i].cost * 1e6));
    } else {
      absl::StrAppendFormat(&svg,
                            "<path class=\"failed\" d=\"M%.1f %.1fl6 6m0 -6l-6 6\" "
                            "stroke=\"#d62728\" stroke-width=\"1.5\"/>\n",
                            x(i) - 3, top - 3);
    }
  }
  std::string line;
  for (size_t i = 0; i < best.size(); ++i) {
    if (!std::isfinite(best[i])) continue;
    absl::StrAppendFormat(&line, "%s%.1f,%.1f", line.empty() ? "" : " ", x(i), y(best[i]));
  }
  absl::StrAppend(&svg, "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"",
                  line, "\"/>\n");
  absl::StrAppendFormat(
      &svg,
      "<text x=\"%.1f\" y=\"24\" text-anchor=\"end\" font-size=\"11\">"
      "<tspan fill=\"#1f77b4\">— best so far</tspan>  <tspan fill=\"#999\">● a trial</tspan>  "
      "<tspan fill=\"#d62728\">✕ failed</tspan></text>\n</svg>\n",
      w - right);
  return svg;
}

std::string PointCostText(const TunePoint& p) {
  if (!std::isfinite(p.cost)) return absl::StrCat("failed (", v1::ErrorCode_Name(p.error), ")");
  v1::CostStats s = p.stats;
  if (s.count() == 0) s.set_count(1);  // a state written before stats existed: "+-?"
  s.set_median_s(p.cost);
  std::string text = stats::CostText(s);
  if (p.cpu_hz > 0) absl::StrAppend(&text, " = ", UnitsText(p.cost, p.cpu_hz, p.emulation));
  return text;
}

v1::MeasureOptions RecheckMeasure(const TuneOptions& options) {
  v1::MeasureOptions m = options.measure;
  if (m.target_rel_ci() <= 0) {
    m.set_target_rel_ci(0.01);
    m.set_budget_ms(options.recheck_budget_ms);
    m.set_max_repeat(options.recheck_max_repeat);
  }
  return m;
}

namespace {

std::string MeasureText(const v1::MeasureOptions& m) {
  return absl::StrCat(
      "adaptive, target +-", absl::StrFormat("%g", m.target_rel_ci() * 100), " %",
      m.budget_ms() > 0 ? absl::StrCat(", budget ", m.budget_ms(), " ms") : "",
      m.max_repeat() > 0 ? absl::StrCat(", at most ", m.max_repeat(), " repeats") : "");
}

// Both rankings of the rechecked configs (`first` in the first run's order, `second` the same
// configs measured again), whether the top-1 held, and Kendall's tau between the two runs'
// medians (over the configs measured both times).
// "recheck: the top 3 measured again (adaptive, target +-1 %):", or for two-stage tuning
// (`confirm` not empty) "confirm: the top 3 of the screen on A measured on B (...):".
std::string RecheckHeading(size_t n, const v1::MeasureOptions& measure, const std::string& screen,
                           const std::string& confirm) {
  if (!confirm.empty()) {
    return absl::StrCat("confirm: the top ", n, " of the screen on ", screen, " measured on ",
                        confirm, " (", MeasureText(measure), "):\n");
  }
  return absl::StrCat("recheck: the top ", n, " measured again (", MeasureText(measure), "):\n");
}

// The two rankings under RecheckHeading (printed before the measurement). `confirm`: the second
// measurement's board kind when it is not `screen`, the search's (two-stage tuning); empty for a
// recheck on the same kind.
void PrintRecheck(const v1::Operator& op, const std::vector<TunePoint>& first,
                  const std::vector<TunePoint>& second, const std::string& screen,
                  const std::string& confirm, std::ostream& out) {
  const bool two_stage = !confirm.empty();
  const std::string first_run = two_stage ? screen : "first run";
  const std::string second_run = two_stage ? confirm : "second run";
  const size_t n = first.size();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return second[a].cost < second[b].cost; });
  std::vector<std::string> second_rank(n, "-");
  for (size_t r = 0; r < n; ++r) {
    if (std::isfinite(second[order[r]].cost)) second_rank[order[r]] = absl::StrCat(r + 1);
  }
  size_t width = first_run.size(), width2 = second_run.size();
  for (size_t i = 0; i < n; ++i) {
    width = std::max(width, PointCostText(first[i]).size());
    width2 = std::max(width2, PointCostText(second[i]).size());
  }
  std::string header =
      absl::StrFormat("%7s  %-*s %7s  %-*s", two_stage ? "screen" : "first", width, first_run,
                      two_stage ? "confirm" : "second", width2, second_run);
  for (const v1::Knob& k : op.spec().knobs()) absl::StrAppendFormat(&header, " %8s", k.name());
  out << header << "\n";
  for (size_t i = 0; i < n; ++i) {
    std::string line = absl::StrFormat("%7d  %-*s %7s  %-*s", i + 1, width, PointCostText(first[i]),
                                       second_rank[i], width2, PointCostText(second[i]));
    std::map<std::string, std::string> values = catalog::KnobsOfIndex(op.spec(), first[i].index);
    for (const v1::Knob& k : op.spec().knobs())
      absl::StrAppendFormat(&line, " %8s", values[k.name()]);
    out << line << "\n";
  }
  std::vector<double> a, b;
  for (size_t i = 0; i < n; ++i) {
    if (std::isfinite(second[i].cost)) {
      a.push_back(first[i].cost);
      b.push_back(second[i].cost);
    }
  }
  const bool held = std::isfinite(second[0].cost) && order[0] == 0;
  out << "top-1 held: " << (held ? "yes" : "no");
  if (!held && two_stage) {
    out << " (the screen's #1 is " << (second_rank[0] == "-" ? "failed" : "#" + second_rank[0])
        << " on " << confirm << "; its #1 was the screen's #" << order[0] + 1 << ")";
  } else if (!held) {
    out << " (the first run's #1 is " << (second_rank[0] == "-" ? "failed" : "#" + second_rank[0])
        << " in the second; its #1 was the first run's #" << order[0] + 1 << ")";
  }
  out << "\n";
  if (a.size() >= 2) {
    out << absl::StrFormat("Kendall tau: %.2f over %d configs (1: the same order, -1: reversed)\n",
                           stats::KendallTau(a, b), a.size());
  } else {
    out << "Kendall tau: - (fewer than 2 configs measured both times)\n";
  }
}

// The options checked (in this order, naming the flag) and out_dir made: the operator to tune.
absl::StatusOr<const v1::Operator*> CheckOptions(const catalog::KnobSpace& knobs,
                                                 const TuneOptions& options) {
  const v1::Operator* op = knobs.Find(options.op);
  if (op == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--op: unknown operator \"", options.op, "\""));
  }
  if (options.strategy != "grid" && options.strategy != "random" && options.strategy != "model" &&
      options.strategy != "gbt") {
    return absl::InvalidArgumentError("--strategy: one of grid, random, model, gbt");
  }
  if (!options.transfer.empty() && options.strategy != "gbt") {
    return absl::InvalidArgumentError(
        "--transfer pre-trains the learned cost model: use it with --strategy gbt");
  }
  if (options.trials < 1) return absl::InvalidArgumentError("--trials: at least 1");
  if (options.batch < 1 || options.batch > 1000)
    return absl::InvalidArgumentError("--batch: 1..1000");
  if (options.out_dir.empty()) return absl::InvalidArgumentError("--out: required");
  mkdir(options.out_dir.c_str(), 0755);
  struct stat st;
  if (stat(options.out_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InternalError(absl::StrCat("--out: cannot create ", options.out_dir));
  }
  if (options.max_flashes < 0) return absl::InvalidArgumentError("--max-flashes: 0 or more");
  if (options.max_flashes > 0 &&
      (options.trials + options.max_flashes - 1) / options.max_flashes > catalog::kMaxImagePool) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-flashes: ", options.trials, " trials in ", options.max_flashes,
                     " rounds are more configs per image than a trial may name (",
                     catalog::kMaxImagePool, "): allow more flashes"));
  }
  if (options.recheck < 0 || options.recheck > 1000) {
    return absl::InvalidArgumentError("--recheck: 0..1000 (configs to measure again)");
  }
  if (!options.confirm.empty() && options.recheck == 0) {
    return absl::InvalidArgumentError("--confirm KIND: give --top K, the configs to measure there");
  }
  return op;
}

// A round's configs as its trials name them (TemplateOperator.image_pool): "k=v,k=v".
std::vector<std::string> PoolConfigs(const v1::OpTemplate& spec, const std::vector<int64_t>& pool) {
  std::vector<std::string> configs;
  for (int64_t index : pool) {
    std::vector<std::string> pairs;
    for (const auto& [k, v] : catalog::KnobsOfIndex(spec, index))
      pairs.push_back(absl::StrCat(k, "=", v));
    configs.push_back(absl::StrJoin(pairs, ","));
  }
  return configs;
}

// A hash of `head` and the request's trials: a request id's part derived from what it submits.
std::string TrialsHash(const std::string& head, const v1::SubmitTrialsRequest& req) {
  std::string material = head;
  for (const v1::Trial& t : req.trials()) absl::StrAppend(&material, "\n", Deterministic(t));
  return base::HashBytes(material);
}

// One run of Tune in its steps: the state loaded, the search (batches submitted and collected),
// the table of the best configs, the recheck, the plot and the closing lines.
class TuneRun {
 public:
  TuneRun(const TrackerClient& tracker, const catalog::KnobSpace& knobs, const v1::Operator& op,
          const TuneOptions& options, std::ostream& out, std::ostream& progress)
      : tracker_(tracker),
        knobs_(knobs),
        op_(op),
        options_(options),
        out_(out),
        progress_(progress),
        run_name_(absl::StrCat("tune-", options.op, "-", options.kind)),
        // A secure tracker knows the caller: its client id is the credential's name
        // (derive_client).
        client_(!options.client_id.empty() ? options.client_id
                : options.derive_client    ? ""
                                           : run_name_),
        run_key_(RunKey(op, options)),
        budget_(Budget(op, options)),
        // Knobs left out take their defaults: the default config's index.
        default_index_(
            catalog::ConfigIndex(op.spec(), google::protobuf::Map<std::string, std::string>())),
        round_(options.max_flashes > 0 ? (budget_ + options.max_flashes - 1) / options.max_flashes
                                       : 0),
        state_(options.out_dir, run_key_),
        searcher_(op, options.strategy, options.seed) {}

  absl::Status LoadState();
  absl::Status Search();
  void PrintBest();
  absl::Status Recheck();
  absl::Status Finish();

 private:
  // The trials to measure: the budget, at most the space.
  static int Budget(const v1::Operator& op, const TuneOptions& options) {
    return static_cast<int>(std::min<int64_t>(options.trials, catalog::SpaceSize(op.spec())));
  }

  void Draw(bool final);
  std::vector<int64_t> NextBatch();
  v1::SubmitTrialsRequest Request(const v1::Trial& trial_template,
                                  const std::vector<int64_t>& indexes) const;
  absl::Status Submit(const v1::SubmitTrialsRequest& req, absl::string_view what,
                      v1::SubmitTrialsResponse* resp) const;
  absl::Status WaitFor(const std::function<const std::map<int64_t, std::string>&()>& pending,
                       const std::function<absl::Status(int64_t, const v1::Job&)>& record,
                       absl::string_view late_prefix, absl::string_view late_suffix,
                       const std::function<void()>& recorded);
  absl::Status WaitPending();
  // The job's AutoTVM record, its target naming the core of its kind's boards (cores_).
  absl::StatusOr<std::string> Record(const v1::Job& job);
  absl::Status RunRecheck(const std::vector<TunePoint>& first);
  std::string RequestIdPrefix() const { return client_.empty() ? run_name_ : client_; }

  const TrackerClient& tracker_;
  const catalog::KnobSpace& knobs_;
  const v1::Operator& op_;
  const TuneOptions& options_;
  std::ostream& out_;
  std::ostream& progress_;
  const std::string run_name_;
  const std::string client_;
  const std::string run_key_;
  const int budget_;
  const int64_t default_index_;
  const int round_;  // configs per image round (max_flashes), 0 without rounds
  TuneState state_;
  Searcher searcher_;
  int flashed_ = 0, finished_now_ = 0;        // trials of this run whose board was flashed for them
  std::map<std::string, int> board_flashes_;  // of this run's trials, by board
  std::vector<TunePoint> ranked_;             // the measured configs by cost (PrintBest)
  // The core of each board kind, for the records' targets: fetched from the tracker (ListBoards)
  // when the first record is written, and again when a record's kind is not among them yet.
  std::optional<BoardCores> cores_;
  std::set<std::string> coreless_;  // kinds said to have no registered board
};

absl::StatusOr<std::string> TuneRun::Record(const v1::Job& job) {
  const std::string& kind = job.trial().board_kind();
  if (!cores_ || (cores_->count(kind) == 0 && coreless_.count(kind) == 0)) {
    ASSIGN_OR_RETURN(cores_, FetchBoardCores(tracker_));
  }
  auto core = cores_->find(kind);
  if (core == cores_->end()) {
    // A finished job's board is registered (the tracker keeps its boards), so this is rare: a
    // job finished before its board's registration was stored, say. Said once.
    if (coreless_.insert(kind).second) {
      progress_ << "tune: no board of kind " << kind
                << " is registered, so its core is not known: its AutoTVM records' target is \""
                << AutoTvmTarget(kind, "") << "\"\n";
    }
    return FormatAutoTvmRecord(job, knobs_, "");
  }
  return FormatAutoTvmRecord(job, knobs_, core->second);
}

absl::Status TuneRun::LoadState() {
  ASSIGN_OR_RETURN(std::vector<TransferSet> prior, LoadTransfer(op_, options_, progress_));
  searcher_.set_prior(std::move(prior));
  state_.set_log_path(absl::StrCat(options_.out_dir, "/", options_.op, ".autotvm.log"));
  ASSIGN_OR_RETURN(std::string set_aside, state_.Load());
  if (!set_aside.empty()) {
    progress_ << "tune: " << state_.StatePath() << " was of another run (other shapes, options or "
              << "operator version); kept as " << set_aside << ", measuring afresh\n";
  }
  if (!state_.points().empty() || !state_.pending().empty()) {
    progress_ << "tune: resuming from " << state_.StatePath() << " (" << state_.points().size()
              << " measured, " << state_.pending().size() << " pending)\n";
  }
  return absl::OkStatus();
}

// The progress line: a bar of the trials done and the best cost so far.
void TuneRun::Draw(bool final) {
  double best = kInf;
  for (const TunePoint& p : state_.points()) best = std::min(best, p.cost);
  const int done = static_cast<int>(state_.points().size());
  const int width = 30;
  const int filled = budget_ > 0 ? width * std::min(done, budget_) / budget_ : width;
  std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
  const TunePoint* best_point = nullptr;
  for (const TunePoint& p : state_.points()) {
    if (std::isfinite(p.cost) && p.cost == best) best_point = &p;
  }
  std::string line = absl::StrFormat("[%s] %d/%d trials, best %s", bar, done, budget_,
                                     best_point != nullptr ? PointCostText(*best_point) : "-");
  if (options_.tty) {
    progress_ << "\r" << line << (final ? "\n" : "") << std::flush;
  } else if (!final) {
    progress_ << line << "\n" << std::flush;
  }
}

// The trials of the request: the template with each config's knobs; in image rounds each names
// the round's configs.
v1::SubmitTrialsRequest TuneRun::Request(const v1::Trial& trial_template,
                                         const std::vector<int64_t>& indexes) const {
  const std::vector<std::string> round =
      round_ > 0 ? PoolConfigs(op_.spec(), indexes) : std::vector<std::string>();
  v1::SubmitTrialsRequest req;
  req.set_client_id(client_);
  for (int64_t index : indexes) {
    v1::Trial* t = req.add_trials();
    *t = trial_template;
    for (const auto& [k, v] : catalog::KnobsOfIndex(op_.spec(), index)) {
      (*t->mutable_op()->mutable_template_op()->mutable_knobs())[k] = v;
    }
    for (const std::string& config : round) {
      t->mutable_op()->mutable_template_op()->add_image_pool(config);
    }
  }
  return req;
}

absl::Status TuneRun::Submit(const v1::SubmitTrialsRequest& req, absl::string_view what,
                             v1::SubmitTrialsResponse* resp) const {
  grpc::Status s = CallTracker(tracker_, [&](grpc::ClientContext* context) {
    return tracker_.stub->SubmitTrials(context, req, resp);
  });
  if (!s.ok()) return FromGrpc(s, tracker_, what);
  return absl::OkStatus();
}

// Polls the jobs `pending()` lists until none is left, handing each finished one to `record`
// (which takes it off the list) and calling `recorded` after a poll that recorded any.
// DeadlineExceeded "<late_prefix>N trials not finished after <batch_timeout><late_suffix>".
absl::Status TuneRun::WaitFor(const std::function<const std::map<int64_t, std::string>&()>& pending,
                              const std::function<absl::Status(int64_t, const v1::Job&)>& record,
                              absl::string_view late_prefix, absl::string_view late_suffix,
                              const std::function<void()>& recorded) {
  const absl::Time deadline = absl::Now() + options_.batch_timeout;
  while (!pending().empty()) {
    const std::map<int64_t, std::string> polled = pending();
    bool any = false;
    for (const auto& [index, job_id] : polled) {
      ASSIGN_OR_RETURN(std::optional<v1::Job> finished, FinishedJob(tracker_, job_id));
      if (!finished) continue;
      RETURN_IF_ERROR(record(index, *finished));
      any = true;
    }
    if (any && recorded) recorded();
    if (pending().empty()) break;
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(late_prefix, pending().size(), " trials not finished after ",
                       absl::FormatDuration(options_.batch_timeout), late_suffix));
    }
    absl::SleepFor(options_.poll);
  }
  return absl::OkStatus();
}

// Waits for the pending jobs, recording each as it finishes.
absl::Status TuneRun::WaitPending() {
  return WaitFor([&]() -> const std::map<int64_t, std::string>& { return state_.pending(); },
                 [&](int64_t index, const v1::Job& job) {
                   ASSIGN_OR_RETURN(const std::string record, Record(job));
                   RETURN_IF_ERROR(state_.AddDone(PointOf(index, job), record));
                   finished_now_++;
                   if (job.result().stages().flash_s() > 0) {
                     flashed_++;
                     board_flashes_[job.result().board_id()]++;
                   }
                   return absl::OkStatus();
                 },
                 "", absl::StrCat(" (is an agent serving kind ", options_.kind, "?)"),
                 [&] { Draw(false); });
}

// The next batch (an image round with max_flashes): the default config first while it is
// unmeasured, then the searcher's picks.
std::vector<int64_t> TuneRun::NextBatch() {
  const int n = std::min<int>(round_ > 0 ? round_ : options_.batch,
                              budget_ - static_cast<int>(state_.points().size()));
  std::vector<int64_t> batch;
  if (default_index_ >= 0 && !state_.Known(default_index_)) {
    batch.push_back(default_index_);
    state_.Reserve(default_index_);  // e.g. grid order would pick it again when it is index 0
  }
  for (int64_t i : searcher_.Next(n - static_cast<int>(batch.size()), state_)) batch.push_back(i);
  state_.ClearReserved();
  return batch;
}

// Batches submitted and collected until the budget is measured or the space exhausted.
absl::Status TuneRun::Search() {
  RETURN_IF_ERROR(WaitPending());
  while (static_cast<int>(state_.points().size()) < budget_) {
    const std::vector<int64_t> batch = NextBatch();
    if (batch.empty()) break;  // the space is exhausted
    v1::SubmitTrialsRequest req = Request(TrialTemplate(op_, options_), batch);
    // Derived from the trials themselves and the output directory (the run key): a resumed run
    // resubmits nothing new, another run with other shapes or options never gets stale jobs.
    req.set_request_id(absl::StrCat(RequestIdPrefix(), "-", TrialsHash(run_key_, req)));
    v1::SubmitTrialsResponse resp;
    RETURN_IF_ERROR(Submit(req, "SubmitTrials", &resp));
    for (int i = 0; i < resp.job_ids_size() && i < static_cast<int>(batch.size()); ++i) {
      RETURN_IF_ERROR(state_.AddPending(batch[i], resp.job_ids(i)));
    }
    RETURN_IF_ERROR(WaitPending());
  }
  Draw(true);
  return absl::OkStatus();
}

// The best configs and their speed-up over the default.
void TuneRun::PrintBest() {
  ranked_ = state_.points();
  std::stable_sort(ranked_.begin(), ranked_.end(),
                   [](const TunePoint& a, const TunePoint& b) { return a.cost < b.cost; });
  double default_cost = kInf;
  int failed = 0;
  for (const TunePoint& p : state_.points()) {
    if (p.index == default_index_) default_cost = p.cost;
    failed += !std::isfinite(p.cost);
  }
  out_ << "best configurations of " << options_.op << " on " << options_.kind << " ("
       << state_.points().size() << " trials, " << failed << " failed, strategy "
       << options_.strategy << "):\n";
  // The cost column: the median and its interval (stats::CostText), UNSTABLE, cycles.
  size_t cost_width = std::string("median +- 95% interval").size();
  for (const TunePoint& p : ranked_) cost_width = std::max(cost_width, PointCostText(p).size());
  std::string header =
      absl::StrFormat("%7s  %-*s %9s", "rank", cost_width, "median +- 95% interval", "speedup");
  for (const v1::Knob& k : op_.spec().knobs()) absl::StrAppendFormat(&header, " %8s", k.name());
  out_ << header << "\n";
  auto row = [&](const std::string& label, const TunePoint& p) {
    std::string speedup = std::isfinite(p.cost) && std::isfinite(default_cost)
                              ? absl::StrFormat("%.2fx", default_cost / p.cost)
                              : "-";
    std::string line =
        absl::StrFormat("%7s  %-*s %9s", label, cost_width, PointCostText(p), speedup);
    std::map<std::string, std::string> values = catalog::KnobsOfIndex(op_.spec(), p.index);
    for (const v1::Knob& k : op_.spec().knobs())
      absl::StrAppendFormat(&line, " %8s", values[k.name()]);
    out_ << line << "\n";
  };
  for (size_t i = 0; i < ranked_.size() && i < 5; ++i) {
    if (!std::isfinite(ranked_[i].cost)) break;
    row(absl::StrCat(i + 1), ranked_[i]);
  }
  for (const TunePoint& p : state_.points()) {
    if (p.index == default_index_) row("default", p);
  }
  // The failed configs, each with its error and the first line of its message.
  int listed = 0;
  for (const TunePoint& p : state_.points()) {
    if (std::isfinite(p.cost)) continue;
    if (listed == 0) out_ << "failed:\n";
    if (++listed > 10) continue;
    std::map<std::string, std::string> values = catalog::KnobsOfIndex(op_.spec(), p.index);
    std::vector<std::string> knobs;
    for (const v1::Knob& k : op_.spec().knobs()) {
      knobs.push_back(absl::StrCat(k.name(), "=", values[k.name()]));
    }
    out_ << "  " << absl::StrJoin(knobs, " ") << ": " << v1::ErrorCode_Name(p.error)
         << (p.message.empty() ? "" : ": ") << p.message << "\n";
  }
  if (listed > 10) {
    out_ << "  ... and " << listed - 10 << " more (farmctl results, farmctl logs JOB)\n";
  }
  int unstable = 0;
  for (size_t i = 0; i < ranked_.size() && i < 5; ++i) unstable += ranked_[i].stats.unstable();
  if (unstable > 0) {
    out_ << unstable << " of the best " << std::min<size_t>(ranked_.size(), 5)
         << " are UNSTABLE: their interval is wider than the tracker's threshold; measure again "
            "(--target, --recheck) before trusting their order\n";
  }
}

// The top K (by median) measured again in one submission, adaptive (--recheck K).
absl::Status TuneRun::Recheck() {
  if (options_.recheck <= 0) return absl::OkStatus();
  std::vector<TunePoint> first;
  for (const TunePoint& p : ranked_) {
    if (std::isfinite(p.cost) && static_cast<int>(first.size()) < options_.recheck)
      first.push_back(p);
  }
  if (first.size() < 2) {
    out_ << "recheck: needs at least 2 measured configs, the run has " << first.size() << "\n";
    return absl::OkStatus();
  }
  return RunRecheck(first);
}

absl::Status TuneRun::RunRecheck(const std::vector<TunePoint>& first) {
  v1::Trial trial_template = TrialTemplate(op_, options_);
  *trial_template.mutable_measure() = RecheckMeasure(options_);
  if (!options_.confirm.empty()) trial_template.set_board_kind(options_.confirm);
  std::vector<int64_t> indexes;
  for (const TunePoint& p : first) indexes.push_back(p.index);
  v1::SubmitTrialsRequest req = Request(trial_template, indexes);
  // Its own request id ("recheck" in the material): never the first measurement's jobs,
  // even when the trials are the same (an adaptive run); the same recheck resumes.
  const std::string key = TrialsHash(absl::StrCat("recheck\n", run_key_), req);
  req.set_request_id(absl::StrCat(RequestIdPrefix(), "-recheck-", key));
  if (state_.recheck(key).done.size() + state_.recheck(key).pending.size() < first.size()) {
    v1::SubmitTrialsResponse resp;
    RETURN_IF_ERROR(Submit(req, "SubmitTrials (recheck)", &resp));
    for (int i = 0; i < resp.job_ids_size() && i < static_cast<int>(first.size()); ++i) {
      if (state_.recheck(key).done.count(first[i].index) > 0) continue;
      RETURN_IF_ERROR(state_.AddRecheckPending(key, first[i].index, resp.job_ids(i)));
    }
  }
  out_ << RecheckHeading(first.size(), trial_template.measure(), options_.kind, options_.confirm)
       << std::flush;
  RETURN_IF_ERROR(WaitFor(
      [&]() -> const std::map<int64_t, std::string>& { return state_.recheck(key).pending; },
      [&](int64_t index, const v1::Job& job) {
        ASSIGN_OR_RETURN(const std::string record, Record(job));
        return state_.AddRecheckDone(key, PointOf(index, job), record);
      },
      "recheck: ", "", nullptr));
  std::vector<TunePoint> second;
  for (const TunePoint& p : first) {
    auto it = state_.recheck(key).done.find(p.index);
    TunePoint missing;
    missing.index = p.index;
    missing.cost = kInf;
    missing.error = v1::CANCELLED;
    second.push_back(it != state_.recheck(key).done.end() ? it->second : missing);
  }
  PrintRecheck(op_, first, second, options_.kind, options_.confirm, out_);
  return absl::OkStatus();
}

// The plot, the flashes of this run, a newer version's note and where the files are.
absl::Status TuneRun::Finish() {
  const std::string plot = options_.out_dir + "/tune-plot.svg";
  {
    std::ofstream svg(plot, std::ios::trunc);
    svg << PlotSvg(absl::StrCat(options_.op, " on ", options_.kind, ": best cost so far"),
                   state_.points());
    if (!svg.flush()) return absl::InternalError(absl::StrCat("cannot write ", plot));
  }
  if (finished_now_ > 0) {
    out_ << absl::StrFormat("flashes: %d for the %d trials of this run (%.2f per trial)\n",
                            flashed_, finished_now_, static_cast<double>(flashed_) / finished_now_);
  }
  if (round_ > 0) {
    int most = 0;
    for (const auto& [board, n] : board_flashes_) most = std::max(most, n);
    const int rounds = (static_cast<int>(state_.points().size()) + round_ - 1) / round_;
    out_ << absl::StrFormat(
        "image rounds: %d of %d configs (--max-flashes %d); most flashes on one "
        "board: %d",
        rounds, round_, options_.max_flashes, most);
    if (most > options_.max_flashes) {
      out_ << absl::StrFormat(
          " — more than --max-flashes: that board's images hold fewer than a round's %d "
          "candidates (its image_candidates), so it flashed each batch",
          round_);
    }
    out_ << "\n";
  }
  out_ << NewerVersionNote(tracker_, op_);
  out_ << "AutoTVM log: " << state_.LogPath() << "\nplot: " << plot << "\n";
  return absl::OkStatus();
}

}  // namespace

absl::Status Tune(const TrackerClient& tracker, const catalog::KnobSpace& knobs,
                  const TuneOptions& options, std::ostream& out, std::ostream& progress) {
  ASSIGN_OR_RETURN(const v1::Operator* op, CheckOptions(knobs, options));
  TuneRun run(tracker, knobs, *op, options, out, progress);
  RETURN_IF_ERROR(run.LoadState());
  RETURN_IF_ERROR(run.Search());
  run.PrintBest();
  RETURN_IF_ERROR(run.Recheck());
  return run.Finish();
}

absl::Status ImportLog(const v1::Operator& op, const TuneOptions& options, absl::string_view cpu,
                       const std::string& log_path, std::ostream& out) {
  if (options.out_dir.empty()) return absl::InvalidArgumentError("--out: required");
  std::ifstream in(log_path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", log_path));
  mkdir(options.out_dir.c_str(), 0755);
  TuneState state(options.out_dir, RunKey(op, options));
  state.set_log_path(absl::StrCat(options.out_dir, "/", options.op, ".autotvm.log"));
  ASSIGN_OR_RETURN(std::string set_aside, state.Load());
  if (!set_aside.empty()) {
    out << "import-log: " << state.StatePath() << " was of another run; kept as " << set_aside
        << "\n";
  }
  ASSIGN_OR_RETURN(const google::protobuf::Value want_input, RunInput(op, options, cpu));
  int imported = 0, known = 0, other_run = 0, malformed = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    TunePoint p;
    const LogLine kind = ParseLogLine(line, op.spec(), want_input, &p);
    malformed += kind == LogLine::kMalformed;
    other_run += kind == LogLine::kOtherRun;
    if (kind != LogLine::kPoint) continue;
    if (state.Known(p.index)) {
      ++known;
      continue;
    }
    RETURN_IF_ERROR(state.AddDone(p, line));
    ++imported;
  }
  out << "import-log: " << imported << " records of " << options.op << "@" << op.version() << " on "
      << options.kind << " restored into " << state.StatePath();
  if (known > 0) out << "; " << known << " already there";
  if (other_run > 0)
    out << "; " << other_run << " of another operator, version, kind, core or shapes skipped";
  if (malformed > 0) out << "; " << malformed << " unreadable lines skipped";
  out << "\n";
  return absl::OkStatus();
}

}  // namespace benchfarm::farmctl
