// What tests share for loopback networking: a free port, and raw HTTP against 127.0.0.1 — a
// GET, stalled connections (idle, or half a request), and the exposition parsed into samples.
#ifndef BENCHFARM_TESTS_HTTP_PROBE_H_
#define BENCHFARM_TESTS_HTTP_PROBE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace benchfarm::testing {

// A port on 127.0.0.1 that nothing listens on right now. Internal naming the failure if the
// kernel gives none.
absl::StatusOr<int> FreePort();

// A TCP connection to 127.0.0.1:port (-1 on failure) with send/receive timeouts.
int Connect(int port, absl::Duration timeout = absl::Seconds(10));
bool SendAll(int fd, const std::string& data);
// Sends `request` as it is on a new connection; the whole response ("" if none within 10 s).
std::string Exchange(int port, const std::string& request);
// GET path; the whole response ("" if none within 10 s).
std::string HttpGet(int port, const std::string& path);
// Everything fd's peer sends until it closes, or until the fd's receive timeout or an error.
std::string ReadAll(int fd);
// Scrapes /metrics `scrapes` times, one after another; expects each to answer 200 within
// `limit` (measured: the fixed server answers at once, a blocked one after seconds).
void ExpectScrapesAnswerWithin(int port, int scrapes, absl::Duration limit);
// Opens `idle` + `slow` stalled connections (OpenStalledConnections), expects 4 scrapes in a row
// to answer within 2 s each while they are open, and closes them.
void ExpectScrapesAnswerWhileStalled(int port, int idle, int slow);
// Opens `idle` connections that never send a byte and `slow` ones that send half a request.
std::vector<int> OpenStalledConnections(int port, int idle, int slow);
void CloseAll(const std::vector<int>& fds);
// Prometheus text format -> {"name{labels}": value}.
std::map<std::string, double> ParseSamples(const std::string& response);
bool IsOk(const std::string& response);

}  // namespace benchfarm::testing

#endif  // BENCHFARM_TESTS_HTTP_PROBE_H_
