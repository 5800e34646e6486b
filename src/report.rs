//! A run's reports: the frames as Parquet and CSV, `per_conversation.csv`,
//! and `report.md` with SVG plots drawn by plotters. Everything here is a
//! function of the run's [`Analysis`] and manifest, so the same run gives
//! byte-identical reports; only the "Timings" section of `report.md` carries
//! wall-clock figures.

use std::fmt::Write as _;
use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::{
    BLACK, Cartesian2d, ChartBuilder, ChartContext, Circle, Color, DrawingArea, IntoDrawingArea, IntoFont, IntoSegmentedCoord,
    IntoTextStyle, LineSeries, PathElement, RGBColor, Rectangle, SVGBackend, SegmentValue, SeriesLabelPosition, Text, WHITE,
};
use plotters::style::text_anchor::{HPos, Pos, VPos};
use polars::prelude::{AnyValue, DataFrame, IntoLazy, SortMultipleOptions, col};
use serde_json::Value;

pub mod caveats;
pub mod explore;
pub mod html;

pub use explore::{Explore, Gold, Inputs};

use crate::error::{Error, Result};
use crate::metrics::{Analysis, Formula, METRICS, Needs};
use crate::pipeline::Config;
pub use crate::tables::{read_parquet, write_csv, write_parquet};

pub use crate::rundir::{PLOT_OUTCOMES, PLOT_QA, PLOT_SCORES, PLOT_STORED, PLOT_VERDICTS, PLOT_WARNINGS, REPORT_FILES};

/// Most stored facts shown as examples in `report.md` (three per conversation).
const EXAMPLES: usize = 24;

/// Writes every report file of a run into `dir`. `manifest` is the run's
/// `run.json`.
pub fn write_run_reports(dir: &Path, manifest: &Value, analysis: &Analysis) -> Result<()> {
    write_run_reports_with(dir, manifest, analysis, &[])
}

/// [`write_run_reports`] with extra sections (Markdown, each starting with
/// its `## ` heading) put into `report.md` before its files and timings.
/// The gold labels are read from the dataset `run.json` names
/// ([`Gold::from_manifest`]).
pub fn write_run_reports_with(dir: &Path, manifest: &Value, analysis: &Analysis, sections: &[String]) -> Result<()> {
    let gold = Gold::from_manifest(manifest, &explore::ran_episodes(analysis));
    write_run_reports_gold(dir, manifest, analysis, sections, gold)
}

/// [`write_run_reports_with`] with the dataset's gold labels given (a run
/// has its dataset in memory).
pub fn write_run_reports_gold(dir: &Path, manifest: &Value, analysis: &Analysis, sections: &[String], gold: Gold) -> Result<()> {
    let inputs = Inputs::read(dir, gold)?;
    write_run_reports_inputs(dir, manifest, analysis, sections, inputs)
}

/// [`write_run_reports_gold`] with the inputs given (a run has its QA table
/// in memory, so `qa.parquet` is not read again).
pub fn write_run_reports_inputs(dir: &Path, manifest: &Value, analysis: &Analysis, sections: &[String], inputs: Inputs) -> Result<()> {
    write_tables(dir, analysis)?;
    for (name, text) in &report_files(manifest, analysis, sections, inputs)? {
        write_text(&dir.join(name), text)?;
    }
    Ok(())
}

/// [`write_run_reports_inputs`] that takes the analysis: its facts and
/// verdicts frames (on a long run, most of what it holds) are dropped once
/// `report.md` is drawn, before `report.html`, which reads the run's rows
/// from the [`Explore`] built from them. The same files; the summary back.
pub fn write_run_reports_taking(
    dir: &Path,
    manifest: &Value,
    mut analysis: Analysis,
    sections: &[String],
    inputs: Inputs,
) -> Result<crate::metrics::Summary> {
    // The tables are written while the rows, the plots and report.md are drawn.
    let (tables, drawn) = rayon::join(
        || write_tables(dir, &analysis),
        || -> Result<_> {
            let x = Explore::new(&analysis, inputs);
            // Its columns' copies and index are freed (crate::memory).
            crate::memory::release_free();
            let mut files = plots(&analysis)?;
            let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
            let md = render(manifest, &analysis, &names, sections, &x)?;
            files.push(("report.md", md));
            Ok((x, files))
        },
    );
    tables?;
    let (x, mut files) = drawn?;
    analysis.facts = DataFrame::empty();
    analysis.verdicts = DataFrame::empty();
    files.push((html::FILE, html::run_page(manifest, &analysis, &x)));
    for (name, text) in &files {
        write_text(&dir.join(name), text)?;
    }
    Ok(analysis.summary)
}

/// The run's tables: `facts`, `episodes` (Parquet and CSV), `per_conversation.csv`.
/// The facts' writers' buffers are freed on polars' threads: they are
/// returned before the next table is written (crate::memory).
fn write_tables(dir: &Path, analysis: &Analysis) -> Result<()> {
    write_parquet(&dir.join("facts.parquet"), &analysis.facts)?;
    crate::memory::release_free();
    write_csv(&dir.join("facts.csv"), &analysis.facts)?;
    crate::memory::release_free();
    write_parquet(&dir.join("episodes.parquet"), &analysis.episodes)?;
    write_csv(&dir.join("episodes.csv"), &analysis.episodes)?;
    write_csv(&dir.join("per_conversation.csv"), &analysis.per_conversation)
}

/// Writes `report.md`, `report.html` and the plots into `dir` (`memform
/// report` redraws them alone).
pub fn write_report_md(dir: &Path, manifest: &Value, analysis: &Analysis) -> Result<()> {
    write_report_md_with(dir, manifest, analysis, &[])
}

/// [`write_report_md`] with extra sections (see [`write_run_reports_with`]).
pub fn write_report_md_with(dir: &Path, manifest: &Value, analysis: &Analysis, sections: &[String]) -> Result<()> {
    let gold = Gold::from_manifest(manifest, &explore::ran_episodes(analysis));
    for (name, text) in &report_files(manifest, analysis, sections, Inputs::read(dir, gold)?)? {
        write_text(&dir.join(name), text)?;
    }
    Ok(())
}

/// `report.md`, `report.html` and the plots, drawn with no QA rows and the
/// gold labels of the dataset `run.json` names.
pub fn report_md_files(manifest: &Value, analysis: &Analysis, sections: &[String]) -> Result<Vec<(&'static str, String)>> {
    let gold = Gold::from_manifest(manifest, &explore::ran_episodes(analysis));
    report_files(manifest, analysis, sections, Inputs { qa: None, gold })
}

/// `report.md`, `report.html` and the plots, drawn: each file's name and
/// content, the plots first, `report.md` and `report.html` last.
pub fn report_files(manifest: &Value, analysis: &Analysis, sections: &[String], inputs: Inputs) -> Result<Vec<(&'static str, String)>> {
    let x = Explore::new(analysis, inputs);
    let mut files = plots(analysis)?;
    let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
    let md = render(manifest, analysis, &names, sections, &x)?;
    files.push(("report.md", md));
    files.push((html::FILE, html::run_page(manifest, analysis, &x)));
    Ok(files)
}

/// Writes `text` as the file `path` by a temporary file and a rename
/// (a symbolic link at `path` is refused: [`crate::rundir::write_with`]).
pub fn write_text(path: &Path, text: &str) -> Result<()> {
    crate::rundir::write_bytes(path, text.as_bytes())
}

// ---------------------------------------------------------------------------
// Cells.

/// A frame cell as report text: floats to three decimals, null as "–".
pub fn cell(df: &DataFrame, column: &str, row: usize) -> String {
    match df.column(column).and_then(|c| c.get(row)) {
        Ok(AnyValue::Float64(x)) => format!("{x:.3}"),
        Ok(AnyValue::Float32(x)) => format!("{x:.3}"),
        Ok(AnyValue::Int64(x)) => x.to_string(),
        Ok(AnyValue::Int32(x)) => x.to_string(),
        Ok(AnyValue::UInt32(x)) => x.to_string(),
        Ok(AnyValue::UInt64(x)) => x.to_string(),
        Ok(AnyValue::Boolean(b)) => if b { "yes" } else { "no" }.to_string(),
        Ok(AnyValue::String(s)) => md(s),
        Ok(AnyValue::StringOwned(s)) => md(s.as_str()),
        Ok(AnyValue::Null) | Err(_) => "–".to_string(),
        Ok(other) => md(&other.to_string()),
    }
}

/// Text safe inside a Markdown table cell.
pub fn md(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// A metric value of `summary.json` as report text.
pub fn num(v: Option<&Value>) -> String {
    match v {
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
        Some(Value::Number(n)) => format!("{:.3}", n.as_f64().unwrap_or(0.0)),
        Some(Value::String(s)) => md(s),
        Some(other) => md(&other.to_string()),
        None => "–".to_string(),
    }
}

/// A Markdown table.
pub fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out.push('\n');
}

fn s<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut v = v;
    for p in path {
        v = &v[*p];
    }
    v.as_str().unwrap_or("?")
}

// ---------------------------------------------------------------------------
// report.md

