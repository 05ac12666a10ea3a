// Sandbox: the one way benchfarm runs code it did not write — a trial's C code while it is
// compiled (the agent's image builds), and the images built from it while they run (host-process
// boards, QEMU) — with Debian's bubblewrap (`bwrap`, `apt install bubblewrap`).
//
// MakeSandboxCommand() turns a command into the command line that runs it sandboxed:
//
//   env -i                                 (bwrap starts with an empty environment: its init,
//                                          pid 1 in the sandbox, shows nothing of this process's)
//   bwrap --die-with-parent --unshare-pid --unshare-net --unshare-ipc --unshare-uts
//         --unshare-cgroup-try
//         [--unshare-user --uid 65534 --gid 65534 [--disable-userns]]   (user-namespace mode;
//                                                     --disable-userns unless /proc/sys is
//                                                     read-only, as under systemd hardening)
//         [--new-session]
//         --clearenv --setenv PATH /usr/local/bin:/usr/bin:/bin --setenv HOME /tmp
//         --setenv TMPDIR /tmp [--setenv NAME VALUE ...]
//         --ro-bind /usr /usr  --symlink usr/bin /bin ... (or --ro-bind for real /bin, /lib*)
//         --dir /etc --ro-bind-try /etc/alternatives /etc/alternatives  (and ld.so.cache,
//         ld.so.conf, ld.so.conf.d: what the compiler and the dynamic loader need, nothing else
//         of /etc)
//         --proc /proc --dev /dev                     (a private /dev/pts: the sandbox's own ptys;
//                                                     --dir /proc where the host refuses a fresh
//                                                     proc mount: see CheckSandbox)
//         --perms 1777 --size N --tmpfs /tmp          (or --dir /tmp, or a bind on /tmp)
//         --ro-bind SRC DST | --bind SRC DST ...      (the binds asked for, parents first)
//         --remount-ro /dev  --remount-ro /  --chdir DIR
//         -- env --default-signal
//            prlimit --core=0:0 --nproc=N:N --nofile=N:N [--as=N:N] [--cpu=S:S+1] [--fsize=N:N]
//            [setpriv --reuid U --regid U --clear-groups --inh-caps=-all --bounding-set=-all
//                     --no-new-privs]                                 (root mode)
//            -- COMMAND...
//
// So the command sees a read-only system (/usr and the /bin, /lib* links), a minimal /etc, no
// network (its own empty network namespace with loopback only), its own PID namespace (it cannot
// see or signal anything outside; when bwrap ends, the namespace's init dies and the kernel kills
// everything left in it — daemons that called setsid() included), no file of the host but the
// binds it was given, write access only to the writable binds and a private /tmp, resource
// limits, no core dumps, and an unprivileged user:
//   - root mode (this process is uid 0 and its user namespace maps other uids — a real root, as
//     the agent under systemd or CI): bwrap runs as root without a user namespace, and setpriv
//     drops the command to a fresh uid/gid of its own (0x70000000 + a random 24-bit number, never
//     a real account), with no capabilities and no_new_privs. Each sandbox then has its own uid:
//     sandboxes cannot signal or read one another, and RLIMIT_NPROC counts only its processes.
//     Writable binds are chowned to that uid first.
//   - user-namespace mode (anyone else, e.g. a developer's own account): bwrap makes a user
//     namespace in which the command is uid 65534, mapped to this process's uid outside.
//     RLIMIT_NPROC counts per user namespace, so again per sandbox — except when this process is
//     uid 0 in a user namespace that maps no other uid (a rootless container, Bazel's
//     linux-sandbox when run as root): the kernel exempts uid 0 from RLIMIT_NPROC, so there the
//     number of processes is not bounded (bounds_processes is false); everything else holds.
//
// Limits are set inside (prlimit), after bwrap has made its namespaces, so that the process limit
// bounds the sandbox and not bwrap's own set-up. `env --default-signal` undoes the ignored
// SIGTERM/SIGINT/SIGHUP of a Subprocess started with `launcher` (subprocess.h), so the command
// gets a group's SIGTERM while bwrap outlives it and exits as the command did: exit code N, or
// 128+N when killed by signal N (Subprocess::launcher reports that as the signal).
//
// The sandbox dies with this process, kill -9 included: bwrap is a Subprocess (subprocess.h), so it
// gets SIGKILL when this process ends (and Subprocess forks it from a thread that lives as long as
// the process, so the thread that asked may end first); --die-with-parent passes that on to the
// sandbox's init, and the init's end ends everything in the sandbox's PID namespace. One gap
// remains, in bwrap: its init sets its own PR_SET_PDEATHSIG only once it has built the sandbox
// (about 10 ms after the start), so a sandbox whose starter is killed within those milliseconds
// lives on, orphaned. Subprocess's records (RecordChildrenIn) name its session, and
// process/leftovers.h ends it when the starter (the agent) starts again.
//
// Thread-safety: every function may be called from any thread.

#ifndef BENCHFARM_PROCESS_SANDBOX_H_
#define BENCHFARM_PROCESS_SANDBOX_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "process/subprocess.h"

