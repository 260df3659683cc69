#include "engine/step.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/terminal.h"
#include "engine/executor.h"
#include "engine/generate.h"
#include "engine/out_check.h"
#include "engine/platform_cache.h"
#include "engine/staleness.h"
#include "engine/target_state.h"

namespace bm::engine {
namespace {

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// What NAME.last says about a restore; for a record just fetched from a remote,
// where and on what it was recorded (what `explain` shows).
std::string RestoredOutcome(const cache::ActionRecord& record) {
  if (record.origin.empty()) return "restored";
  const cache::Provenance& p = record.provenance;
  std::string platform =
      p.platform.empty() ? "platform-independent" : "platform " + p.platform.dump();
  return fmt::format("restored from remote {}; recorded on host {}, {}, {}", record.origin,
                     p.host.empty() ? "?" : p.host, platform, p.date);
}

class Stepper {
 public:
  Stepper(const Workspace& ws, const std::string& target, const StepOptions& options)
      : ws_(ws), fs_(*ws.fs), target_(target), options_(options) {}

  Result<StepReport> Run() {
    auto start = std::chrono::steady_clock::now();
    BM_ASSIGN_OR_RETURN(WorkspaceConfig config, LoadConfig(ws_));
    BM_ASSIGN_OR_RETURN(cache_, OpenCache(ws_, config));
    config_ = config;
    BM_ASSIGN_OR_RETURN(std::string spec_text, ReadState("spec"));
    Result<KeyMaterial> material = KeyMaterial::Parse(spec_text);
    if (!material.ok()) return Damaged("spec", material.status());
    material_ = std::move(*material);
    BM_ASSIGN_OR_RETURN(std::string params_text, ReadState("params"));
    Result<StepParams> params = ParseStepParams(params_text);
    if (!params.ok()) return Damaged("params", params.status());
    params_ = std::move(*params);
    for (const std::string& up : material_.Upstreams()) {
      BM_ASSIGN_OR_RETURN(std::optional<Digest> d, ReadOutStamp(ws_, up));
      if (!d) return UpstreamNotBuilt(up);
      material_.SetInput(up, d->Hex());
    }
    TargetFacts facts;
    facts.material = material_;
    BM_ASSIGN_OR_RETURN(facts.last, ReadLastBuild(ws_, target_));
    if (facts.last) {
      BM_ASSIGN_OR_RETURN(facts.outputs_present, OutputsPresent(ws_, target_, *facts.last));
    }
    Digest key = material_.Key();
    BM_ASSIGN_OR_RETURN(std::optional<cache::ActionRecord> record, cache_->GetAction(key));
    facts.in_cache = record.has_value();
    Staleness verdict = Assess(facts);

    StepReport report;
    report.key = key;
    if (verdict.verdict == Verdict::kUpToDate) {
      report.manifest = cache::ManifestDigest(facts.last->outputs);
    } else if (verdict.verdict == Verdict::kRestore) {
      std::vector<Digest> blobs;
      for (const cache::OutputFile& f : record->outputs) blobs.push_back(f.digest);
      cache_->Prefetch(blobs);  // remote blobs in parallel; a no-op when all are local
      Status s = Materialize(*record, RestoredOutcome(*record));
      if (s.ok()) {
        report.outcome = StepOutcome::kRestored;
        report.manifest = cache::ManifestDigest(record->outputs);
        Notice(fmt::format("restored from {}",
                           record->origin.empty() ? "cache" : "remote cache " + record->origin));
      } else if ((s.code() == ErrorCode::kCorrupt || s.code() == ErrorCode::kNotFound) &&
                 !options_.restore_only) {
        Notice(fmt::format("{}; rebuilding", s.message()));
        BM_ASSIGN_OR_RETURN(report.manifest, Execute(key));
        report.outcome = StepOutcome::kRan;
      } else {
        return s;
      }
    } else if (options_.restore_only) {
      return Errorf(ErrorCode::kNotFound, "no cache holds its key {}", key.Hex());
    } else {
      BM_ASSIGN_OR_RETURN(report.manifest, Execute(key));
      report.outcome = StepOutcome::kRan;
    }
    BM_TRY(CheckSpecUnchanged(spec_text));
    BM_TRY(WriteOutStamp(ws_, target_, report.manifest));
    report.seconds = Since(start);
    if (report.outcome == StepOutcome::kRan) Notice(fmt::format("ran in {:.2f}s", report.seconds));
    if (!options_.restore_only) BM_TRY(MeasureMore(key, report));
    return report;
  }