/// What each metric means, in a line (the full definitions are in docs/metrics.md).
pub fn meaning(key: &str) -> &'static str {
    match key {
        "episodes" => "episodes run",
        "turns" => "turns in those episodes",
        "candidates" => "facts extracted (after post-processing)",
        "stored_facts" => "candidates written as new facts",
        "live_facts" => "stored facts still live at the end",
        "judged_new" => "candidates discarded by a `new` verdict",
        "low_fact_confidence" => "candidates below the write confidence gate",
        "alias_merges" => "extracted entities merged into an existing one",
        "entities_created" => "new entities",
        "contradictions_judged" => "(candidate, live fact) pairs judged",
        "verdict_old" => "pairs where the candidate replaced the live fact",
        "verdict_new" => "pairs where the candidate was judged wrong or redundant",
        "verdict_neither" => "pairs where both stand",
        "invalidations" => "live facts invalidated (cascades included)",
        "closures" => "live facts given a validUntil",
        "review_needed" => "verdicts flagged for human review",
        "blocked" => "replacements the write mode blocked (candidates)",
        "warnings" => "extraction and judge warnings",
        "llm_calls" => "model calls",
        "prompt_tokens" => "model prompt tokens",
        "completion_tokens" => "model completion tokens",
        "fact_density" => "stored facts per episode",
        "facts_per_100_turns" => "stored facts per 100 turns",
        "dedup_rate" => "candidates dropped as exact or near duplicates",
        "exact_dup_rate" => "candidates dropped by content hash or s|p|o",
        "near_dup_rate" => "candidates dropped by embedding similarity",
        "duplicate_reduction" => "candidates removed as duplicates of a live memory",
        "noise_rejection_rate" => "candidates below the value-score floor",
        "entity_coherence" => "candidates linked to an entity that already existed",
        "entity_resolution_rate" => "stored facts whose entities resolved",
        "growth_rate" => "(stored − invalidated) / candidates",
        "fact_density_before" => "caller facts per observation",
        "fact_density_after" => "facts per observation after Extract",
        "title_quality" => "observations with a non-generic title",
        "turn_precision" => "stored facts' source turns that are gold evidence",
        "turn_recall" => "gold evidence turns that yielded a stored fact",
        "turn_f1" => "harmonic mean of turn precision and recall",
        "content_precision" => "stored facts matching a gold fact (lexical)",
        "content_recall" => "gold facts matched by a stored fact (lexical)",
        "content_f1" => "harmonic mean (lexical)",
        "content_precision_cosine" => "stored facts matching a gold fact (cosine)",
        "content_recall_cosine" => "gold facts matched by a stored fact (cosine)",
        "content_f1_cosine" => "harmonic mean (cosine)",
        "qa_evidence_coverage" => "QA evidence turns that yielded a live fact",
        "dedup_precision" => "duplicate links inside one gold group",
        "dedup_recall" => "expected duplicates caught",
        "dedup_f1" => "harmonic mean of dedup precision and recall",
        "judge_accuracy" => "labelled pairs judged right (of those judged)",
        "judge_accuracy_raw" => "the same, before the guards",
        "judge_coverage" => "labelled pairs the pipeline judged",
        "contradiction_accuracy" => "labelled pairs ending right (unjudged = both stand)",
        _ => "",
    }
}

/// The QA evaluation's sources: label, metric prefix, and what one indexed item is.
const QA_SOURCES: [(&str, &str, &str); 3] =
    [("formed memory", "qa_", "live facts"), ("raw turns", "qa_raw_turns_", "turns"), ("raw sessions", "qa_raw_sessions_", "sessions")];

/// The ablation and ceiling rows a run adds when it has them (`qa::EXTRA_SOURCES`).
const QA_EXTRA_SOURCES: [(&str, &str, &str); 2] = [
    ("ablation: raw turns that yielded a fact", "qa_selected_turns_", "turns"),
    ("ceiling: the gold facts as memory", "qa_gold_facts_", "gold facts"),
];

/// [`QA_SOURCES`] and the rows of [`QA_EXTRA_SOURCES`] the summary has.
fn qa_rows(m: &std::collections::BTreeMap<String, Value>) -> Vec<(&'static str, &'static str, &'static str)> {
    QA_SOURCES
        .iter()
        .chain(QA_EXTRA_SOURCES.iter().filter(|(_, p, _)| m.get(&format!("{p}recall_any_at_200w")).is_some_and(|v| !v.is_null())))
        .copied()
        .collect()
}

/// A QA figure with its clustered interval when the summary has one
/// (`0.447 [0.401, 0.493]`).
fn with_interval(m: &std::collections::BTreeMap<String, Value>, key: &str) -> String {
    let v = match m.get(key) {
        None | Some(Value::Null) => return "–".to_string(),
        v => num(v),
    };
    match m.get("qa_intervals").and_then(|i| i.get(key)).and_then(Value::as_array).map(|a| (a[0].as_f64(), a[1].as_f64())) {
        Some((Some(lo), Some(hi))) => format!("{v} [{lo:.3}, {hi:.3}]"),
        _ => v,
    }
}

/// A paired difference formed − raw turns, `+0.077 [+0.037, +0.108]`.
fn paired(m: &std::collections::BTreeMap<String, Value>, key: &str) -> String {
    let Some(d) = m.get("qa_formed_minus_raw_turns").and_then(|p| p.get(key)) else { return "–".to_string() };
    let f = |k: &str| d.get(k).and_then(Value::as_f64);
    match (f("diff"), f("lo"), f("hi")) {
        (Some(x), Some(lo), Some(hi)) => format!("{x:+.3} [{lo:+.3}, {hi:+.3}]"),
        (Some(x), _, _) => format!("{x:+.3}"),
        _ => "–".to_string(),
    }
}

