// WireAgents: simulated agents that speak the tracker's agent protocol (TrackerAgent.Connect)
// over HTTP/2 framed by hand: one thread, epoll, one TCP connection per agent, each frame read
// and written directly, no gRPC client library. A load generator as lean as tvmgen is on TVM's
// side, so that on a small machine, where the load generator and the tracker share the CPUs, a
// side-by-side run compares the trackers rather than their load generators.
//
// Each agent registers (Register.batched_acks and batched_offers as given) and answers every
// offer at once with a result of 1 ms, as tracker_bench's SimAgent does on gRPC's client, and,
// as gRPC's client does, grants back the stream's and the connection's window after each message
// it reads (two WINDOW_UPDATE frames): the tracker reads what it reads from benchfarm's agent.
// What they leave out is what a dispatch does not need: they never decode the tracker's headers
// (HPACK: only whether a stream ended matters), compress nothing, and have no TLS, deadlines or
// retries. They keep to the tracker's flow control windows, answer SETTINGS and PING, and a
// stream or connection the tracker ends (trailers, RST_STREAM, GOAWAY, EOF), or a setting out of
// range, fails the run, said in Board::failure.

#ifndef BENCHFARM_BENCHMARKS_WIRE_AGENTS_H_
#define BENCHFARM_BENCHMARKS_WIRE_AGENTS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "benchmarks/sim_board.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::bench {

class WireAgents {
 public:
  struct Options {
    bool batched_acks = true;    // Register.batched_acks
    bool batched_offers = true;  // Register.batched_offers (and results answered together)
  };

  WireAgents(Board* board, Options options);
  ~WireAgents();  // Stop()
  WireAgents(const WireAgents&) = delete;
  WireAgents& operator=(const WireAgents&) = delete;

  // Connects agents "agent-0" ... of `boards` boards each (kind "host") to `address`
  // (HOST:PORT, IPv4), one connection each, sends their registrations and starts the thread
  // that serves them. The board counts them registered as the tracker answers. Once only.
  absl::Status Start(const std::string& address, int agents, int boards);
  // Paused, offers are held unanswered (their boards stay busy); Resume answers them.
  void Pause();
  void Resume();
  // How many of the agents' boards have been offered work.
  int64_t BoardsOffered() const { return boards_offered_.load(); }
  // Closes every connection and ends the thread.
  void Stop();

 private:
  struct Conn;

  void Loop();
  void Read(Conn& c);
  bool TakeFrames(Conn& c);
  bool Frame(Conn& c, uint8_t type, uint8_t flags, uint32_t stream, const char* payload,
             size_t length);
  int TakeMessages(Conn& c);  // the messages taken, or -1 once failed
  void Handle(Conn& c);
  void Answer(Conn& c, const std::vector<std::pair<std::string, int32_t>>& offers);
  void SendMessage(Conn& c);
  void MoveToWire(Conn& c);
  void Flush(Conn& c);
  void WantOut(Conn& c, bool want);  // EPOLLOUT armed or not
  void Fail(Conn& c, const std::string& why);

  Board* const board_;
  const Options options_;
  int boards_ = 0;  // per agent
  int epoll_ = -1;
  int wake_ = -1;  // eventfd: Resume and Stop
  std::vector<std::unique_ptr<Conn>> conns_;
  std::atomic<bool> paused_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> boards_offered_{0};
  v1::TrackerMessage in_;  // the message being handled (the thread's)
  v1::AgentMessage out_;   // the message being sent (the thread's; Start's before it runs)
  std::thread thread_;
};

}  // namespace benchfarm::bench

#endif  // BENCHFARM_BENCHMARKS_WIRE_AGENTS_H_
