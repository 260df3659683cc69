#include "tests/support/slurm_cluster.h"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/support/nginx_server.h"  // FreeLoopbackPort, MakeTempDir, RemoveTree
#include "tests/support/replace_all.h"

namespace bm::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// docs/CLUSTER.md shows this text; keep the two the same.
constexpr const char* kConfTemplate =
    R"(# slurm.conf of benchmake's tests (tests/support/slurm_cluster.cc): one
# CPU-only node on loopback; no cgroups, no accounting database.
ClusterName=benchmake
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=@CTLD_PORT@
SlurmdPort=@SLURMD_PORT@
SlurmUser=@USER@
SlurmdUser=@USER@
AuthType=auth/munge
AuthInfo=socket=@DIR@/munge/run/munge.socket
CredType=cred/munge
StateSaveLocation=@DIR@/state
SlurmdSpoolDir=@DIR@/spool
SlurmctldPidFile=@DIR@/slurmctld.pid
SlurmdPidFile=@DIR@/slurmd.pid
SlurmctldLogFile=@DIR@/log/slurmctld.log
SlurmdLogFile=@DIR@/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# Tasks are tracked by process group and never confined: nothing needs cgroups.
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
# The node is what this file says, whatever the machine has.
SlurmdParameters=config_overrides
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
# A job past its time limit ends at slurmctld's next check (every 30 s), with
# no grace; SIGKILL follows SIGTERM 2 s later. Finished jobs stay in squeue
# for 300 s: what benchmake reads Slurm's verdict from.
OverTimeLimit=0
KillWait=2
MinJobAge=300
# A job in "urgent" cancels the "debug" jobs it needs room from (PREEMPTED).
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
NodeName=localhost NodeAddr=127.0.0.1 CPUs=@CPUS@ RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=30 State=UP PriorityTier=1
PartitionName=urgent Nodes=localhost MaxTime=30 State=UP PriorityTier=2
)";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Tail(const std::string& text, size_t bytes) {
  return text.size() <= bytes ? text : "[...]" + text.substr(text.size() - bytes);
}

std::string UserName() {
  if (passwd* pw = ::getpwuid(::geteuid())) return pw->pw_name;
  return "root";
}

// A daemon in the foreground, output to `log`, dying with this process.
Result<pid_t> SpawnDaemon(const std::vector<std::string>& argv, const std::string& log,
                          const std::string& conf) {
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return Errorf(ErrorCode::kIo, "fork: {}", std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    ::setsid();
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int null = ::open("/dev/null", O_RDONLY);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    if (null >= 0) ::dup2(null, 0);
    ::setenv("SLURM_CONF", conf.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

bool Exited(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == pid;
}

// SIGTERM, then SIGKILL if it is still there after `grace` seconds; reaped.
void StopDaemon(pid_t& pid, double grace) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int>(grace * 1000));
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid = -1;
}

}  // namespace

Result<std::unique_ptr<SlurmCluster>> SlurmCluster::Start(SlurmClusterOptions options) {
  for (const char* bin :
       {"/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/srun",
        "/usr/bin/sinfo", "/usr/bin/squeue", "/usr/bin/scancel"}) {
    if (::access(bin, X_OK) != 0)
      return Errorf(ErrorCode::kUnsupported,
                    "Slurm is not installed ({} is missing; scripts/bootstrap.sh test installs "
                    "slurm-wlm and munge)",
                    bin);
  }
  std::unique_ptr<SlurmCluster> cluster(new SlurmCluster());
  BM_ASSIGN_OR_RETURN(cluster->dir_, MakeTempDir("bm-slurm"));
  Status s = cluster->Launch(options);
  if (!s.ok()) return s;  // the destructor stops what started
  return cluster;
}

