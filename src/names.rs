//! Names a run's modules agree on, at the bottom of the run, QA and metrics
//! group so each can name the others' outputs without importing them: the
//! QA evaluation's sources and summary metric names, and the files a run
//! directory holds beside `run.json` (the reports and the QA rows).

/// The QA evaluation's three sources, in report order.
pub const SOURCES: [&str; 3] = ["formed", "raw_turns", "raw_sessions"];

/// The QA source of an external system's own search (`qa_system_*`): rows
/// only for a run of a profile built on the adapter protocol.
pub const SYSTEM_SOURCE: &str = "system";

/// The QA ablation and ceiling sources a run adds beside the three: the
/// raw turns that yielded a fact (`selected_turns`, `qa_selected_turns_*`)
/// and, when the dataset has gold facts, those facts as the memory
/// (`gold_facts`, `qa_gold_facts_*`).
pub const EXTRA_SOURCES: [&str; 2] = ["selected_turns", "gold_facts"];

/// Every QA source in row order: [`SOURCES`], the system's, [`EXTRA_SOURCES`].
pub const ROW_ORDER: [&str; 6] = ["formed", "raw_turns", "raw_sessions", SYSTEM_SOURCE, "selected_turns", "gold_facts"];

/// The QA evaluation's numeric summary keys (`qa::summary_metrics`: what a
/// sweep point reports and `--objective` may name).
pub fn qa_metric_names() -> Vec<String> {
    let mut names = vec![
        "qa_evidence_unknown_turns".to_string(),
        "qa_items_excluded".to_string(),
        "qa_questions_empty".to_string(),
        // How many conversations the QA intervals resample (context).
        "qa_interval_clusters".to_string(),
    ];
    for source in SOURCES.into_iter().chain(EXTRA_SOURCES) {
        let prefix = if source == "formed" { "qa_".to_string() } else { format!("qa_{source}_") };
        for k in ["recall_any_at_1", "recall_any_at_5", "recall_any_at_10", "recall_all_at_5", "recall_all_at_10", "ndcg_any_at_5"] {
            names.push(format!("{prefix}{k}"));
        }
        for k in ["ndcg_any_at_10", "mrr", "items_scored", "items_indexed", "words_indexed"] {
            names.push(format!("{prefix}{k}"));
        }
        for w in [100, 200, 500, 1000] {
            names.push(format!("{prefix}recall_any_at_{w}w"));
        }
        for w in [100, 200, 500] {
            names.push(format!("{prefix}answer_in_{w}w"));
        }
        names.push(format!("{prefix}hit_holds_answer"));
        for k in [5, 10] {
            names.push(format!("{prefix}session_recall_any_at_{k}"));
            names.push(format!("{prefix}words_read_at_{k}"));
        }
        for k in [1, 5, 10] {
            names.push(format!("{prefix}chance_recall_any_at_{k}"));
        }
    }
    names
}

/// The files `memform calibrate` writes besides `run.json` and its curves'
/// charts (`curve-<key>.svg`).
pub const CALIBRATE_FILES: &[&str] =
    &["calibration.csv", "calibration.parquet", "curves.csv", "report.md", "summary.json", "calibration.json"];

/// Whether `name` is a calibration's curve chart (`curve-<key>.svg`).
pub fn is_curve_chart(name: &str) -> bool {
    name.strip_prefix("curve-").and_then(|n| n.strip_suffix(".svg")).is_some_and(|k| !k.is_empty() && !k.contains(['/', '\\']))
}

/// Files the QA evaluation adds to a run directory (`run --qa`).
pub const QA_FILES: &[&str] = &["qa.parquet", "qa.csv"];

/// Files the reports add to a run directory (removed before a re-run).
pub const REPORT_FILES: &[&str] = &[
    "facts.parquet",
    "facts.csv",
    "episodes.parquet",
    "episodes.csv",
    "per_conversation.csv",
    "report.md",
    "report.html",
    PLOT_STORED,
    PLOT_OUTCOMES,
    PLOT_VERDICTS,
    PLOT_WARNINGS,
    PLOT_SCORES,
    PLOT_QA,
];

pub const PLOT_STORED: &str = "plot_stored_facts.svg";
pub const PLOT_OUTCOMES: &str = "plot_outcomes.svg";
pub const PLOT_VERDICTS: &str = "plot_verdicts.svg";
pub const PLOT_WARNINGS: &str = "plot_warnings.svg";
pub const PLOT_SCORES: &str = "plot_precision_recall.svg";
pub const PLOT_QA: &str = "plot_qa_recall.svg";

/// The plots `report.md` links and `memform report` redraws.
pub const REPORT_PLOTS: &[&str] = &[PLOT_STORED, PLOT_OUTCOMES, PLOT_VERDICTS, PLOT_WARNINGS, PLOT_SCORES, PLOT_QA];

/// The one name a run's directory gets when none is given, by `run` and by
/// `compare` for each variant it runs: `<dataset>-<profile>-<modes>`, then
/// `-<embedder>` unless the embedder is the default `hashed`, then
/// `+KEY=VALUE` for each config override (`--set`, `--set-a`/`--set-b`).
/// Modes are spelled as `Modes::slug` gives them (`gold/rules` →
/// `gold-rules`); any other character outside `[A-Za-z0-9._=+-]` becomes `_`.
/// A URL in an override keeps no password.
pub fn run_dir_name(dataset: &str, profile: &str, modes_slug: &str, embedder: &str, sets: &[String]) -> String {
    let mut name = format!("{dataset}-{profile}-{modes_slug}");
    if embedder != "hashed" {
        name.push('-');
        name.push_str(embedder);
    }
    for s in sets {
        name.push('+');
        name.push_str(&crate::redact::urls_in(s.trim()));
    }
    name.chars().map(|c| if c.is_ascii_alphanumeric() || "._=+-".contains(c) { c } else { '_' }).collect()
}

#[cfg(test)]
mod run_dir_tests {
    use super::run_dir_name;

    #[test]
    fn one_scheme_names_every_run_directory() {
        assert_eq!(run_dir_name("locomo", "soda", "rules", "hashed", &[]), "locomo-soda-rules");
        assert_eq!(run_dir_name("locomo", "signet", "gold-rules", "minilm", &[]), "locomo-signet-gold-rules-minilm");
        assert_eq!(
            run_dir_name("x", "soda", "llm", "hashed", &["soda.near_dup_threshold=0.9".into(), " a b ".into()]),
            "x-soda-llm+soda.near_dup_threshold=0.9+a_b"
        );
        let with_url = run_dir_name("x", "soda", "llm", "openai", &["llm_url=http://u:secret@h/v1".into()]);
        assert!(!with_url.contains("secret"), "{with_url}");
        assert!(with_url.starts_with("x-soda-llm-openai+llm_url=http___"), "{with_url}");
    }
}
