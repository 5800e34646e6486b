//! The data every stage passes along: transcripts and gold labels in, candidate
//! facts and their outcomes out. Plain data, no behaviour beyond small helpers.

use serde::{Deserialize, Serialize};

/// An enum of fixed names: each variant serialises to its name, and `as_str`,
/// `parse` (`None` for an unknown name) and `ALL` come with it, so a name is
/// written in one place.
macro_rules! string_enum {
    ($(#[$m:meta])* pub enum $name:ident { $($(#[$vm:meta])* $v:ident => $s:literal,)+ }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $s)] $v,)+
        }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$v),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$v => $s),+ }
            }
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($s => Some($name::$v),)+ _ => None }
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use string_enum;

/// One utterance of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// Unique within its conversation (LoCoMo: `D3:7`).
    pub id: String,
    pub speaker: String,
    pub text: String,
}

/// One session of one conversation: its turns in order and its timestamp.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    /// Unique within its conversation (`session_3`).
    pub id: String,
    /// ISO 8601 local date-time of the session (`2023-05-08T13:56:00`), if known.
    pub timestamp: Option<String>,
    pub turns: Vec<Turn>,
    /// Agent observations recorded in this episode (native format only;
    /// empty for transcripts, which a profile that needs observations maps
    /// from the turns).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observations: Vec<Observation>,
}

/// An agent's observation, as Memorix's `memorix_store` tool or a coding
/// agent's tool-use hook hands it over. Kept as given: a missing narrative
/// or an unknown type is the profile's to warn about, not the loader's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Unique within its conversation, among turn ids too.
    pub id: String,
    pub title: String,
    pub narrative: Option<String>,
    /// Facts the caller states.
    pub facts: Vec<String>,
    pub entity_name: String,
    /// Memorix's observation type (`gotcha`, `decision`, …), as given.
    pub obs_type: String,
    /// The tool event it came from, when a hook produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_event: Option<ToolEvent>,
}

/// The tool call an observation was made from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolEvent {
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// The expected outcome of one observation's formation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoldObservation {
    /// The observation's id.
    pub observation: String,
    /// `new`, `merge`, `evolve` or `discard`.
    pub action: String,
    /// `core`, `contextual` or `ephemeral`.
    pub category: String,
}

/// A fact the dataset says should be formed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoldFact {
    pub id: String,
    /// Episode the fact belongs to.
    pub episode: String,
    pub text: String,
    /// Turn ids the fact is drawn from.
    pub evidence: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicate: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
}

/// A question-answer item and the turns holding its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoldQa {
    pub question: String,
    pub answer: Option<String>,
    /// Evidence turn ids that name a turn of the conversation.
    pub evidence: Vec<String>,
    pub category: Option<i64>,
    /// When the question is asked (the episodes' timestamp format): the QA
    /// evaluation with `qa_as_of = "question"` searches the facts live then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_at: Option<String>,
    /// Evidence turn ids the dataset gave that name no turn (dropped from
    /// `evidence` with a warning; the QA evaluation counts them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_evidence: Vec<String>,
    /// A named category (LongMemEval's question type), used instead of the
    /// numeric `category` when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// An abstention question (LongMemEval's `_abs`: the answer is not in
    /// the history): the QA evaluation reports it apart.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abstention: bool,
    /// Set when an audit of the gold was applied (`--evidence audited`,
    /// `dataset::audit`): the error the audit found in the item (its
    /// evidence and answer replaced by the corrected ones), or empty when
    /// the audit lists none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<String>,
}

impl GoldQa {
    /// The category the metrics group by: the label, else the number, else `none`.
    pub fn category_name(&self) -> String {
        match (&self.label, self.category) {
            (Some(l), _) => l.clone(),
            (None, Some(c)) => c.to_string(),
            (None, None) => "none".to_string(),
        }
    }
}

/// Gold labels for one conversation; every list may be empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Gold {
    pub facts: Vec<GoldFact>,
    pub qa: Vec<GoldQa>,
    /// Groups of turn ids that state the same fact: one stored fact expected.
    pub duplicate_groups: Vec<Vec<String>>,
    /// Expected judge verdicts between a fact stated at `old_turn` and a later
    /// one at `new_turn`.
    pub contradictions: Vec<GoldContradiction>,
    /// Expected resolution action and value category per observation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observations: Vec<GoldObservation>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoldContradiction {
    pub old_turn: String,
    pub new_turn: String,
    pub verdict: Verdict,
}

