//! What `memform calibrate` reads: the labelled pair set
//! (`datasets/pairs/{tune,test}.jsonl`, one JSON object per line), SICK and
//! MSRP in their published tab-separated layouts. Every reader gives the
//! same [`Pair`]s; bad input is one error naming the file, the line and
//! the field.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::types::string_enum;

string_enum! {
    /// A pair's label: the pair set's three, SICK's entailment judgments,
    /// MSRP's paraphrase flag.
    pub enum Label {
        /// The second restates the first (pair set).
        Duplicate => "duplicate",
        /// The second replaces the first (pair set).
        Update => "update",
        /// Both stay true (pair set).
        Coexist => "coexist",
        /// SICK: the sentences contradict each other.
        Contradiction => "contradiction",
        /// SICK: A entails B.
        Entailment => "entailment",
        /// SICK: neither.
        Neutral => "neutral",
        /// MSRP: a paraphrase (Quality 1).
        Paraphrase => "paraphrase",
        /// MSRP: not a paraphrase (Quality 0).
        NotParaphrase => "not_paraphrase",
    }
}

impl PartialOrd for Label {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// In declaration order (the matrix's rows).
impl Ord for Label {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (*self as u8).cmp(&(*other as u8))
    }
}

string_enum! {
    /// Where a pair set came from: the metrics each source defines differ.
    pub enum Source {
        Pairs => "pairs",
        Sick => "sick",
        Msrp => "msrp",
    }
}

string_enum! {
    /// Which halves of the pair set `--split` reads.
    pub enum Split {
        Tune => "tune",
        Test => "test",
        All => "all",
    }
}

/// One side of a pair: what the speaker says in its session, the
/// third-person gold observation, and the session's date.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub turn: String,
    pub observation: String,
    /// `YYYY-MM-DD`.
    pub date: String,
}

/// One labelled pair of statements by one speaker, in two sessions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    pub id: String,
    pub label: Label,
    /// The kind of pair (`job`, `articles`, …); SICK and MSRP: their label.
    pub kind: String,
    pub speaker: String,
    pub other: String,
    pub first: Side,
    pub second: Side,
    #[serde(default)]
    pub note: String,
    #[serde(default)]
    pub modelled_on: String,
    /// Which split file it came from (`tune`, `test`; SICK/MSRP: the file's stem).
    #[serde(skip)]
    pub split: String,
}

/// The pair set's labels.
const PAIR_LABELS: &[Label] = &[Label::Duplicate, Label::Update, Label::Coexist];

/// Reads `dir/tune.jsonl` and/or `dir/test.jsonl`.
pub fn read_pairs_dir(dir: &Path, split: Split) -> Result<Vec<Pair>> {
    let names: &[&str] = match split {
        Split::Tune => &["tune"],
        Split::Test => &["test"],
        Split::All => &["tune", "test"],
    };
    if !dir.is_dir() {
        return Err(Error::input(dir, "--pairs: not a directory (expected one holding tune.jsonl and test.jsonl)"));
    }
    let mut out = Vec::new();
    for name in names {
        let path = dir.join(format!("{name}.jsonl"));
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        out.extend(parse_pairs(&path, &bytes, name)?);
    }
    check_unique(dir, &out)?;
    Ok(out)
}

/// Parses a pair file's bytes (one JSON object per line; blank lines skipped).
pub fn parse_pairs(path: &Path, bytes: &[u8], split: &str) -> Result<Vec<Pair>> {
    crate::error::reject_bom(path, bytes)?;
    let text = std::str::from_utf8(bytes).map_err(|e| Error::input(path, format!("not UTF-8 (byte {})", e.valid_up_to())))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let n = i + 1;
        let mut de = serde_json::Deserializer::from_str(line);
        let mut pair: Pair = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let field = e.path().to_string();
            let field = if field == "." { "(the line)".to_string() } else { field };
            Error::input(path, format!("line {n}: {field}: {}", e.inner()))
        })?;
        let bad = |field: &str, why: &str| Error::input(path, format!("line {n}: {field}: {why}"));
        if !PAIR_LABELS.contains(&pair.label) {
            return Err(bad("label", &format!("{:?} is not a label of the pair set (duplicate, update, coexist)", pair.label.as_str())));
        }
        for (field, value) in [
            ("id", &pair.id),
            ("kind", &pair.kind),
            ("speaker", &pair.speaker),
            ("first.turn", &pair.first.turn),
            ("first.observation", &pair.first.observation),
            ("second.turn", &pair.second.turn),
            ("second.observation", &pair.second.observation),
        ] {
            if value.trim().is_empty() {
                return Err(bad(field, "empty"));
            }
        }
        for (field, date) in [("first.date", &pair.first.date), ("second.date", &pair.second.date)] {
            if !is_date(date) {
                return Err(bad(field, &format!("{date:?} is not a date YYYY-MM-DD")));
            }
        }
        if pair.second.date < pair.first.date {
            return Err(bad("second.date", &format!("{} is before first.date {}", pair.second.date, pair.first.date)));
        }
        pair.split = split.to_string();
        out.push(pair);
    }
    Ok(out)
}

