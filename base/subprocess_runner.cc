#include "base/subprocess_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

extern char** environ;

namespace bm {
namespace {

std::atomic<pid_t> g_child_group{0};

void ForwardSignal(int sig) {
  pid_t group = g_child_group.load();
  if (group > 0) ::kill(-group, sig);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

std::vector<std::string> MergedEnvironment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    std::string key(entry.substr(0, eq));
    if (!extra.count(key)) env.emplace_back(entry);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Result<CommandResult> SubprocessRunner::Run(const Command& cmd) {
  if (cmd.argv.empty()) return Errorf(ErrorCode::kInvalidArgument, "empty command");
  int log_fd = -1;
  if (!cmd.log_path.empty()) {
    log_fd = ::open(cmd.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0)
      return Errorf(ErrorCode::kIo, "opening log {}: {}", cmd.log_path, std::strerror(errno));
  }
  bool tee = log_fd >= 0 && cmd.echo_to_terminal;
  int out_pipe[2] = {-1, -1};
  if (tee && ::pipe2(out_pipe, O_CLOEXEC) != 0)
    return Errorf(ErrorCode::kIo, "pipe: {}", std::strerror(errno));
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0)
    return Errorf(ErrorCode::kIo, "pipe: {}", std::strerror(errno));

  std::vector<std::string> env = MergedEnvironment(cmd.env);
  std::vector<char*> envp, argv;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = cmd.argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) return Errorf(ErrorCode::kIo, "fork: {}", std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    int out = tee ? out_pipe[1] : log_fd;
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    if (!cmd.cwd.empty() && ::chdir(cmd.cwd.c_str()) != 0) {
      int e = errno;
      (void)!::write(err_pipe[1], &e, sizeof e);
      ::_exit(127);
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    int e = errno;
    (void)!::write(err_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  g_child_group.store(pid);
  struct sigaction sa {
  }, old_int{}, old_term{};
  sa.sa_handler = ForwardSignal;
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);

  ::close(err_pipe[1]);
  if (tee) ::close(out_pipe[1]);
  int exec_errno = 0;
  ssize_t got = ::read(err_pipe[0], &exec_errno, sizeof exec_errno);
  ::close(err_pipe[0]);

  auto start = std::chrono::steady_clock::now();
  bool timed_out = false, killed = false;
  int wstatus = 0;
  char buf[65536];
  if (!tee && !cmd.timeout_seconds) {
    while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
  }
  bool polling = tee || cmd.timeout_seconds.has_value();
  while (polling) {
    if (tee) {
      struct pollfd p {
        out_pipe[0], POLLIN, 0
      };
      if (::poll(&p, 1, 50) > 0) {
        ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
        if (n > 0) {
          (void)!::write(log_fd, buf, static_cast<size_t>(n));
          (void)!::write(2, buf, static_cast<size_t>(n));
        }
      }
    }
    pid_t w = ::waitpid(pid, &wstatus, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (cmd.timeout_seconds && !timed_out && SecondsSince(start) > *cmd.timeout_seconds) {
      timed_out = true;
      ::kill(-pid, SIGTERM);
    }
    if (timed_out && !killed && SecondsSince(start) > *cmd.timeout_seconds + 5) {
      killed = true;
      ::kill(-pid, SIGKILL);
    }
    if (!tee) std::this_thread::sleep_for(std::chrono::milliseconds(got == 0 ? 2 : 1));
  }
  if (tee) {
    for (;;) {
      ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
      if (n <= 0) break;
      (void)!::write(log_fd, buf, static_cast<size_t>(n));
      (void)!::write(2, buf, static_cast<size_t>(n));
    }
    ::close(out_pipe[0]);
  }
  g_child_group.store(0);
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  if (log_fd >= 0) ::close(log_fd);

  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    ErrorCode code = exec_errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo;
    return Errorf(code, "cannot run '{}': {}", cmd.argv[0], std::strerror(exec_errno));
  }
  CommandResult result;
  result.timed_out = timed_out;
  if (WIFEXITED(wstatus)) result.exit_code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) result.term_signal = WTERMSIG(wstatus);
  return result;
}

}  // namespace bm
