//! `report.html` in a real browser: headless Chromium (Debian's
//! `chromium`, installed by `make chromium`) loads a run's page and a
//! comparison's page with `#selftest`, which runs the page's script, draws
//! every tab, applies a failure filter and opens a drill-down, and writes
//! what it found into `<pre id="selftest">`; the DOM Chromium dumps is
//! checked here, and a screenshot of each page is saved (into
//! `$MEMFORM_SCREENSHOTS` when set, as `make report-screenshots` does for
//! `docs/`).
//!
//! The runs: the bundled scenarios in rules and in LLM mode (recorded
//! answers, as `make run` makes them) and their comparison, and a
//! LoCoMo-format dataset made up here (no LoCoMo text): sessions, observations
//! as gold facts, QA items in the five LoCoMo categories.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{bin, scenarios_dir};

fn chromium() -> PathBuf {
    let p = std::env::var_os("MEMFORM_CHROMIUM").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(p.is_file(), "{} not found: run `make chromium` (Debian's chromium package)", p.display());
    p
}

/// Chromium with nothing that reaches the network, in a profile of its own.
fn browser(profile: &Path) -> Command {
    let mut c = Command::new(chromium());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        "--virtual-time-budget=5000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

fn url(page: &Path) -> String {
    format!("file://{}#selftest", page.canonicalize().expect("page path").display())
}

/// Loads `page` with `#selftest` and returns what its self-test found.
fn selftest(page: &Path) -> Value {
    let profile = tempfile::tempdir().expect("profile");
    let out = browser(profile.path()).arg("--dump-dom").arg(url(page)).output().expect("chromium runs");
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8_lossy(&out.stdout);
    let start =
        dom.rfind("<pre id=\"selftest\">").unwrap_or_else(|| panic!("{}: the page's script wrote no self-test result", page.display()));
    let rest = &dom[start + "<pre id=\"selftest\">".len()..];
    let text = &rest[..rest.find("</pre>").expect("</pre>")];
    let text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("self-test result {text}: {e}"))
}