/// The "Retrieval (QA)" section: the budgeted figures first (equal reading
/// cost, answer containment), with clustered intervals and the paired
/// difference formed − raw turns; then the k-based figures beside their
/// chance level, per category, the adversarial items apart, and the plot.
fn retrieval(o: &mut String, manifest: &Value, a: &Analysis, plots: &[&str]) {
    let m = &a.summary.metrics;
    if !m.contains_key("qa_recall_any_at_5") {
        return;
    }
    let get = |k: &str| m.get(k);
    let _ = writeln!(o, "## Retrieval (QA)\n");
    let clusters = get("qa_interval_clusters").and_then(Value::as_u64).unwrap_or(0);
    let _ = writeln!(
        o,
        "Each QA question through the same hybrid search, as deep as the budget needs, against the final store and against two \
         baselines searched the same way with the same embedder (docs/metrics.md, \"Retrieval (QA)\"). A reader is given a budget \
         of words (whitespace-separated) and reads the ranking in order, the last document cut at the budget. Figures leave out \
         the adversarial items (LoCoMo category 5) and abstention items, reported apart; intervals are 95% bootstrap intervals \
         resampling the {clusters} conversations (none with fewer than two).\n"
    );
    let evidence = match get("qa_items_audited") {
        Some(n) => format!(
            "Evidence: **audited** (`--evidence audited`: the LoCoMo audit's corrected evidence turns and answers; {} items corrected).",
            num(Some(n))
        ),
        None => "Evidence: as the dataset gives it (`--evidence given`).".to_string(),
    };
    let _ = writeln!(
        o,
        "{evidence} Every source's documents carry their session's date (`[8 May 2023]`), searched and read; retriever `{}`.\n",
        manifest["config"].get("qa_retriever").and_then(Value::as_str).unwrap_or("and")
    );
    let _ = writeln!(
        o,
        "**At 200 words read: formed memory recall_any {}, raw turns {}, raw sessions {}; formed − raw turns {}. Answer in 200 words: \
         formed {}, raw turns {}.**\n",
        with_interval(m, "qa_recall_any_at_200w"),
        with_interval(m, "qa_raw_turns_recall_any_at_200w"),
        with_interval(m, "qa_raw_sessions_recall_any_at_200w"),
        paired(m, "recall_any_at_200w"),
        with_interval(m, "qa_answer_in_200w"),
        with_interval(m, "qa_raw_turns_answer_in_200w"),
    );
    let budgeted: Vec<Vec<String>> = qa_rows(m)
        .iter()
        .map(|(label, pre, _)| {
            let mut row = vec![label.to_string(), num(get(&format!("{pre}words_indexed")))];
            for k in [
                "recall_any_at_100w",
                "recall_any_at_200w",
                "recall_any_at_500w",
                "recall_any_at_1000w",
                "answer_in_100w",
                "answer_in_200w",
                "answer_in_500w",
            ] {
                row.push(with_interval(m, &format!("{pre}{k}")));
            }
            row
        })
        .collect();
    table(
        o,
        &[
            "source",
            "words indexed",
            "recall_any@100w",
            "recall_any@200w",
            "recall_any@500w",
            "recall_any@1000w",
            "answer in 100w",
            "answer in 200w",
            "answer in 500w",
        ],
        &budgeted,
    );
    let diffs: Vec<Vec<String>> = [
        "recall_any_at_100w",
        "recall_any_at_200w",
        "recall_any_at_500w",
        "recall_any_at_1000w",
        "recall_any_at_5",
        "session_recall_any_at_5",
        "answer_in_100w",
        "answer_in_200w",
        "answer_in_500w",
    ]
    .iter()
    .map(|k| vec![k.to_string(), paired(m, k)])
    .collect();
    let _ = writeln!(o, "Paired difference, formed memory − raw turns, over the same items:\n");
    table(o, &["figure", "formed − raw turns"], &diffs);
    let rows: Vec<Vec<String>> = qa_rows(m)
        .iter()
        .map(|(label, pre, unit)| {
            let f = |k: &str| num(get(&format!("{pre}{k}")));
            vec![
                label.to_string(),
                format!("{} {unit}", f("items_indexed")),
                f("items_scored"),
                f("recall_any_at_1"),
                format!("{} (chance {})", with_interval(m, &format!("{pre}recall_any_at_5")), f("chance_recall_any_at_5")),
                f("recall_any_at_10"),
                with_interval(m, &format!("{pre}session_recall_any_at_5")),
                f("recall_all_at_5"),
                f("ndcg_any_at_5"),
                f("mrr"),
                f("words_read_at_5"),
                with_interval(m, &format!("{pre}hit_holds_answer")),
            ]
        })
        .collect();
    let _ = writeln!(
        o,
        "At k documents, whatever their length (sessions are long: compare the words read), beside a random ranking's recall:\n"
    );
    table(
        o,
        &[
            "source",
            "indexed",
            "items",
            "recall_any@1",
            "recall_any@5",
            "recall_any@10",
            "session recall_any@5",
            "recall_all@5",
            "ndcg_any@5",
            "MRR",
            "words read @5",
            "hit holds answer",
        ],
        &rows,
    );
    let by = |pre: &str| match get(&format!("{pre}by_category")) {
        Some(Value::Object(map)) => map.clone(),
        _ => serde_json::Map::new(),
    };
    let cats = by("qa_");
    if !cats.is_empty() {
        let others: Vec<serde_json::Map<String, Value>> = QA_SOURCES.iter().map(|(_, pre, _)| by(pre)).collect();
        let rows: Vec<Vec<String>> = cats
            .iter()
            .map(|(c, v)| {
                let name = if crate::qa::is_adversarial(c) { format!("{c} (adversarial, apart)") } else { c.clone() };
                let mut row = vec![name, num(v.get("items_scored"))];
                row.extend(others.iter().map(|src| num(src.get(c).and_then(|x| x.get("recall_any_at_200w")))));
                row.extend(others.iter().map(|src| num(src.get(c).and_then(|x| x.get("recall_any_at_5")))));
                row
            })
            .collect();
        table(
            o,
            &[
                "QA category",
                "items",
                "formed recall_any@200w",
                "raw turns recall_any@200w",
                "raw sessions recall_any@200w",
                "formed recall_any@5",
                "raw turns recall_any@5",
                "raw sessions recall_any@5",
            ],
            &rows,
        );
    }
    if let Some(at) = get("qa_attribution").filter(|a| a.get("misses_at_5").and_then(Value::as_u64).unwrap_or(0) > 0) {
        let ranked = match at.get("median_rank_of_evidence_document") {
            Some(Value::Number(n)) => format!("where one exists, the first ranks at median {n} (a ranking loss)"),
            _ => "no evidence fact was retrieved for any of them".to_string(),
        };
        let _ = writeln!(
            o,
            "Attribution: of the {} items formed memory misses at k = 5, {} have no live fact from any evidence turn (an \
             extraction or write loss); {ranked}.\n",
            num(at.get("misses_at_5")),
            pct(at.get("share_without_evidence_document")),
        );
    }
    if manifest["extract_mode"].as_str() != Some("gold") {
        let _ = writeln!(
            o,
            "The ceiling with the whole pipeline is a `--extract gold` run of the same dataset, profile and embedder (its formed-memory \
             row; `memform compare` this run with it); the gold-facts row above indexes the gold facts alone, without stages 2–5.\n"
        );
    }
    if let Some(adv) = get("qa_adversarial") {
        let _ = writeln!(
            o,
            "Adversarial items (category {}, apart from every figure above): {} items; formed recall_any@200w {}, raw turns {}.\n",
            crate::qa::ADVERSARIAL,
            num(adv.get("items_scored")),
            num(adv.get("recall_any_at_200w")),
            num(get("qa_raw_turns_adversarial").and_then(|x| x.get("recall_any_at_200w"))),
        );
    }
    let excluded = get("qa_items_excluded").and_then(Value::as_f64).unwrap_or(0.0);
    let unknown = get("qa_evidence_unknown_turns").and_then(Value::as_f64).unwrap_or(0.0);
    if excluded > 0.0 || unknown > 0.0 {
        let _ = writeln!(
            o,
            "{} evidence turn ids named no turn (each warned; its item scored on the rest); {} items had no known evidence turn or an \
             empty question ({} empty, each warned) and are excluded from every figure.\n",
            num(get("qa_evidence_unknown_turns")),
            num(get("qa_items_excluded")),
            num(get("qa_questions_empty")),
        );
    }
    if plots.contains(&PLOT_QA) {
        let _ = writeln!(o, "![recall_any@5 by category]({PLOT_QA})\n");
    }
    let _ = writeln!(
        o,
        "One row per item and source in `qa.parquet`/`qa.csv`: the first 10 retrieved ids and scores in rank order, the first hit's rank, the item's figures.\n"
    );
}

/// Renders `report.md`. `plots` names the SVG files written beside it.
pub fn render_report(manifest: &Value, a: &Analysis, plots: &[&str]) -> Result<String> {
    render_report_with(manifest, a, plots, &[])
}

/// [`render_report`] with extra sections before the files and timings
/// (no QA rows; the gold labels of the dataset `run.json` names).
pub fn render_report_with(manifest: &Value, a: &Analysis, plots: &[&str], sections: &[String]) -> Result<String> {
    let gold = Gold::from_manifest(manifest, &explore::ran_episodes(a));
    render(manifest, a, plots, sections, &Explore::new(a, Inputs { qa: None, gold }))
}

fn render(manifest: &Value, a: &Analysis, plots: &[&str], sections: &[String], x: &Explore) -> Result<String> {
    let mut o = String::new();
    let dataset = s(manifest, &["dataset", "name"]);
    let mode = manifest["mode"].as_str().unwrap_or("?");
    let _ = writeln!(o, "# memform run: {dataset}, {mode} mode\n");
    o.push_str(&caveats::block(&caveats::of_run(manifest)));

    if manifest["extract_mode"].as_str() == Some("gold") {
        let m = &a.summary.metrics;
        let literal = m.get("warnings_by_kind").and_then(|w| w.get("gold_literal")).and_then(Value::as_f64).unwrap_or(0.0);
        let gold = m.get("gold_facts").and_then(Value::as_f64).unwrap_or(0.0);
        let _ = writeln!(
            o,
            "**Extraction was the oracle** (`--extract gold`): the candidates are the dataset's own gold facts, each at its evidence \
             turn, so the extraction metrics are the ceiling, not a measurement of an extractor. Stages 2–5 ran as normal. Of {} gold \
             facts, {} were kept as literals (`gold_literal` warnings: the clause parser found no clause), the rest parsed into \
             subject, predicate and object.\n",
            num(Some(&Value::from(gold))),
            num(Some(&Value::from(literal)))
        );
    }
    let _ = writeln!(o, "## What was run\n");
    table(&mut o, &["", ""], &run_rows(manifest, a, dataset, mode));
    headline(&mut o, a, plots);
    formation(&mut o, a, plots, manifest["profile"].as_str().unwrap_or(crate::config::DEFAULT_PROFILE))?;
    if manifest["extract_mode"].as_str() == Some("gold") {
        ended_list(&mut o, a);
    }
    let m = &a.summary.metrics;
    let get = |k: &str| m.get(k);
    let l = &a.labels;
    if l.qa {
        let _ = writeln!(o, "## QA evidence coverage\n");
        let _ = writeln!(
            o,
            "{} of the QA evidence turns yielded a live fact; {} of {} QA items have every evidence turn covered.\n",
            pct(get("qa_evidence_coverage")),
            pct(get("qa_item_coverage")),
            num(get("qa_items")),
        );
        if let Some(Value::Object(map)) = get("qa_evidence_coverage_by_category") {
            let rows: Vec<Vec<String>> = map.iter().map(|(k, v)| vec![k.clone(), num(Some(v))]).collect();
            table(&mut o, &["QA category", "evidence coverage"], &rows);
        }
    }

    retrieval(&mut o, manifest, a, plots);

    let _ = writeln!(o, "## Per conversation\n");
    per_conversation_table(&mut o, a);
    if plots.contains(&PLOT_STORED) {
        let _ = writeln!(o, "![stored facts over episodes]({PLOT_STORED})\n");
    }

    let _ = writeln!(o, "## Example stored facts\n");
    stored_examples(&mut o, a)?;
    if a.labels.gold_facts || a.labels.contradictions || !x.qa.is_empty() {
        explore::error_section(&mut o, a, x);
    }

    for section in sections {
        o.push_str(section.trim_end());
        o.push_str("\n\n");
    }

    let _ = writeln!(o, "## Files\n");
    let _ = writeln!(
        o,
        "`summary.json` (every metric), `facts.parquet`/`facts.csv` (one row per candidate, with its outcome and gold match), \
         `episodes.parquet`/`episodes.csv` (one row per episode: counts, metric components, per-episode metrics, timings), \
         `per_conversation.csv`, `facts.jsonl`/`episodes.jsonl` (the raw records), `store.sqlite` (the memory store), `run.json` (the manifest).\n"
    );

    let _ = writeln!(o, "## Timings\n");
    let _ = writeln!(o, "Wall-clock milliseconds (not deterministic; the only such section).\n");
    let rows: Vec<Vec<String>> = crate::metrics::TIMING_COLUMNS
        .iter()
        .chain(&["wall_ms"])
        .filter_map(|k| a.summary.timings.get(*k).map(|v| vec![format!("`{k}`"), format!("{v:.1}")]))
        .collect();
    table(&mut o, &["stage", "ms"], &rows);
    Ok(o)
}