 private:
  // "NAME: what", the name styled when color is on.
  void Notice(const std::string& what) {
    if (!options_.console) return;
    *options_.console << Styled(target_ + ":", Style::kSuccess, options_.color) << " " << what
                      << "\n"
                      << std::flush;
  }

  // `status`, `explain` and `graph` take no lock: run beside the build after
  // an edit, they rewrite NAME.spec. NAME.out written now would be newer than
  // that .spec and ninja would take the target as built for it. Failing
  // leaves NAME.out as it was, so the next build runs the step again.
  Status CheckSpecUnchanged(const std::string& spec_text) {
    Result<std::string> now = fs_.ReadFile(ws_.TargetFile(target_, "spec"));
    if (now.ok() && *now == spec_text) return Status::Ok();
    return Errorf(ErrorCode::kFailed,
                  "{}: its definition changed while it ran (a `benchmake status`, `explain` or "
                  "`graph` regenerated the workspace); what it made for the old one is cached; "
                  "build again to bring it up to date",
                  target_);
  }

  Result<std::string> ReadState(std::string_view ext) {
    const std::string path = ws_.TargetFile(target_, ext);
    Result<std::string> text = fs_.ReadFile(path);
    if (!text.ok()) {
      if (Result<FileInfo> info = fs_.Stat(path); info.ok() && info->exists)
        return Damaged(ext, text.status());
      return Errorf(ErrorCode::kNotFound, "no state for target '{}' ({}); run `benchmake build`",
                    target_, text.status().message());
    }
    return text;
  }

  // NAME.spec or NAME.params damaged: named, and written again by the next build.
  Status Damaged(std::string_view ext, const Status& why) {
    return GeneratedFileDamaged(ws_, ws_.TargetFile(target_, ext), why).WithContext(target_);
  }

  // An input target without a stamp. Ninja ran this step because that stamp exists: one that
  // does not read as a stamp (damaged) is removed, so that the next build runs (restores) `up`.
  Status UpstreamNotBuilt(const std::string& up) {
    const std::string stamp = ws_.TargetFile(up, "out");
    Result<FileInfo> info = fs_.Stat(stamp);
    if (!info.ok() || !info->exists)
      return Errorf(ErrorCode::kFailed, "{}: input {} has not been built", target_, up);
    BM_TRY(fs_.RemoveAll(stamp));
    return Errorf(ErrorCode::kFailed,
                  "{}: input {}'s stamp {} is damaged; removed, so that the next `benchmake "
                  "build` restores {}",
                  target_, up, stamp, up);
  }

  // Links the record's outputs into out/NAME and remembers them in NAME.last.
  // `fresh_dir`: where the step that just ran left them, for a blob that a
  // `cache gc` running beside this build evicted since the step stored it.
  Status Materialize(const cache::ActionRecord& record, std::string outcome,
                     const std::string& fresh_dir = "") {
    std::string dir = ws_.OutDirOf(target_);
    // out/ changes below the generator's feet: its next check must look.
    BM_TRY(ForgetOutCheck(ws_));
    BM_TRY(fs_.RemoveAll(dir));
    BM_TRY(fs_.MakeDirs(dir));
    LastBuild last;
    last.key = record.key;
    last.material = material_;
    last.outputs = record.outputs;
    last.outcome = std::move(outcome);
    last.date = NowIso8601();
    for (const cache::OutputFile& f : record.outputs) {
      std::string dest = dir + "/" + f.path;
      BM_TRY(fs_.MakeDirs(DirName(dest)));
      Status s = cache_->Materialize(f.digest, dest, f.executable);
      if (s.code() == ErrorCode::kNotFound && !fresh_dir.empty())
        s = fs_.CopyReadOnly(fresh_dir + "/" + f.path, dest, f.executable);
      if (!s.ok()) {
        (void)fs_.RemoveAll(dir);
        (void)fs_.Remove(ws_.TargetFile(target_, "last"));
        return s;
      }
      BM_ASSIGN_OR_RETURN(FileInfo info, fs_.Stat(dest));
      last.files.push_back({f.path, info.size, info.inode});
    }
    return WriteLastBuild(ws_, target_, last);
  }