/// Saves a screenshot of `page` (self-test state) as `name`.
fn screenshot(page: &Path, name: &str) -> PathBuf {
    let dir = std::env::var_os("MEMFORM_SCREENSHOTS").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    let png = dir.join(name);
    let profile = tempfile::tempdir().expect("profile");
    let out = browser(profile.path())
        .arg("--window-size=1280,2200")
        .arg(format!("--screenshot={}", png.display()))
        .arg(url(page))
        .output()
        .expect("chromium runs");
    assert!(out.status.success(), "chromium --screenshot failed: {}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000, "{}: not a drawn page ({} bytes)", png.display(), bytes.len());
    png
}

fn memform(args: &[&str], cwd: &Path) {
    let out = Command::new(bin()).args(args).current_dir(cwd).output().expect("memform runs");
    assert!(out.status.success(), "memform {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn tab<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["tabs"].as_array().and_then(|t| t.iter().find(|x| x["tab"] == name)).unwrap_or_else(|| panic!("no tab {name}: {r}"))
}

/// A tab drew rows, a filter changed how many show, and a drill-down opened.
fn drawn_filtered_opened(r: &Value, name: &str) {
    let t = tab(r, name);
    let rows = t["rows"].as_u64().unwrap_or(0);
    assert!(rows > 0, "{name}: no rows drawn: {t}");
    let filtered = t["filtered"].as_u64().unwrap_or_else(|| panic!("{name}: no filter changed the rows: {t}"));
    assert!(filtered > 0 && filtered != rows, "{name}: {t}");
    assert!(t["detail"].as_u64().unwrap_or(0) > 20, "{name}: the drill-down did not open: {t}");
}

/// The page loads nothing from anywhere: no URL in a `src` or `href`, no `@import`, no fetch.
fn offline(page: &Path) {
    let html = std::fs::read_to_string(page).expect("page");
    let code = &html[..html.find("id=\"memform-data\"").expect("data element")];
    for needle in ["src=\"http", "href=\"http", "@import", "url(http"] {
        assert!(!code.contains(needle), "{}: {needle}", page.display());
    }
    let script = &html[html.rfind("<script>").expect("script")..];
    for needle in ["fetch(", "XMLHttpRequest", "http://", "https://"] {
        assert!(!script.contains(needle), "{}: the page's script names {needle}", page.display());
    }
}

#[test]
fn the_run_and_compare_pages_draw_filter_and_open_in_chromium() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = scenarios_dir();
    let ds = d.to_str().expect("utf-8 path");
    memform(&["run", "--dataset", ds, "--mode", "rules", "--embedder", "minilm", "--out", "rules"], tmp.path());
    memform(&["run", "--dataset", ds, "--mode", "llm", "--embedder", "minilm", "--out", "llm"], tmp.path());
    memform(&["compare", "rules", "llm", "--out", "cmp"], tmp.path());

    let run = tmp.path().join("rules/report.html");
    offline(&run);
    let r = selftest(&run);
    assert_eq!(r["ok"], json!(true), "{r}");
    assert_eq!(r["kind"], json!("run"));
    drawn_filtered_opened(&r, "facts");
    drawn_filtered_opened(&r, "qa");
    assert!(tab(&r, "gold")["detail"].as_u64().unwrap_or(0) > 20, "a gold fact's drill-down: {r}");
    assert!(tab(&r, "pairs")["rows"].as_u64().unwrap_or(0) > 0, "pairs never judged: {r}");
    screenshot(&run, "report-html-run.png");

    let llm = selftest(&tmp.path().join("llm/report.html"));
    assert!(llm["caveats"].as_u64().unwrap_or(0) >= 1, "the bundled-model caveat on the LLM run's page: {llm}");

    let cmp = tmp.path().join("cmp/report.html");
    offline(&cmp);
    let c = selftest(&cmp);
    assert_eq!(c["ok"], json!(true), "{c}");
    assert_eq!(c["kind"], json!("compare"));
    assert!(c["caveats"].as_u64().unwrap_or(0) >= 1, "the bundled-model caveat on the comparison's page: {c}");
    for t in ["gold", "qa"] {
        let t = tab(&c, t);
        assert!(t["rows"].as_u64().unwrap_or(0) > 0 && t["detail"].as_u64().unwrap_or(0) > 20, "{t}");
    }
    drawn_filtered_opened(&c, "stored");
    screenshot(&cmp, "report-html-compare.png");

    // `memform report` redraws the page the run drew.
    let before = std::fs::read(&run).expect("page");
    memform(&["report", "rules"], tmp.path());
    assert_eq!(std::fs::read(&run).expect("page"), before, "memform report redrew a different report.html");
}

/// A LoCoMo-format dataset made up here: two conversations of three
/// sessions, observations (the gold facts) and QA items in every category.
fn locomo_like() -> Value {
    let sample = |id: &str, a: &str, b: &str, city: &str, firm: &str, pet: &str| {
        json!({
            "sample_id": id,
            "conversation": {
                "speaker_a": a, "speaker_b": b,
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": a, "dia_id": "D1:1", "text": format!("Hi {b}, I started working at {firm} last week.")},
                    {"speaker": b, "dia_id": "D1:2", "text": format!("Congratulations! I adopted a cat named {pet}.")},
                    {"speaker": a, "dia_id": "D1:3", "text": format!("I live in {city} now, close to the river.")}
                ],
                "session_2_date_time": "10:02 am on 20 May, 2023",
                "session_2": [
                    {"speaker": a, "dia_id": "D2:1", "text": "I moved to Lisbon for the new job."},
                    {"speaker": b, "dia_id": "D2:2", "text": "I love hiking in the mountains on weekends."},
                    {"speaker": a, "dia_id": "D2:3", "text": "My sister is a nurse at the city hospital."}
                ],
                "session_3_date_time": "4:30 pm on 2 June, 2023",
                "session_3": [
                    {"speaker": b, "dia_id": "D3:1", "text": "I work at the public library downtown."},
                    {"speaker": a, "dia_id": "D3:2", "text": "I hate waiting in long queues."}
                ]
            },
            "observation": {
                "session_1_observation": {a: [[format!("{a} works at {firm}."), "D1:1"], [format!("{a} lives in {city}."), "D1:3"]], b: [[format!("{b} has a cat named {pet}."), "D1:2"]]},
                "session_2_observation": {a: [[format!("{a} moved to Lisbon."), "D2:1"], [format!("{a}'s sister is a nurse."), "D2:3"]], b: [[format!("{b} loves hiking."), "D2:2"]]},
                "session_3_observation": {a: [[format!("{a} hates queues."), "D3:2"]], b: [[format!("{b} works at the public library."), "D3:1"]]}
            },
            "qa": [
                {"question": format!("Where did {a} move, and where did {a} live before?"), "answer": "Lisbon", "evidence": ["D1:3", "D2:1"], "category": 1},
                {"question": format!("When did {a} start working at {firm}?"), "answer": "May 2023", "evidence": ["D1:1"], "category": 2},
                {"question": format!("Would {b} enjoy a trip to the Alps?"), "answer": "Yes", "evidence": ["D2:2"], "category": 3},
                {"question": format!("What is the name of {b}'s cat?"), "answer": pet, "evidence": ["D1:2"], "category": 4},
                {"question": format!("What does {a}'s sister do?"), "answer": "nurse", "evidence": ["D2:3"], "category": 4},
                {"question": format!("What is the name of {a}'s dog?"), "evidence": ["D1:2"], "category": 5, "adversarial_answer": pet}
            ]
        })
    };
    json!([sample("conv-1", "Ann", "Bo", "Porto", "Acme", "Pixel"), sample("conv-2", "Cy", "Di", "Leeds", "Globex", "Miso")])
}

#[test]
fn a_locomo_format_runs_page_draws_filters_and_opens_in_chromium() {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::write(tmp.path().join("locomo10.json"), locomo_like().to_string()).expect("write dataset");
    memform(&["run", "--dataset", "locomo10.json", "--out", "run"], tmp.path());
    let page = tmp.path().join("run/report.html");
    offline(&page);
    let r = selftest(&page);
    assert_eq!(r["ok"], json!(true), "{r}");
    assert!(tab(&r, "gold")["rows"].as_u64().unwrap_or(0) >= 14, "the observations as gold facts: {r}");
    drawn_filtered_opened(&r, "facts");
    let qa = tab(&r, "qa");
    assert_eq!(qa["rows"], json!(12), "every QA item: {r}");
    assert!(qa["detail"].as_u64().unwrap_or(0) > 20, "{qa}");
    let html = std::fs::read_to_string(&page).expect("page");
    assert!(html.contains("5 adversarial") && html.contains("1 multi-hop"), "LoCoMo's category names in the page");
    screenshot(&page, "report-html-locomo.png");
}