/// The rows of "What was run": dataset, profile, mode, provenance, config, gold labels.
fn run_rows(manifest: &Value, a: &Analysis, dataset: &str, mode: &str) -> Vec<Vec<String>> {
    let get = |k: &str| a.summary.metrics.get(k);
    let digest = s(manifest, &["dataset", "digest"]);
    let mut rows = vec![
        vec![
            "dataset".into(),
            format!(
                "`{dataset}` ({} format, {} conversations, digest `{}`)",
                s(manifest, &["dataset", "format"]),
                manifest["dataset"]["conversations"],
                digest.chars().take(12).collect::<String>()
            ),
        ],
        vec!["profile".into(), format!("`{}` (`memform profiles` describes it)", manifest["profile"].as_str().unwrap_or("soda"))],
        vec![
            "mode".into(),
            format!(
                "{mode}: extractor `{}`, judge `{}`, embedder `{}`",
                s(manifest, &["extractor"]),
                s(manifest, &["judge"]),
                s(manifest, &["embedder"])
            ),
        ],
        vec!["write mode".into(), s(manifest, &["write_mode"]).to_string()],
        vec![
            "run size".into(),
            format!("{} episodes, {} turns, {} candidate facts", num(get("episodes")), num(get("turns")), num(get("candidates"))),
        ],
    ];
    rows.extend(report_rows(manifest).into_iter().map(|(k, v)| vec![k, v]));
    let changed = config_changes(&manifest["config"]);
    rows.push(vec![
        "config".into(),
        if changed.is_empty() {
            "defaults (`memform config` prints them)".into()
        } else {
            format!("defaults except {}", changed.join(", "))
        },
    ]);
    let cfg = normalised_config(&manifest["config"]);
    let profile = manifest["profile"].as_str().unwrap_or(crate::config::DEFAULT_PROFILE);
    // A shared key, else the profile's own section's, else soda's (the
    // stage thresholds of the five-stage pipeline).
    let value = |k: &str| [&cfg[k], &cfg[profile][k], &cfg["soda"][k]].into_iter().find(|v| !v.is_null()).cloned().unwrap_or(Value::Null);
    rows.push(vec![
        "key thresholds".into(),
        [
            "value_contextual_min",
            "value_core_min",
            "entity_merge_threshold",
            "near_dup_threshold",
            "contradiction_band_min",
            "min_fact_confidence_for_write",
        ]
        .iter()
        .map(|k| format!("{k} {}", value(k)))
        .collect::<Vec<_>>()
        .join(", "),
    ]);
    let l = &a.labels;
    let mut gold = Vec::new();
    if l.gold_facts {
        gold.push(format!("{} facts ({} evidence turns)", num(get("gold_facts")), num(get("gold_turns"))));
    }
    if l.qa {
        gold.push(format!("{} QA items", num(get("qa_items"))));
    }
    if l.duplicate_groups {
        gold.push(format!("{} duplicate groups", num(get("duplicate_groups"))));
    }
    if l.contradictions {
        gold.push(format!("{} labelled contradiction pairs", num(get("judge_pairs_labelled"))));
    }
    rows.push(vec!["gold labels".into(), if gold.is_empty() { "none: formation metrics only".into() } else { gold.join(", ") }]);
    if let Some(n) = get("skipped_conversations").and_then(Value::as_u64).filter(|n| *n > 0) {
        rows.push(vec!["skipped".into(), format!("**{n} conversation(s) skipped** (see stderr of the run)")]);
    }
    rows
}

/// "Headline": the run in two sentences and its metrics against the baselines.
fn headline(o: &mut String, a: &Analysis, plots: &[&str]) {
    let get = |k: &str| a.summary.metrics.get(k);
    let l = &a.labels;
    let _ = writeln!(o, "## Headline\n");
    let _ = writeln!(
        o,
        "{} candidate facts became **{} stored facts** ({} per episode, {} per 100 turns); {} are live at the end. \
         Dedup dropped {} of candidates, the noise filter {}.",
        num(get("candidates")),
        num(get("stored_facts")),
        num(get("fact_density")),
        num(get("facts_per_100_turns")),
        num(get("live_facts")),
        pct(get("dedup_rate")),
        pct(get("noise_rejection_rate")),
    );
    if l.gold_facts {
        let _ = writeln!(
            o,
            "Against gold, turn-level F1 is **{}** (the every-turn baseline scores {}), content-level F1 **{}**.",
            num(get("turn_f1")),
            num(get("baseline_all_turns_f1")),
            num(get("content_f1")),
        );
    }
    o.push('\n');
    if l.gold_facts || l.qa || l.duplicate_groups || l.contradictions {
        let mut rows = Vec::new();
        let row = |k: &str, base_all: Option<&str>, base_none: Option<&str>| {
            vec![
                format!("`{k}`"),
                format!("**{}**", num(get(k))),
                base_all.map_or("".to_string(), |b| num(get(b))),
                base_none.map_or("".to_string(), |b| num(get(b))),
                md(meaning(k)),
            ]
        };
        if l.gold_facts {
            for x in ["precision", "recall", "f1"] {
                let k = format!("turn_{x}");
                let all = format!("baseline_all_turns_{x}");
                let none = format!("baseline_no_turns_{x}");
                rows.push(row(&k, Some(&all), Some(&none)));
            }
            for k in ["content_precision", "content_recall", "content_f1"] {
                rows.push(row(k, None, None));
            }
            if l.cosine {
                for k in ["content_precision_cosine", "content_recall_cosine", "content_f1_cosine"] {
                    rows.push(row(k, None, None));
                }
            }
        }
        if l.qa {
            rows.push(row("qa_evidence_coverage", None, None));
        }
        if l.duplicate_groups {
            for k in ["dedup_precision", "dedup_recall", "dedup_f1"] {
                rows.push(row(k, None, None));
            }
        }
        if l.contradictions {
            for k in ["judge_accuracy", "judge_accuracy_raw", "judge_coverage", "contradiction_accuracy"] {
                rows.push(row(k, None, None));
            }
        }
        table(o, &["metric", "this run", "baseline: every turn", "baseline: no turn", "meaning"], &rows);
        if l.gold_facts {
            let _ = writeln!(
                o,
                "Content matching pairs each stored fact with at most one gold fact of its episode (maximum one-to-one \
                 matching) when their token Dice similarity is ≥ {}{}. Definitions: [docs/metrics.md](../../docs/metrics.md).\n",
                num(get("content_lexical_threshold")),
                match (get("content_cosine_threshold"), get("content_embedder")) {
                    (Some(t), Some(e)) if l.cosine =>
                        format!(", or, for the cosine variant, their cosine under `{}` is ≥ {}", num(Some(e)), num(Some(t))),
                    _ => String::new(),
                }
            );
            if let Some(e) = get("content_cosine_error") {
                let _ = writeln!(o, "Cosine content matching was not computed: {}\n", num(Some(e)));
            }
        }
        if plots.contains(&PLOT_SCORES) {
            let _ = writeln!(o, "![precision and recall]({PLOT_SCORES})\n");
        }
    }
}

/// "Formation": every formation metric, the outcomes, contradictions and warnings.
fn formation(o: &mut String, a: &Analysis, plots: &[&str], profile: &str) -> Result<()> {
    let get = |k: &str| a.summary.metrics.get(k);
    let _ = writeln!(o, "## Formation\n");
    let rows: Vec<Vec<String>> = METRICS
        .iter()
        .filter(|d| d.needs == Needs::Nothing)
        .map(|d| {
            let kind = match d.formula {
                Formula::Sum(_) => "count",
                _ => "rate",
            };
            match caveats::not_computed(profile, d.key) {
                Some(why) => vec![format!("`{}`", d.key), "n/a".to_string(), kind.to_string(), md(&format!("n/a: {why}"))],
                None => vec![format!("`{}`", d.key), num(get(d.key)), kind.to_string(), md(meaning(d.key))],
            }
        })
        .collect();
    table(o, &["metric", "value", "kind", "meaning"], &rows);

    let _ = writeln!(o, "### What happened to each candidate\n");
    let outcomes: Vec<Vec<String>> = match get("outcomes") {
        Some(Value::Object(map)) => map.iter().map(|(k, v)| vec![format!("`{k}`"), num(Some(v))]).collect(),
        _ => Vec::new(),
    };
    if outcomes.is_empty() {
        let _ = writeln!(o, "No candidate facts were extracted.\n");
    } else {
        table(o, &["outcome", "candidates"], &outcomes);
        outcome_examples(o, a)?;
    }
    if plots.contains(&PLOT_OUTCOMES) {
        let _ = writeln!(o, "![candidate outcomes]({PLOT_OUTCOMES})\n");
    }

    let _ = writeln!(o, "### Contradictions\n");
    let _ = writeln!(
        o,
        "{} (candidate, live fact) pairs were judged: {} `old` (the live fact was replaced), {} `new` (the candidate was \
         dropped), {} `neither` (both stand); {} invalidations, {} closures, {} flagged for review, {} blocked by the write mode.\n",
        num(get("contradictions_judged")),
        num(get("verdict_old")),
        num(get("verdict_new")),
        num(get("verdict_neither")),
        num(get("invalidations")),
        num(get("closures")),
        num(get("review_needed")),
        num(get("blocked")),
    );
    verdict_examples(o, a)?;
    if let Some(Value::Object(conf)) = get("judge_confusion") {
        let _ = writeln!(o, "Labelled pairs, gold verdict (rows) × pipeline outcome (columns):\n");
        let cols = ["old", "new", "neither", "not_judged"];
        let rows: Vec<Vec<String>> = ["old", "new", "neither"]
            .iter()
            .map(|g| std::iter::once(format!("**{g}**")).chain(cols.iter().map(|c| num(conf.get(*g).and_then(|r| r.get(*c))))).collect())
            .collect();
        table(o, &["gold \\ pipeline", "old", "new", "neither", "not judged"], &rows);
    }
    if plots.contains(&PLOT_VERDICTS) {
        let _ = writeln!(o, "![verdicts]({PLOT_VERDICTS})\n");
    }

    let _ = writeln!(o, "### Warnings\n");
    warning_table(o, a)?;
    if plots.contains(&PLOT_WARNINGS) {
        let _ = writeln!(o, "![warnings]({PLOT_WARNINGS})\n");
    }
    Ok(())
}