fn check_unique(origin: &Path, pairs: &[Pair]) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for p in pairs {
        if !seen.insert(p.id.as_str()) {
            return Err(Error::input(origin, format!("id: {:?} appears twice", p.id)));
        }
    }
    Ok(())
}

/// `YYYY-MM-DD` with a month 01–12 and a day 01–31.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !digits(0..4) || !digits(5..7) || !digits(8..10) {
        return false;
    }
    let (m, d) = (&s[5..7], &s[8..10]);
    ("01"..="12").contains(&m) && ("01"..="31").contains(&d)
}

/// The speaker SICK and MSRP sentences are given to (both sentences are hers).
pub const CORPUS_SPEAKER: &str = "Alex";
/// The other participant of a corpus pair's conversation.
pub const CORPUS_OTHER: &str = "Sam";
/// The sessions' dates of a corpus pair (a day apart).
pub const CORPUS_DATES: (&str, &str) = ("2020-01-01", "2020-01-02");

/// SICK's columns, in order.
pub const SICK_HEADER: &[&str] = &["pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment"];
/// MSRP's columns, in order.
pub const MSRP_HEADER: &[&str] = &["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"];

/// Reads a SICK file (any split): tab-separated, a header line.
pub fn read_sick(path: &Path) -> Result<Vec<Pair>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    parse_sick(path, &bytes)
}

/// Reads an MSRP file (any split): tab-separated, a header line, which may
/// start with a UTF-8 byte-order mark (the published files do).
pub fn read_msrp(path: &Path) -> Result<Vec<Pair>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    parse_msrp(path, &bytes)
}

fn stem(path: &Path) -> String {
    path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned())
}

/// The rows of a tab-separated file after its header, which must be
/// `header`: (line number, cells), each row with exactly as many cells.
fn tsv_rows<'a>(path: &Path, text: &'a str, header: &[&str]) -> Result<Vec<(usize, Vec<&'a str>)>> {
    let mut lines = text.lines().enumerate();
    let first = lines.next().map(|(_, l)| l.trim_end_matches('\r')).unwrap_or_default();
    let got: Vec<&str> = first.split('\t').map(str::trim).collect();
    if got != header {
        return Err(Error::input(path, format!("line 1: header: expected {:?}, found {:?}", header.join("\t"), first)));
    }
    let mut out = Vec::new();
    for (i, line) in lines {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split('\t').collect();
        if cells.len() != header.len() {
            let field = header.get(cells.len()).copied().unwrap_or(header[header.len() - 1]);
            return Err(Error::input(
                path,
                format!("line {}: {field}: expected {} tab-separated fields, found {}", i + 1, header.len(), cells.len()),
            ));
        }
        out.push((i + 1, cells));
    }
    if out.is_empty() {
        return Err(Error::input(path, "no rows after the header"));
    }
    Ok(out)
}

fn utf8<'a>(path: &Path, bytes: &'a [u8]) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()].iter().filter(|b| **b == b'\n').count() + 1;
        Error::input(path, format!("line {line}: not UTF-8"))
    })
}

fn corpus_pair(id: String, label: Label, a: &str, b: &str, split: &str) -> Pair {
    let side =
        |text: &str, date: &str| Side { turn: text.trim().to_string(), observation: text.trim().to_string(), date: date.to_string() };
    Pair {
        id,
        label,
        kind: label.as_str().to_string(),
        speaker: CORPUS_SPEAKER.to_string(),
        other: CORPUS_OTHER.to_string(),
        first: side(a, CORPUS_DATES.0),
        second: side(b, CORPUS_DATES.1),
        note: String::new(),
        modelled_on: String::new(),
        split: split.to_string(),
    }
}

