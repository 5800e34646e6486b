//! The `memform` command line: the only place that prints. stdout carries
//! machine-readable output only; progress and errors go to stderr.
//! Exit codes: [`exit_code`] (0 ok, 1 a gate failed, 2 an error).

// The CLI is the one place that prints; it may also unwrap.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used, clippy::expect_used)]

/// mimalloc as the allocator: a run allocates many small objects on
/// several threads (formation, QA, the analysis), where glibc's malloc and
/// free took about a fifth of the samples (docs/speed.md, "The allocator").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};

use memform::embed::cache::EmbedMode;
use memform::embed::{Embedder, EmbedderKind, EmbedderSpec, build_embedder};
use memform::error::exit_code;
use memform::llm::fixtures::{RecordedLlm, default_fixtures_dir};
use memform::llm::{LlmMode, LlmSettings};
use memform::pipeline::Config;
use memform::pipeline::extract::{Extractor, GoldExtractor};
use memform::pipeline::judge::Judge;
use memform::pipeline::{Modes, StageMode, Stages, profiles};
use memform::run::{Progress, RunOptions, Skipped, run};
use memform::rundir::{Manifest, Recorded};
use memform::types::{Dataset, DatasetFormat, Warning};

mod cli;
use cli::*;

/// Fault injection for the kill-and-rerun test: abort the process right
/// after this many episode write transactions have committed.
const FAULT_ABORT_ENV: &str = "MEMFORM_FAULT_ABORT_AFTER_WRITES";
/// For the concurrent-runs test: a run holds (with its directory's lock) at
/// its start until this file exists (at most a minute).
const FAULT_HOLD_ENV: &str = "MEMFORM_FAULT_HOLD_UNTIL";
/// The second opt-in both faults need: this variable set to exactly
/// [`FAULT_OPT_IN`]. The tests set both; a stray fault variable alone (say,
/// left in a CI job's environment) is ignored, so it can neither hang nor
/// abort a run. (The binary the tests run is the one `cargo build` makes,
/// so that the tests and `make run` share one build.)
const FAULT_OPT_IN_ENV: &str = "MEMFORM_FAULT_INJECTION";
const FAULT_OPT_IN: &str = "tests-only";

/// The faults the environment asks for, when it opts in twice (see
/// [`FAULT_OPT_IN_ENV`]); none otherwise.
fn faults() -> (Option<u64>, Option<PathBuf>) {
    if std::env::var_os(FAULT_OPT_IN_ENV).is_none_or(|v| v != FAULT_OPT_IN) {
        return (None, None);
    }
    (std::env::var(FAULT_ABORT_ENV).ok().and_then(|v| v.parse().ok()), std::env::var_os(FAULT_HOLD_ENV).map(PathBuf::from))
}

impl ConfigArgs {
    /// Defaults, then the file, then `--set`s, then `--profile`; not yet validated.
    fn load(&self) -> Result<Config> {
        let mut cfg = match &self.config {
            Some(p) => Config::from_toml_file(p)?,
            None => Config::default(),
        };
        for s in &self.set {
            cfg.set(s)?;
        }
        if let Some(p) = &self.profile {
            cfg.profile = profiles::by_name(p)?.name().to_string();
        }
        if let Some(a) = &self.adapter {
            cfg.external.adapter = a.clone();
        }
        // A deprecated spelling works, and says so; a key the profile never
        // reads is ignored, and said so (an unknown profile is reported by
        // validation).
        for w in cfg.deprecations() {
            eprintln!("warning: {w}");
        }
        for w in profiles::inapplicable(&cfg).unwrap_or_default() {
            eprintln!("warning: {w}");
        }
        Ok(cfg)
    }
}

fn stage_mode(m: Mode) -> StageMode {
    match m {
        Mode::Rules => StageMode::Rules,
        Mode::Llm => StageMode::Llm,
    }
}

impl ModeArgs {
    fn modes(&self) -> Modes {
        let both = stage_mode(self.mode.unwrap_or(Mode::Rules));
        let extract = match self.extract {
            Some(ExtractMode::Rules) => StageMode::Rules,
            Some(ExtractMode::Llm) => StageMode::Llm,
            Some(ExtractMode::Gold) => StageMode::Gold,
            None => both,
        };
        Modes { extract, judge: self.judge.map_or(both, stage_mode) }
    }
}

/// The stages of a run, owned, with what the manifest says about them.
struct Built {
    extractor: Box<dyn Extractor>,
    embedder: Arc<dyn Embedder>,
    judge: Box<dyn Judge>,
    llm: Option<Arc<RecordedLlm>>,
    /// The OpenAI-compatible proxy an external system's model calls go
    /// through (a profile with `model_proxy`, in LLM mode).
    proxy: Option<Arc<memform::llm::proxy::ProxyServer>>,
    /// The proxy's fixture directory.
    proxy_fixtures: Option<PathBuf>,
    recorded: Recorded,
    /// run.json's `recorded`: digests of the fixture set and the vector cache.
    digests: serde_json::Value,
}

impl Built {
    fn stages(&self) -> Stages<'_> {
        Stages { extractor: self.extractor.as_ref(), embedder: self.embedder.as_ref(), judge: self.judge.as_ref() }
    }
}

/// Where a dataset's recorded calls live: inside a native dataset, beside
/// the clone (git-ignored) for LoCoMo, whose directory is never written.
fn recorded_root(dataset_dir: &std::path::Path, dataset: &Dataset) -> PathBuf {
    match dataset.format {
        DatasetFormat::Native => dataset_dir.to_path_buf(),
        DatasetFormat::Locomo => PathBuf::from("locomo-fixtures").join(&dataset.name),
        DatasetFormat::Longmemeval => PathBuf::from("longmemeval-fixtures").join(&dataset.name),
    }
}

/// The start of the command that records a dataset's vectors.
fn record_run(dataset_dir: &std::path::Path) -> String {
    format!("memform run --dataset {}", dataset_dir.display())
}

fn build_stages(
    modes: Modes,
    args: &StageArgs,
    cfg: &mut Config,
    dataset_dir: &std::path::Path,
    dataset: &Dataset,
    llm_progress: Option<memform::llm::ProgressHook>,
    record_with: &str,
) -> Result<Built> {
    if let Some(e) = &args.embedder {
        cfg.embedder = e.clone();
    }
    let root = recorded_root(dataset_dir, dataset);
    let mut spec = EmbedderSpec::new(cfg.embedder.parse::<EmbedderKind>()?);
    spec.mode = args.embed.parse::<EmbedMode>()?;
    if let Some(d) = &args.model_dir {
        spec.model_dir = d.clone();
    }
    spec.url = args.embed_url.clone();
    spec.model = args.embed_model.clone();
    spec.dims = match spec.kind {
        EmbedderKind::Hashed => Some(cfg.hashed_dims),
        _ => args.embed_dims,
    };
    spec.cache_dir = Some(args.embed_cache.clone().unwrap_or_else(|| root.join("embeddings")));
    // A miss names the command that records this input (its dataset, or the
    // pairs a calibration reads) and this cache, never the cache's folder
    // (`locomo-fixtures/…`) as a dataset.
    let mut cmd = format!("{record_with} --embedder {}", spec.kind);
    if let Some(c) = &args.embed_cache {
        cmd.push_str(&format!(" --embed-cache {}", c.display()));
    }
    cmd.push_str(" --embed record");
    if let Some(d) = &args.model_dir {
        cmd.push_str(&format!(" --model-dir {}", d.display()));
    }
    spec.record_command = Some(cmd);
    let embedder: Arc<dyn Embedder> = Arc::from(build_embedder(&spec)?);
    let mut recorded = Recorded { embed_mode: Some(spec.mode.as_str().to_string()), ..Recorded::default() };
    let profile = profiles::by_name(&cfg.profile)?;
    if let Some(rules) = profile.model_proxy() {
        // An external system forms the memories: memform's stages only name
        // the mode; in LLM mode its model calls go through the proxy.
        let name = profile.name();
        let stage = |mode| memform::pipeline::external::SystemStage { mode, profile: name };
        let mut proxy = None;
        let mut fixtures = None;
        if modes.uses_llm() {
            use memform::llm::proxy::{Normalise, ProxyConfig, ProxyMode, ProxyServer};
            let mode = match args.llm.as_str() {
                "replay" => ProxyMode::Replay,
                "record" => ProxyMode::Record { upstream: cfg.llm_url.clone() },
                other => {
                    return Err(memform::error::Error::Config(format!(
                        "--llm {other}: profile {name} records (--llm record) or replays (--llm replay) its model calls through the proxy"
                    ))
                    .into());
                }
            };
            // Beside the dataset's pipeline fixtures, not among them: `fixtures
            // check`/`prune` replay memform's own stages and would call these unused.
            let dir = args.fixtures.clone().unwrap_or_else(|| root.join("proxy-fixtures").join(name));
            let mut pc = ProxyConfig::new(mode, dir.clone());
            pc.embedder = embedder.clone();
            pc.normalise = Normalise::named(rules)?;
            let server = Arc::new(ProxyServer::start(pc)?);
            let url = server.base_url();
            let watched = server.clone();
            let seen = std::sync::Mutex::new((0usize, 0u64));
            cfg.external_runtime = memform::pipeline::external::Runtime {
                env: vec![
                    ("OPENAI_BASE_URL".into(), url.clone()),
                    ("MEMFORM_PROXY_URL".into(), url),
                    ("OPENAI_API_KEY".into(), "memform-proxy".into()),
                ],
                // Only what went wrong since the last check (episodes take the
                // proxy one at a time, so it is the checking episode's).
                check: Some(Arc::new(move || {
                    let st = watched.stats();
                    let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                    let (misses, errors) = (st.misses.get(seen.0..).unwrap_or_default(), st.errors.saturating_sub(seen.1));
                    let problem = if !misses.is_empty() {
                        Some(format!(
                            "the proxy has no fixture for {} model call(s) (replay; record them with --llm record): {}",
                            misses.len(),
                            misses.join(", ")
                        ))
                    } else if errors > 0 {
                        Some(format!("the proxy answered {errors} model call(s) with an error ({:?})", st.errors_by_status))
                    } else {
                        None
                    };
                    *seen = (st.misses.len(), st.errors);
                    problem
                })),
                serial: Default::default(),
            };
            recorded.llm_mode = Some(args.llm.clone());
            recorded.fixtures_dir = Some(dir.display().to_string());
            fixtures = Some(dir);
            proxy = Some(server);
        }
        let digests = proxy_digests(embedder.as_ref(), fixtures.as_deref())?;
        return Ok(Built {
            extractor: Box::new(stage(modes.extract)),
            embedder,
            judge: Box::new(stage(modes.judge)),
            llm: None,
            proxy,
            proxy_fixtures: fixtures,
            recorded,
            digests,
        });
    }
    let mut llm = None;
    let mut settings = None;
    if modes.uses_llm() {
        let s = LlmSettings::from_config_and_env(cfg)?;
        let llm_mode = LlmMode::parse(&args.llm)?;
        let dir = args.fixtures.clone().unwrap_or_else(|| default_fixtures_dir(&root, &s.model));
        let mut boundary = RecordedLlm::from_settings(&s, llm_mode, Some(dir.clone()))?;
        if let Some(hook) = llm_progress {
            boundary = boundary.with_progress(hook);
        }
        let templates: Vec<String> =
            memform::llm::prompts::all_templates()?.iter().map(|t| format!("{} v{}", t.id.name, t.id.version)).collect();
        recorded.llm_mode = Some(llm_mode.as_str().to_string());
        recorded.llm = Some(s.clone());
        recorded.fixtures_dir = Some(dir.display().to_string());
        recorded.prompt_templates = Some(templates);
        llm = Some(Arc::new(boundary));
        settings = Some(s);
    }
    let model = || -> Result<(Arc<RecordedLlm>, &LlmSettings)> {
        Ok((llm.clone().context("no LLM boundary")?, settings.as_ref().context("no LLM settings")?))
    };
    let extractor: Box<dyn Extractor> = match modes.extract {
        StageMode::Rules => profile.rules_extractor(cfg),
        StageMode::Llm => {
            let (b, s) = model()?;
            profile.llm_extractor(b, s)?
        }
        StageMode::Gold => Box::new(GoldExtractor::new(dataset, cfg)?),
    };
    let judge: Box<dyn Judge> = match modes.judge {
        StageMode::Llm => {
            let (b, s) = model()?;
            profile.llm_judge(b, s)?
        }
        _ => profile.rules_judge(cfg),
    };
    let digests = recorded_digests(embedder.as_ref(), llm.as_deref())?;
    Ok(Built { extractor, embedder, judge, llm, proxy: None, proxy_fixtures: None, recorded, digests })
}