fn pct(v: Option<&Value>) -> String {
    match v.and_then(Value::as_f64) {
        Some(x) => format!("{:.1}%", 100.0 * x),
        None => "–".to_string(),
    }
}

/// `report.md` / `compare.md` rows (label, text) for a run's manifest.
/// Manifests written before these fields existed say so.
pub fn report_rows(manifest: &Value) -> Vec<(String, String)> {
    let short = |v: &Value| v.as_str().unwrap_or("?").chars().take(12).collect::<String>();
    let old = "not recorded in run.json".to_string();
    let build = match manifest.get("build") {
        Some(b) => {
            let version = b["version"].as_str().unwrap_or("?");
            match (b["git_revision"].as_str(), &b["git_dirty"]) {
                (Some("unknown") | None, _) => format!("{version}, git revision unknown (not built from a checkout)"),
                (Some(_), Value::Bool(true)) => format!("{version}, git `{}` with uncommitted changes", short(&b["git_revision"])),
                (Some(_), Value::Bool(false)) => format!("{version}, git `{}` (clean)", short(&b["git_revision"])),
                (Some(_), _) => format!("{version}, git `{}` (changes unknown)", short(&b["git_revision"])),
            }
        }
        None => match manifest["memform_version"].as_str() {
            Some(v) => format!("{v}, git revision not recorded"),
            None => old.clone(),
        },
    };
    let recorded = manifest.get("recorded");
    let fixtures = match recorded.map(|r| &r["fixtures"]) {
        None => old.clone(),
        Some(Value::Null) => "none (no replayed LLM call)".to_string(),
        Some(f) => format!("`{}`: {} files, digest `{}`", f["dir"].as_str().unwrap_or("?"), f["files"], short(&f["sha256"])),
    };
    let embeddings = match recorded.map(|r| &r["embeddings"]) {
        None => old.clone(),
        Some(Value::Null) => "none (no recorded vectors read)".to_string(),
        Some(e) => format!("`{}`: {} vectors, digest `{}`", e["dir"].as_str().unwrap_or("?"), e["entries"], short(&e["sha256"])),
    };
    let tags = match manifest.get("tags").and_then(Value::as_object) {
        None => old,
        Some(t) if t.is_empty() => "none".to_string(),
        Some(t) => {
            t.iter().map(|(k, v)| format!("`{k}={}`", md(v.as_str().unwrap_or("?")).replace('`', "'"))).collect::<Vec<_>>().join(", ")
        }
    };
    vec![
        ("memform build".to_string(), build),
        ("recorded answers".to_string(), fixtures),
        ("embedding cache".to_string(), embeddings),
        ("tags".to_string(), tags),
    ]
}

/// A manifest's config in the current layout (a `run.json` of before
/// sections is read through the flat keys' aliases); as given when it does
/// not parse.
pub fn normalised_config(config: &Value) -> Value {
    serde_json::from_value::<Config>(config.clone()).ok().and_then(|c| serde_json::to_value(c).ok()).unwrap_or_else(|| config.clone())
}

/// Config keys whose value differs from the default, as `key = value`
/// (a section's as `section.key = value`).
pub fn config_changes(config: &Value) -> Vec<String> {
    let defaults = serde_json::to_value(Config::default()).unwrap_or(Value::Null);
    let Value::Object(map) = normalised_config(config) else { return Vec::new() };
    let mut out = Vec::new();
    for (k, v) in &map {
        match (v, defaults.get(k.as_str())) {
            (Value::Object(section), Some(Value::Object(d))) => {
                out.extend(section.iter().filter(|(sk, sv)| d.get(sk.as_str()) != Some(sv)).map(|(sk, sv)| format!("`{k}.{sk} = {sv}`")))
            }
            (v, d) if d != Some(v) => out.push(format!("`{k} = {v}`")),
            _ => {}
        }
    }
    out
}

fn polars_err(what: &str) -> impl Fn(polars::prelude::PolarsError) -> Error + '_ {
    move |e| Error::Other(format!("render report: {what}: {e}"))
}

fn outcome_examples(o: &mut String, a: &Analysis) -> Result<()> {
    // Only the columns shown are sorted (the whole frame was copied before).
    let ex = a
        .facts
        .clone()
        .lazy()
        .select([col("ord"), col("outcome"), col("conversation"), col("turn"), col("content"), col("reason")])
        .sort(["ord"], SortMultipleOptions::default())
        .group_by_stable([col("outcome")])
        .agg([col("conversation").first(), col("turn").first(), col("content").first(), col("reason").first()])
        .sort(["outcome"], SortMultipleOptions::default())
        .collect()
        .map_err(polars_err("outcome examples"))?;
    let rows: Vec<Vec<String>> = (0..ex.height())
        .map(|i| {
            vec![
                format!("`{}`", cell(&ex, "outcome", i)),
                format!("{} / {}", cell(&ex, "conversation", i), cell(&ex, "turn", i)),
                cell(&ex, "content", i),
                cell(&ex, "reason", i),
            ]
        })
        .collect();
    let _ = writeln!(o, "One example of each outcome (the first in run order):\n");
    table(o, &["outcome", "conversation / turn", "candidate", "reason"], &rows);
    Ok(())
}

fn verdict_examples(o: &mut String, a: &Analysis) -> Result<()> {
    if a.verdicts.height() == 0 {
        return Ok(());
    }
    let live = a.facts.clone().lazy().select([col("id").alias("live_id"), col("content").alias("live_content")]);
    let ex = a
        .verdicts
        .clone()
        .lazy()
        .join(live, [col("live_id")], [col("live_id")], polars::prelude::JoinArgs::new(polars::prelude::JoinType::Left))
        .group_by_stable([col("verdict"), col("reason")])
        .agg([
            polars::prelude::len().alias("n"),
            // The example is the first listed pair (`facts.jsonl` keeps
            // only a count of the others), so that `memform report`
            // redraws the table the run drew.
            col("candidate_content").filter(col("listed")).first(),
            col("live_content").filter(col("listed")).first(),
            col("conversation").filter(col("listed")).first(),
            col("candidate_turn").filter(col("listed")).first(),
        ])
        .sort(["verdict", "reason"], SortMultipleOptions::default())
        .collect()
        .map_err(polars_err("verdict examples"))?;
    let rows: Vec<Vec<String>> = (0..ex.height())
        .map(|i| {
            vec![
                format!("`{}`", cell(&ex, "verdict", i)),
                cell(&ex, "reason", i),
                cell(&ex, "n", i),
                format!(
                    "{} / {}: «{}» vs live «{}»",
                    cell(&ex, "conversation", i),
                    cell(&ex, "candidate_turn", i),
                    cell(&ex, "candidate_content", i),
                    cell(&ex, "live_content", i)
                ),
            ]
        })
        .collect();
    table(o, &["verdict", "paired because", "pairs", "example"], &rows);
    Ok(())
}

/// Every fact a candidate ended (invalidated, closed, superseded, UPDATEd
/// or DELETEd), with the ended fact's content as it was written and the
/// candidate's: on a gold-oracle run each should be a real change, and a
/// reader can check each.
fn ended_list(o: &mut String, a: &Analysis) {
    let f = &a.facts;
    let content: std::collections::HashMap<String, String> = (0..f.height()).map(|i| (cell(f, "id", i), cell(f, "content", i))).collect();
    let mut rows = Vec::new();
    for i in 0..f.height() {
        let ended = cell(f, "ended", i);
        for id in ended.split_whitespace().filter(|_| ended != "–") {
            rows.push(vec![
                cell(f, "conversation", i),
                format!("`{}`", cell(f, "outcome", i)),
                format!("{id}: «{}»", content.get(id).map_or("–", String::as_str)),
                format!("{}: «{}»", cell(f, "id", i), cell(f, "content", i)),
            ]);
        }
    }
    let _ = writeln!(
        o,
        "### Every fact ended, with both texts\n\nWith the gold facts as candidates, each of these {} should be a real change \
         (an invalidation, a closure, an UPDATE or a DELETE of the fact on the left by the candidate on the right); check each.\n",
        rows.len()
    );
    if !rows.is_empty() {
        table(o, &["conversation", "how (the candidate's outcome)", "ended fact, as written", "by candidate"], &rows);
    }
}