/// Parses SICK's bytes: `pair_ID, sentence_A, sentence_B, relatedness_score,
/// entailment_judgment`. A byte-order mark is refused (SICK has none).
pub fn parse_sick(path: &Path, bytes: &[u8]) -> Result<Vec<Pair>> {
    crate::error::reject_bom(path, bytes)?;
    let text = utf8(path, bytes)?;
    let split = stem(path);
    let mut out = Vec::new();
    for (n, c) in tsv_rows(path, text, SICK_HEADER)? {
        let bad = |field: &str, why: String| Error::input(path, format!("line {n}: {field}: {why}"));
        let id = c[0].trim();
        if id.is_empty() {
            return Err(bad("pair_ID", "empty".into()));
        }
        for (field, s) in [("sentence_A", c[1]), ("sentence_B", c[2])] {
            if s.trim().is_empty() {
                return Err(bad(field, "empty".into()));
            }
        }
        let score: f64 = c[3].trim().parse().map_err(|_| bad("relatedness_score", format!("{:?} is not a number", c[3])))?;
        if !(1.0..=5.0).contains(&score) {
            return Err(bad("relatedness_score", format!("{score} is outside 1..5")));
        }
        let label = match c[4].trim() {
            "CONTRADICTION" => Label::Contradiction,
            "ENTAILMENT" => Label::Entailment,
            "NEUTRAL" => Label::Neutral,
            other => return Err(bad("entailment_judgment", format!("{other:?} is not CONTRADICTION, ENTAILMENT or NEUTRAL"))),
        };
        out.push(corpus_pair(format!("sick-{id}"), label, c[1], c[2], &split));
    }
    check_unique(path, &out)?;
    Ok(out)
}