  Status CleanLeftovers(const std::string& tmp_root) {
    BM_ASSIGN_OR_RETURN(FileInfo info, fs_.Stat(tmp_root));
    if (!info.exists) return Status::Ok();
    BM_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_.ListDir(tmp_root));
    for (const std::string& n : names)
      if (n.rfind(target_ + ".", 0) == 0) BM_TRY(fs_.RemoveAll(tmp_root + "/" + n));
    return Status::Ok();
  }

  // One run of the rule in a fresh scratch dir (removed on failure).
  struct RuleRun {
    std::string scratch;  // remove when done
    std::string out_dir;  // what the rule wrote
    std::string resume_dir;
    StepResult result;
    std::string log_text;
    nlohmann::json platform;
    double seconds = 0;
  };

  // Runs the rule through the step's executor (engine/executor.h); a failure
  // the executor calls retryable (a preempted Slurm job) runs it again, up to
  // its retries, in a fresh scratch dir with the same resume dir.
  Result<RuleRun> RunRule(const Digest& key, bool remeasure) {
    const Rule* rule = ws_.rules->Find(params_.rule);
    if (!rule)
      return Errorf(ErrorCode::kInvalidArgument, "{}: unknown rule '{}'", target_, params_.rule);
    std::string resume_dir =
        fmt::format("{}/resume/{}-{}", ws_.StateDir(), target_, key.Hex().substr(0, 16));
    // A remeasurement must train from the start: never resume a checkpoint.
    if (remeasure) {
      resume_dir += ".remeasure";
      BM_TRY(fs_.RemoveAll(resume_dir));
    }
    std::unique_ptr<Executor> executor =
        MakeExecutor(ws_, params_.placement, params_.gpus, config_.gpus, options_.console);
    for (int attempt = 0;; ++attempt) {
      ExecutorVerdict verdict;
      Result<RuleRun> run = RunRuleOnce(*rule, *executor, resume_dir, attempt, &verdict);
      if (run.ok() || !verdict.retryable || attempt >= executor->retries()) return run;
      Notice(fmt::format("{}; running it again ({} of {}), from its last checkpoint", verdict.why,
                         attempt + 2, executor->retries() + 1));
      retry_note_ = fmt::format("---- benchmake: {}; running it again ({} of {}) ----\n",
                                verdict.why, attempt + 2, executor->retries() + 1);
    }
  }

  // One run of the rule in a fresh scratch dir (removed on failure). A failed
  // run's error carries what the executor knows of it (`verdict`).
  Result<RuleRun> RunRuleOnce(const Rule& rule, Executor& executor, const std::string& resume_dir,
                              int attempt, ExecutorVerdict* verdict) {
    std::string tmp_root = ws_.StateDir() + "/tmp";
    BM_TRY(CleanLeftovers(tmp_root));
    BM_ASSIGN_OR_RETURN(std::string scratch, fs_.MakeTempDir(tmp_root, target_ + "."));
    StepContext ctx;
    ctx.target = target_;
    ctx.params = params_.params;
    ctx.inputs = params_.inputs;
    ctx.workspace_dir = ws_.root;
    ctx.scratch_dir = scratch + "/work";
    ctx.out_dir = scratch + "/out";
    ctx.resume_dir = resume_dir;
    ctx.tools_dir = ws_.tools_dir;
    for (const KeyField& f : material_.fields)
      if (f.tag == "platform") ctx.platform = nlohmann::json::parse(f.value, nullptr, false);
    if (ctx.platform.is_null() || ctx.platform.is_discarded())
      ctx.platform = nlohmann::json::object();
    ctx.runner = ws_.runner;
    ctx.fs = &fs_;
    ctx.interactive = options_.interactive;
    ctx.color = options_.color;
    BM_TRY(fs_.MakeDirs(ctx.scratch_dir));
    BM_TRY(fs_.MakeDirs(ctx.out_dir));
    BM_TRY(fs_.MakeDirs(ctx.resume_dir));
    BM_TRY(fs_.MakeDirs(ws_.StateDir() + "/log"));
    ctx.log_path = ws_.LogOf(target_);
    // A rerun after a retryable failure keeps that run's log before its own.
    size_t log_start = 0;  // where this run's output begins
    if (attempt == 0)
      BM_TRY(fs_.WriteFileAtomic(ctx.log_path, "", false, /*durable=*/false));
    else
      log_start = AppendRuleLog(ctx.log_path, retry_note_).size();
    BM_TRY(executor.Prepare(ctx));

    // The rule's own messages go to the log; commands append to the same file.
    std::ostringstream rule_log;
    ctx.log = &rule_log;
    auto start = std::chrono::steady_clock::now();
    Result<StepResult> result = rule.Run(ctx);
    double seconds = Since(start);
    std::string log_text = AppendRuleLog(ctx.log_path, rule_log.str());
    if (!result.ok()) {
      *verdict = executor.Explain(
          ctx, std::string_view(log_text).substr(std::min(log_start, log_text.size())));
      if (!verdict->retryable || attempt >= executor.retries()) ShowFailure(log_text);
      (void)fs_.RemoveAll(scratch);
      Status failed = result.status();
      if (!verdict->why.empty()) failed = failed.WithContext(verdict->why);
      return failed.WithContext(target_ + " failed");
    }
    return RuleRun{scratch,  ctx.out_dir,  ctx.resume_dir, std::move(*result),
                   log_text, ctx.platform, seconds};
  }