fn warning_table(o: &mut String, a: &Analysis) -> Result<()> {
    if a.warnings.height() == 0 {
        let _ = writeln!(o, "No warnings.\n");
        return Ok(());
    }
    let ex = a
        .warnings
        .clone()
        .lazy()
        .group_by_stable([col("kind")])
        .agg([polars::prelude::len().alias("n"), col("conversation").first(), col("episode").first(), col("message").first()])
        .sort(["kind"], SortMultipleOptions::default())
        .collect()
        .map_err(polars_err("warnings"))?;
    let rows: Vec<Vec<String>> = (0..ex.height())
        .map(|i| {
            vec![
                format!("`{}`", cell(&ex, "kind", i)),
                cell(&ex, "n", i),
                format!("{} / {}: {}", cell(&ex, "conversation", i), cell(&ex, "episode", i), cell(&ex, "message", i)),
            ]
        })
        .collect();
    table(o, &["kind", "count", "first example"], &rows);
    Ok(())
}

/// The per-conversation columns shown in `report.md` (all are in the CSV).
fn per_conversation_columns(a: &Analysis) -> Vec<&'static str> {
    let mut cols = vec![
        "episodes",
        "turns",
        "candidates",
        "stored_facts",
        "live_facts",
        "fact_density",
        "dedup_rate",
        "noise_rejection_rate",
        "verdict_old",
        "invalidations",
        "warnings",
    ];
    if a.labels.gold_facts {
        cols.extend(["turn_precision", "turn_recall", "turn_f1", "content_f1"]);
    }
    if a.labels.qa {
        cols.push("qa_evidence_coverage");
    }
    cols
}

fn per_conversation_table(o: &mut String, a: &Analysis) {
    let cols = per_conversation_columns(a);
    let df = &a.per_conversation;
    let rows: Vec<Vec<String>> = (0..df.height())
        .map(|i| std::iter::once(format!("`{}`", cell(df, "conversation", i))).chain(cols.iter().map(|c| cell(df, c, i))).collect())
        .collect();
    let header: Vec<&str> = std::iter::once("conversation").chain(cols.iter().copied()).collect();
    table(o, &header, &rows);
}

fn stored_examples(o: &mut String, a: &Analysis) -> Result<()> {
    // Only the columns shown are filtered and sorted (every column of every
    // stored fact was copied before).
    let shown = ["ord", "stored", "conversation", "episode", "turn", "content", "fact_type", "confidence", "live", "gold_match"];
    let ex = a
        .facts
        .clone()
        .lazy()
        .select(shown.iter().filter(|c| a.facts.column(c).is_ok()).map(|c| col(*c)).collect::<Vec<_>>())
        .filter(col("stored"))
        .sort(["ord"], SortMultipleOptions::default())
        .group_by_stable([col("conversation")])
        .head(Some(3))
        .sort(["ord"], SortMultipleOptions::default())
        .limit(EXAMPLES as u32)
        .collect()
        .map_err(polars_err("stored examples"))?;
    if ex.height() == 0 {
        let _ = writeln!(o, "No facts were stored.\n");
        return Ok(());
    }
    let _ = writeln!(
        o,
        "The first three stored facts of each conversation (at most {EXAMPLES}); `gold` is the gold fact it matched (lexical).\n"
    );
    let rows: Vec<Vec<String>> = (0..ex.height())
        .map(|i| {
            vec![
                format!("{} / {} / {}", cell(&ex, "conversation", i), cell(&ex, "episode", i), cell(&ex, "turn", i)),
                cell(&ex, "content", i),
                cell(&ex, "fact_type", i),
                cell(&ex, "confidence", i),
                cell(&ex, "live", i),
                cell(&ex, "gold_match", i),
            ]
        })
        .collect();
    table(o, &["conversation / episode / turn", "fact", "type", "confidence", "live", "gold"], &rows);
    Ok(())
}

// ---------------------------------------------------------------------------
// Plots.

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// Draws into an SVG string of `w`×`h` pixels.
pub fn svg(w: u32, h: u32, draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult) -> Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| Error::Other(format!("draw plot: {e}")))?;
        draw(&root).map_err(|e| Error::Other(format!("draw plot: {e}")))?;
        root.present().map_err(|e| Error::Other(format!("draw plot: {e}")))?;
    }
    Ok(out)
}

/// Tableau 10: distinct colours that read on white.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Horizontal bars, one per (label, value, colour index), top to bottom.
/// Values that are all whole numbers are drawn as counts.
pub fn bar_chart(title: &str, x_desc: &str, bars: &[(String, f64, usize)]) -> Result<String> {
    let n = bars.len().max(1);
    let max = bars.iter().map(|b| b.1).fold(0.0f64, f64::max);
    let counts = bars.iter().all(|b| b.1.fract() == 0.0);
    let top = if max <= 0.0 {
        1.0
    } else if counts {
        (max * 1.15).ceil().max(max + 1.0)
    } else {
        max * 1.15
    };
    let x_labels = if counts { (top as usize + 1).min(11) } else { 11 };
    let h = 90 + 28 * n as u32;
    let label_w = bars.iter().map(|b| b.0.chars().count()).max().unwrap_or(4).clamp(4, 40) as u32 * 7 + 10;
    svg(760, h, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18).into_font())
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(label_w)
            .build_cartesian_2d(0f64..top, (0u32..n as u32).into_segmented())?;
        let names: Vec<String> = bars.iter().rev().map(|b| b.0.clone()).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => names.get(*i as usize).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .x_labels(x_labels)
            .x_label_formatter(&|x| if counts { format!("{x:.0}") } else { format!("{x:.1}") })
            .x_desc(x_desc)
            .draw()?;
        let rev: Vec<(usize, &(String, f64, usize))> = bars.iter().rev().enumerate().collect();
        chart.draw_series(rev.iter().map(|(i, b)| {
            let mut r =
                Rectangle::new([(0.0, SegmentValue::Exact(*i as u32)), (b.1, SegmentValue::Exact(*i as u32 + 1))], colour(b.2).filled());
            r.set_margin(4, 4, 0, 0);
            r
        }))?;
        chart.draw_series(rev.iter().map(|(i, b)| {
            let text = if counts { format!("{:.0}", b.1) } else { format!("{:.3}", b.1) };
            let style = ("sans-serif", 12).into_font().into_text_style(root).pos(Pos::new(HPos::Left, VPos::Center));
            Text::new(format!(" {text}"), (b.1, SegmentValue::CenterOf(*i as u32)), style)
        }))?;
        Ok(())
    })
}

/// One line per series of (x, y) points.
pub fn line_chart(title: &str, x_desc: &str, y_desc: &str, series: &[(String, Vec<(f64, f64)>)]) -> Result<String> {
    let max_x = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(2.0f64, f64::max);
    let max_y = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(1.0f64, f64::max) * 1.1;
    svg(760, 440, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18).into_font())
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(50)
            .build_cartesian_2d(1f64..max_x, 0f64..max_y)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels((max_x as usize).min(12))
            .x_label_formatter(&|x| if x.fract() == 0.0 { format!("{x:.0}") } else { String::new() })
            .draw()?;
        draw_lines(&mut chart, series, SeriesLabelPosition::UpperLeft)
    })
}

type LineChart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Draws each (name, points) series as dots joined by a line, in palette
/// order, with a legend at `legend`.
fn draw_lines<'a, 'b: 'a>(chart: &mut LineChart<'a, 'b>, series: &[(String, Vec<(f64, f64)>)], legend: SeriesLabelPosition) -> DrawResult {
    for (i, (name, points)) in series.iter().enumerate() {
        let color = colour(i);
        chart.draw_series(points.iter().map(|p| Circle::new(*p, 3, color.filled())))?;
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(legend)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 11).into_font())
        .draw()?;
    Ok(())
}

/// Every plot of a run that has something to show: (file name, SVG).
/// The QA plot's bars: overall, then per category, formed memory beside
/// raw turns (`None` when the run did not evaluate retrieval).
fn qa_bars(m: &std::collections::BTreeMap<String, Value>) -> Option<Vec<(String, f64, usize)>> {
    let formed = m.get("qa_recall_any_at_5")?.as_f64()?;
    let mut bars = vec![("all: formed".to_string(), formed, 0)];
    bars.push(("all: raw turns".to_string(), m.get("qa_raw_turns_recall_any_at_5").and_then(Value::as_f64).unwrap_or(0.0), 1));
    let by = |k: &str| m.get(k).and_then(Value::as_object).cloned().unwrap_or_default();
    let (f, r) = (by("qa_by_category"), by("qa_raw_turns_by_category"));
    for (c, v) in &f {
        let at5 = |x: Option<&Value>| x.and_then(|x| x.get("recall_any_at_5")).and_then(Value::as_f64).unwrap_or(0.0);
        bars.push((format!("category {c}: formed"), at5(Some(v)), 0));
        bars.push((format!("category {c}: raw turns"), at5(r.get(c)), 1));
    }
    Some(bars)
}

