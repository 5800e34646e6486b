//! The command line's grammar: every subcommand, flag and bound, parsed by
//! clap. No I/O here: `main.rs` acts on what this parses, and the
//! `cli_args` fuzz target (fuzz/) feeds arbitrary bytes to it.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use memform::config::WriteMode;

#[derive(Parser)]
#[command(name = "memform", version, about = "Offline evaluation harness for LLM-agent memory formation")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Replay a dataset through extract → resolve → dedupe → judge → write.
    Run(RunArgs),
    /// Print the default configuration as TOML: the shared keys and every
    /// profile's section, or with --profile the shared keys and that profile's.
    Config {
        /// Only this profile's section beside the shared keys.
        #[arg(long)]
        profile: Option<String>,
    },
    /// Compare a run's metrics with a baseline: exit 0 pass, 1 regression, 2 error.
    Gate(GateArgs),
    /// Sweep config keys over a grid, sharing extraction and embeddings across points.
    Sweep(SweepArgs),
    /// Recorded LLM answers: list, check, prune, rehash.
    Fixtures {
        #[command(subcommand)]
        command: FixturesCommand,
    },
    /// Recorded embedding vectors: list, prune, rehash.
    Embeddings {
        #[command(subcommand)]
        command: EmbeddingsCommand,
    },
    /// Run (or reuse) two configurations on one dataset and compare them: compare.json, compare.md.
    Compare(CompareArgs),
    /// List the pipeline profiles (`--profile NAME`), one line each.
    Profiles,
    /// Redraw a finished run's report.md and plots from its files (no pipeline work).
    Report {
        /// The run directory (holds run.json, summary.json, the frames and records).
        run_dir: PathBuf,
        /// A finished `memform calibrate` directory: report.md gets its "Decision quality" section.
        #[arg(long, value_name = "DIR")]
        calibration: Option<PathBuf>,
    },
    /// Measure the pipeline's decisions on labelled pairs (--pairs DIR, --sick FILE or --msrp FILE):
    /// outcomes, rates, per-threshold curves and recommended operating points.
    Calibrate(CalibrateArgs),
    /// Serve an OpenAI-compatible API on the loopback for an external memory system: chat answers
    /// recorded from --upstream or replayed from --fixtures, embeddings from memform's embedder.
    /// Prints its base URL (one line), serves until stdin reaches end of file or SIGINT/SIGTERM,
    /// then prints its figures (one JSON line); exit 2 when a request missed or failed.
    Proxy(ProxyArgs),
    /// The dreaming profile's explicit ontology extraction: each conversation through the profile's passes
    /// (its rules or gold dreamer, guards, caps and apply path); prints one JSON line per conversation and a
    /// total. A dry run by default: nothing is written.
    OntologyExtract(OntologyExtractArgs),
    /// The dreaming profile's capability registry: call one capability on a run's store, or list them.
    Dream {
        #[command(subcommand)]
        command: DreamCommand,
    },
}