/// Parses MSRP's bytes: `Quality, #1 ID, #2 ID, #1 String, #2 String`; a
/// leading UTF-8 byte-order mark is accepted (the published files have one).
pub fn parse_msrp(path: &Path, bytes: &[u8]) -> Result<Vec<Pair>> {
    let bytes = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF][..]).unwrap_or(bytes);
    let text = utf8(path, bytes)?;
    let split = stem(path);
    let mut out = Vec::new();
    for (n, c) in tsv_rows(path, text, MSRP_HEADER)? {
        let bad = |field: &str, why: String| Error::input(path, format!("line {n}: {field}: {why}"));
        let label = match c[0].trim() {
            "1" => Label::Paraphrase,
            "0" => Label::NotParaphrase,
            other => return Err(bad("Quality", format!("{other:?} is not 0 or 1"))),
        };
        for (field, s) in [("#1 ID", c[1]), ("#2 ID", c[2])] {
            if s.trim().is_empty() || !s.trim().bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(field, format!("{s:?} is not a numeric id")));
            }
        }
        for (field, s) in [("#1 String", c[3]), ("#2 String", c[4])] {
            if s.trim().is_empty() {
                return Err(bad(field, "empty".into()));
            }
        }
        // The same two sentences can recur; the line number keeps ids unique.
        out.push(corpus_pair(format!("msrp-{n}-{}-{}", c[1].trim(), c[2].trim()), label, c[3], c[4], &split));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Test inputs written for these tests (not corpus text), in the published layouts.
    const SICK: &str = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n\
        7\tA cat sits on a red mat\tA cat is not sitting on a red mat\t3.9\tCONTRADICTION\n\
        8\tTwo men ride bicycles\tTwo people ride bikes\t4.6\tENTAILMENT\n\
        9\tA girl reads a book\tA dog runs in a park\t1.2\tNEUTRAL\n";

    fn msrp(bom: bool) -> Vec<u8> {
        let mut b = if bom { vec![0xEF, 0xBB, 0xBF] } else { vec![] };
        b.extend_from_slice(
            "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n\
             1\t11\t12\tThe shop opened at nine on Monday.\tOn Monday the shop opened at nine.\r\n\
             0\t13\t14\tThe team won the cup in May.\tThe team lost the final in June.\r\n"
                .as_bytes(),
        );
        b
    }

    #[test]
    fn sick_rows_become_pairs_of_one_speaker_with_their_judgment() {
        let pairs = parse_sick(Path::new("SICK_x.txt"), SICK.as_bytes()).unwrap();
        let got: Vec<(&str, Label)> = pairs.iter().map(|p| (p.id.as_str(), p.label)).collect();
        assert_eq!(got, [("sick-7", Label::Contradiction), ("sick-8", Label::Entailment), ("sick-9", Label::Neutral)]);
        let p = &pairs[0];
        assert_eq!(
            (p.first.turn.as_str(), p.second.observation.as_str()),
            ("A cat sits on a red mat", "A cat is not sitting on a red mat")
        );
        assert_eq!((p.speaker.as_str(), p.kind.as_str(), p.split.as_str()), (CORPUS_SPEAKER, "contradiction", "SICK_x"));
        assert!(p.first.date < p.second.date);
    }

    #[test]
    fn msrp_accepts_its_byte_order_mark_and_crlf() {
        for bom in [true, false] {
            let pairs = parse_msrp(Path::new("msr.tsv"), &msrp(bom)).unwrap();
            assert_eq!(pairs.len(), 2);
            assert_eq!((pairs[0].label, pairs[1].label), (Label::Paraphrase, Label::NotParaphrase));
            assert_eq!(pairs[0].second.turn, "On Monday the shop opened at nine.");
            assert_eq!(pairs[0].id, "msrp-2-11-12");
        }
    }

    #[test]
    fn sick_refuses_a_byte_order_mark_and_bad_rows_by_line_and_field() {
        let with_bom = [&[0xEF, 0xBB, 0xBF][..], SICK.as_bytes()].concat();
        assert!(parse_sick(Path::new("s.txt"), &with_bom).unwrap_err().to_string().contains("byte-order mark"));
        let err = |text: &str| parse_sick(Path::new("s.txt"), text.as_bytes()).unwrap_err().to_string();
        let head = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n";
        assert_eq!(
            err(&format!("{head}1\ta\tb\t4.0\tMAYBE\n")),
            "s.txt: line 2: entailment_judgment: \"MAYBE\" is not CONTRADICTION, ENTAILMENT or NEUTRAL"
        );
        assert_eq!(err(&format!("{head}1\ta\tb\tlots\tNEUTRAL\n")), "s.txt: line 2: relatedness_score: \"lots\" is not a number");
        assert_eq!(err(&format!("{head}1\ta\tb\t4.0\n")), "s.txt: line 2: entailment_judgment: expected 5 tab-separated fields, found 4");
        assert_eq!(err(&format!("{head}1\t \tb\t4.0\tNEUTRAL\n")), "s.txt: line 2: sentence_A: empty");
        assert!(err("id\ta\tb\n1\tx\ty\n").starts_with("s.txt: line 1: header: expected"));
        assert_eq!(err(head), "s.txt: no rows after the header");
        assert_eq!(err(&format!("{head}1\ta\tb\t4.0\tNEUTRAL\n1\tc\td\t2.0\tNEUTRAL\n")), "s.txt: id: \"sick-1\" appears twice");
    }

    #[test]
    fn msrp_bad_rows_name_line_and_field() {
        let err = |rows: &str| {
            let text = format!("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n{rows}");
            parse_msrp(Path::new("m.tsv"), text.as_bytes()).unwrap_err().to_string()
        };
        assert_eq!(err("2\t1\t2\ta\tb\n"), "m.tsv: line 2: Quality: \"2\" is not 0 or 1");
        assert_eq!(err("1\tx\t2\ta\tb\n"), "m.tsv: line 2: #1 ID: \"x\" is not a numeric id");
        assert_eq!(err("1\t1\t2\ta\t\n"), "m.tsv: line 2: #2 String: empty");
        assert_eq!(err("1\t1\t2\ta\n"), "m.tsv: line 2: #2 String: expected 5 tab-separated fields, found 4");
    }

    fn line(label: &str, first_date: &str) -> String {
        format!(
            r#"{{"id":"x-1","label":"{label}","kind":"job","speaker":"Maya","other":"Leo","first":{{"turn":"I work at a bakery now.","observation":"Maya works at a bakery.","date":"{first_date}"}},"second":{{"turn":"I work at a bank now.","observation":"Maya works at a bank.","date":"2023-05-10"}},"note":"n","modelled_on":"new"}}"#
        )
    }

    #[test]
    fn pair_lines_parse_and_bad_ones_name_line_and_field() {
        let ok = parse_pairs(Path::new("t.jsonl"), format!("{}\n\n", line("update", "2023-03-04")).as_bytes(), "tune").unwrap();
        assert_eq!(
            (ok[0].label, ok[0].split.as_str(), ok[0].second.observation.as_str()),
            (Label::Update, "tune", "Maya works at a bank.")
        );
        let err = |text: String| parse_pairs(Path::new("t.jsonl"), text.as_bytes(), "tune").unwrap_err().to_string();
        let bad_label = err(format!("{}\n{}\n", line("update", "2023-03-04"), line("maybe", "2023-03-04")));
        assert!(bad_label.starts_with("t.jsonl: line 2: label: unknown variant `maybe`"), "{bad_label}");
        assert_eq!(
            err(line("paraphrase", "2023-03-04")),
            "t.jsonl: line 1: label: \"paraphrase\" is not a label of the pair set (duplicate, update, coexist)"
        );
        assert_eq!(err(line("update", "2023-13-04")), "t.jsonl: line 1: first.date: \"2023-13-04\" is not a date YYYY-MM-DD");
        assert_eq!(err(line("update", "2023-06-04")), "t.jsonl: line 1: second.date: 2023-05-10 is before first.date 2023-06-04");
        let missing = err(line("update", "2023-03-04").replace(r#""observation":"Maya works at a bank.","#, ""));
        assert!(missing.starts_with("t.jsonl: line 1: second: missing field `observation`"), "{missing}");
        assert!(err("{not json".into()).starts_with("t.jsonl: line 1: "));
        assert!(err(format!("\u{feff}{}", line("update", "2023-03-04"))).contains("byte-order mark"));
    }
}