pub fn plots(a: &Analysis) -> Result<Vec<(&'static str, String)>> {
    let m = &a.summary.metrics;
    let mut out = Vec::new();

    let eps = a
        .episodes
        .clone()
        .lazy()
        .sort(["ord"], SortMultipleOptions::default())
        .select([col("conversation"), col("episode_index"), col("stored_cumulative")])
        .collect()
        .map_err(polars_err("stored facts plot"))?;
    let conv = eps.column("conversation").and_then(|c| c.str().cloned()).map_err(polars_err("conversation"))?;
    let idx = eps.column("episode_index").and_then(|c| c.i64().cloned()).map_err(polars_err("episode_index"))?;
    let cum = eps.column("stored_cumulative").and_then(|c| c.i64().cloned()).map_err(polars_err("stored_cumulative"))?;
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for ((c, i), y) in conv.iter().zip(idx.iter()).zip(cum.iter()) {
        let (Some(c), Some(i), Some(y)) = (c, i, y) else { continue };
        match series.last_mut() {
            Some((name, pts)) if name == c => pts.push((i as f64 + 1.0, y as f64)),
            _ => series.push((c.to_string(), vec![(i as f64 + 1.0, y as f64)])),
        }
    }
    if !series.is_empty() {
        out.push((PLOT_STORED, line_chart("Stored facts over episodes", "episode", "stored facts (cumulative)", &series)?));
    }

    let counts = |key: &str| -> Vec<(String, f64, usize)> {
        match m.get(key) {
            Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v.as_f64().unwrap_or(0.0), 0)).collect(),
            _ => Vec::new(),
        }
    };
    let outcomes = counts("outcomes");
    if !outcomes.is_empty() {
        out.push((PLOT_OUTCOMES, bar_chart("Candidate outcomes", "candidates", &outcomes)?));
    }
    let verdicts: Vec<(String, f64, usize)> = [("old", 2), ("new", 6), ("neither", 3)]
        .iter()
        .map(|(v, c)| (format!("verdict {v}"), m.get(&format!("verdict_{v}")).and_then(Value::as_f64).unwrap_or(0.0), *c))
        .chain(
            [("invalidations", 1), ("closures", 8), ("review_needed", 7), ("blocked", 9)]
                .iter()
                .map(|(k, c)| (k.to_string(), m.get(*k).and_then(Value::as_f64).unwrap_or(0.0), *c)),
        )
        .collect();
    if verdicts.iter().any(|v| v.1 > 0.0) {
        out.push((PLOT_VERDICTS, bar_chart("Judge verdicts and write effects", "count", &verdicts)?));
    }
    let warnings = counts("warnings_by_kind");
    if !warnings.is_empty() {
        out.push((PLOT_WARNINGS, bar_chart("Warnings by kind", "warnings", &warnings)?));
    }

    let mut scores = Vec::new();
    let mut add = |label: &str, prefix: &str, suffix: &str| {
        for (x, c) in [("precision", 0), ("recall", 1), ("f1", 4)] {
            let key = format!("{prefix}{x}{suffix}");
            if let Some(v) = m.get(&key).and_then(Value::as_f64) {
                scores.push((format!("{label} {x}"), v, c));
            }
        }
    };
    if a.labels.gold_facts {
        add("turn", "turn_", "");
        add("every-turn baseline", "baseline_all_turns_", "");
        add("content (lexical)", "content_", "");
        if a.labels.cosine {
            add("content (cosine)", "content_", "_cosine");
        }
    }
    if a.labels.duplicate_groups {
        add("dedup", "dedup_", "");
    }
    if !scores.is_empty() {
        out.push((PLOT_SCORES, bar_chart("Precision, recall and F1 against gold", "score", &scores)?));
    }
    if let Some(bars) = qa_bars(m) {
        out.push((PLOT_QA, bar_chart("recall_any@5 by QA category: formed memory vs raw turns", "recall_any@5", &bars)?));
    }
    Ok(out)
}

/// A metric against a swept threshold: one line per (name, points), and a
/// dashed vertical line at `marker` (the seed default) when it is given.
pub fn threshold_chart(title: &str, x_desc: &str, series: &[(String, Vec<(f64, f64)>)], marker: Option<(f64, &str)>) -> Result<String> {
    let xs = || series.iter().flat_map(|s| s.1.iter().map(|p| p.0));
    let ys = || series.iter().flat_map(|s| s.1.iter().map(|p| p.1));
    let (mut lo, mut hi) = (xs().fold(f64::INFINITY, f64::min), xs().fold(f64::NEG_INFINITY, f64::max));
    if let Some((m, _)) = marker {
        lo = lo.min(m);
        hi = hi.max(m);
    }
    if !lo.is_finite() || !hi.is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    let pad = if hi > lo { (hi - lo) * 0.05 } else { 0.5 };
    let (x0, x1) = (lo - pad, hi + pad);
    let y_max = ys().fold(0.0f64, f64::max);
    let y1 = if y_max <= 0.0 { 1.0 } else { (y_max * 1.1).max(y_max + 0.01) };
    svg(760, 440, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18).into_font())
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(x0..x1, 0f64..y1)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .x_labels(10)
            .x_label_formatter(&|x| format!("{x:.3}"))
            .y_label_formatter(&|y| format!("{y:.3}"))
            .draw()?;
        if let Some((m, label)) = marker {
            let grey = RGBColor(0x55, 0x55, 0x55);
            let dashes: Vec<(f64, f64)> = (0..40).map(|i| (m, y1 * i as f64 / 40.0)).collect();
            chart
                .draw_series(dashes.chunks(2).map(|seg| PathElement::new(seg.to_vec(), grey.stroke_width(1))))?
                .label(label.to_string())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], grey.stroke_width(1)));
        }
        draw_lines(&mut chart, series, SeriesLabelPosition::LowerRight)
    })
}

/// The smallest colour span of a heat map, as a fraction of its values'
/// magnitude.
pub const HEAT_MIN_SPAN: f64 = 0.05;