/// The `recorded` object of run.json: digests of the fixture set and the
/// embedding cache the stages read (see memform::provenance).
fn recorded_digests(embedder: &dyn Embedder, llm: Option<&RecordedLlm>) -> Result<serde_json::Value> {
    let fixtures = match llm.and_then(RecordedLlm::store) {
        Some(store) => memform::provenance::fixture_set_digest(store.dir())?,
        None => serde_json::Value::Null,
    };
    let embeddings = match embedder.cache_stats() {
        Some(s) => memform::provenance::embedding_cache_value(&s.dir, s.entries, &s.sha256),
        None => serde_json::Value::Null,
    };
    Ok(serde_json::json!({"fixtures": fixtures, "embeddings": embeddings}))
}

/// run.json's `recorded` for a run through the proxy: the fixture set's
/// digest (when its directory exists) and the vector cache's.
fn proxy_digests(embedder: &dyn Embedder, fixtures: Option<&std::path::Path>) -> Result<serde_json::Value> {
    let mut v = recorded_digests(embedder, None)?;
    if let Some(dir) = fixtures.filter(|d| d.is_dir()) {
        v["fixtures"] = memform::provenance::fixture_set_digest(dir)?;
    }
    Ok(v)
}

/// Stops a run's proxy: its figures (run.json's `recorded.proxy`, with
/// every normalisation), or the error naming the fixtures it lacked.
fn finish_proxy(built: &mut Built) -> Result<Option<memform::llm::proxy::ProxyStats>> {
    let Some(proxy) = built.proxy.take() else { return Ok(None) };
    let stats = match Arc::try_unwrap(proxy) {
        Ok(p) => p.shutdown(),
        Err(shared) => shared.stats(),
    };
    if !stats.misses.is_empty() {
        return Err(memform::error::Error::Other(format!(
            "the proxy has no fixture for {} model call(s) (replay): {}",
            stats.misses.len(),
            stats.misses.join(", ")
        ))
        .into());
    }
    Ok(Some(stats))
}

/// After a run that recorded answers or vectors: run.json's digests become
/// the recorded set's as it ends, and report.md is redrawn to show them
/// (under `lock`, the run directory's, which the run still holds).
fn finish_recording(built: &Built, out: &std::path::Path, lock: &memform::rundir::DirLock) -> Result<()> {
    let recorded = recorded_digests(built.embedder.as_ref(), built.llm.as_deref())?;
    if memform::rundir::update_recorded(out, &recorded)? {
        memform::regenerate::regenerate_locked(out, lock)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = match parse_cli() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", memform::error::one_line(&memform::redact::scrub(&chain(&e))));
            ExitCode::from(exit_code::ERROR)
        }
    }
}

/// Parses the command line. A usage error is printed as one `error:` line
/// (clap's message and tips joined), then clap's usage and help hint;
/// exit 2. `--help` and `--version` print as clap prints them.
fn parse_cli() -> std::result::Result<Cli, ExitCode> {
    let err = match Cli::try_parse() {
        Ok(cli) => return Ok(cli),
        Err(e) => e,
    };
    if !err.use_stderr() {
        let _ = err.print();
        return Err(ExitCode::SUCCESS);
    }
    eprint!("{}", one_line_clap_error(&err.render().to_string()));
    Err(ExitCode::from(exit_code::ERROR))
}

fn chain(e: &anyhow::Error) -> String {
    e.chain().map(|c| c.to_string()).collect::<Vec<_>>().join(": ")
}