/// One conversation: its speakers, its episodes in time order, its gold labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    pub id: String,
    pub speakers: Vec<String>,
    pub episodes: Vec<Episode>,
    pub gold: Gold,
}

impl Conversation {
    pub fn turn_count(&self) -> usize {
        self.episodes.iter().map(|e| e.turns.len()).sum()
    }
}

/// Which format a dataset directory was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DatasetFormat {
    Native,
    Locomo,
    Longmemeval,
}

/// A loaded dataset.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub name: String,
    pub format: DatasetFormat,
    /// SHA-256 over the dataset's input files (names and bytes, in order).
    pub digest: String,
    pub conversations: Vec<Conversation>,
}

/// Entity types. Unknown types become `Thing` (with a warning).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum EntityType {
    Person,
    Org,
    Place,
    Product,
    Food,
    Animal,
    Event,
    Concept,
    Thing,
}

impl EntityType {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s.trim().to_ascii_uppercase().as_str() {
            "PERSON" => EntityType::Person,
            "ORG" | "ORGANIZATION" | "ORGANISATION" | "COMPANY" => EntityType::Org,
            "PLACE" | "LOCATION" => EntityType::Place,
            "PRODUCT" => EntityType::Product,
            "FOOD" => EntityType::Food,
            "ANIMAL" | "PET" => EntityType::Animal,
            "EVENT" => EntityType::Event,
            "CONCEPT" => EntityType::Concept,
            "THING" => EntityType::Thing,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            EntityType::Person => "PERSON",
            EntityType::Org => "ORG",
            EntityType::Place => "PLACE",
            EntityType::Product => "PRODUCT",
            EntityType::Food => "FOOD",
            EntityType::Animal => "ANIMAL",
            EntityType::Event => "EVENT",
            EntityType::Concept => "CONCEPT",
            EntityType::Thing => "THING",
        }
    }
}

/// Fact types. Unknown types become `Fact` (with a warning).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FactType {
    Fact,
    Preference,
    Decision,
    Procedural,
    Semantic,
}

impl FactType {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "fact" => FactType::Fact,
            "preference" => FactType::Preference,
            "decision" => FactType::Decision,
            "procedural" => FactType::Procedural,
            "semantic" => FactType::Semantic,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            FactType::Fact => "fact",
            FactType::Preference => "preference",
            FactType::Decision => "decision",
            FactType::Procedural => "procedural",
            FactType::Semantic => "semantic",
        }
    }
}

/// Whether a fact's object is an entity (an edge) or a value (an attribute).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FactKind {
    Relationship,
    Literal,
}

/// An entity as the extractor named it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateEntity {
    pub name: String,
    pub entity_type: EntityType,
}

/// A fact as the extractor produced it, after post-processing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateFact {
    pub subject: String,
    /// Lower-cased, punctuation stripped, whitespace collapsed.
    pub predicate: String,
    pub object: String,
    pub kind: FactKind,
    pub fact_type: FactType,
    /// The fact as a sentence (what is stored, hashed and embedded).
    pub content: String,
    /// Clamped to [0, 1].
    pub confidence: f64,
    pub source_turn: String,
    pub source_quote: String,
    /// `YYYY-MM-DD` or `None`.
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
}

/// A problem the pipeline noticed and carried on from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    /// Stable snake_case kind, counted in the summary (`fact_too_short`, …).
    pub kind: String,
    pub message: String,
}

impl Warning {
    pub fn new(kind: &str, message: impl Into<String>) -> Self {
        Warning { kind: kind.to_string(), message: message.into() }
    }
}

string_enum! {
    /// A judge verdict on a (live fact, candidate) pair.
    pub enum Verdict {
        /// The candidate replaces the live fact.
        Old => "old",
        /// The candidate is wrong or adds nothing.
        New => "new",
        /// Both stand.
        Neither => "neither",
    }
}

/// Value tier from the value score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueTier {
    Core,
    Contextual,
    Ephemeral,
}

/// Model calls made for one stage of one episode (zero in rules mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmUsage {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Calls that asked again, with a larger budget, after a truncated answer
    /// (counted in `calls` too).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl LlmUsage {
    pub fn add(&mut self, other: LlmUsage) {
        self.calls += other.calls;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.retries += other.retries;
    }
}