/// A heat map of one metric over a 2-D grid: `values[row][col]` for the
/// y value `ys[row]` and the x value `xs[col]`; each cell shows its value,
/// and the cell at `marked` (the seed defaults) is outlined. The colour
/// spans at least [`HEAT_MIN_SPAN`] of the values' magnitude, and the
/// title says when every cell is equal (the keys have no effect).
pub fn heat_map(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    xs: &[String],
    ys: &[String],
    values: &[Vec<Option<f64>>],
    marked: Option<(usize, usize)>,
) -> Result<String> {
    let all: Vec<f64> = values.iter().flatten().flatten().copied().collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let spread = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // White (lowest) to the palette's blue at lowest + span: the span is at
    // least a twentieth of the values' magnitude, so a spread of a few
    // thousandths shows as the faint tint it is, not as full colour.
    let span = (spread - lo).max(HEAT_MIN_SPAN * lo.abs().max(spread.abs()));
    let hi = lo + span;
    let shade = |v: f64| {
        let t = if hi > lo { ((v - lo) / (hi - lo)).clamp(0.0, 1.0) } else { 0.0 };
        let mix = |c: u8| (255.0 - t * (255.0 - c as f64)).round() as u8;
        RGBColor(mix(0x4e), mix(0x79), mix(0xa7))
    };
    let (nx, ny) = (xs.len().max(1) as u32, ys.len().max(1) as u32);
    let w = (120 + 62 * nx).max(420);
    let h = (110 + 30 * ny).max(240);
    let title = match (lo.is_finite(), spread > lo) {
        (false, _) => title.to_string(),
        (true, false) => format!("{title} (every cell {lo:.4}: no effect)"),
        (true, true) => format!("{title} (white {lo:.4} → blue {hi:.4}; spread {:.4})", spread - lo),
    };
    svg(w, h, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 16).into_font())
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            // 0..=n-1: one segment per value, none left over.
            .build_cartesian_2d((0u32..nx - 1).into_segmented(), (0u32..ny - 1).into_segmented())?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels(nx as usize)
            .y_labels(ny as usize)
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => xs.get(*i as usize).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => ys.get(*i as usize).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .draw()?;
        let cells: Vec<(u32, u32, Option<f64>)> =
            values.iter().enumerate().flat_map(|(r, row)| row.iter().enumerate().map(move |(c, v)| (c as u32, r as u32, *v))).collect();
        chart.draw_series(cells.iter().map(|(c, r, v)| {
            let fill = v.map_or(RGBColor(0xee, 0xee, 0xee), shade);
            Rectangle::new(
                [(SegmentValue::Exact(*c), SegmentValue::Exact(*r)), (SegmentValue::Exact(c + 1), SegmentValue::Exact(r + 1))],
                fill.filled(),
            )
        }))?;
        chart.draw_series(cells.iter().map(|(c, r, v)| {
            let text = v.map_or("–".to_string(), |x| format!("{x:.4}"));
            let dark = v.is_some_and(|x| hi > lo && (x - lo) / (hi - lo) > 0.6);
            let style = ("sans-serif", 10).into_font().color(if dark { &WHITE } else { &BLACK }).pos(Pos::new(HPos::Center, VPos::Center));
            Text::new(text, (SegmentValue::CenterOf(*c), SegmentValue::CenterOf(*r)), style)
        }))?;
        if let Some((c, r)) = marked {
            let (c, r) = (c as u32, r as u32);
            chart.draw_series(std::iter::once(Rectangle::new(
                [(SegmentValue::Exact(c), SegmentValue::Exact(r)), (SegmentValue::Exact(c + 1), SegmentValue::Exact(r + 1))],
                BLACK.stroke_width(3),
            )))?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use polars::prelude::DataType;
    use serde_json::json;

    use super::{PLOT_SCORES, PLOT_STORED, REPORT_FILES, bar_chart, cell, read_parquet, render_report, report_rows, write_run_reports};
    use crate::metrics::tests::analysis_with;

    fn manifest() -> serde_json::Value {
        let mut config = serde_json::to_value(crate::pipeline::Config::default()).expect("config");
        config["soda"]["near_dup_threshold"] = json!(0.9);
        json!({
            "dataset": {"name": "tiny", "format": "native", "digest": "0123456789abcdef", "conversations": 2},
            "mode": "rules", "extractor": "rules:v1", "judge": "rules:v1", "embedder": "hashed:char3+word:256",
            "write_mode": "full", "config": config,
        })
    }

    /// The fixture's analysis with a retrieval evaluation of two items (category 1: formed hit at rank 1, raw turns miss;
    /// category 2: both miss).
    fn with_qa(mut a: crate::metrics::Analysis) -> crate::metrics::Analysis {
        use crate::qa::{QaResult, QaRow, score, summary_metrics};
        let ev: std::collections::BTreeSet<String> = ["t1".to_string()].into();
        let row = |item: usize, category: &str, source: &'static str, hit: bool| QaRow {
            conversation: "c1".into(),
            item,
            category: category.into(),
            source,
            question: "q".into(),
            as_of: None,
            abstention: false,
            evidence: vec!["t1".into()],
            retrieved: vec!["x".into()],
            scores: vec![0.5],
            scored: score(&[vec![if hit { "t1" } else { "t9" }.to_string()]], &ev, 1),
            budgeted: {
                let h = f64::from(u8::from(hit));
                crate::qa::Budgeted { recall_any_w: [0.0, h, h, h], answer_in_w: [Some(0.0), Some(h), Some(h)], ..Default::default() }
            },
        };
        let mut rows = Vec::new();
        for (item, category, formed_hit) in [(0, "1", true), (1, "2", false)] {
            rows.push(row(item, category, "formed", formed_hit));
            rows.push(row(item, category, "raw_turns", false));
            rows.push(row(item, category, "raw_sessions", true));
        }
        let r = QaResult {
            rows,
            indexed: [("formed", 4), ("raw_turns", 12), ("raw_sessions", 2)].into(),
            words_indexed: [("formed", 40), ("raw_turns", 120), ("raw_sessions", 124)].into(),
            warnings: vec![],
            excluded: 1,
            empty_questions: vec![],
            audited: None,
        };
        a.summary.metrics.extend(summary_metrics(&r));
        a
    }

    #[test]
    fn the_retrieval_section_has_the_headline_the_sources_and_the_plot() {
        let a = with_qa(analysis_with(None));
        let dir = tempfile::tempdir().expect("tempdir");
        write_run_reports(dir.path(), &manifest(), &a).expect("write reports");
        let md = std::fs::read_to_string(dir.path().join("report.md")).expect("report.md");
        assert!(
            md.contains(
                "**At 200 words read: formed memory recall_any 0.500, raw turns 0.000, raw sessions 1.000; formed − raw turns +0.500. \
                 Answer in 200 words: formed 0.500, raw turns 0.000.**"
            ),
            "{md}"
        );
        // The budgeted table leads: recall at 100, 200, 500, 1000 words, answer in 100, 200, 500 (one conversation: no interval).
        assert!(md.contains("| formed memory | 40 | 0.000 | 0.500 | 0.500 | 0.500 | 0.000 | 0.500 | 0.500 |"), "{md}");
        assert!(md.find("recall_any@200w") < md.find("recall_any@1 "), "budgeted first: {md}");
        assert!(md.contains("| 1 | 1 | 1.000 | 0.000 | 1.000 | 1.000 | 0.000 | 1.000 |"), "{md}");
        assert!(md.contains("0 evidence turn ids named no turn") && md.contains("1 items had no known evidence turn"), "{md}");
        assert!(md.contains(&format!("![recall_any@5 by category]({})", super::PLOT_QA)), "{md}");
        let svg = std::fs::read_to_string(dir.path().join(super::PLOT_QA)).expect("plot");
        for label in ["all: formed", "all: raw turns", "category 1: formed", "category 2: raw turns"] {
            assert!(svg.contains(label), "{label} not in the plot");
        }
        // Without a retrieval evaluation, no section and no plot.
        let plain = tempfile::tempdir().expect("tempdir");
        write_run_reports(plain.path(), &manifest(), &analysis_with(None)).expect("write reports");
        assert!(!std::fs::read_to_string(plain.path().join("report.md")).expect("md").contains("## Retrieval (QA)"));
        assert!(!plain.path().join(super::PLOT_QA).exists());
    }

    #[test]
    fn writes_every_report_file_and_parquet_round_trips() {
        let a = with_qa(analysis_with(None));
        let dir = tempfile::tempdir().expect("tempdir");
        write_run_reports(dir.path(), &manifest(), &a).expect("write reports");
        // The fixture has outcomes, verdicts, warnings and gold, so every plot is drawn.
        for f in REPORT_FILES {
            assert!(dir.path().join(f).is_file(), "{f} not written");
        }
        let facts = read_parquet(&dir.path().join("facts.parquet")).expect("read facts.parquet");
        assert_eq!(facts.height(), 9);
        assert_eq!(facts.column("outcome").expect("outcome").dtype(), &DataType::String);
        assert_eq!(cell(&facts, "gold_match", 0), "g1");
        let episodes = read_parquet(&dir.path().join("episodes.parquet")).expect("read episodes.parquet");
        assert_eq!(episodes.shape(), a.episodes.shape());
        let csv = std::fs::read_to_string(dir.path().join("per_conversation.csv")).expect("csv");
        assert!(csv.starts_with("conversation,"), "{csv}");
        assert_eq!(csv.lines().count(), 3, "header and two conversations");
    }

    #[test]
    fn report_explains_the_run() {
        let a = analysis_with(None);
        let md = render_report(&manifest(), &a, &[PLOT_STORED, PLOT_SCORES]).expect("render");
        for needle in [
            "# memform run: tiny, rules mode",
            "`tiny` (native format, 2 conversations, digest `0123456789ab`)",
            "defaults except `soda.near_dup_threshold = 0.9`",
            "9 candidate facts became **5 stored facts** (1.667 per episode, 62.500 per 100 turns)",
            "| `turn_f1` | **0.727** | 0.857 | 0.000 |",
            "| gold \\ pipeline | old | new | neither | not judged |",
            "| **old** | 1 | 0 | 0 | 1 |",
            "| `fact_too_short` | 1 | c1 / e1: fact \"ok\" is shorter than 10 characters |",
            "| `c2` | 1 | 1 | 1 | 1 | 1 | 1.000 |",
            "| 1 | 0.500 |",
            "![stored facts over episodes](plot_stored_facts.svg)",
            "| c1 / e1 / t1 | Ann works at Acme | fact | 0.900 | no | g1 |",
        ] {
            assert!(md.contains(needle), "report.md lacks {needle:?}:\n{md}");
        }
        assert!(!md.contains("plot_warnings.svg"), "only the plots written are linked");
        let timings = md.find("## Timings").expect("timings section");
        assert!(md[timings..].contains("`extract_ms` | 5.0"), "{}", &md[timings..]);
    }

    #[test]
    fn bar_chart_draws_labelled_bars() {
        let svg = bar_chart("Outcomes", "candidates", &[("created".into(), 5.0, 0), ("noise_rejected".into(), 1.0, 1)]).expect("svg");
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("created") && svg.contains("noise_rejected") && svg.contains("Outcomes"));
        assert!(svg.matches("<rect").count() >= 3, "background and two bars");
        assert_eq!(
            svg,
            bar_chart("Outcomes", "candidates", &[("created".into(), 5.0, 0), ("noise_rejected".into(), 1.0, 1)]).expect("svg")
        );
    }

    #[test]
    fn report_rows_describe_new_and_old_manifests() {
        let m = json!({
            "build": {"version": "0.1.0", "git_revision": "0123456789abcdef0123456789abcdef01234567", "git_dirty": true},
            "recorded": {"fixtures": null, "embeddings": {"dir": "d/e", "entries": 3, "sha256": "ffffffffffffffff"}},
            "tags": {"run": "nightly"},
        });
        let rows = report_rows(&m);
        assert_eq!(rows[0].1, "0.1.0, git `0123456789ab` with uncommitted changes");
        assert_eq!(rows[1].1, "none (no replayed LLM call)");
        assert_eq!(rows[2].1, "`d/e`: 3 vectors, digest `ffffffffffff`");
        assert_eq!(rows[3].1, "`run=nightly`");
        let old = report_rows(&json!({"memform_version": "0.1.0"}));
        assert_eq!(old[0].1, "0.1.0, git revision not recorded");
        assert!(old[1].1.starts_with("not recorded"));
    }
}