fn dispatch(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run(args) => cmd_run(args),
        Command::Gate(args) => cmd_gate(args),
        Command::Sweep(args) => cmd_sweep(args),
        Command::Fixtures { command: FixturesCommand::Check { dataset, config, stage } } => cmd_fixtures_check(&dataset, &config, &stage),
        Command::Fixtures { command } => housekeeping::fixtures(command),
        Command::Embeddings { command } => housekeeping::embeddings(command),
        Command::Compare(args) => cmd_compare(args),
        Command::Calibrate(args) => cmd_calibrate(args),
        Command::Proxy(args) => cmd_proxy(args),
        Command::Dream { command } => cmd_dream(command),
        Command::OntologyExtract(args) => cmd_ontology_extract(args),
        Command::Profiles => {
            for p in profiles::PROFILES {
                println!("{:<8} {}", p.name(), p.summary());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Report { run_dir, calibration } => {
            let sections = decision_quality_sections(calibration.as_deref(), &run_dir)?;
            let r = memform::regenerate::regenerate_with(&run_dir, &sections)?;
            for p in &r.removed {
                eprintln!("removed {} (no longer drawn)", p.display());
            }
            eprintln!("wrote {}", r.written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "));
            Ok(ExitCode::SUCCESS)
        }
        Command::Config { profile } => {
            print!("{}", Config::documented_defaults(profile.as_deref())?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// One stderr line per kind of loader warning, with a count and an example.
fn report_load_warnings(warnings: &[Warning]) {
    let mut kinds: Vec<&str> = warnings.iter().map(|w| w.kind.as_str()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    for k in kinds {
        let of_kind: Vec<&Warning> = warnings.iter().filter(|w| w.kind == k).collect();
        eprintln!("warning: {} × {k} (e.g. {})", of_kind.len(), of_kind[0].message);
    }
}

fn cmd_run(args: RunArgs) -> Result<ExitCode> {
    let mut cfg = args.config.load()?;
    cfg.set_write_mode(args.write_mode);
    cfg.validate()?;
    let tags = memform::provenance::parse_tags(&args.tag)?;
    let (mut dataset, load_warnings, bad) = if args.keep_going {
        memform::dataset::load_keep_going(&args.dataset)?
    } else {
        let (d, w) = memform::dataset::load_with_report(&args.dataset)?;
        (d, w, Vec::new())
    };
    memform::dataset::subset(&mut dataset, &args.subset.conversations, args.subset.limit)?;
    report_load_warnings(&load_warnings);
    if args.evidence == EvidenceSource::Audited {
        let entries = memform::dataset::audit::load(&args.evidence_audit)?;
        let a = memform::dataset::audit::apply(&mut dataset, &entries);
        eprintln!(
            "evidence audited ({}): {} items matched, {} evidence and {} answers corrected, {} entries for conversations not in the dataset",
            args.evidence_audit.display(),
            a.matched,
            a.evidence_changed,
            a.answers_changed,
            a.unmatched
        );
    }
    let skipped_inputs: Vec<Skipped> = bad
        .into_iter()
        .map(|b| Skipped {
            conversation: b.path.file_stem().map_or_else(|| b.path.display().to_string(), |s| s.to_string_lossy().into_owned()),
            error: memform::error::chain(&b.error),
        })
        .collect();
    let modes = args.modes.modes();
    let mode = modes.name();
    let out = args.out.clone().unwrap_or_else(|| {
        let embedder = args.stage.embedder.as_deref().unwrap_or(&cfg.embedder);
        PathBuf::from("reports").join(memform::names::run_dir_name(&dataset.name, &cfg.profile, &modes.slug(), embedder, &args.config.set))
    });
    memform::paths::check_out_dir("--out", &out, Some(&args.dataset))?;
    let lock = Arc::new(memform::rundir::DirLock::acquire(&out)?);
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {prefix} [{bar:30}] {pos}/{len} episodes {elapsed} eta {eta} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(format!("{} {mode}", dataset.name));
    let llm_bar = bar.clone();
    let llm_hook: memform::llm::ProgressHook = Arc::new(move |p: &memform::llm::LlmProgress| {
        llm_bar.set_message(format!(
            "llm: {} live, {} replayed, {} prompt + {} completion tokens",
            p.live_calls, p.fixture_hits, p.prompt_tokens, p.completion_tokens
        ));
    });
    let mut built = build_stages(modes, &args.stage, &mut cfg, &args.dataset, &dataset, Some(llm_hook), &record_run(&args.dataset))?;
    let pb = bar.clone();
    let (abort_after, hold_until) = faults();
    let opts = RunOptions {
        out_dir: out.clone(),
        threads: args.threads,
        keep_going: args.keep_going,
        skipped_inputs,
        progress: Some(Arc::new(move |p| match p {
            Progress::Start { episodes } => {
                pb.set_length(episodes as u64);
                if let Some(go) = &hold_until {
                    let since = std::time::Instant::now();
                    while !go.exists() && since.elapsed().as_secs() < 60 {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                }
            }
            Progress::Episode { .. } => {
                pb.inc(1);
                // An episode is reported once its write transaction committed.
                if abort_after.is_some_and(|n| pb.position() >= n) {
                    std::process::abort();
                }
            }
        })),
        recorded: built.recorded.clone(),
        dataset_path: Some(args.dataset.clone()),
        digests: built.digests.clone(),
        tags,
        lock: Some(lock.clone()),
        qa: if args.no_qa {
            Some(false)
        } else if args.qa {
            Some(true)
        } else {
            None
        },
        report_sections: decision_quality_sections(args.calibration.as_deref(), &out)?,
    };
    let output = run(&dataset, &cfg, built.stages(), &opts);
    bar.finish_and_clear();
    // The adapters are done with the proxy: stop it (a miss is an error).
    cfg.external_runtime = Default::default();
    let proxy = finish_proxy(&mut built);
    built.embedder.flush()?;
    let output = output?;
    let proxy = proxy?;
    for w in output.qa_warnings.iter().take(20) {
        eprintln!("warning: {w}");
    }
    if output.qa_warnings.len() > 20 {
        eprintln!(
            "warning: {} more QA warnings (qa_evidence_unknown_turns and qa_questions_empty in summary.json)",
            output.qa_warnings.len() - 20
        );
    }
    if args.stage.llm == "record" || args.stage.embed == "record" {
        finish_recording(&built, &output.out_dir, &lock)?;
    }
    if let Some(stats) = proxy {
        // The fixture set as the run leaves it, and what the proxy did.
        let mut recorded = proxy_digests(built.embedder.as_ref(), built.proxy_fixtures.as_deref())?;
        recorded["proxy"] = serde_json::to_value(&stats)?;
        if memform::rundir::update_recorded(&output.out_dir, &recorded)? {
            memform::regenerate::regenerate_locked(&output.out_dir, &lock)?;
        }
    }
    if let Some(llm) = &built.llm {
        let t = llm.totals();
        eprintln!(
            "llm: {} live calls ({:.1} s), {} replayed; {} prompt + {} completion tokens",
            t.live_calls,
            t.live_wall.as_secs_f64(),
            t.fixture_hits,
            t.prompt_tokens,
            t.completion_tokens
        );
    }
    if let Some(stats) = built.embedder.cache_stats() {
        eprintln!(
            "embeddings ({}): {} cached, {} hits, {} recorded, in {}",
            stats.mode.as_str(),
            stats.entries,
            stats.hits,
            stats.recorded,
            stats.dir.display()
        );
    }
    let summary_line = ["episodes", "stored_facts", "turn_f1", "content_f1", "qa_recall_any_at_5", "warnings"]
        .iter()
        .filter_map(|k| output.summary.metrics.get(*k).map(|v| format!("{k} {v}")))
        .collect::<Vec<_>>()
        .join(", ");
    print_result(
        args.json,
        &serde_json::to_string_pretty(&output.summary).context("serialise summary")?,
        &[format!("{}: {summary_line}", output.out_dir.display()), format!("read {}", output.out_dir.join("report.md").display())],
    );
    eprintln!("wrote {}", output.out_dir.display());
    if !output.skipped.is_empty() {
        for s in &output.skipped {
            eprintln!("error: skipped conversation {}: {}", s.conversation, s.error);
        }
        return Ok(ExitCode::from(exit_code::ERROR));
    }
    Ok(ExitCode::SUCCESS)
}

/// The "Decision quality" section of the calibration in `dir` (none
/// without one), linking its report from `from` (the report's directory).
fn decision_quality_sections(dir: Option<&std::path::Path>, from: &std::path::Path) -> Result<Vec<String>> {
    let Some(dir) = dir else { return Ok(Vec::new()) };
    let cal = memform::calibrate::read(dir).with_context(|| format!("--calibration {}", dir.display()))?;
    Ok(vec![memform::calibrate::decision_quality_md(&cal, Some(&relative_link(from, &dir.join("report.md"))))])
}

/// `to` as a link from a file in directory `from`: relative when both are
/// relative paths, else absolute.
fn relative_link(from: &std::path::Path, to: &std::path::Path) -> String {
    let abs = |p: &std::path::Path| std::env::current_dir().map(|c| c.join(p)).unwrap_or_else(|_| p.to_path_buf());
    let (from, to) = (abs(from), abs(to));
    let f: Vec<_> = from.components().collect();
    let t: Vec<_> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..f.len() {
        rel.push("..");
    }
    for c in &t[common..] {
        rel.push(c.as_os_str());
    }
    rel.display().to_string()
}

/// The pairs `calibrate` reads, with what the manifest and the recorded boundary need.
struct PairInput {
    source: memform::calibrate::Source,
    pairs: Vec<memform::calibrate::Pair>,
    /// `pairs-test`, `sick-SICK_train`, …
    name: String,
    /// The files read (the digest's input).
    files: Vec<PathBuf>,
    /// Where recorded vectors live (the pair directory; `pairs-fixtures/<name>` for a corpus file).
    root: PathBuf,
    /// What was given on the command line.
    path: PathBuf,
}

impl PairInput {
    /// The start of the command that records these pairs' vectors.
    fn record_with(&self) -> String {
        format!("memform calibrate --{} {}", self.source.as_str(), self.path.display())
    }
}

fn split_of(s: SplitArg) -> memform::calibrate::Split {
    use memform::calibrate::Split;
    match s {
        SplitArg::Tune => Split::Tune,
        SplitArg::Test => Split::Test,
        SplitArg::All => Split::All,
    }
}

fn read_pair_input(
    pairs: Option<&std::path::Path>,
    split: SplitArg,
    sick: Option<&std::path::Path>,
    msrp: Option<&std::path::Path>,
) -> Result<PairInput> {
    use memform::calibrate::{Source, Split, input};
    if let Some(dir) = pairs {
        let split = split_of(split);
        let names: &[&str] = match split {
            Split::Tune => &["tune"],
            Split::Test => &["test"],
            Split::All => &["tune", "test"],
        };
        return Ok(PairInput {
            source: Source::Pairs,
            pairs: input::read_pairs_dir(dir, split)?,
            name: format!("pairs-{}", split.as_str()),
            files: names.iter().map(|n| dir.join(format!("{n}.jsonl"))).collect(),
            root: dir.to_path_buf(),
            path: dir.to_path_buf(),
        });
    }
    let (source, path) = match (sick, msrp) {
        (Some(p), _) => (Source::Sick, p.to_path_buf()),
        (None, Some(p)) => (Source::Msrp, p.to_path_buf()),
        (None, None) => bail!("calibrate: one of --pairs, --sick or --msrp is required"),
    };
    let pairs = if source == Source::Sick { input::read_sick(&path)? } else { input::read_msrp(&path)? };
    let stem = path.file_stem().map_or_else(|| source.as_str().to_string(), |s| s.to_string_lossy().into_owned());
    let name = format!("{}-{stem}", source.as_str());
    // The corpora are never written to: their recorded vectors live beside the clone.
    let root = PathBuf::from("pairs-fixtures").join(&name);
    Ok(PairInput { source, pairs, name, files: vec![path.clone()], root, path })
}

/// How one calibration runs (besides its pairs, config and modes).
struct CalibrationRun<'a> {
    stage: &'a StageArgs,
    out: PathBuf,
    limits: memform::calibrate::Limits,
    grids: std::collections::BTreeMap<String, Vec<String>>,
    no_curves: bool,
    threads: Option<usize>,
    tags: std::collections::BTreeMap<String, String>,
}

fn run_calibration(input: &PairInput, mut cfg: Config, modes: Modes, how: CalibrationRun<'_>) -> Result<memform::calibrate::Calibration> {
    use memform::calibrate;
    let digest = calibrate::digest_files(&input.files)?;
    let observations_as_turns = modes.extract == StageMode::Gold && cfg.profile == "memorix";
    let dataset = calibrate::dataset(&input.name, &digest, &input.pairs, observations_as_turns);
    memform::paths::check_out_dir("--out", &how.out, Some(&input.path))?;
    let lock = Arc::new(memform::rundir::DirLock::acquire(&how.out)?);
    let built = build_stages(modes, how.stage, &mut cfg, &input.root, &dataset, None, &input.record_with())?;
    let opts = calibrate::Options {
        source: input.source,
        name: input.name.clone(),
        out_dir: how.out.clone(),
        limits: how.limits,
        grids: how.grids,
        no_curves: how.no_curves,
        recorded: built.recorded.clone(),
        digests: built.digests.clone(),
        dataset_path: Some(input.path.clone()),
        tags: how.tags,
        lock: Some(lock),
        threads: how.threads,
    };
    let result = calibrate::calibrate(&input.pairs, &dataset, &cfg, built.stages(), &opts);
    built.embedder.flush()?;
    Ok(result?)
}

/// Adds the variants' "Decision quality" section to `out/compare.md` (none without calibrations).
fn append_decision_quality(out: &std::path::Path, calibrations: &[(String, memform::calibrate::Calibration)]) -> Result<()> {
    if calibrations.is_empty() {
        return Ok(());
    }
    let path = out.join("compare.md");
    let mut md = std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
    md.push('\n');
    md.push_str(&memform::calibrate::compare_md(calibrations));
    memform::report::write_text(&path, &md)?;
    Ok(())
}

/// Compares `compared` (two runs: uplift and intervals; more: side by
/// side), then releases the runs' `locks`, takes the output directory's and
/// writes `compare.json`/`compare.md` (with the decision-quality section when
/// `calibrations` are given). Returns the JSON and the terminal summary.
fn compare_and_write<L>(
    compared: &[memform::compare::Side],
    out: &std::path::Path,
    opts: memform::compare::CompareOptions,
    locks: Vec<L>,
    calibrations: &[(String, memform::calibrate::Calibration)],
) -> Result<(String, Vec<String>)> {
    // report.html is drawn from the runs while their locks are held.
    let page = |c: &serde_json::Value| memform::compare::page::render(compared, c);
    let html = out.join(memform::report::html::FILE);
    if let [a, b] = compared {
        let comparison = memform::compare::compare_runs(a, b, out, opts)?;
        let html_text = page(&serde_json::to_value(&comparison).context("serialise comparison")?)?;
        drop(locks);
        let _lock = memform::rundir::DirLock::acquire(out)?;
        memform::compare::write_comparison(out, &comparison)?;
        memform::report::write_text(&html, &html_text)?;
        append_decision_quality(out, calibrations)?;
        Ok((serde_json::to_string_pretty(&comparison).context("serialise comparison")?, memform::compare::summary_lines(&comparison)))
    } else {
        let comparison = memform::compare::compare_many(compared, out, opts)?;
        let html_text = page(&serde_json::to_value(&comparison).context("serialise comparison")?)?;
        drop(locks);
        let _lock = memform::rundir::DirLock::acquire(out)?;
        memform::compare::write_many(out, &comparison)?;
        memform::report::write_text(&html, &html_text)?;
        append_decision_quality(out, calibrations)?;
        Ok((serde_json::to_string_pretty(&comparison).context("serialise comparison")?, Vec::new()))
    }
}

fn cmd_calibrate(args: CalibrateArgs) -> Result<ExitCode> {
    let cfg = args.config.load()?;
    cfg.validate()?;
    let tags = memform::provenance::parse_tags(&args.tag)?;
    let modes = args.modes.modes();
    let input = read_pair_input(args.pairs.as_deref(), args.split, args.sick.as_deref(), args.msrp.as_deref())?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("reports").join(format!("calibrate-{}-{}-{}", input.name, cfg.profile, modes.slug())));
    let mut grids = std::collections::BTreeMap::new();
    for g in &args.grid {
        let axis = memform::sweep::parse_axis(g)?;
        if grids.insert(axis.key.clone(), axis.values).is_some() {
            bail!("--grid {}: the key is given twice; put all its values on one --grid", axis.key);
        }
    }
    let started = std::time::Instant::now();
    let how = CalibrationRun {
        stage: &args.stage,
        out: out.clone(),
        limits: memform::calibrate::Limits { max_false_merge: args.max_false_merge, max_false_invalidation: args.max_false_invalidation },
        grids,
        no_curves: args.no_curves,
        threads: args.threads,
        tags,
    };
    let cal = run_calibration(&input, cfg, modes, how)?;
    let summary = serde_json::json!({"metrics": cal.metrics()});
    println!("{}", serde_json::to_string_pretty(&summary).context("serialise summary")?);
    eprintln!(
        "calibrated {} pairs ({} formed) and {} curve points in {:.1} s into {}",
        cal.pairs.len(),
        cal.rates.formed,
        cal.curves.iter().map(|c| c.points.len()).sum::<usize>(),
        started.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `memform ontology-extract`: the dataset's conversations through the
/// dreaming profile's passes (docs/dreaming.md, 14). Prints one JSON line
/// per conversation and a total; `--write-proposals` writes every operation
/// with its effect to OUT/proposals.jsonl, `--write-assertions` the applied
/// graph to OUT/store.sqlite. Without either, nothing is written.
fn cmd_ontology_extract(args: OntologyExtractArgs) -> Result<ExitCode> {
    use memform::pipeline::dreaming::ontology_extract::ontology_extract;
    let mut cfg = args.config.load()?;
    if cfg.profile != "dreaming" && args.config.profile.is_some() {
        return Err(memform::error::Error::Config(format!(
            "ontology-extract: --profile {}: it runs the dreaming profile only",
            cfg.profile
        ))
        .into());
    }
    cfg.profile = "dreaming".into();
    cfg.validate()?;
    if cfg.embedder != "hashed" {
        return Err(memform::error::Error::Config(format!(
            "ontology-extract: embedder {:?}: it runs with the hashed embedder only (no model is loaded)",
            cfg.embedder
        ))
        .into());
    }
    let (mut dataset, load_warnings) = memform::dataset::load_with_report(&args.dataset)?;
    memform::dataset::subset(&mut dataset, &args.subset.conversations, args.subset.limit)?;
    report_load_warnings(&load_warnings);
    if let Some(out) = &args.out {
        memform::paths::check_out_dir("--out", out, Some(&args.dataset))?;
        std::fs::create_dir_all(out).with_context(|| format!("create {}", out.display()))?;
    }
    let extractor = memform::pipeline::extract::RulesExtractor::new(cfg.max_input_chars);
    let embedder = memform::embed::hashed::HashedEmbedder::new(cfg.hashed_dims);
    let judge = memform::pipeline::judge::RulesJudge::new(&cfg);
    let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
    let assertions = args.out.as_ref().filter(|_| args.write_assertions).map(|o| o.join(".store.sqlite.partial"));
    let store = match &assertions {
        Some(path) => {
            if path.exists() {
                std::fs::remove_file(path).with_context(|| format!("remove {}", path.display()))?;
            }
            memform::store::Store::open(path)?
        }
        None => memform::store::Store::in_memory()?,
    };
    let extracted = ontology_extract(&dataset, &cfg, stages, &store)?;
    drop(store);
    let mut total = serde_json::json!({"conversations": extracted.len(), "operations": 0, "applied": 0, "skipped": 0, "failed": 0,
        "entities": 0, "aspects": 0, "claims": 0, "links": 0});
    for c in &extracted {
        println!("{}", serde_json::to_string(c)?);
        for (k, n) in [
            ("operations", c.operations.len()),
            ("applied", c.applied),
            ("skipped", c.skipped),
            ("failed", c.failed),
            ("entities", c.entities),
            ("aspects", c.aspects),
            ("claims", c.claims),
            ("links", c.links),
        ] {
            total[k] = serde_json::json!(total[k].as_u64().unwrap_or(0) + n as u64);
        }
    }
    let mut written = Vec::new();
    if let (true, Some(out)) = (args.write_proposals, &args.out) {
        let path = out.join("proposals.jsonl");
        memform::rundir::write_with(&path, |w| {
            use std::io::Write as _;
            for c in &extracted {
                for o in &c.operations {
                    let parse = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap_or(serde_json::Value::Null);
                    let line = serde_json::json!({"conversation": c.conversation, "opId": o.id, "passId": o.pass_id, "operation": o.operation,
                        "payload": parse(&o.payload), "effect": o.effect, "kind": o.kind, "message": o.message,
                        "result": o.result.as_deref().map(parse)});
                    writeln!(w, "{line}").map_err(|e| memform::error::Error::write(&path, e))?;
                }
            }
            Ok(())
        })?;
        written.push(path);
    }
    if let (Some(partial), Some(out)) = (&assertions, &args.out) {
        let path = out.join(memform::rundir::RunDir::STORE);
        std::fs::rename(partial, &path).with_context(|| format!("move {} to {}", partial.display(), path.display()))?;
        written.push(path);
    }
    total["written"] = serde_json::json!(written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>());
    println!("{total}");
    Ok(ExitCode::SUCCESS)
}

/// `memform dream tool|tools`: one capability of the dreaming registry on
/// a run directory's store (docs/dreaming.md, section 7), or the manifest.
fn cmd_dream(command: DreamCommand) -> Result<ExitCode> {
    use memform::pipeline::dreaming::registry;
    match command {
        DreamCommand::Tools => {
            println!("{}", serde_json::to_string_pretty(&registry::manifest())?);
            Ok(ExitCode::SUCCESS)
        }
        DreamCommand::Tool { name, input, store, conversation } => {
            let run_json = store.join("run.json");
            let cfg = if run_json.is_file() {
                let v = memform::rundir::read_json(&run_json)?;
                serde_json::from_value::<Config>(v.get("config").cloned().unwrap_or_default())
                    .with_context(|| format!("{}: config", run_json.display()))?
            } else {
                Config::default()
            };
            let db = store.join(memform::rundir::RunDir::STORE);
            // The hashed embedder is rebuilt from the run's config (no model),
            // so duplicates are checked by cosine as in the run's passes.
            let hashed = (cfg.embedder == "hashed").then(|| memform::embed::hashed::HashedEmbedder::new(cfg.hashed_dims));
            let embedder = hashed.as_ref().map(|e| e as &dyn memform::embed::Embedder);
            let answer = registry::call_on_store(&db, &cfg.dreaming, &name, &input, conversation.as_deref(), embedder)?;
            println!("{answer}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `memform proxy`: serves until stdin reaches end of file, SIGINT or
/// SIGTERM, then waits for the requests in flight and prints its figures.
fn cmd_proxy(args: ProxyArgs) -> Result<ExitCode> {
    use memform::llm::proxy::{Normalise, ProxyConfig, ProxyLimits, ProxyMode, ProxyServer};
    use std::io::{Read, Write};
    let mode = match (args.record, args.upstream) {
        (true, Some(upstream)) => ProxyMode::Record { upstream },
        _ => ProxyMode::Replay,
    };
    let kind: EmbedderKind = args.embedder.parse()?;
    let mut spec = EmbedderSpec::new(kind);
    spec.mode = args.embed.parse::<EmbedMode>()?;
    spec.cache_dir = args.embed_cache;
    spec.dims = args.embed_dims;
    if let Some(dir) = args.model_dir {
        spec.model_dir = dir;
    }
    let embedder: Arc<dyn Embedder> = Arc::from(build_embedder(&spec)?);
    let mut cfg = ProxyConfig::new(mode, args.fixtures);
    cfg.listen = args.listen;
    cfg.embedder = embedder.clone();
    cfg.normalise = Normalise::named(&args.normalise)?;
    cfg.limits = ProxyLimits {
        max_request_bytes: args.max_request_bytes,
        max_concurrency: args.max_concurrency,
        read_timeout_secs: args.read_timeout_secs,
        upstream_timeout_secs: args.upstream_timeout_secs,
        max_embed_inputs: args.max_embed_inputs,
    };
    let server = ProxyServer::start(cfg)?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", server.base_url())?;
        out.flush()?;
    }
    eprintln!("memform proxy: serving {} ({}); close stdin or send SIGINT to stop", server.base_url(), server.stats().mode);
    // Served until stdin ends (what it carries is ignored) or a signal comes.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, stop.clone()).context("handle SIGINT and SIGTERM")?;
    }
    let eof = stop.clone();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock().take(u64::MAX), &mut std::io::sink());
        eof.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let stats = server.shutdown();
    embedder.flush()?;
    println!("{}", serde_json::to_string(&stats)?);
    eprintln!(
        "memform proxy: {} requests ({} chat: {} from fixtures, {} recorded; {} embeddings), {} missing key(s), {} error(s)",
        stats.requests,
        stats.chat,
        stats.hits,
        stats.recorded,
        stats.embeddings,
        stats.misses.len(),
        stats.errors
    );
    for key in &stats.misses {
        eprintln!("missing fixture: {key}");
    }
    Ok(if stats.clean() { ExitCode::SUCCESS } else { ExitCode::from(exit_code::ERROR) })
}

fn cmd_gate(args: GateArgs) -> Result<ExitCode> {
    use memform::gate::ci;
    if let Some(path) = &args.junit {
        // The verdict never overwrites what the gate reads.
        let mut inputs = vec![("the baseline", args.baseline.as_path())];
        if let Some(r) = &args.rules {
            inputs.push(("the rules file", r.as_path()));
        }
        let dirs: Vec<&std::path::Path> = args.run.iter().map(PathBuf::as_path).collect();
        memform::paths::check_not_input("--junit", path, &inputs, &dirs)?;
    }
    if args.update_baseline {
        for dir in &args.run {
            let run = memform::gate::read_run(dir)?;
            let update = memform::gate::update_baseline_checked(&args.baseline, &run, args.force)?;
            if let Some(old) = &update.replaced_dataset {
                eprintln!("warning: --force: the baseline was made on {old}; it now names {} ({})", run.dataset_name, run.dataset_digest);
            }
            if !update.dropped_modes.is_empty() {
                eprintln!("dropped mode(s) {}: their numbers were of the old dataset", update.dropped_modes.join(", "));
            }
            if !update.kept_modes.is_empty() {
                eprintln!("kept mode(s) {} as they were", update.kept_modes.join(", "));
            }
            match &update.accepted {
                Some(d) if d.is_empty() => eprintln!("{} mode: same profile, modes, embedder, config and dataset as before", run.mode),
                Some(d) => {
                    eprintln!("{} mode: accepted a run that differs from the previous entry's:", run.mode);
                    for line in d {
                        eprintln!("  {line}");
                    }
                }
                None if run.provenance.config_changes.is_empty() => eprintln!("{} mode: default config", run.mode),
                None => eprintln!("{} mode: config changes accepted: {}", run.mode, run.provenance.config_changes.join(", ")),
            }
            eprintln!("updated {} ({} mode)", args.baseline.display(), run.mode);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let rules = match &args.rules {
        Some(p) => memform::gate::Rules::from_toml_file(p)?,
        None => memform::gate::Rules::default(),
    };
    let baseline = memform::gate::read_baseline(&args.baseline)?;
    let runs = args
        .run
        .iter()
        .map(|dir| ci::gate_run(&baseline, &args.baseline, dir, &rules, args.allow_dataset_change))
        .collect::<Result<Vec<_>, _>>()?;
    if args.format == GateFormat::Github {
        print!("{}", ci::github_stdout(&runs, &args.baseline));
    } else {
        for run in &runs {
            if runs.len() > 1 {
                println!("{}:", run.name());
            }
            print!("{}", memform::gate::render_table(&run.rows));
        }
    }
    if let Some(path) = &args.junit {
        memform::report::write_text(path, &ci::junit_xml(&runs, &args.baseline))?;
    }
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        ci::append(std::path::Path::new(&path), &ci::step_summary(&runs))?;
    }
    let mut code = ExitCode::SUCCESS;
    for run in &runs {
        if !run.differs.is_empty() {
            eprintln!("warning: {}", run.differs_line());
            if args.strict {
                eprintln!(
                    "gate failed: --strict: {} ({} mode) is not a run of the baseline's configuration",
                    run.dir.display(),
                    run.run.mode
                );
                code = ExitCode::from(1);
            }
        } else if run.unknown_provenance {
            eprintln!(
                "note: {} records no provenance for {} mode (an older baseline): what the run differs in is unknown; `--update-baseline` records it",
                args.baseline.display(),
                run.run.mode
            );
        }
        let failed = run.failed();
        if failed > 0 {
            eprintln!("gate failed: {failed} of {} metrics regressed ({} mode, {})", run.rows.len(), run.run.mode, run.dir.display());
            code = ExitCode::from(1);
        } else {
            eprintln!("gate passed: {} metrics ({} mode)", run.rows.len(), run.run.mode);
        }
    }
    Ok(code)
}

/// What `sweep.md` needs to be rewritten by `merge`: kept beside the rows.
#[derive(serde::Serialize, serde::Deserialize)]
struct SweepMeta {
    dataset: String,
    /// The per-stage modes (`rules`, `llm`, `gold/rules`, …).
    mode: String,
    /// The pipeline profile.
    #[serde(default)]
    profile: String,
    objective: String,
    pareto_x: String,
    pareto_y: String,
    defaults: Vec<(String, String)>,
    grid: Vec<String>,
    /// memform's build, the recorded answers and vectors read, and --tag labels (as in run.json).
    #[serde(default)]
    build: serde_json::Value,
    #[serde(default)]
    recorded: serde_json::Value,
    #[serde(default)]
    tags: serde_json::Value,
    /// False for `sweep --no-qa` (written only then; absent: true).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    qa: bool,
    /// The held-out check of a sweep with a split (written only then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    holdout: Option<memform::sweep::Holdout>,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn write_sweep(dir: &std::path::Path, rows: &[memform::sweep::Row], meta: &SweepMeta) -> Result<()> {
    let report = memform::sweep::SweepReport {
        dataset: &meta.dataset,
        mode: &meta.mode,
        objective: &meta.objective,
        pareto_x: &meta.pareto_x,
        pareto_y: &meta.pareto_y,
        defaults: meta.defaults.clone(),
        holdout: meta.holdout.as_ref(),
    };
    // sweep.json first: it makes the files memform's should the sweep die
    // while writing them (a later sweep into the directory replaces them).
    memform::sweep::check_out(dir)?;
    memform::rundir::write_json(&dir.join("sweep.json"), meta)?;
    memform::sweep::write_outputs(dir, rows, &report)?;
    Ok(())
}

fn cmd_sweep(args: SweepArgs) -> Result<ExitCode> {
    if let Some(SweepCommand::Merge { dirs, out }) = args.merge {
        let metas: Vec<SweepMeta> = dirs
            .iter()
            .map(|d| {
                let p = d.join("sweep.json");
                let text = std::fs::read_to_string(&p).with_context(|| format!("read {}", p.display()))?;
                serde_json::from_str(&text).with_context(|| format!("parse {}", p.display()))
            })
            .collect::<Result<_>>()?;
        let Some(first) = metas.first() else { bail!("merge: no shard directories given") };
        if let Some((d, _)) = dirs.iter().zip(&metas).find(|(_, m)| m.holdout.is_some()) {
            bail!("merge: {} is a sweep with a held-out split, not a shard", d.display());
        }
        if let Some((d, _)) = dirs.iter().zip(&metas).find(|(_, m)| {
            m.grid != first.grid || m.dataset != first.dataset || m.mode != first.mode || m.profile != first.profile || m.qa != first.qa
        }) {
            bail!("merge: {} was swept over another grid, dataset, mode, profile or --no-qa than {}", d.display(), dirs[0].display());
        }
        memform::paths::check_out_dir("--out", &out, None)?;
        memform::sweep::check_out(&out)?;
        let refs: Vec<&std::path::Path> = dirs.iter().map(PathBuf::as_path).collect();
        let rows = memform::sweep::read_rows(&refs)?;
        let _lock = memform::rundir::DirLock::acquire(&out)?;
        write_sweep(&out, &rows, first)?;
        eprintln!("merged {} points from {} shards into {}", rows.len(), dirs.len(), out.display());
        return Ok(ExitCode::SUCCESS);
    }
    let Some(dataset_dir) = args.dataset.clone() else { bail!("sweep: --dataset is required") };
    if args.grid.is_empty() {
        bail!("sweep: at least one --grid KEY=START:STOP:STEP or KEY=v1,v2 is required");
    }
    let cfg = args.config.load()?;
    cfg.validate()?;
    let tags = memform::provenance::parse_tags(&args.tag)?;
    // The grid is counted before its values are checked: a grid too large is refused at once.
    let (axes, total) = memform::sweep::parse_grid(&args.grid, args.max_points)?;
    for w in memform::sweep::check_axes(&axes, &cfg.profile)? {
        eprintln!("warning: {w}");
    }
    let (px, py) = args.pareto.split_once(',').context("--pareto: expected METRIC_X,METRIC_Y")?;
    let (k, n) = match &args.shard {
        Some(s) => memform::sweep::parse_shard(s)?,
        None => (0, 1),
    };
    let points = memform::sweep::shard_points(&axes, k, n);
    memform::sweep::check_metrics(&args.objective, px.trim(), py.trim())?;
    let mut dataset = memform::dataset::load(&dataset_dir)?;
    memform::dataset::subset(&mut dataset, &args.subset.conversations, args.subset.limit)?;
    let split = match args.holdout_fraction {
        Some(f) => Some(memform::dataset::Split::Fraction { holdout: f, seed: args.split_seed }),
        None if !args.holdout_conversations.is_empty() || !args.tune_conversations.is_empty() => {
            Some(memform::dataset::Split::Named { tune: args.tune_conversations.clone(), holdout: args.holdout_conversations.clone() })
        }
        None => None,
    };
    if split.is_some() && args.shard.is_some() {
        bail!("sweep: a held-out split chooses on the whole grid: run it without --shard");
    }
    let halves = split.as_ref().map(|s| memform::dataset::split(&dataset, s)).transpose()?;
    let defaults: Vec<(String, String)> =
        axes.iter().map(|a| (a.key.clone(), cfg.value_of(&a.key).map(|v| v.to_string()).unwrap_or_default())).collect();
    let modes = args.modes.modes();
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("reports").join(format!("{}-sweep", dataset.name)));
    memform::paths::check_out_dir("--out", &out, Some(&dataset_dir))?;
    let _lock = memform::rundir::DirLock::acquire(&out)?;
    memform::sweep::check_out(&out)?;
    let mut cfg = cfg;
    let built = build_stages(modes, &args.stage, &mut cfg, &dataset_dir, &dataset, None, &record_run(&dataset_dir))?;
    let cfg = cfg;
    let stages = built.stages();
    let bar = ProgressBar::new(points.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} sweep [{bar:30}] {pos}/{len} points {elapsed} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    let pb = bar.clone();
    let done = move |_i: usize| pb.inc(1);
    let eb = bar.clone();
    let estimate = move |e: &memform::sweep::Estimate| {
        eprintln!("{}", e.describe());
        eb.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    };
    let hooks = memform::sweep::Hooks { done: Some(&done), estimate: Some(&estimate), no_qa: args.no_qa, full_runs: false };
    let tune = halves.as_ref().map_or(&dataset, |(t, _)| t);
    let work = || memform::sweep::run_sweep_with(tune, &cfg, stages, &points, &hooks);
    let (rows, shared) = match args.threads {
        Some(n) => rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build().context("start threads")?.install(work)?,
        None => work()?,
    };
    bar.finish_and_clear();
    let holdout = match (&split, &halves) {
        (Some(split), Some((tune, held_out))) => {
            let ids = |d: &memform::types::Dataset| d.conversations.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
            eprintln!(
                "held-out check: the best point on {} tune conversation(s), on {} held out",
                tune.conversations.len(),
                held_out.conversations.len()
            );
            let check = || memform::sweep::holdout_check(held_out, &cfg, stages, &rows, &args.objective, &defaults, args.no_qa);
            let (chosen, held) = match args.threads {
                Some(n) => rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build().context("start threads")?.install(check)?,
                None => check()?,
            };
            Some(memform::sweep::Holdout { split: split.clone(), tune: ids(tune), holdout: ids(held_out), chosen, rows: held })
        }
        _ => None,
    };
    let meta = SweepMeta {
        dataset: dataset.name.clone(),
        mode: modes.name(),
        profile: cfg.profile.clone(),
        objective: args.objective.clone(),
        pareto_x: px.trim().to_string(),
        pareto_y: py.trim().to_string(),
        defaults,
        grid: args.grid.iter().map(|g| memform::redact::urls_in(g)).collect(),
        build: memform::provenance::build_info(),
        recorded: built.digests.clone(),
        tags: memform::provenance::tags_value(&tags),
        qa: !args.no_qa,
        holdout,
    };
    write_sweep(&out, &rows, &meta)?;
    eprintln!(
        "swept {} of {total} points ({} front set(s), {} episode fronts computed once, {} conversation(s) formed, {} reused from decision traces, {} formed-memory QA evaluation(s)) into {}",
        rows.len(),
        shared.front_sets,
        shared.fronts_computed,
        shared.conversations_formed,
        shared.conversations_reused,
        shared.formed_qa_evaluated,
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn cmd_fixtures_check(dataset_dir: &std::path::Path, config: &ConfigArgs, stage: &StageArgs) -> Result<ExitCode> {
    let cfg = config.load()?;
    cfg.validate()?;
    let dataset = memform::dataset::load(dataset_dir)?;
    let keys = replay_for_keys(LLM, dataset_dir, &dataset, &cfg, stage)?;
    let dir = keys.fixtures_dir.context("llm replay without a fixture directory")?;
    let needed: std::collections::BTreeSet<String> = keys.llm_used.union(&keys.llm_missed).cloned().collect();
    let check = memform::llm::fixtures::fixtures_check(&dir, &needed)?;
    println!("fixtures: {} ({} needed)", dir.display(), needed.len());
    for k in &check.missing {
        println!("missing {k}");
    }
    for k in &check.unused {
        println!("unused {k}");
    }
    for (p, why) in &check.invalid {
        println!("invalid {}: {why}", p.display());
    }
    if check.is_clean() {
        eprintln!("fixtures check: clean");
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "fixtures check: {} missing, {} unused, {} invalid (re-record missing ones with `memform run --dataset {} --mode llm --llm record`)",
            check.missing.len(),
            check.unused.len(),
            check.invalid.len(),
            dataset_dir.display()
        );
        Ok(ExitCode::from(exit_code::FAILED))
    }
}

/// Both model stages asking the model (what `fixtures check` and `prune` replay).
const LLM: Modes = Modes { extract: StageMode::Llm, judge: StageMode::Llm };

/// The recorded keys a replay of a dataset needs.
struct ReplayKeys {
    fixtures_dir: Option<PathBuf>,
    /// LLM requests answered from fixtures, and those without one.
    llm_used: std::collections::BTreeSet<String>,
    llm_missed: std::collections::BTreeSet<String>,
    /// The embedding cache read (none for the hashed embedder) and the keys looked up.
    embed_dir: Option<PathBuf>,
    embed_used: std::collections::BTreeSet<String>,
}

/// Replays `dataset` in `mode` into a scratch directory, LLM misses
/// answered empty instead of failing (as `fixtures check` needs), and
/// returns the recorded keys it needed.
fn replay_for_keys(modes: Modes, dataset_dir: &std::path::Path, dataset: &Dataset, cfg: &Config, stage: &StageArgs) -> Result<ReplayKeys> {
    static SCRATCH: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let mut cfg = cfg.clone();
    let base =
        Modes { extract: if modes.extract == StageMode::Gold { StageMode::Gold } else { StageMode::Rules }, judge: StageMode::Rules };
    let mut built = build_stages(base, stage, &mut cfg, dataset_dir, dataset, None, &record_run(dataset_dir))?;
    let mut boundary = None;
    if modes.uses_llm() {
        let settings = LlmSettings::from_config_and_env(&cfg)?;
        let dir = stage.fixtures.clone().unwrap_or_else(|| default_fixtures_dir(&recorded_root(dataset_dir, dataset), &settings.model));
        let b = Arc::new(RecordedLlm::replay(memform::llm::FixtureStore::new(&dir)).collecting_misses());
        if modes.extract == StageMode::Llm {
            built.extractor = profiles::by_name(&cfg.profile)?.llm_extractor(b.clone(), &settings)?;
        }
        if modes.judge == StageMode::Llm {
            built.judge = profiles::by_name(&cfg.profile)?.llm_judge(b.clone(), &settings)?;
        }
        boundary = Some((dir, b));
    }
    let n = SCRATCH.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let scratch = std::env::temp_dir().join(format!("memform-replay-keys-{}-{n}", std::process::id()));
    let opts = RunOptions { out_dir: scratch.clone(), ..RunOptions::default() };
    let result = run(dataset, &cfg, built.stages(), &opts);
    let _ = std::fs::remove_dir_all(&scratch);
    result?;
    let stats = built.embedder.cache_stats();
    Ok(ReplayKeys {
        fixtures_dir: boundary.as_ref().map(|(d, _)| d.clone()),
        llm_used: boundary.as_ref().map(|(_, b)| b.used_keys()).unwrap_or_default(),
        llm_missed: boundary.as_ref().map(|(_, b)| b.missed_keys()).unwrap_or_default(),
        embed_dir: stats.as_ref().map(|s| s.dir.clone()),
        embed_used: stats.map(|s| s.used).unwrap_or_default(),
    })
}

/// `memform fixtures list|prune|rehash` and `memform embeddings list|prune|rehash`.
mod housekeeping {
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};
    use std::process::ExitCode;

    use anyhow::{Result, bail};
    use memform::housekeeping as hk;
    use memform::llm::LlmSettings;
    use memform::llm::fixtures::{FixtureStore, default_fixtures_dir};

    use super::{EmbeddingsCommand, FixturesCommand, recorded_root, replay_for_keys};

    /// A directory named on the command line, which must exist.
    fn given(dir: PathBuf) -> Result<Vec<PathBuf>> {
        if !dir.is_dir() {
            bail!("{}: not a directory", dir.display());
        }
        Ok(vec![dir])
    }

    /// The recorded roots to list: one dataset's, or every one under the working directory.
    fn roots(dataset: Option<&PathBuf>) -> Result<Vec<PathBuf>> {
        Ok(match dataset {
            Some(d) => vec![recorded_root(d, &memform::dataset::load(d)?)],
            None => hk::recorded_roots(Path::new("."))?,
        })
    }

    pub fn fixtures(command: FixturesCommand) -> Result<ExitCode> {
        match command {
            FixturesCommand::Check { .. } => bail!("fixtures check is dispatched elsewhere"),
            FixturesCommand::List { dataset, fixtures } => {
                let dirs = match fixtures {
                    Some(f) => given(f)?,
                    None => hk::fixture_dirs(&roots(dataset.as_ref())?)?,
                };
                let groups = hk::list_fixtures(&dirs)?;
                print!("{}", hk::render_fixture_groups(&groups));
                eprintln!("{} fixtures in {} directories", groups.iter().map(|g| g.count).sum::<usize>(), dirs.len());
                Ok(ExitCode::SUCCESS)
            }
            FixturesCommand::Rehash { dataset, fixtures } => {
                let dirs = match fixtures {
                    Some(f) => given(f)?,
                    None => hk::fixture_dirs(&roots(dataset.as_ref())?)?,
                };
                let (mut rewritten, mut unchanged, mut refused) = (0, 0, 0);
                for dir in &dirs {
                    let r = memform::llm::fixtures::rehash(dir)?;
                    for p in &r.rewritten {
                        println!("rehashed {}", p.display());
                    }
                    for (p, why) in &r.refused {
                        println!("refused {}: {why}", p.display());
                    }
                    rewritten += r.rewritten.len();
                    unchanged += r.unchanged;
                    refused += r.refused.len();
                }
                eprintln!("fixtures rehash: {rewritten} rewritten, {unchanged} unchanged, {refused} refused");
                Ok(if refused > 0 { ExitCode::from(2) } else { ExitCode::SUCCESS })
            }
            FixturesCommand::Prune { dataset, dry_run, config, stage } => {
                let cfg = config.load()?;
                cfg.validate()?;
                let ds = memform::dataset::load(&dataset)?;
                let keys = replay_for_keys(super::LLM, &dataset, &ds, &cfg, &stage)?;
                let settings = LlmSettings::from_config_and_env(&cfg)?;
                let dir = keys.fixtures_dir.clone().unwrap_or_else(|| default_fixtures_dir(&recorded_root(&dataset, &ds), &settings.model));
                let needed: BTreeSet<String> = keys.llm_used.union(&keys.llm_missed).cloned().collect();
                let check = memform::llm::fixtures::fixtures_check(&dir, &needed)?;
                if !check.missing.is_empty() {
                    let what = format!(
                        "{} needed fixtures are missing in {}, so the replay did not see every request a full run makes \
                         (another embedder or config than the recording? record them with `memform run --dataset {} --mode llm --llm record`)",
                        check.missing.len(),
                        dir.display(),
                        dataset.display()
                    );
                    if !dry_run {
                        bail!("fixtures prune: {what}; nothing removed");
                    }
                    eprintln!("warning: {what}; the list may be too long");
                }
                // A directory shared with other datasets: their recordings are
                // unused by this one's replay, yet not this dataset's to remove.
                let conversations: BTreeSet<String> = ds.conversations.iter().map(|c| c.id.clone()).collect();
                let elsewhere = memform::llm::fixtures::recorded_elsewhere(&dir, &check.unused, &conversations)?;
                if let Some((key, conv)) = elsewhere.first() {
                    bail!(
                        "fixtures prune: {} of the {} fixtures in {} that no run of {} needs were recorded from conversations it does not have \
                         (e.g. {key}.json, from conversation {conv:?}): the directory holds another dataset's recordings; \
                         prune it with each dataset it serves, or give each dataset its own --fixtures directory; nothing removed",
                        elsewhere.len(),
                        check.unused.len(),
                        dir.display(),
                        dataset.display()
                    );
                }
                let store = FixtureStore::new(&dir);
                for key in &check.unused {
                    let path = store.path_of(key);
                    let what = match store.get(key) {
                        Ok(Some(f)) => format!(
                            " ({} {} v{}, {}/{})",
                            f.request.stage.as_str(),
                            f.request.template.name,
                            f.request.template.version,
                            f.context.conversation,
                            f.context.episode
                        ),
                        _ => String::new(),
                    };
                    if dry_run {
                        println!("would remove {}{what}", path.display());
                    } else {
                        std::fs::remove_file(&path).map_err(|e| memform::error::Error::write(&path, e))?;
                        println!("removed {}{what}", path.display());
                    }
                }
                for (p, why) in &check.invalid {
                    eprintln!("warning: kept {} (cannot be read as a fixture: {why})", p.display());
                }
                eprintln!(
                    "fixtures prune: {} {} of {} in {} ({} needed)",
                    if dry_run { "would remove" } else { "removed" },
                    check.unused.len(),
                    check.unused.len() + needed.len() - check.missing.len(),
                    dir.display(),
                    needed.len()
                );
                Ok(ExitCode::SUCCESS)
            }
        }
    }

    pub fn embeddings(command: EmbeddingsCommand) -> Result<ExitCode> {
        match command {
            EmbeddingsCommand::List { dataset, cache } => {
                let dirs = match cache {
                    Some(c) => given(c)?,
                    None => hk::cache_dirs(&roots(dataset.as_ref())?)?,
                };
                let caches = hk::list_caches(&dirs)?;
                print!("{}", hk::render_caches(&caches));
                eprintln!("{} vectors in {} caches", caches.iter().map(|c| c.vectors).sum::<usize>(), caches.len());
                Ok(ExitCode::SUCCESS)
            }
            EmbeddingsCommand::Rehash { dataset, cache } => {
                let dirs = match cache {
                    Some(c) => given(c)?,
                    None => hk::cache_dirs(&roots(dataset.as_ref())?)?,
                };
                let mut changed = 0;
                for dir in &dirs {
                    match memform::embed::cache::rehash(dir)? {
                        Some(r) if r.changed => {
                            changed += 1;
                            println!("rehashed {} (was {})", r.dir.display(), r.from_format);
                        }
                        Some(_) => {}
                        None => eprintln!("warning: nothing recorded in {}", dir.display()),
                    }
                }
                eprintln!("embeddings rehash: {changed} of {} caches rewritten", dirs.len());
                Ok(ExitCode::SUCCESS)
            }
            EmbeddingsCommand::Prune { dataset, modes, dry_run, config, stage } => {
                let cfg = config.load()?;
                cfg.validate()?;
                let ds = memform::dataset::load(&dataset)?;
                let mut keep = BTreeSet::new();
                let mut cache = None;
                for m in modes.split(',') {
                    let mode = memform::pipeline::Modes::parse(m).map_err(|e| anyhow::anyhow!("--modes: {e}"))?;
                    let keys = replay_for_keys(mode, &dataset, &ds, &cfg, &stage)?;
                    if !keys.llm_missed.is_empty() {
                        bail!(
                            "embeddings prune: {} LLM answers are missing in {}, so the vectors LLM mode needs are unknown; \
                             record them, or prune with --modes rules; nothing removed",
                            keys.llm_missed.len(),
                            keys.fixtures_dir.as_deref().unwrap_or(Path::new("?")).display()
                        );
                    }
                    let Some(dir) = keys.embed_dir else {
                        bail!(
                            "embeddings prune: the {} embedder has no recorded cache (pass --embedder minilm|ollama|openai)",
                            stage.embedder.as_deref().unwrap_or(&cfg.embedder)
                        );
                    };
                    cache = Some(dir);
                    keep.extend(keys.embed_used);
                }
                let Some(dir) = cache else { bail!("--modes: no mode given") };
                let removed = memform::embed::cache::prune(&dir, &keep, dry_run)?;
                for (key, text) in &removed {
                    println!("{} {key} {text:?}", if dry_run { "would remove" } else { "removed" });
                }
                eprintln!(
                    "embeddings prune: {} {} vectors from {} ({} needed)",
                    if dry_run { "would remove" } else { "removed" },
                    removed.len(),
                    dir.display(),
                    keep.len()
                );
                Ok(ExitCode::SUCCESS)
            }
        }
    }
}

/// One variant of a comparison: a profile and its per-stage modes.
#[derive(Debug, Clone, PartialEq)]
struct Variant {
    profile: String,
    modes: Modes,
}

/// The variants `--variants`, or `--profiles` × `--modes`, name; the first is the baseline.
fn compare_variants(args: &CompareArgs, config_profile: &str) -> Result<Vec<Variant>> {
    let list = |s: &str| -> Vec<String> { s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect() };
    let modes = |m: &str| Modes::parse(m).map_err(|e| anyhow::anyhow!("--modes: {e}"));
    let profile = |p: &str, flag: &str| -> Result<String> {
        Ok(profiles::by_name(p).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?.name().to_string())
    };
    let out = if let Some(v) = &args.variants {
        list(v)
            .iter()
            .map(|item| {
                let (p, m) =
                    item.split_once(':').with_context(|| format!("--variants: {item:?}: expected PROFILE:MODES, e.g. soda:gold/rules"))?;
                Ok(Variant {
                    profile: profile(p.trim(), "--variants")?,
                    modes: Modes::parse(m).map_err(|e| anyhow::anyhow!("--variants: {e}"))?,
                })
            })
            .collect::<Result<Vec<_>>>()?
    } else {
        let profs = match &args.profiles {
            Some(p) => list(p).iter().map(|p| profile(p, "--profiles")).collect::<Result<Vec<_>>>()?,
            None => vec![config_profile.to_string()],
        };
        let default_modes = if profs.len() > 1 { "rules" } else { "rules,llm" };
        let ms = list(args.modes.as_deref().unwrap_or(default_modes)).iter().map(|m| modes(m)).collect::<Result<Vec<_>>>()?;
        profs.iter().flat_map(|p| ms.iter().map(move |m| Variant { profile: p.clone(), modes: *m })).collect()
    };
    if out.len() < 2 {
        bail!("compare: expected at least two variants (got {}): give two or more --modes, --profiles or --variants", out.len());
    }
    if out.len() > 26 {
        bail!("compare: at most 26 variants (got {})", out.len());
    }
    Ok(out)
}

/// The label of one side of a comparison, as compare.md shows it.
fn side_label(variant: &Variant, show_profile: bool, sets: &[String], embedder: Option<&str>) -> String {
    let mut label = if show_profile { format!("{}:{}", variant.profile, variant.modes.name()) } else { variant.modes.name() };
    if let Some(e) = embedder {
        label.push_str(&format!("+embedder={e}"));
    }
    for s in sets {
        label.push('+');
        // The label is printed: no URL's password.
        label.push_str(&memform::redact::urls_in(s.trim()));
    }
    label
}

/// The run directories a `compare.json` in `out` compared, if there is one.
fn compared_dirs(out: &std::path::Path) -> Option<Vec<String>> {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("compare.json")).ok()?).ok()?;
    let dir = |r: &serde_json::Value| r.get("dir").and_then(|d| d.as_str()).map(str::to_string);
    match v.get("variants").and_then(|x| x.as_array()) {
        Some(vs) => vs.iter().map(dir).collect(),
        None => Some(vec![dir(v.get("a")?)?, dir(v.get("b")?)?]),
    }
}

/// An error when `out` holds a comparison of other runs than `dirs` (as
/// `compare.json` names them, relative to `out`), unless `force`.
fn check_same_comparison(out: &std::path::Path, dirs: &[PathBuf], force: bool) -> Result<()> {
    let Some(old) = compared_dirs(out) else { return Ok(()) };
    let new: Vec<String> = dirs.iter().map(|d| memform::compare::relative_dir(d, out)).collect();
    if old != new && !force {
        bail!(
            "{}: holds a comparison of {} already; pass --force to replace it, or --out another directory",
            out.join("compare.json").display(),
            old.join(" vs ")
        );
    }
    Ok(())
}

/// `memform compare RUN_DIR RUN_DIR…`: finished runs compared as they are.
fn cmd_compare_runs(args: &CompareArgs) -> Result<ExitCode> {
    if args.runs.len() < 2 {
        bail!("compare: give at least two run directories (the first is the baseline)");
    }
    let mut runs = Vec::new();
    let mut locks = Vec::new();
    for dir in &args.runs {
        if !dir.join("run.json").is_file() {
            return Err(memform::error::Error::input(dir, "not a run directory (no run.json)").into());
        }
        locks.push(memform::rundir::DirLock::acquire(dir)?);
        // Complete runs only, as the gate reads them.
        runs.push(memform::gate::read_run(dir)?);
    }
    let mut labels: Vec<String> = runs.iter().map(|r| r.mode.clone()).collect();
    if labels.iter().enumerate().any(|(i, l)| labels[..i].contains(l)) {
        labels =
            args.runs.iter().map(|d| d.file_name().map_or_else(|| d.display().to_string(), |n| n.to_string_lossy().into_owned())).collect();
    }
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("reports").join(format!("{}-compare", runs[0].dataset_name)));
    memform::paths::check_out_dir("--out", &out, None)?;
    memform::compare::check_out(&out)?;
    check_same_comparison(&out, &args.runs, args.force)?;
    let compared: Vec<memform::compare::Side> =
        labels.into_iter().zip(&args.runs).map(|(label, dir)| memform::compare::Side { label, dir: dir.clone() }).collect();
    let opts = memform::compare::CompareOptions { resamples: args.resamples, seed: args.seed };
    let (json, summary) = compare_and_write(&compared, &out, opts, locks, &[])?;
    print_result(args.json, &json, &summary);
    eprintln!("wrote {} and {}", out.join("compare.json").display(), out.join("compare.md").display());
    Ok(ExitCode::SUCCESS)
}

/// stdout: the JSON with `--json` or when stdout is not a terminal (a
/// pipe, a file: scripts read it), else a short summary for a person.
fn print_result(json_flag: bool, json: &str, summary: &[String]) {
    use std::io::IsTerminal as _;
    if json_flag || !std::io::stdout().is_terminal() {
        println!("{json}");
    } else {
        for line in summary {
            println!("{line}");
        }
        println!("(the full result: --json, or the files below)");
    }
}

fn cmd_compare(args: CompareArgs) -> Result<ExitCode> {
    if !args.runs.is_empty() {
        return cmd_compare_runs(&args);
    }
    let Some(dataset_dir) = args.dataset.clone() else { bail!("compare: --dataset or run directories are required") };
    let variants = compare_variants(&args, &args.config.load()?.profile)?;
    let show_profile = variants.iter().any(|v| v.profile != variants[0].profile);
    let tags = memform::provenance::parse_tags(&args.tag)?;
    let mut dataset = memform::dataset::load(&dataset_dir)?;
    memform::dataset::subset(&mut dataset, &args.subset.conversations, args.subset.limit)?;
    memform::compare::check_bootstrap(dataset.conversations.iter().map(|c| c.episodes.len()).sum(), args.resamples)?;
    let runs_dir = args.runs_dir.clone().unwrap_or_else(|| PathBuf::from("reports"));
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("reports").join(format!("{}-compare", dataset.name)));
    memform::paths::check_out_dir("--out", &out, Some(&dataset_dir))?;
    memform::paths::check_out_dir("--runs-dir", &runs_dir, Some(&dataset_dir))?;
    memform::compare::check_out(&out)?;
    let mut sides = Vec::new();
    let none: Vec<String> = Vec::new();
    for (i, variant) in variants.iter().enumerate() {
        let (sets, flag) = match i {
            0 => (&args.set_a, "--set-a"),
            1 => (&args.set_b, "--set-b"),
            _ => (&none, ""),
        };
        let mut cfg = args.config.load()?;
        cfg.profile = variant.profile.clone();
        for s in sets {
            cfg.set_from(flag, s)?;
        }
        cfg.set_write_mode(args.write_mode);
        cfg.validate()?;
        let label = side_label(variant, show_profile, sets, args.stage.embedder.as_deref());
        let overrides: Vec<String> = args.config.set.iter().chain(sets.iter()).cloned().collect();
        let embedder = args.stage.embedder.as_deref().unwrap_or(&cfg.embedder);
        let dir_name = memform::names::run_dir_name(&dataset.name, &variant.profile, &variant.modes.slug(), embedder, &overrides);
        if let Some((_, _, other, _, _)) = sides.iter().find(|s: &&(Modes, Config, String, PathBuf, Built)| s.2 == label) {
            bail!("two variants are both {other:?}: give different modes or profiles, or --set-a/--set-b to vary the config");
        }
        let built = build_stages(variant.modes, &args.stage, &mut cfg, &dataset_dir, &dataset, None, &record_run(&dataset_dir))?;
        sides.push((variant.modes, cfg, label, runs_dir.join(dir_name), built));
    }
    check_same_comparison(&out, &sides.iter().map(|s| s.3.clone()).collect::<Vec<_>>(), args.force)?;
    if !args.calibration.is_empty() && args.calibration.len() != sides.len() {
        bail!("--calibration: {} directories for {} variants (give one per variant, in order)", args.calibration.len(), sides.len());
    }
    let mut calibrations = Vec::new();
    for (i, (modes, cfg, label, dir, _)) in sides.iter().enumerate() {
        let cal = if args.calibrate {
            let input = read_pair_input(Some(&args.calibrate_pairs), args.calibrate_split, None, None)?;
            // The variant's run directory is `<dataset>-<slug>`.
            let run_name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let slug = run_name.strip_prefix(&format!("{}-", dataset.name)).unwrap_or(&run_name).to_string();
            let how = CalibrationRun {
                stage: &args.stage,
                out: runs_dir.join(format!("calibrate-{}-{slug}", input.name)),
                limits: memform::calibrate::Limits::default(),
                grids: Default::default(),
                no_curves: true,
                threads: args.threads,
                tags: tags.clone(),
            };
            eprintln!("calibrating {label} on {} into {}", input.name, how.out.display());
            Some(run_calibration(&input, cfg.clone(), *modes, how).with_context(|| format!("calibrate {label}"))?)
        } else if let Some(dir) = args.calibration.get(i) {
            Some(memform::calibrate::read(dir).with_context(|| format!("--calibration {}", dir.display()))?)
        } else {
            None
        };
        if let Some(c) = cal {
            calibrations.push((label.clone(), c));
        }
    }
    let mut compared = Vec::new();
    // Both run directories stay locked until they are read.
    let mut locks = Vec::new();
    for (_, mut cfg, label, dir, mut built) in sides {
        let lock = Arc::new(memform::rundir::DirLock::acquire(&dir)?);
        locks.push(lock.clone());
        let stages = built.stages();
        // A run is reused when its manifest matches on everything but where
        // the dataset was read from: config, stages, build, recorded digests, tags.
        let manifest = Manifest::with(&dataset, &cfg, stages, &built.recorded, None, built.digests.clone(), tags.clone()).to_value()?;
        let mut expected = manifest.as_object().cloned().unwrap_or_default();
        expected.remove("dataset");
        expected.insert("dataset.digest".into(), dataset.digest.clone().into());
        if !args.rerun && memform::compare::reusable(&dir, &expected) {
            eprintln!("reusing {} ({label}: its run.json matches)", dir.display());
        } else {
            eprintln!("running {label} into {}", dir.display());
            let opts = RunOptions {
                out_dir: dir.clone(),
                threads: args.threads,
                recorded: built.recorded.clone(),
                dataset_path: Some(dataset_dir.clone()),
                digests: built.digests.clone(),
                tags: tags.clone(),
                lock: Some(lock.clone()),
                ..RunOptions::default()
            };
            let result = run(&dataset, &cfg, stages, &opts);
            cfg.external_runtime = Default::default();
            let proxy = finish_proxy(&mut built);
            built.embedder.flush()?;
            result.with_context(|| format!("run {label}"))?;
            proxy.with_context(|| format!("run {label}"))?;
            if args.stage.llm == "record" || args.stage.embed == "record" {
                finish_recording(&built, &dir, &lock)?;
            }
        }
        compared.push(memform::compare::Side { label, dir });
    }
    let opts = memform::compare::CompareOptions { resamples: args.resamples, seed: args.seed };
    let (json, summary) = compare_and_write(&compared, &out, opts, locks, &calibrations)?;
    print_result(args.json, &json, &summary);
    eprintln!("wrote {} and {}", out.join("compare.json").display(), out.join("compare.md").display());
    Ok(ExitCode::SUCCESS)
}