  cache::Provenance ProvenanceOf(const RuleRun& run) {
    cache::Provenance p;
    p.host = HostName();
    p.date = NowIso8601();
    p.benchmake_version = BenchmakeVersion();
    p.platform = run.platform;
    p.duration_s = run.seconds;
    return p;
  }

  // A measured run is a probe of its own: when the trainer saw other facts
  // than the key holds (a driver updated on a Slurm node since it was probed),
  // the site's cached facts go, so the next build probes again and re-keys.
  void CheckPlatform(const RuleRun& run) {
    if (!params_.platform_dependent || !run.result.metrics.is_object()) return;
    const std::string drift =
        PlatformDrift(run.platform, run.result.metrics.value("platform", nlohmann::json()));
    if (drift.empty()) return;
    PlatformCache cache(fs_, ws_.StateDir() + "/platform_cache");
    cache.Load();
    cache.Forget(ProbeSiteOf(params_.placement, params_.gpus).Key());
    (void)cache.Save();
    Notice(
        fmt::format("the platform changed since it was probed ({}); the next build probes "
                    "it again",
                    drift));
  }

  // Runs the rule; returns the manifest digest of what it produced. Its
  // scratch dir goes whether or not the cache could store the outputs (a
  // full cache keeps no copy of them in .benchmake/tmp); its resume dir only
  // once they are stored, for a run after room was made.
  Result<Digest> Execute(const Digest& key) {
    BM_ASSIGN_OR_RETURN(RuleRun run, RunRule(key, /*remeasure=*/false));
    CheckPlatform(run);
    Result<Digest> stored = Store(key, run);
    (void)fs_.RemoveAll(run.scratch);
    if (stored.ok()) (void)fs_.RemoveAll(run.resume_dir);
    return stored;
  }

  // Ingests what the run left in its out dir, records the action and
  // materializes it; returns the manifest digest.
  Result<Digest> Store(const Digest& key, const RuleRun& run) {
    cache::ActionRecord record;
    record.key = key;
    record.target = target_;
    record.metrics = run.result.metrics;
    std::vector<std::string> linked;
    BM_ASSIGN_OR_RETURN(std::vector<std::string> files,
                        ListFilesRecursive(fs_, run.out_dir, nullptr, &linked));
    for (const std::string& rel : files) {
      std::string path = run.out_dir + "/" + rel;
      BM_ASSIGN_OR_RETURN(FileInfo info, fs_.Stat(path));
      // A file reached through a link ({out}/data -> /datasets/x) is not the
      // step's own: the cache takes a copy, so that linking it there does not
      // make the original read-only and share its inode.
      std::string own = path;
      if (std::binary_search(linked.begin(), linked.end(), rel)) {
        own = run.scratch + "/ingest.copy";
        BM_TRY(fs_.CopyReadOnly(path, own, info.executable));
      }
      Result<Digest> d = cache_->PutFile(own);
      if (own != path) (void)fs_.Remove(own);
      if (!d.ok()) return d.status();
      record.outputs.push_back({rel, *d, info.size, info.executable});
    }
    BM_ASSIGN_OR_RETURN(Digest log_digest, cache_->PutBytes(run.log_text));
    record.log_digest = log_digest.Hex();
    record.provenance = ProvenanceOf(run);
    BM_TRY(cache_->PutAction(record));
    BM_TRY(Materialize(record, "ran", run.out_dir));
    return cache::ManifestDigest(record.outputs);
  }