namespace benchfarm::process {

// A host file or directory made visible in the sandbox.
struct SandboxBind {
  std::string source;     // host path (relative: to this process's working directory)
  std::string target;     // absolute path inside the sandbox
  bool writable = false;  // read-only unless set
};

// Resource limits of every process in the sandbox (soft = hard, but CPU: the soft limit sends
// SIGXCPU, the hard one a second later SIGKILL). 0 = no limit of that kind. Core dumps are always
// off.
struct SandboxLimits {
  uint64_t max_processes = 64;           // RLIMIT_NPROC: processes and threads of the sandbox
  uint64_t max_cpu_seconds = 0;          // RLIMIT_CPU, per process
  uint64_t max_address_space_bytes = 0;  // RLIMIT_AS, per process
  uint64_t max_open_files = 256;         // RLIMIT_NOFILE
  uint64_t max_file_size_bytes = 0;      // RLIMIT_FSIZE (SIGXFSZ beyond it)
};

struct SandboxOptions {
  std::vector<SandboxBind> binds;
  // Inside; default "/".
  std::string working_dir;
  // > 0: a private tmpfs of at most this many bytes at /tmp (mode 1777). 0: /tmp is a read-only
  // empty directory unless a bind puts something there.
  uint64_t tmpfs_bytes = 0;
  // bwrap --new-session: the command leads its own session (no controlling terminal). For
  // commands started without Subprocess's new_session (RunCommand); it takes the command out of
  // the process group, so group signals then reach only bwrap (which takes the sandbox down).
  bool new_session = false;
  // Environment variables besides PATH, HOME=/tmp and TMPDIR=/tmp (the command gets no other).
  std::vector<std::pair<std::string, std::string>> env;
  SandboxLimits limits;
};

struct SandboxCommand {
  std::vector<std::string> argv;
  // Who the command runs as outside the sandbox (the owner of what it writes).
  uid_t uid = 0;
  gid_t gid = 0;
  bool root_mode = false;
  // Whether max_processes is enforced (see the file comment).
  bool bounds_processes = true;
  // Whether the sandbox has a /proc (of its own PID namespace); else /proc is empty.
  bool has_proc = true;
};

// The command line that runs `command` (argv[0] a path inside the sandbox) in the sandbox
// `options` describes. In root mode it chowns the writable binds (recursively) to the sandbox's
// uid. Errors: FailedPrecondition when bwrap or the tools it runs inside (env, prlimit, setpriv)
// are missing — the message says `apt install bubblewrap`; InvalidArgument for a bind target
// that is not an absolute path, or an empty command; Internal when a chown fails.
absl::StatusOr<SandboxCommand> MakeSandboxCommand(const SandboxOptions& options,
                                                  const std::vector<std::string>& command);

// `options` with argv replaced by the sandboxed command line for `sandbox` and options.argv, in
// a new session, as a launcher (subprocess.h): Signal() reaches the command, and its death by a
// signal is reported as such. For sandboxed processes that run for a while (boards, QEMU).
absl::StatusOr<SubprocessOptions> SandboxedSubprocess(const SandboxOptions& sandbox,
                                                      SubprocessOptions options);

// The host path through which `inside` (an absolute path inside the sandbox) is reached while the
// sandbox whose bwrap has pid `launcher` runs: /proc/<its init>/root<inside>. E.g. the pty a
// sandboxed board or QEMU opened on the sandbox's own /dev/pts. NotFound when the sandbox is not
// (or no longer) there.
absl::StatusOr<std::string> PathIntoSandbox(pid_t launcher, absl::string_view inside);

// What runs in the sandbox whose bwrap has pid `launcher`, seen from here (/proc/PID/task/*/
// children, from the sandbox's init down): `strays` are the host pids of every live process but
// the init and the command it started (the sandbox's pid 2) — what the command left running:
// its children, daemons that called setsid() (the init adopts them), theirs; `command_threads`
// is how many threads the command runs (0 if it has ended). NotFound when the sandbox is not (or
// no longer) there.
struct SandboxProcesses {
  std::vector<pid_t> strays;
  int command_threads = 0;
};
absl::StatusOr<SandboxProcesses> ListSandboxProcesses(pid_t launcher);

// SIGKILLs the sandbox's strays (ListSandboxProcesses) until none is left: a process that forks
// while it is being killed is found at the next look (at most 100 looks). Returns how many
// processes it killed, and the sandbox as it was left. NotFound as ListSandboxProcesses.
struct KilledStrays {
  int killed = 0;
  SandboxProcesses left;
};
absl::StatusOr<KilledStrays> KillSandboxStrays(pid_t launcher);

// Gives `path` and everything under it (symbolic links themselves, not followed) to uid/gid —
// e.g. back to this process after a sandbox had it. Internal on failure.
absl::Status ChownTree(const std::string& path, uid_t uid, gid_t gid);

// bwrap's path: the first `bwrap` in `path_env` (a $PATH value; empty: this process's $PATH).
// FailedPrecondition naming `apt install bubblewrap` when there is none.
absl::StatusOr<std::string> FindBwrap(absl::string_view path_env = "");

// Checks that user code can be sandboxed here: bwrap is installed, and a sandbox actually starts
// (runs /bin/true within 20 s) — user namespaces may be disabled, or a container may forbid
// what bwrap needs. FailedPrecondition saying what to do otherwise. The agent calls this at
// start: it never runs user code unsandboxed. Where a fresh /proc cannot be mounted (a service
// hardened with systemd's ProtectKernelTunables, which overmounts parts of /proc: the kernel then
// refuses a new proc mount in a user namespace), later sandboxes of this process get an empty
// /proc instead (SandboxHasProc() turns false).
absl::Status CheckSandbox();

// Whether sandboxes get a /proc; false after CheckSandbox() found the host refuses it. Code whose
// sandboxed program reads /proc (the host-process board hashes /proc/self/exe) then tells it
// what it would have read.
bool SandboxHasProc();
void SetSandboxProcForTesting(bool fresh_proc);

// "root mode, uid per sandbox" or "user-namespace mode ..." with a note when the process count is
// not bounded, for logs.
std::string DescribeSandbox();

}  // namespace benchfarm::process

#endif  // BENCHFARM_PROCESS_SANDBOX_H_