Status SlurmCluster::Launch(const SlurmClusterOptions& options) {
  // munged refuses a socket directory that not everyone can enter, and key and
  // state directories that others can.
  ::chmod(dir_.c_str(), 0755);
  for (const char* d :
       {"munge", "munge/run", "munge/etc", "munge/lib", "munge/log", "state", "spool", "log"})
    fs::create_directories(dir_ + "/" + d);
  for (const char* d : {"munge/etc", "munge/lib", "munge/log"})
    ::chmod((dir_ + "/" + d).c_str(), 0700);
  ::chmod((dir_ + "/munge/run").c_str(), 0755);
  const std::string key = dir_ + "/munge/etc/munge.key";
  {
    std::ifstream random("/dev/urandom", std::ios::binary);
    std::string bytes(1024, '\0');
    random.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    std::ofstream(key, std::ios::binary) << bytes;
    ::chmod(key.c_str(), 0400);
  }
  BM_ASSIGN_OR_RETURN(int ctld_port, FreeLoopbackPort());
  int slurmd_port = ctld_port;
  while (slurmd_port == ctld_port) {
    BM_ASSIGN_OR_RETURN(slurmd_port, FreeLoopbackPort());
  }
  std::string text = kConfTemplate;
  ReplaceAll(text, "@DIR@", dir_);
  ReplaceAll(text, "@CTLD_PORT@", std::to_string(ctld_port));
  ReplaceAll(text, "@SLURMD_PORT@", std::to_string(slurmd_port));
  ReplaceAll(text, "@USER@", UserName());
  ReplaceAll(text, "@CPUS@", std::to_string(options.cpus));
  conf_ = dir_ + "/slurm.conf";
  std::ofstream(conf_) << text;

  const std::string socket = dir_ + "/munge/run/munge.socket";
  BM_ASSIGN_OR_RETURN(
      munged_, SpawnDaemon({"/usr/sbin/munged", "--foreground", "--force", "--socket=" + socket,
                            "--key-file=" + key, "--pid-file=" + dir_ + "/munge/run/munged.pid",
                            "--seed-file=" + dir_ + "/munge/lib/munged.seed",
                            "--log-file=" + dir_ + "/munge/log/munged.log"},
                           dir_ + "/log/munged.out", conf_));
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!fs::exists(socket)) {
    if (Exited(munged_) || Clock::now() > deadline) {
      munged_ = -1;
      return Errorf(ErrorCode::kUnavailable, "munged did not start: {}{}",
                    Slurp(dir_ + "/log/munged.out"), Slurp(dir_ + "/munge/log/munged.log"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  BM_ASSIGN_OR_RETURN(slurmctld_, SpawnDaemon({"/usr/sbin/slurmctld", "-D", "-i", "-f", conf_},
                                              dir_ + "/log/slurmctld.out", conf_));
  BM_ASSIGN_OR_RETURN(slurmd_,
                      SpawnDaemon({"/usr/sbin/slurmd", "-D", "-N", "localhost", "-f", conf_},
                                  dir_ + "/log/slurmd.out", conf_));
  deadline = Clock::now() + std::chrono::seconds(30);
  for (;;) {
    Result<std::string> state = Shell("sinfo --noheader --format=%t 2>/dev/null");
    if (state.ok() && state->find("idle") == 0) return Status::Ok();
    for (pid_t* daemon : {&slurmctld_, &slurmd_}) {
      if (Exited(*daemon)) {
        *daemon = -1;
        return Errorf(ErrorCode::kUnavailable, "Slurm did not start: a daemon exited\n{}", Logs());
      }
    }
    if (Clock::now() > deadline)
      return Errorf(ErrorCode::kUnavailable, "Slurm's node did not come up in 30 s\n{}", Logs());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

SlurmCluster::~SlurmCluster() {
  Stop();
  if (const char* conf = std::getenv("SLURM_CONF"); conf && conf == conf_) ::unsetenv("SLURM_CONF");
  RemoveTree(dir_);
}

void SlurmCluster::Stop() {
  if (slurmctld_ > 0 && slurmd_ > 0) {
    // Every job left ends first: its processes are slurmd's to stop.
    (void)Shell("scancel --user=" + UserName() + " 2>/dev/null");
    auto deadline = Clock::now() + std::chrono::seconds(15);
    while (Clock::now() < deadline) {
      Result<std::string> left =
          Shell("squeue --noheader --states=PENDING,RUNNING,COMPLETING,CONFIGURING 2>/dev/null");
      if (left.ok() && left->empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  StopDaemon(slurmd_, 10);
  StopDaemon(slurmctld_, 10);
  StopDaemon(munged_, 5);
}

void SlurmCluster::ExportEnv() const { ::setenv("SLURM_CONF", conf_.c_str(), 1); }

Result<std::string> SlurmCluster::Shell(const std::string& shell) const {
  std::string cmd = "SLURM_CONF='" + conf_ + "' " + shell;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return Errorf(ErrorCode::kIo, "popen: {}", std::strerror(errno));
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  int status = ::pclose(pipe);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Errorf(ErrorCode::kFailed, "`{}` failed (status {}): {}", shell, status, out);
  return out;
}

std::string SlurmCluster::Logs() const {
  std::string out;
  for (const char* name : {"slurmctld.log", "slurmctld.out", "slurmd.log", "slurmd.out"}) {
    std::string text = Slurp(dir_ + "/log/" + name);
    if (!text.empty()) out += fmt::format("---- {} ----\n{}\n", name, Tail(text, 3000));
  }
  return out;
}

}  // namespace bm::testing