  // Step 6 of the header: more measurements of a cached action.
  Status MeasureMore(const Digest& key, StepReport& report) {
    if (!params_.platform_dependent) {
      if (options_.remeasure) {
        Notice(fmt::format("rule {} does not depend on the platform: nothing to remeasure",
                           params_.rule));
      }
      return Status::Ok();
    }
    int64_t rounds = 1;
    if (auto it = params_.params.find("rounds"); it != params_.params.end() && it->is_number())
      rounds = it->get<int64_t>();
    BM_ASSIGN_OR_RETURN(std::optional<cache::ActionRecord> record, cache_->GetAction(key));
    if (!record) {
      // A `cache gc` beside this build removed it since the step stored it:
      // nothing to add measurements to; the next build runs the step again.
      Notice("its action record left the cache during the build; no further measurements");
      return Status::Ok();
    }
    int64_t have = 1 + static_cast<int64_t>(record->remeasurements.size());
    int64_t want = std::max<int64_t>(rounds - have, 0);
    if (options_.remeasure && report.outcome != StepOutcome::kRan)
      want = std::max<int64_t>(want, 1);
    for (int64_t i = 0; i < want; ++i) {
      BM_ASSIGN_OR_RETURN(RuleRun run, RunRule(key, /*remeasure=*/true));
      (void)fs_.RemoveAll(run.scratch);  // a measurement's outputs are not kept
      cache::RecordedMeasurement m;
      m.metrics = run.result.metrics;
      BM_ASSIGN_OR_RETURN(Digest log_digest, cache_->PutBytes(run.log_text));
      m.log_digest = log_digest.Hex();
      m.provenance = ProvenanceOf(run);
      record->remeasurements.push_back(std::move(m));
      BM_TRY(cache_->PutAction(*record));
      (void)fs_.RemoveAll(run.resume_dir);
      ++report.remeasured;
      Notice(fmt::format("measured again in {:.2f}s ({} measurements)", run.seconds,
                         record->remeasurements.size() + 1));
    }
    return Status::Ok();
  }

  // The rule's own messages (ctx.log) go after its commands' output.
  std::string AppendRuleLog(const std::string& path, const std::string& rule_text) {
    Result<std::string> existing = fs_.ReadFile(path);
    std::string text = existing.ok() ? std::move(*existing) : std::string();
    if (!rule_text.empty()) {
      text += rule_text;
      (void)fs_.WriteFileAtomic(path, text, false, /*durable=*/false);
    }
    return text;
  }

  void ShowFailure(const std::string& log_text) {
    if (!options_.console) return;
    std::string tail = log_text;
    size_t lines = 0, pos = tail.size();
    while (pos > 0 && lines < 60) {
      pos = tail.rfind('\n', pos - 1);
      if (pos == std::string::npos) {
        pos = 0;
        break;
      }
      ++lines;
    }
    if (pos > 0) tail = "[...]\n" + tail.substr(pos + 1);
    *options_.console << Styled("---- log of " + target_, Style::kError, options_.color) << " ("
                      << ws_.LogOf(target_) << ") ----\n"
                      << tail << (tail.empty() || tail.back() == '\n' ? "" : "\n") << "----\n"
                      << std::flush;
  }

  const Workspace& ws_;
  Filesystem& fs_;
  std::string target_;
  StepOptions options_;
  WorkspaceConfig config_;
  std::unique_ptr<cache::Cache> cache_;
  KeyMaterial material_;
  StepParams params_;
  std::string retry_note_;  // the line that separates a rerun's log from the failed run's
};

}  // namespace

std::string_view StepOutcomeName(StepOutcome o) {
  switch (o) {
    case StepOutcome::kUpToDate:
      return "up to date";
    case StepOutcome::kRestored:
      return "restored";
    case StepOutcome::kRan:
      return "ran";
  }
  return "?";
}

Result<StepReport> RunStep(const Workspace& ws, const std::string& target,
                           const StepOptions& options) {
  return Stepper(ws, target, options).Run();
}

}  // namespace bm::engine