/// `memform ontology-extract`.
#[derive(clap::Args, Clone)]
pub struct OntologyExtractArgs {
    /// Dataset directory.
    #[arg(long)]
    pub dataset: PathBuf,
    #[command(flatten)]
    pub subset: SubsetArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Write every operation the passes submitted, with its effect, to OUT/proposals.jsonl.
    #[arg(long, requires = "out")]
    pub write_proposals: bool,
    /// Write the applied graph (the ontology store) to OUT/store.sqlite.
    #[arg(long, requires = "out")]
    pub write_assertions: bool,
    /// Output directory (with --write-proposals or --write-assertions); not inside the dataset.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `memform dream`.
#[derive(Subcommand, Clone)]
pub enum DreamCommand {
    /// Call one capability (search_evidence, get_entity, apply_ontology_ops, …) on a run directory's
    /// store and print its JSON answer (one line). Exit 2: an unknown capability, an input its schema
    /// refuses, a store without the conversation.
    Tool {
        /// The capability's name (`memform dream tools` lists them).
        name: String,
        /// The input, a JSON object (its `agentId` names the conversation).
        #[arg(long, value_name = "JSON")]
        input: String,
        /// The run directory (its store.sqlite and run.json's config).
        #[arg(long, value_name = "RUN_DIR")]
        store: PathBuf,
        /// The conversation (the scope); default: the input's `agentId`.
        #[arg(long, value_name = "ID")]
        conversation: Option<String>,
    },
    /// Print the registry's manifest: each capability's name, description and input schema (JSON).
    Tools,
}

/// `memform proxy`.
#[derive(clap::Args, Clone)]
#[command(group(clap::ArgGroup::new("proxy_mode").required(true).args(["record", "replay"])))]
pub struct ProxyArgs {
    /// Forward what no fixture answers to --upstream and write it as a fixture.
    #[arg(long, requires = "upstream")]
    pub record: bool,
    /// Answer from --fixtures only; a miss is HTTP 500 naming the key.
    #[arg(long, conflicts_with = "upstream")]
    pub replay: bool,
    /// The upstream server's base URL (record): {URL}/v1/chat/completions is called.
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// The fixture directory.
    #[arg(long, value_name = "DIR")]
    pub fixtures: PathBuf,
    /// Loopback address to listen on (port 0: any free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    /// Embedder answering /v1/embeddings: hashed | minilm.
    #[arg(long, default_value = "hashed", value_parser = ["hashed", "minilm"])]
    pub embedder: String,
    /// replay | record: MiniLM's recorded vectors (--embed-cache); hashed needs no cache.
    #[arg(long, default_value = "replay", value_parser = ["replay", "record"])]
    pub embed: String,
    /// MiniLM's embedding cache directory (as a run's DATASET/embeddings).
    #[arg(long, value_name = "DIR")]
    pub embed_cache: Option<PathBuf>,
    /// MiniLM model directory (record only).
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
    /// Dimensions of the hashed embedder's vectors (default 256).
    #[arg(long, value_parser = ranged(memform::limits::EMBED_DIMS))]
    pub embed_dims: Option<usize>,
    /// Key normalisation rule set: none | mem0 | dates (docs/adapters.md).
    #[arg(long, default_value = "none", value_parser = ["none", "mem0", "dates"])]
    pub normalise: String,
    /// Largest request body in bytes (1024..=67108864).
    #[arg(long, default_value_t = 4 << 20, value_parser = clap::value_parser!(u64).range(1024..=64 << 20))]
    pub max_request_bytes: u64,
    /// Requests served at once (1..=256).
    #[arg(long, default_value_t = 8, value_parser = ranged(1..=256))]
    pub max_concurrency: usize,
    /// Seconds a client has to send a request (1..=600).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub read_timeout_secs: u64,
    /// Seconds one upstream call may take (1..=3600).
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub upstream_timeout_secs: u64,
    /// Most texts in one embeddings request (1..=65536).
    #[arg(long, default_value_t = 2048, value_parser = ranged(1..=65_536))]
    pub max_embed_inputs: usize,
}

/// The configuration every command that runs the pipeline takes.
#[derive(clap::Args, Clone)]
pub struct ConfigArgs {
    /// TOML file of config overrides.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Override one config key (repeatable): --set soda.near_dup_threshold=0.9
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// The pipeline profile (`memform profiles` lists them); overrides the config's `profile`.
    #[arg(long)]
    pub profile: Option<String>,
    /// An external system's adapter command (`--profile external`; docs/adapters.md): sets `external.adapter`.
    #[arg(long, value_name = "CMD")]
    pub adapter: Option<String>,
}

#[derive(Subcommand)]
pub enum FixturesCommand {
    /// Replay a dataset in LLM mode without failing on misses, then list the
    /// fixtures it needed but lacks and those it did not need. Exit 1 when
    /// anything is missing, unused or unreadable.
    Check {
        #[arg(long)]
        dataset: PathBuf,
        #[command(flatten)]
        config: ConfigArgs,
        #[command(flatten)]
        stage: StageArgs,
    },
    /// Per fixture directory, model and stage: count, size on disk, oldest and
    /// newest recording (every dataset under datasets/ and locomo-fixtures/ by default).
    List {
        #[arg(long)]
        dataset: Option<PathBuf>,
        /// One fixture directory instead.
        #[arg(long)]
        fixtures: Option<PathBuf>,
    },
    /// Remove the fixtures no request of a replay of the dataset needs (as
    /// `check` finds them; pass the embedder and config the runs use).
    Prune {
        #[arg(long)]
        dataset: PathBuf,
        /// List what would be removed; remove nothing.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        config: ConfigArgs,
        #[command(flatten)]
        stage: StageArgs,
    },
    /// Accept the recorded answers as they are now: write each fixture's
    /// answer_sha256 (after a deliberate edit, or for format-1 files).
    Rehash {
        #[arg(long)]
        dataset: Option<PathBuf>,
        /// One fixture directory instead.
        #[arg(long)]
        fixtures: Option<PathBuf>,
    },
}

// Parsed once per process: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub enum EmbeddingsCommand {
    /// Per cache (dataset and embedder): dims, vectors, size on disk, when
    /// written, integrity (every dataset under datasets/ and locomo-fixtures/ by default).
    List {
        #[arg(long)]
        dataset: Option<PathBuf>,
        /// One cache directory (DATASET/embeddings/<embedder>) instead.
        #[arg(long)]
        cache: Option<PathBuf>,
    },
    /// Remove the vectors no replay of the dataset in --modes needs (pass
    /// --embedder and the config the runs use).
    Prune {
        #[arg(long)]
        dataset: PathBuf,
        /// The modes whose runs' vectors are kept.
        #[arg(long, default_value = "rules,llm")]
        modes: String,
        /// List what would be removed; remove nothing.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        config: ConfigArgs,
        #[command(flatten)]
        stage: StageArgs,
    },
    /// Accept a cache as it is now: write its integrity record (after a
    /// deliberate edit, or for a format-1 cache).
    Rehash {
        #[arg(long)]
        dataset: Option<PathBuf>,
        /// One cache directory (DATASET/embeddings/<embedder>) instead.
        #[arg(long)]
        cache: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub merge: Option<SweepCommand>,
    /// Dataset directory.
    #[arg(long)]
    pub dataset: Option<PathBuf>,
    #[command(flatten)]
    pub subset: SubsetArgs,
    /// KEY=START:STOP:STEP (inclusive) or KEY=v1,v2,… (repeatable; axes multiply).
    #[arg(long = "grid", value_name = "SPEC")]
    pub grid: Vec<String>,
    #[command(flatten)]
    pub modes: ModeArgs,
    /// The metric the best point maximises.
    #[arg(long, default_value = "turn_f1")]
    pub objective: String,
    /// The two metrics of the Pareto front (both higher-is-better).
    #[arg(long, default_value = "content_precision,content_recall")]
    pub pareto: String,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Output directory (default: reports/<dataset>-sweep).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run only slice K of N (0-based), e.g. from JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID.
    #[arg(long)]
    pub shard: Option<String>,
    /// Worker threads (default: one per core; 1..=1024).
    #[arg(long, value_parser = threads_arg())]
    pub threads: Option<usize>,
    /// Refuse a grid of more points than this (the product of the axes; 1..=1000000).
    #[arg(long, default_value_t = memform::limits::DEFAULT_MAX_POINTS, value_parser = ranged(memform::limits::MAX_POINTS))]
    pub max_points: usize,
    /// Skip the retrieval (QA) evaluation: the rows have no qa_* metrics.
    #[arg(long)]
    pub no_qa: bool,
    /// Hold these conversations out (comma-separated ids): the grid runs on
    /// the others (or on --tune-conversations), the best point is chosen
    /// there, and it is reported on these (sweep.md's held-out check).
    #[arg(long, value_delimiter = ',', value_name = "ID,ID")]
    pub holdout_conversations: Vec<String>,
    /// Run the grid on only these conversations (alone: every other one is held out).
    #[arg(long, value_delimiter = ',', value_name = "ID,ID")]
    pub tune_conversations: Vec<String>,
    /// Hold out this fraction of the conversations (0 < F < 1, at least one
    /// on each side), chosen by a hash of their ids and --split-seed.
    #[arg(long, value_name = "F", conflicts_with_all = ["holdout_conversations", "tune_conversations"])]
    pub holdout_fraction: Option<f64>,
    /// The seed of --holdout-fraction's choice.
    #[arg(long, default_value_t = 0, requires = "holdout_fraction")]
    pub split_seed: u64,
    /// A label recorded in sweep.json (repeatable): --tag experiment=thresholds
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tag: Vec<String>,
    #[command(flatten)]
    pub stage: StageArgs,
}

#[derive(Subcommand)]
pub enum SweepCommand {
    /// Join shard outputs into the files an unsharded sweep writes.
    Merge {
        /// Shard output directories.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(clap::Args)]
pub struct GateArgs {
    /// Baseline file (memform-baseline/1 JSON).
    #[arg(long)]
    pub baseline: PathBuf,
    /// Run directory (holds run.json and summary.json); repeat for several runs.
    #[arg(long, required = true)]
    pub run: Vec<PathBuf>,
    /// TOML rules (`[metrics.NAME] direction = "higher"|"lower"|"both", abs_tol, rel_tol`); default rules otherwise.
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// Compare even when the run's dataset digest differs from the baseline's.
    #[arg(long)]
    pub allow_dataset_change: bool,
    /// Write the run's metrics into the baseline (under its mode) instead of checking.
    #[arg(long)]
    pub update_baseline: bool,
    /// With --update-baseline: accept a run of another dataset than the baseline's.
    #[arg(long, requires = "update_baseline")]
    pub force: bool,
    /// Fail (exit 1) when a run differs from its baseline entry's run in profile, modes, embedder,
    /// config, dataset or memform version (otherwise a warning naming what differs).
    #[arg(long, conflicts_with = "update_baseline")]
    pub strict: bool,
    /// Also write the verdict as JUnit XML: a test suite per run, a test case per ruled metric.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// text: the table per run; github: workflow annotations (::error per regression), then the tables.
    #[arg(long, value_enum, default_value = "text")]
    pub format: GateFormat,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GateFormat {
    Text,
    Github,
}

#[derive(clap::Args)]
pub struct CompareArgs {
    /// Finished run directories to compare as they are, the first the baseline: no run is made,
    /// an incomplete run is refused (instead of --dataset and the variants).
    #[arg(value_name = "RUN_DIR", conflicts_with_all = ["dataset", "modes", "profiles", "variants", "set_a", "set_b", "rerun", "runs_dir", "calibrate", "conversations", "limit"])]
    pub runs: Vec<PathBuf>,
    /// Dataset directory (native format or LoCoMo JSON; detected).
    #[arg(long, required_unless_present = "runs")]
    pub dataset: Option<PathBuf>,
    /// Replace a comparison of other runs already in --out (otherwise refused).
    #[arg(long)]
    pub force: bool,
    /// Print the comparison as JSON on stdout (the default when stdout is not a terminal).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub subset: SubsetArgs,
    /// The variants' per-stage modes, the first the baseline: MODE or EXTRACT/JUDGE, comma-separated
    /// (`rules,gold/rules,rules/llm`; default `rules,llm`, or `rules` with several --profiles).
    /// The uplift of each variant is against the first; `rules,rules` with --set-b compares two configs.
    #[arg(long, conflicts_with = "variants")]
    pub modes: Option<String>,
    /// The profiles to compare, comma-separated (default: the config's); with --modes, every profile
    /// runs every mode (profiles outer, modes inner).
    #[arg(long, conflicts_with = "variants")]
    pub profiles: Option<String>,
    /// Explicit variants PROFILE:MODES, comma-separated (`soda:rules,signet:llm`), the first the baseline.
    #[arg(long)]
    pub variants: Option<String>,
    /// The config for both runs.
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Override one config key for the first variant (A) only (repeatable).
    #[arg(long = "set-a", value_name = "KEY=VALUE")]
    pub set_a: Vec<String>,
    /// Override one config key for the second variant (B) only (repeatable).
    #[arg(long = "set-b", value_name = "KEY=VALUE")]
    pub set_b: Vec<String>,
    /// The write mode of both runs.
    #[arg(long, value_enum, default_value = "full")]
    pub write_mode: WriteMode,
    /// Where compare.json and compare.md go (default: reports/<dataset>-compare).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Where the two runs go (default: reports/); a run whose run.json matches is reused.
    #[arg(long)]
    pub runs_dir: Option<PathBuf>,
    /// Run both even when a matching run exists.
    #[arg(long)]
    pub rerun: bool,
    /// Bootstrap resamples (0..=100000; 0: no intervals).
    #[arg(long, default_value_t = memform::limits::DEFAULT_RESAMPLES, value_parser = ranged(memform::limits::RESAMPLES))]
    pub resamples: usize,
    /// Bootstrap seed.
    #[arg(long, default_value_t = memform::limits::DEFAULT_SEED)]
    pub seed: u64,
    /// Worker threads per run (default: one per core; 1..=1024).
    #[arg(long, value_parser = threads_arg())]
    pub threads: Option<usize>,
    /// A label recorded in both runs' run.json (repeatable); a run is reused only with the same tags.
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tag: Vec<String>,
    /// Also calibrate each variant on labelled pairs (--calibrate-pairs, --calibrate-split; no curves)
    /// into --runs-dir, and add a "Decision quality" section to compare.md.
    #[arg(long)]
    pub calibrate: bool,
    /// The pair set --calibrate reads.
    #[arg(long, default_value = "datasets/pairs")]
    pub calibrate_pairs: PathBuf,
    /// Which halves of the pair set --calibrate reads.
    #[arg(long, value_enum, default_value = "test")]
    pub calibrate_split: SplitArg,
    /// Finished `memform calibrate` directories, one per variant in order, for the "Decision quality" section.
    #[arg(long = "calibration", value_name = "DIR", conflicts_with = "calibrate")]
    pub calibration: Vec<PathBuf>,
    #[command(flatten)]
    pub stage: StageArgs,
}

#[derive(clap::Args)]
pub struct CalibrateArgs {
    /// The labelled pair set: a directory holding tune.jsonl and test.jsonl (datasets/pairs).
    #[arg(long, conflicts_with_all = ["sick", "msrp"], required_unless_present_any = ["sick", "msrp"])]
    pub pairs: Option<PathBuf>,
    /// Which halves of --pairs to read.
    #[arg(long, value_enum, default_value = "all", requires = "pairs")]
    pub split: SplitArg,
    /// A SICK file in its published tab-separated layout (any split).
    #[arg(long, conflicts_with = "msrp")]
    pub sick: Option<PathBuf>,
    /// An MSRP file in its published tab-separated layout (any split).
    #[arg(long)]
    pub msrp: Option<PathBuf>,
    #[command(flatten)]
    pub modes: ModeArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Output directory (default: reports/calibrate-<pairs>-<profile>-<mode>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The recommendation's limit on the false merge rate (0..=1).
    #[arg(long, default_value_t = 0.05, value_parser = fraction)]
    pub max_false_merge: f64,
    /// The recommendation's limit on the false invalidation rate (0..=1).
    #[arg(long, default_value_t = 0.02, value_parser = fraction)]
    pub max_false_invalidation: f64,
    /// A curve's values: KEY=START:STOP:STEP or KEY=v1,v2,… (repeatable), instead of the key's default grid.
    #[arg(long = "grid", value_name = "SPEC")]
    pub grid: Vec<String>,
    /// Run the pairs once with the config; no curves.
    #[arg(long)]
    pub no_curves: bool,
    /// Worker threads (default: one per core; 1..=1024).
    #[arg(long, value_parser = threads_arg())]
    pub threads: Option<usize>,
    /// A label recorded in run.json (repeatable).
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tag: Vec<String>,
    #[command(flatten)]
    pub stage: StageArgs,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum SplitArg {
    Tune,
    Test,
    All,
}

/// A clap parser for a number within [0, 1].
fn fraction(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number"))?;
    if (0.0..=1.0).contains(&v) { Ok(v) } else { Err(format!("{v} is not within 0..=1")) }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Mode {
    Rules,
    Llm,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ExtractMode {
    Rules,
    Llm,
    /// The dataset's gold facts (the oracle).
    Gold,
}

/// The per-stage modes of a run: `--mode` sets both model stages, `--extract`
/// and `--judge` each one (and win over `--mode`).
#[derive(clap::Args, Clone)]
pub struct ModeArgs {
    /// Both model stages: rules | llm (shorthand for --extract M --judge M; default rules).
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// How stage 1 extracts: rules | llm | gold (the dataset's gold facts: the extraction oracle).
    #[arg(long, value_enum)]
    pub extract: Option<ExtractMode>,
    /// How stage 4 judges: rules | llm.
    #[arg(long, value_enum)]
    pub judge: Option<Mode>,
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// Dataset directory (native format or LoCoMo JSON; detected).
    #[arg(long)]
    pub dataset: PathBuf,
    /// Print summary.json on stdout (the default when stdout is not a terminal; a terminal gets a short summary).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub subset: SubsetArgs,
    #[command(flatten)]
    pub modes: ModeArgs,
    #[arg(long, value_enum, default_value = "full")]
    pub write_mode: WriteMode,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Output directory (default: reports/<dataset>-<profile>-<modes>[-<embedder>][+KEY=VALUE…], e.g.
    /// scenarios-soda-gold-rules). Its previous run files are replaced.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Skip a conversation that fails, count it, and exit 2 at the end.
    #[arg(long)]
    pub keep_going: bool,
    /// Worker threads (default: one per core; 1..=1024).
    #[arg(long, value_parser = threads_arg())]
    pub threads: Option<usize>,
    /// A label recorded in run.json (repeatable): --tag experiment=baseline
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tag: Vec<String>,
    /// Evaluate retrieval over the final store against the QA items, beside
    /// the raw-turn and raw-session baselines (qa.parquet, qa.csv, qa_*
    /// metrics). On by default when the dataset has QA items.
    #[arg(long, overrides_with = "no_qa")]
    pub qa: bool,
    /// Skip the retrieval evaluation.
    #[arg(long)]
    pub no_qa: bool,
    /// The QA items' evidence and answers: as the dataset gives them, or
    /// corrected by the LoCoMo audit (`--evidence-audit`; docs/metrics.md).
    #[arg(long, value_enum, default_value = "given")]
    pub evidence: EvidenceSource,
    /// The audit file `--evidence audited` applies (`make locomo-audit-data`).
    #[arg(long, value_name = "FILE", default_value = "data/locomo-audit/errors.json")]
    pub evidence_audit: PathBuf,
    /// A finished `memform calibrate` directory: report.md gets its "Decision quality" section.
    #[arg(long, value_name = "DIR")]
    pub calibration: Option<PathBuf>,
    #[command(flatten)]
    pub stage: StageArgs,
}

/// Which QA evidence a run scores.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvidenceSource {
    /// The dataset's own evidence turns and answers.
    Given,
    /// Corrected by an audit of the gold (LoCoMo's: `correct_evidence`, `correct_answer`).
    Audited,
}

/// How stages are built: embedder and LLM boundary.
#[derive(clap::Args, Clone)]
pub struct StageArgs {
    /// hashed | minilm | ollama | openai (default: the config's `embedder`, hashed).
    #[arg(long)]
    pub embedder: Option<String>,
    /// replay | record | live: recorded embedding vectors (replay needs no model).
    #[arg(long, default_value = "replay", value_parser = ["replay", "record", "live"])]
    pub embed: String,
    /// MiniLM model directory (`make models` fills models/all-MiniLM-L6-v2).
    #[arg(long)]
    pub model_dir: Option<PathBuf>,
    /// Base URL of an HTTP embedder.
    #[arg(long)]
    pub embed_url: Option<String>,
    /// Model name sent to an HTTP embedder.
    #[arg(long)]
    pub embed_model: Option<String>,
    /// Dimensions of an HTTP embedder's vectors (1..=65536).
    #[arg(long, value_parser = ranged(memform::limits::EMBED_DIMS))]
    pub embed_dims: Option<usize>,
    /// Embedding cache directory (default: DATASET/embeddings; for LoCoMo, locomo-fixtures/<name>/embeddings).
    #[arg(long)]
    pub embed_cache: Option<PathBuf>,
    /// replay | record | live: recorded LLM answers (llm mode; checked in every mode).
    #[arg(long, default_value = "replay", value_parser = ["replay", "record", "live"])]
    pub llm: String,
    /// Fixture directory (default: DATASET/fixtures/<model>; for LoCoMo, locomo-fixtures/<name>/fixtures/<model>).
    #[arg(long)]
    pub fixtures: Option<PathBuf>,
}

/// A clap parser for a `usize` within `range`.
/// A subset of the dataset's conversations (`run`, `compare`, `sweep`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SubsetArgs {
    /// Only these conversations (comma-separated ids, kept in the dataset's order).
    #[arg(long, value_delimiter = ',', value_name = "ID,ID")]
    pub conversations: Vec<String>,
    /// Only the first N conversations (after --conversations).
    #[arg(long, value_name = "N", value_parser = ranged(memform::limits::CONVERSATION_LIMIT))]
    pub limit: Option<usize>,
}

pub fn ranged(range: std::ops::RangeInclusive<u64>) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(range)
}

pub fn threads_arg() -> clap::builder::RangedU64ValueParser<usize> {
    ranged(memform::limits::THREADS)
}

/// Clap's rendered error as one `error:` line followed by its `Usage:` and
/// `For more information` lines.
pub fn one_line_clap_error(rendered: &str) -> String {
    let mut message = Vec::new();
    let mut hints = Vec::new();
    for line in rendered.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            hints.push(line);
        } else {
            let line = line.strip_prefix("error:").map_or(line, str::trim);
            message.push(if line.starts_with("tip:") { format!("({line})") } else { line.to_string() });
        }
    }
    let mut out = format!("error: {}\n", message.join(" "));
    for h in hints {
        out.push_str(h);
        out.push('\n');
    }
    out
}
