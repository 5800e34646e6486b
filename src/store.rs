//! The SQLite memory store: the only module that knows SQL. Schema as an
//! append-only list of named migrations, each in a transaction; evidence
//! written raw first; one transaction per episode for everything derived.

mod dream_tools;
mod ontology;
mod scratch;
mod search;
mod tokenize;

pub use dream_tools::{EvidenceRow, OpRow, PassOp, ToolCallRow};
pub use ontology::EVIDENCE_TABLES;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::config::WriteMode;
use crate::error::{Error, Result};
use crate::model::fact::FactRec;
use crate::model::outcome::PairReason;
use crate::model::write::{
    AuditAction, AuditRow, EntityRow, LiveByHash, MemoryUpdate, Outcome, Provenance, VerdictRow, WritePlan, WriteResult, WriteTx,
};
use crate::types::{Episode, FactKind, Verdict};

pub use search::{
    Document, DocumentIndex, Hit, Joined, Retriever, SearchHit, SearchParams, Searcher, blob_to_vector, fts_match_query, merge,
    normalise_bm25, vector_to_blob,
};

/// One hit of an external system's own search for a QA item
/// (`system_search`): its rank, the fact its memory became (none when the
/// system returned a memory it never listed) and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemHit {
    pub item: usize,
    pub rank: usize,
    pub fact_id: Option<String>,
    pub system_id: String,
    pub content: String,
    pub score: Option<f64>,
}

/// Named migrations, applied in order, each once, each in a transaction.
/// Append only: never edit or reorder a released entry.
pub const MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_evidence",
        "CREATE TABLE conversations (id TEXT PRIMARY KEY, speakers TEXT NOT NULL);
         CREATE TABLE episodes (
             conversation_id TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL,
             timestamp TEXT, PRIMARY KEY (conversation_id, id));
         CREATE TABLE turns (
             conversation_id TEXT NOT NULL, episode_id TEXT NOT NULL, id TEXT NOT NULL,
             seq INTEGER NOT NULL, speaker TEXT NOT NULL, text TEXT NOT NULL,
             PRIMARY KEY (conversation_id, id));",
    ),
    (
        "0002_entities",
        "CREATE TABLE entities (
             id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, name TEXT NOT NULL,
             entity_type TEXT NOT NULL, created_episode TEXT);
         CREATE TABLE entity_aliases (
             entity_id TEXT NOT NULL, alias TEXT NOT NULL, episode_id TEXT NOT NULL,
             PRIMARY KEY (entity_id, alias));",
    ),
    (
        "0003_facts",
        "CREATE TABLE facts (
             id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL,
             subject TEXT NOT NULL, predicate TEXT NOT NULL, object TEXT NOT NULL,
             kind TEXT NOT NULL, fact_type TEXT NOT NULL,
             content TEXT NOT NULL, normalized_content TEXT NOT NULL, content_hash TEXT NOT NULL,
             confidence REAL NOT NULL,
             valid_from TEXT, valid_until TEXT, invalid_at TEXT, superseded_by TEXT,
             source_episode TEXT NOT NULL, source_turns TEXT NOT NULL, source_quote TEXT NOT NULL,
             pinned INTEGER NOT NULL DEFAULT 0,
             subject_entity TEXT, object_entity TEXT, created_at TEXT);
         CREATE UNIQUE INDEX facts_live_hash ON facts (conversation_id, content_hash)
             WHERE invalid_at IS NULL AND superseded_by IS NULL;
         CREATE INDEX facts_subject ON facts (conversation_id, subject);",
    ),
    (
        "0004_audit",
        "CREATE TABLE audit (
             conversation_id TEXT NOT NULL, episode_id TEXT NOT NULL, seq INTEGER NOT NULL,
             candidate_id TEXT NOT NULL, action TEXT NOT NULL, outcome TEXT NOT NULL,
             fact_id TEXT, target_fact_id TEXT, reason TEXT NOT NULL,
             PRIMARY KEY (conversation_id, episode_id, seq));",
    ),
    (
        "0005_episode_runs",
        "CREATE TABLE episode_runs (
             conversation_id TEXT NOT NULL, episode_id TEXT NOT NULL, write_mode TEXT NOT NULL,
             PRIMARY KEY (conversation_id, episode_id));",
    ),
    (
        "0006_verdicts",
        "CREATE TABLE verdicts (
             conversation_id TEXT NOT NULL, episode_id TEXT NOT NULL, seq INTEGER NOT NULL,
             candidate_id TEXT NOT NULL, target_fact_id TEXT NOT NULL, pair_reason TEXT NOT NULL,
             judged TEXT NOT NULL, guard TEXT, verdict TEXT NOT NULL, review_needed INTEGER NOT NULL,
             PRIMARY KEY (conversation_id, episode_id, seq));",
    ),
    (
        // The hybrid search (src/store/search.rs): an FTS5 index of every
        // fact's normalised content (external content, kept by triggers),
        // and each fact's vector (f32 little-endian), written with its fact.
        "0007_search",
        "CREATE VIRTUAL TABLE facts_fts USING fts5(
             normalized_content, content='facts', content_rowid='rowid', tokenize='unicode61');
         INSERT INTO facts_fts(facts_fts) VALUES ('rebuild');
         CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts BEGIN
             INSERT INTO facts_fts(rowid, normalized_content) VALUES (new.rowid, new.normalized_content);
         END;
         CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts BEGIN
             INSERT INTO facts_fts(facts_fts, rowid, normalized_content) VALUES ('delete', old.rowid, old.normalized_content);
         END;
         CREATE TRIGGER facts_fts_update AFTER UPDATE OF normalized_content ON facts BEGIN
             INSERT INTO facts_fts(facts_fts, rowid, normalized_content) VALUES ('delete', old.rowid, old.normalized_content);
             INSERT INTO facts_fts(rowid, normalized_content) VALUES (new.rowid, new.normalized_content);
         END;
         CREATE TABLE embeddings (
             fact_id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, dims INTEGER NOT NULL, vector BLOB NOT NULL);",
    ),
    (
        "0008_signet",
        "CREATE TABLE fact_history (
             conversation_id TEXT NOT NULL, fact_id TEXT NOT NULL, episode_id TEXT NOT NULL,
             seq INTEGER NOT NULL, event TEXT NOT NULL, by_candidate TEXT NOT NULL, reason TEXT NOT NULL,
             subject TEXT NOT NULL, predicate TEXT NOT NULL, object TEXT NOT NULL, fact_type TEXT NOT NULL,
             content TEXT NOT NULL, content_hash TEXT NOT NULL, confidence REAL NOT NULL,
             valid_until TEXT, invalid_at TEXT, source_episode TEXT NOT NULL, source_turns TEXT NOT NULL,
             PRIMARY KEY (conversation_id, episode_id, seq));
         CREATE TABLE mentions (
             conversation_id TEXT NOT NULL, fact_id TEXT NOT NULL, entity_id TEXT NOT NULL,
             text TEXT NOT NULL, episode_id TEXT NOT NULL,
             PRIMARY KEY (fact_id, entity_id));
         CREATE TABLE audit_provenance (
             conversation_id TEXT NOT NULL, episode_id TEXT NOT NULL, audit_seq INTEGER NOT NULL,
             action TEXT NOT NULL, content TEXT NOT NULL, confidence REAL NOT NULL, source TEXT NOT NULL,
             extractor TEXT NOT NULL, decider TEXT NOT NULL, fact_count INTEGER NOT NULL,
             entity_count INTEGER NOT NULL, review_needed INTEGER NOT NULL,
             PRIMARY KEY (conversation_id, episode_id, audit_seq));",
    ),
    (
        "0009_memory_importance",
        "ALTER TABLE facts ADD COLUMN importance TEXT;
         ALTER TABLE facts ADD COLUMN decay INTEGER NOT NULL DEFAULT 0;",
    ),
    (
        // The `dreaming` profile's ontology (docs/dreaming.md, section 6),
        // written only by `Store::apply_ontology_ops` (src/store/ontology.rs),
        // and its pass bookkeeping. Evidence (episodes, turns) is never
        // written here: the apply transaction runs under an authorizer that
        // denies every write to the evidence tables.
        "0010_dreaming",
        "CREATE TABLE onto_entities (
             id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL,
             name TEXT NOT NULL, canonical_name TEXT NOT NULL, entity_type TEXT NOT NULL,
             status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
             created_op TEXT NOT NULL, updated_op TEXT NOT NULL);
         CREATE INDEX onto_entities_canonical ON onto_entities (conversation_id, canonical_name);
         CREATE TABLE onto_aliases (
             entity_id TEXT NOT NULL, conversation_id TEXT NOT NULL,
             alias TEXT NOT NULL, canonical_alias TEXT NOT NULL, created_op TEXT NOT NULL,
             PRIMARY KEY (entity_id, canonical_alias));
         CREATE TABLE onto_aspects (
             id TEXT PRIMARY KEY, entity_id TEXT NOT NULL, conversation_id TEXT NOT NULL,
             name TEXT NOT NULL, canonical_name TEXT NOT NULL,
             cardinality TEXT NOT NULL CHECK (cardinality IN ('single', 'multi')),
             status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
             created_op TEXT NOT NULL, updated_op TEXT NOT NULL);
         CREATE UNIQUE INDEX onto_aspects_name ON onto_aspects (entity_id, canonical_name) WHERE status = 'active';
         CREATE TABLE onto_claims (
             id TEXT PRIMARY KEY, aspect_id TEXT NOT NULL, conversation_id TEXT NOT NULL,
             claim_key TEXT NOT NULL,
             kind TEXT NOT NULL CHECK (kind IN ('attribute', 'constraint', 'claim')),
             content TEXT NOT NULL, normalized_content TEXT NOT NULL,
             confidence REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
             status TEXT NOT NULL CHECK (status IN ('active', 'superseded', 'retracted')),
             superseded_by TEXT,
             version INTEGER NOT NULL DEFAULT 1, version_root_id TEXT NOT NULL, previous_claim_id TEXT,
             valid_from TEXT, valid_until TEXT, review_after TEXT,
             created_op TEXT NOT NULL, ended_op TEXT);
         CREATE INDEX onto_claims_slot ON onto_claims (aspect_id, claim_key, status);
         CREATE TABLE onto_links (
             id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL,
             source_entity_id TEXT NOT NULL, target_entity_id TEXT NOT NULL, link_type TEXT NOT NULL,
             confidence REAL NOT NULL, reason TEXT,
             status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
             created_op TEXT NOT NULL, updated_op TEXT NOT NULL,
             UNIQUE (source_entity_id, target_entity_id, link_type));
         CREATE TABLE onto_evidence (
             op_id TEXT NOT NULL, seq INTEGER NOT NULL, conversation_id TEXT NOT NULL,
             episode_id TEXT NOT NULL, turn_id TEXT NOT NULL, revision TEXT NOT NULL,
             quote TEXT NOT NULL, quote_start INTEGER NOT NULL,
             PRIMARY KEY (op_id, seq));
         CREATE TABLE onto_ops (
             id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, pass_id TEXT NOT NULL,
             call_seq INTEGER NOT NULL, op_index INTEGER NOT NULL,
             operation TEXT NOT NULL, payload TEXT NOT NULL, reason TEXT, confidence REAL,
             effect TEXT NOT NULL CHECK (effect IN ('applied', 'skipped', 'failed')),
             kind TEXT, message TEXT, result TEXT, new_entities INTEGER NOT NULL DEFAULT 0);
         CREATE INDEX onto_ops_pass ON onto_ops (pass_id, effect);
         CREATE TABLE onto_history (
             conversation_id TEXT NOT NULL, op_id TEXT NOT NULL, seq INTEGER NOT NULL,
             object_kind TEXT NOT NULL CHECK (object_kind IN ('entity', 'alias', 'aspect', 'claim', 'link')),
             object_id TEXT NOT NULL,
             event TEXT NOT NULL CHECK (event IN ('created', 'superseded', 'retracted', 'reactivated')),
             before TEXT, after TEXT, PRIMARY KEY (op_id, seq));
         CREATE TABLE dream_passes (
             id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, seq INTEGER NOT NULL,
             mode TEXT NOT NULL CHECK (mode IN ('incremental', 'compact', 'content', 'hygiene')),
             trigger TEXT NOT NULL,
             status TEXT NOT NULL CHECK (status IN ('completed', 'failed')),
             after_episode TEXT NOT NULL,
             tool_calls INTEGER NOT NULL, ops_applied INTEGER NOT NULL, ops_skipped INTEGER NOT NULL,
             ops_failed INTEGER NOT NULL, evidence_consumed INTEGER NOT NULL, evidence_remaining INTEGER NOT NULL,
             evidence_withheld INTEGER NOT NULL,
             backlog_tokens_before INTEGER NOT NULL, backlog_tokens_after INTEGER NOT NULL,
             watermark_before INTEGER, watermark_after INTEGER, summary TEXT NOT NULL, error TEXT);
         CREATE TABLE dream_consumption (
             conversation_id TEXT NOT NULL, turn_id TEXT NOT NULL, revision TEXT NOT NULL,
             state TEXT NOT NULL CHECK (state IN ('consumed', 'withheld')),
             pass_id TEXT NOT NULL, PRIMARY KEY (conversation_id, turn_id));",
    ),
    (
        // The `external` profile's QA source: each QA question's hits from
        // the external system's own search (docs/adapters.md), mapped onto
        // the facts its memories became.
        "0011_system_search",
        "CREATE TABLE system_search (
             conversation_id TEXT NOT NULL, item INTEGER NOT NULL, rank INTEGER NOT NULL,
             fact_id TEXT, system_id TEXT NOT NULL, content TEXT NOT NULL, score REAL,
             PRIMARY KEY (conversation_id, item, rank));",
    ),
    (
        // The `dreaming` profile's capability registry (docs/dreaming.md,
        // section 7): the runbook each pass wrote (`runbook_write`, the last
        // write wins) and every tool call of a pass, its input and answer.
        "0012_dream_tools",
        "CREATE TABLE dream_runbooks (
             pass_id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, runbook TEXT NOT NULL);
         CREATE TABLE dream_tool_calls (
             pass_id TEXT NOT NULL, seq INTEGER NOT NULL, conversation_id TEXT NOT NULL,
             tool TEXT NOT NULL, input TEXT NOT NULL, output TEXT NOT NULL, ok INTEGER NOT NULL,
             PRIMARY KEY (pass_id, seq));",
    ),
    (
        // The dreaming operations that change the graph's shape (archives,
        // merges, renames, `update_link`): their history events. SQLite
        // cannot widen a CHECK in place, so `onto_history` is rebuilt with
        // its rows.
        "0013_dreaming_ops",
        "CREATE TABLE onto_history_new (
             conversation_id TEXT NOT NULL, op_id TEXT NOT NULL, seq INTEGER NOT NULL,
             object_kind TEXT NOT NULL CHECK (object_kind IN ('entity', 'alias', 'aspect', 'claim', 'link')),
             object_id TEXT NOT NULL,
             event TEXT NOT NULL CHECK (event IN ('created', 'superseded', 'retracted', 'reactivated', 'updated', 'renamed',
                                                  'archived', 'merged', 'moved')),
             before TEXT, after TEXT, PRIMARY KEY (op_id, seq));
         INSERT INTO onto_history_new SELECT conversation_id, op_id, seq, object_kind, object_id, event, before, after FROM onto_history;
         DROP TABLE onto_history;
         ALTER TABLE onto_history_new RENAME TO onto_history;",
    ),
];

/// One archived fact state (a row of `fact_history`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryRow {
    pub conversation_id: String,
    pub fact_id: String,
    pub episode_id: String,
    /// `update` or `delete`.
    pub event: String,
    pub by_candidate: String,
    pub reason: String,
    /// The content the fact had before the event.
    pub content: String,
}

/// A store file. One connection, shared by the run's threads behind a mutex:
/// transactions are short and the plan is computed before the lock is taken.
pub struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
    /// The vector leg's copy of each conversation's `embeddings` rows
    /// (read on first search, topped up with later rows).
    vectors: Mutex<HashMap<String, std::sync::Arc<std::sync::RwLock<search::ConvVectors>>>>,
    /// The search's statistics of each conversation's live facts (now, or
    /// at an instant), each stamped with the store's change counters and
    /// rebuilt when they moved (see `search::LiveFacts`).
    live: search::LiveCache,
    /// A run-private store's batching ([`Store::open_for_run`]): writes go
    /// into one open transaction, committed every [`BATCH_UNITS`] units.
    batch: Option<std::sync::atomic::AtomicUsize>,
    /// With [`Store::defer_search_index`]: the conversations whose facts are
    /// in `facts_fts` (the others are not: its triggers are dropped).
    deferred: Mutex<Option<std::collections::BTreeSet<String>>>,
    /// A scratch store's facts ([`Store::scratch`]): episodes are written
    /// there, not into SQLite.
    scratch: Option<Mutex<scratch::Facts>>,
}

/// The triggers that keep `facts_fts` in step with `facts`, as migration
/// `0007_search` creates them (a test checks the text is the same).
const FTS_TRIGGERS: &str = "CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts BEGIN
             INSERT INTO facts_fts(rowid, normalized_content) VALUES (new.rowid, new.normalized_content);
         END;
         CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts BEGIN
             INSERT INTO facts_fts(facts_fts, rowid, normalized_content) VALUES ('delete', old.rowid, old.normalized_content);
         END;
         CREATE TRIGGER facts_fts_update AFTER UPDATE OF normalized_content ON facts BEGIN
             INSERT INTO facts_fts(facts_fts, rowid, normalized_content) VALUES ('delete', old.rowid, old.normalized_content);
             INSERT INTO facts_fts(rowid, normalized_content) VALUES (new.rowid, new.normalized_content);
         END;";

/// Units (an episode's write, a conversation's evidence) per commit of a
/// run-private store.
pub const BATCH_UNITS: usize = 512;

impl Store {
    /// A store over `conn`, its caches empty; `batch` and `scratch` as the
    /// constructors below choose.
    fn assemble(conn: Connection, path: PathBuf, batch: Option<std::sync::atomic::AtomicUsize>, scratch: bool) -> Store {
        Store {
            conn: Mutex::new(conn),
            path,
            vectors: Mutex::default(),
            live: search::LiveCache::default(),
            batch,
            deferred: Mutex::default(),
            scratch: scratch.then(Mutex::default),
        }
    }

    /// Opens (creating if needed) the store at `path` and applies pending migrations.
    pub fn open(path: &Path) -> Result<Store> {
        let err = |e| Error::Store { path: path.to_path_buf(), source: e };
        let mut conn = Connection::open(path).map_err(err)?;
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;").map_err(err)?;
        migrate(&mut conn).map_err(err)?;
        Ok(Store::assemble(conn, path.to_path_buf(), None, false))
    }

    /// Opens the store a run builds in its private build directory: a file
    /// no one reads until the run is complete and moved into place, and
    /// that a run that does not finish leaves to be discarded (the next run
    /// removes its build directory). So it is written for speed, not for
    /// durability: the connection holds SQLite's lock for its lifetime
    /// (`locking_mode=EXCLUSIVE`), the rollback journal is in memory
    /// (`journal_mode=MEMORY`: a failed episode still rolls back whole),
    /// nothing is synced (`synchronous=OFF`), and the writes go into one
    /// open transaction committed every [`BATCH_UNITS`] units; each
    /// episode's plan is still applied as one unit (a savepoint). A killed
    /// run's file may be torn: it is never read. [`Store::finish`] commits
    /// and turns the file into WAL mode, as [`Store::open`] leaves it;
    /// readers open the finished file with [`Store::open`].
    pub fn open_for_run(path: &Path) -> Result<Store> {
        let err = |e| Error::Store { path: path.to_path_buf(), source: e };
        let mut conn = Connection::open(path).map_err(err)?;
        conn.execute_batch("PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF; PRAGMA foreign_keys=ON;")
            .map_err(err)?;
        migrate(&mut conn).map_err(err)?;
        Ok(Store::assemble(conn, path.to_path_buf(), Some(std::sync::atomic::AtomicUsize::new(0)), false))
    }

    /// Commits a run-private store's open batch and leaves the file in WAL
    /// mode (as [`Store::open`] does); nothing for other stores. A run calls
    /// it once formation is done: dropping the store without it discards the
    /// uncommitted batch.
    pub fn finish(&self) -> Result<()> {
        if self.batch.is_some() {
            self.with(|c| if c.is_autocommit() { Ok(()) } else { c.execute_batch("COMMIT") })?;
        }
        self.resume_search_index()?;
        if self.batch.is_some() {
            self.with(|c| c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)).map(drop))?;
        }
        Ok(())
    }

    /// For a profile that never searches while it forms (soda): drops the
    /// triggers that index each fact in `facts_fts` as it is written, so
    /// that formation writes no FTS5 data; [`Store::index_conversation`]
    /// fills a conversation's in bulk once it is formed, and
    /// [`Store::resume_search_index`] (or [`Store::finish`]) indexes the
    /// rest and restores the triggers. Call it before anything is written.
    pub fn defer_search_index(&self) -> Result<()> {
        self.with(|c| c.execute_batch("DROP TRIGGER facts_fts_insert; DROP TRIGGER facts_fts_delete; DROP TRIGGER facts_fts_update;"))?;
        *self.deferred.lock().unwrap_or_else(|p| p.into_inner()) = Some(Default::default());
        Ok(())
    }

    /// With the index deferred, adds `conversation`'s facts to `facts_fts`
    /// (in rowid order, as the triggers would have): its formation is done
    /// and nothing more of it is written. Nothing otherwise.
    pub fn index_conversation(&self, conversation: &str) -> Result<()> {
        let mut deferred = self.deferred.lock().unwrap_or_else(|p| p.into_inner());
        let Some(done) = deferred.as_mut() else { return Ok(()) };
        if done.contains(conversation) {
            return Ok(());
        }
        self.write_with(Some(conversation), |c| {
            self.begin_unit(c)?;
            c.prepare_cached(
                "INSERT INTO facts_fts(rowid, normalized_content)
                 SELECT rowid, normalized_content FROM facts WHERE conversation_id = ?1 ORDER BY rowid",
            )?
            .execute([conversation])?;
            self.end_unit(c)
        })?;
        done.insert(conversation.to_string());
        Ok(())
    }

    /// Ends [`Store::defer_search_index`]: indexes the facts of every
    /// conversation not yet indexed and restores the triggers.
    pub fn resume_search_index(&self) -> Result<()> {
        let mut deferred = self.deferred.lock().unwrap_or_else(|p| p.into_inner());
        let Some(done) = deferred.take() else { return Ok(()) };
        let done: Vec<String> = done.into_iter().collect();
        // Through `with`: a change the search cache does not account for,
        // so every cached entry is stale (their FTS5 statistics moved).
        self.with(|c| {
            let tx = c.savepoint()?;
            tx.execute(
                "INSERT INTO facts_fts(rowid, normalized_content)
                 SELECT rowid, normalized_content FROM facts
                 WHERE conversation_id NOT IN (SELECT value FROM json_each(?1)) ORDER BY rowid",
                [serde_json::to_string(&done).unwrap_or_default()],
            )?;
            tx.execute_batch(FTS_TRIGGERS)?;
            tx.commit()
        })
    }

    /// Opens the batch's transaction if none is open (batching stores only).
    fn begin_unit(&self, c: &Connection) -> rusqlite::Result<()> {
        if self.batch.is_some() && c.is_autocommit() {
            c.execute_batch("BEGIN")?;
        }
        Ok(())
    }

    /// Counts a unit written; commits the batch every [`BATCH_UNITS`].
    fn end_unit(&self, c: &Connection) -> rusqlite::Result<()> {
        if let Some(n) = &self.batch
            && n.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1 >= BATCH_UNITS
        {
            n.store(0, std::sync::atomic::Ordering::Relaxed);
            if !c.is_autocommit() {
                c.execute_batch("COMMIT")?;
            }
        }
        Ok(())
    }

    /// An in-memory store (for sweeps and tests).
    pub fn in_memory() -> Result<Store> {
        let path = PathBuf::from(":memory:");
        let err = |e| Error::Store { path: PathBuf::from(":memory:"), source: e };
        let mut conn = Connection::open_in_memory().map_err(err)?;
        migrate(&mut conn).map_err(err)?;
        Ok(Store::assemble(conn, path, None, false))
    }

    /// A scratch store, for a formation nobody reads back (a sweep point
    /// without QA): [`Store::write_episode`] runs the policy against the
    /// facts' rows kept in memory, answering it as SQLite would
    /// (`store/scratch.rs`), and writes nothing else (no audit, no
    /// evidence, no vectors). It has no tables: reading it, or writing to it
    /// any other way, is an error.
    pub fn scratch() -> Result<Store> {
        let path = PathBuf::from(":scratch:");
        let conn = Connection::open_in_memory().map_err(|e| Error::Store { path: path.clone(), source: e })?;
        Ok(Store::assemble(conn, path, None, true))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with<T>(&self, f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> Result<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard).map_err(|e| Error::Store { path: self.path.clone(), source: e })
    }

    /// Names of the migrations applied, in order.
    pub fn applied_migrations(&self) -> Result<Vec<String>> {
        self.with(|c| {
            let mut st = c.prepare("SELECT name FROM schema_migrations ORDER BY name")?;
            st.query_map([], |r| r.get(0))?.collect()
        })
    }

    /// Records a conversation and its speakers' entities (evidence, raw first).
    pub fn write_conversation(&self, id: &str, speakers: &[String], speaker_entities: &[EntityRow]) -> Result<()> {
        let speakers_json = serde_json::to_string(speakers).unwrap_or_default();
        self.write_with(None, |c| {
            self.begin_unit(c)?;
            let tx = c.savepoint()?;
            tx.execute("INSERT OR IGNORE INTO conversations (id, speakers) VALUES (?1, ?2)", params![id, speakers_json])?;
            for e in speaker_entities {
                tx.execute(
                    "INSERT OR IGNORE INTO entities (id, conversation_id, name, entity_type, created_episode)
                     VALUES (?1, ?2, ?3, ?4, NULL)",
                    params![e.id, id, e.name, e.entity_type.as_str()],
                )?;
            }
            tx.commit()?;
            self.end_unit(c)
        })
    }

    /// Commits an episode's evidence (episode and turns) before it is processed.
    pub fn write_evidence(&self, conversation_id: &str, seq: usize, episode: &Episode) -> Result<()> {
        self.write_evidence_from(conversation_id, seq, std::slice::from_ref(episode))
    }

    /// Commits the evidence of `episodes` (numbered from `first_seq`) in one
    /// transaction, before any of them is processed: a run writes a whole
    /// conversation's evidence at once, raw first.
    pub fn write_evidence_from(&self, conversation_id: &str, first_seq: usize, episodes: &[Episode]) -> Result<()> {
        self.write_with(None, |c| {
            self.begin_unit(c)?;
            let tx = c.savepoint()?;
            {
                let mut ep =
                    tx.prepare_cached("INSERT OR IGNORE INTO episodes (conversation_id, id, seq, timestamp) VALUES (?1, ?2, ?3, ?4)")?;
                let mut st = tx.prepare_cached(
                    "INSERT OR IGNORE INTO turns (conversation_id, episode_id, id, seq, speaker, text)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?;
                for (k, episode) in episodes.iter().enumerate() {
                    ep.execute(params![conversation_id, episode.id, (first_seq + k) as i64, episode.timestamp])?;
                    for (i, t) in episode.turns.iter().enumerate() {
                        st.execute(params![conversation_id, episode.id, t.id, i as i64, t.speaker, t.text])?;
                    }
                }
            }
            tx.commit()?;
            self.end_unit(c)
        })
    }

    /// Writes one episode in one transaction: `decide` (the write policy)
    /// runs inside it against [`WriteTx`], then every audit row, the plan's
    /// verdict rows and the episode's completion mark are written, and the
    /// transaction commits. An error anywhere rolls everything back.
    pub fn write_episode(
        &self,
        plan: &WritePlan,
        mode: WriteMode,
        decide: impl FnOnce(&mut dyn WriteTx) -> Result<WriteResult>,
    ) -> Result<WriteResult> {
        if let Some(facts) = &self.scratch {
            return facts.lock().unwrap_or_else(|p| p.into_inner()).write_episode(&plan.conversation_id, decide);
        }
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let err = |e| Error::Store { path: self.path.clone(), source: e };
        self.live.before_write(&guard);
        let out = (|| {
            self.begin_unit(&guard).map_err(err)?;
            let tx = guard.savepoint().map_err(err)?;
            let result = decide(&mut SqlTx {
                tx: &tx,
                path: &self.path,
                conversation_id: &plan.conversation_id,
                episode_id: &plan.episode_id,
                now: plan.now.as_deref(),
            })?;
            record_decisions(&tx, plan, mode, &result).map_err(err)?;
            tx.commit().map_err(err)?;
            self.end_unit(&guard).map_err(err)?;
            Ok(result)
        })();
        // The plan names facts of its conversation only.
        self.live.after_write(&guard, Some(&plan.conversation_id));
        out
    }

    /// Writes `conversation`'s hits of the external system's own search
    /// (one unit; facts untouched).
    pub fn write_system_search(&self, conversation: &str, hits: &[SystemHit]) -> Result<()> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let err = |e| Error::Store { path: self.path.clone(), source: e };
        self.live.before_write(&guard);
        let out = (|| {
            self.begin_unit(&guard).map_err(err)?;
            let tx = guard.savepoint().map_err(err)?;
            {
                let mut st = tx
                    .prepare_cached(
                        "INSERT INTO system_search (conversation_id, item, rank, fact_id, system_id, content, score)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    )
                    .map_err(err)?;
                for h in hits {
                    st.execute(params![conversation, h.item as i64, h.rank as i64, h.fact_id, h.system_id, h.content, h.score])
                        .map_err(err)?;
                }
            }
            tx.commit().map_err(err)?;
            self.end_unit(&guard).map_err(err)
        })();
        self.live.after_write(&guard, None);
        out
    }

    /// `conversation`'s hits of the external system's own search, by item and rank.
    pub fn system_search_of(&self, conversation: &str) -> Result<Vec<SystemHit>> {
        self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT item, rank, fact_id, system_id, content, score FROM system_search
                 WHERE conversation_id = ?1 ORDER BY item, rank",
            )?;
            st.query_map([conversation], |r| {
                Ok(SystemHit {
                    item: r.get::<_, i64>(0)? as usize,
                    rank: r.get::<_, i64>(1)? as usize,
                    fact_id: r.get(2)?,
                    system_id: r.get(3)?,
                    content: r.get(4)?,
                    score: r.get(5)?,
                })
            })?
            .collect()
        })
    }

    /// [`Store::with`] for a write the search cache accounts for: it touches
    /// the facts of `conversation` only (`None`: no facts), so the cached
    /// entries of other conversations stay valid.
    fn write_with<T>(&self, conversation: Option<&str>, f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> Result<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        self.live.before_write(&guard);
        let out = f(&mut guard);
        self.live.after_write(&guard, conversation);
        out.map_err(|e| Error::Store { path: self.path.clone(), source: e })
    }

    /// A SHA-256 digest of what the QA evaluation of one conversation reads
    /// ([`crate::qa::evaluate_formed`]): the conversation's rows of `facts`,
    /// `embeddings` and `system_search`, in rowid order, without the rowids
    /// (which other conversations' rows in the same store shift). Two stores
    /// with the same digest for a conversation give it the same retrieval
    /// results, so a sweep evaluates each conversation once per digest.
    pub fn qa_digest_of(&self, conversation: &str) -> Result<[u8; 32]> {
        use sha2::Digest;
        self.with(|c| {
            let mut h = sha2::Sha256::new();
            for t in ["facts", "embeddings", "system_search"] {
                h.update(t.as_bytes());
                let mut st = c.prepare_cached(&format!("SELECT * FROM {t} WHERE conversation_id = ?1 ORDER BY rowid"))?;
                digest_rows(&mut h, &mut st, [conversation])?;
            }
            let mut out = [0u8; 32];
            out.copy_from_slice(&h.finalize());
            Ok(out)
        })
    }

    /// Ids of the live facts (neither invalidated nor superseded).
    pub fn live_fact_ids(&self) -> Result<std::collections::BTreeSet<String>> {
        self.with(|c| {
            let mut st = c.prepare("SELECT id FROM facts WHERE invalid_at IS NULL AND superseded_by IS NULL")?;
            st.query_map([], |r| r.get(0))?.collect()
        })
    }

    /// Every fact, live and invalidated, ordered by id.
    pub fn facts(&self) -> Result<Vec<StoredFact>> {
        self.facts_where(None)
    }

    /// [`Store::facts`] of one conversation.
    pub fn facts_of(&self, conversation: &str) -> Result<Vec<StoredFact>> {
        self.facts_where(Some(conversation))
    }

    /// The vectors of `conversation`'s facts (those that have one), by fact id.
    pub fn fact_vectors(&self, conversation: &str) -> Result<HashMap<String, Vec<f32>>> {
        self.with(|c| {
            let mut st = c.prepare_cached("SELECT fact_id, vector FROM embeddings WHERE conversation_id = ?1")?;
            st.query_map([conversation], |r| Ok((r.get::<_, String>(0)?, blob_to_vector(&r.get::<_, Vec<u8>>(1)?))))?.collect()
        })
    }

    fn facts_where(&self, conversation: Option<&str>) -> Result<Vec<StoredFact>> {
        self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT id, conversation_id, subject, predicate, object, content, confidence,
                        valid_from, valid_until, invalid_at, superseded_by, source_episode, source_turns, created_at
                 FROM facts WHERE ?1 IS NULL OR conversation_id = ?1 ORDER BY conversation_id, id",
            )?;
            st.query_map([conversation], |r| {
                Ok(StoredFact {
                    id: r.get(0)?,
                    conversation_id: r.get(1)?,
                    subject: r.get(2)?,
                    predicate: r.get(3)?,
                    object: r.get(4)?,
                    content: r.get(5)?,
                    confidence: r.get(6)?,
                    valid_from: r.get(7)?,
                    valid_until: r.get(8)?,
                    invalid_at: r.get(9)?,
                    superseded_by: r.get(10)?,
                    source_episode: r.get(11)?,
                    source_turns: r.get(12)?,
                    created_at: r.get(13)?,
                })
            })?
            .collect()
        })
    }

    /// Every entity as (conversation, id, name, type, aliases), ordered by
    /// conversation and creation.
    pub fn entities(&self) -> Result<Vec<EntityListing>> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT e.conversation_id, e.id, e.name, e.entity_type,
                        (SELECT group_concat(alias, '|') FROM (SELECT alias FROM entity_aliases a
                           WHERE a.entity_id = e.id ORDER BY alias))
                 FROM entities e ORDER BY e.conversation_id, CAST(substr(e.id, length(e.conversation_id) + 3) AS INTEGER)",
            )?;
            st.query_map([], |r| {
                let aliases: Option<String> = r.get(4)?;
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    aliases.map(|a| a.split('|').map(str::to_string).collect()).unwrap_or_default(),
                ))
            })?
            .collect()
        })
    }

    /// Every audit row, ordered by conversation, episode order and sequence.
    pub fn audit(&self) -> Result<Vec<(String, String, AuditRow)>> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT a.conversation_id, a.episode_id, a.candidate_id, a.action, a.outcome, a.fact_id,
                        a.target_fact_id, a.reason
                 FROM audit a JOIN episodes e ON e.conversation_id = a.conversation_id AND e.id = a.episode_id
                 ORDER BY a.conversation_id, e.seq, a.seq",
            )?;
            st.query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    AuditRow {
                        candidate_id: r.get(2)?,
                        action: parse_column(r, 3, AuditAction::parse)?,
                        outcome: parse_column(r, 4, Outcome::parse)?,
                        fact_id: r.get(5)?,
                        target_fact_id: r.get(6)?,
                        reason: r.get(7)?,
                    },
                ))
            })?
            .collect()
        })
    }

    /// Every archived fact state (`signet`'s history table): conversation,
    /// fact id, episode, event, candidate, reason and the archived content,
    /// in archive order.
    pub fn history(&self) -> Result<Vec<HistoryRow>> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT h.conversation_id, h.fact_id, h.episode_id, h.event, h.by_candidate, h.reason, h.content
                 FROM fact_history h JOIN episodes e ON e.conversation_id = h.conversation_id AND e.id = h.episode_id
                 ORDER BY h.conversation_id, e.seq, h.seq",
            )?;
            st.query_map([], |r| {
                Ok(HistoryRow {
                    conversation_id: r.get(0)?,
                    fact_id: r.get(1)?,
                    episode_id: r.get(2)?,
                    event: r.get(3)?,
                    by_candidate: r.get(4)?,
                    reason: r.get(5)?,
                    content: r.get(6)?,
                })
            })?
            .collect()
        })
    }

    /// Every mention row (`signet`'s entity linker): conversation, fact id,
    /// entity id and the text that named it, ordered by fact.
    pub fn mentions(&self) -> Result<Vec<(String, String, String, String)>> {
        self.with(|c| {
            let mut st =
                c.prepare("SELECT conversation_id, fact_id, entity_id, text FROM mentions ORDER BY conversation_id, fact_id, entity_id")?;
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?.collect()
        })
    }

    /// Every audit row's provenance (`signet`), ordered like the audit:
    /// conversation, episode, audit row number and the provenance.
    pub fn provenance(&self) -> Result<Vec<(String, String, usize, Provenance)>> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT p.conversation_id, p.episode_id, p.audit_seq, p.action, p.content, p.confidence, p.source,
                        p.extractor, p.decider, p.fact_count, p.entity_count, p.review_needed
                 FROM audit_provenance p JOIN episodes e ON e.conversation_id = p.conversation_id AND e.id = p.episode_id
                 ORDER BY p.conversation_id, e.seq, p.audit_seq",
            )?;
            st.query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get::<_, i64>(2)? as usize,
                    Provenance {
                        action: r.get(3)?,
                        content: r.get(4)?,
                        confidence: r.get(5)?,
                        source: r.get(6)?,
                        extractor: r.get(7)?,
                        decider: r.get(8)?,
                        fact_count: r.get::<_, i64>(9)? as usize,
                        entity_count: r.get::<_, i64>(10)? as usize,
                        review_needed: r.get::<_, i64>(11)? != 0,
                    },
                ))
            })?
            .collect()
        })
    }

    /// Every verdict row (one per judged pair), ordered like the audit.
    pub fn verdicts(&self) -> Result<Vec<(String, String, VerdictRow)>> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT v.conversation_id, v.episode_id, v.candidate_id, v.target_fact_id, v.pair_reason, v.judged,
                        v.guard, v.verdict, v.review_needed
                 FROM verdicts v LEFT JOIN episodes e ON e.conversation_id = v.conversation_id AND e.id = v.episode_id
                 ORDER BY v.conversation_id, e.seq, v.episode_id, v.seq",
            )?;
            st.query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    VerdictRow {
                        candidate_id: r.get(2)?,
                        target_fact_id: r.get(3)?,
                        pair_reason: parse_column(r, 4, PairReason::parse)?,
                        judged: parse_column(r, 5, Verdict::parse)?,
                        guard: r.get(6)?,
                        verdict: parse_column(r, 7, Verdict::parse)?,
                        review_needed: r.get::<_, i64>(8)? != 0,
                    },
                ))
            })?
            .collect()
        })
    }

    /// A canonical text dump of every table (for determinism checks).
    pub fn dump(&self) -> Result<String> {
        let tables = [
            ("conversations", "id"),
            ("episodes", "conversation_id, id"),
            ("turns", "conversation_id, id"),
            ("entities", "id"),
            ("entity_aliases", "entity_id, alias"),
            ("facts", "id"),
            ("audit", "conversation_id, episode_id, seq"),
            ("episode_runs", "conversation_id, episode_id"),
            ("verdicts", "conversation_id, episode_id, seq"),
            ("embeddings", "fact_id"),
        ];
        self.with(|c| {
            let mut out = String::new();
            for (t, order) in tables {
                out.push_str(&format!("## {t}\n"));
                let mut st = c.prepare(&format!("SELECT * FROM {t} ORDER BY {order}"))?;
                let n = st.column_count();
                let mut rows = st.query([])?;
                while let Some(r) = rows.next()? {
                    let vals: Vec<String> = (0..n)
                        .map(|i| match r.get_ref(i) {
                            Ok(v) => format!("{v:?}"),
                            Err(e) => format!("<{e}>"),
                        })
                        .collect();
                    out.push_str(&vals.join("\t"));
                    out.push('\n');
                }
            }
            Ok(out)
        })
    }

    /// Problems that would make the store inconsistent; empty when it is sound.
    /// Checks SQLite's integrity, that every derived row points at committed
    /// evidence, and that every audited episode was completed.
    pub fn consistency_problems(&self) -> Result<Vec<String>> {
        self.with(|c| {
            let mut problems = Vec::new();
            let integrity: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
            if integrity != "ok" {
                problems.push(format!("integrity_check: {integrity}"));
            }
            let checks = [
                (
                    "facts without evidence",
                    "SELECT COUNT(*) FROM facts f LEFT JOIN episodes e
                       ON e.conversation_id = f.conversation_id AND e.id = f.source_episode WHERE e.id IS NULL",
                ),
                (
                    "audit rows of unfinished episodes",
                    "SELECT COUNT(*) FROM audit a LEFT JOIN episode_runs r
                       ON r.conversation_id = a.conversation_id AND r.episode_id = a.episode_id WHERE r.episode_id IS NULL",
                ),
                (
                    "finished episodes without evidence",
                    "SELECT COUNT(*) FROM episode_runs r LEFT JOIN episodes e
                       ON e.conversation_id = r.conversation_id AND e.id = r.episode_id WHERE e.id IS NULL",
                ),
                (
                    "episodes without turns",
                    "SELECT COUNT(*) FROM episodes e WHERE NOT EXISTS (SELECT 1 FROM turns t
                       WHERE t.conversation_id = e.conversation_id AND t.episode_id = e.id)",
                ),
            ];
            for (what, sql) in checks {
                let n: i64 = c.query_row(sql, [], |r| r.get(0))?;
                if n > 0 {
                    problems.push(format!("{n} {what}"));
                }
            }
            Ok(problems)
        })
    }
}

/// An entity as read back: (conversation, id, name, type, aliases).
pub type EntityListing = (String, String, String, String, Vec<String>);

/// A fact row as read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredFact {
    pub id: String,
    pub conversation_id: String,
    pub subject: String,
    pub predicate: String,
    pub object: String,
    pub content: String,
    pub confidence: f64,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub invalid_at: Option<String>,
    pub superseded_by: Option<String>,
    pub source_episode: String,
    pub source_turns: String,
    /// When it was written (the episode's timestamp), if the episode had one.
    pub created_at: Option<String>,
}

/// Reads a stored string column into its enum; an unknown value is an error.
fn parse_column<T>(r: &rusqlite::Row<'_>, i: usize, parse: fn(&str) -> Option<T>) -> rusqlite::Result<T> {
    let s: String = r.get(i)?;
    parse(&s)
        .ok_or_else(|| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, format!("unknown value {s:?}").into()))
}

fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.execute_batch("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY)")?;
    for (name, sql) in MIGRATIONS {
        let tx = conn.transaction()?;
        let done: Option<String> = tx.query_row("SELECT name FROM schema_migrations WHERE name = ?1", [name], |r| r.get(0)).optional()?;
        if done.is_none() {
            tx.execute_batch(sql)?;
            tx.execute("INSERT INTO schema_migrations (name) VALUES (?1)", [name])?;
        }
        tx.commit()?;
    }
    Ok(())
}

/// The store's side of [`WriteTx`]: one episode's open transaction.
struct SqlTx<'t> {
    tx: &'t Connection,
    path: &'t Path,
    conversation_id: &'t str,
    episode_id: &'t str,
    now: Option<&'t str>,
}

impl SqlTx<'_> {
    fn err(&self, e: rusqlite::Error) -> Error {
        Error::Store { path: self.path.to_path_buf(), source: e }
    }
}

impl WriteTx for SqlTx<'_> {
    fn live_by_hash(&mut self, hash: &str) -> Result<Option<LiveByHash>> {
        self.tx
            .prepare_cached(
                "SELECT id, valid_until FROM facts WHERE conversation_id = ?1 AND content_hash = ?2
                   AND invalid_at IS NULL AND superseded_by IS NULL",
            )
            .and_then(|mut st| {
                st.query_row(params![self.conversation_id, hash], |r| Ok(LiveByHash { id: r.get(0)?, valid_until: r.get(1)? })).optional()
            })
            .map_err(|e| self.err(e))
    }

    fn pinned(&mut self, id: &str) -> Result<Option<bool>> {
        self.tx
            .prepare_cached("SELECT pinned FROM facts WHERE id = ?1 AND invalid_at IS NULL AND superseded_by IS NULL")
            .and_then(|mut st| st.query_row([id], |r| r.get::<_, i64>(0).map(|p| p != 0)).optional())
            .map_err(|e| self.err(e))
    }

    fn insert_entity(&mut self, e: &EntityRow) -> Result<()> {
        self.tx
            .prepare_cached(
                "INSERT OR IGNORE INTO entities (id, conversation_id, name, entity_type, created_episode)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut st| st.execute(params![e.id, self.conversation_id, e.name, e.entity_type.as_str(), self.episode_id]))
            .map(drop)
            .map_err(|e| self.err(e))
    }

    fn insert_alias(&mut self, entity_id: &str, alias: &str) -> Result<()> {
        self.tx
            .prepare_cached("INSERT OR IGNORE INTO entity_aliases (entity_id, alias, episode_id) VALUES (?1, ?2, ?3)")
            .and_then(|mut st| st.execute(params![entity_id, alias, self.episode_id]))
            .map(drop)
            .map_err(|e| self.err(e))
    }

    fn insert_fact(&mut self, fact: &FactRec) -> Result<bool> {
        let turns = serde_json::to_string(&[&fact.source_turn]).map_err(|e| Error::Other(format!("serialise source turns: {e}")))?;
        self.tx
            .prepare_cached(
                "INSERT INTO facts (id, conversation_id, subject, predicate, object, kind, fact_type, content,
                    normalized_content, content_hash, confidence, valid_from, valid_until, invalid_at,
                    superseded_by, source_episode, source_turns, source_quote, pinned, subject_entity,
                    object_entity, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, NULL, NULL, ?14, ?15, ?16,
                    ?17, ?18, ?19, ?20)
                 ON CONFLICT DO NOTHING",
            )
            .and_then(|mut st| {
                st.execute(params![
                    fact.id,
                    self.conversation_id,
                    fact.subject,
                    fact.predicate,
                    fact.object,
                    kind_str(fact.kind),
                    fact.fact_type.as_str(),
                    fact.content,
                    fact.normalized,
                    fact.hash,
                    fact.confidence,
                    fact.valid_from,
                    fact.valid_until,
                    fact.source_episode,
                    turns,
                    fact.source_quote,
                    fact.pinned as i64,
                    fact.subject_entity,
                    fact.object_entity,
                    self.now,
                ])
            })
            .and_then(|n| {
                if n == 1 && !fact.embedding.is_empty() {
                    self.tx
                        .prepare_cached(
                            "INSERT OR REPLACE INTO embeddings (fact_id, conversation_id, dims, vector) VALUES (?1, ?2, ?3, ?4)",
                        )?
                        .execute(params![fact.id, self.conversation_id, fact.embedding.len() as i64, vector_to_blob(&fact.embedding)])?;
                }
                Ok(n == 1)
            })
            .map_err(|e| self.err(e))
    }

    fn set_valid_until(&mut self, id: &str, valid_until: &str) -> Result<()> {
        self.tx
            .prepare_cached("UPDATE facts SET valid_until = ?2 WHERE id = ?1")
            .and_then(|mut st| st.execute(params![id, valid_until]))
            .map(drop)
            .map_err(|e| self.err(e))
    }

    fn update_memory(&mut self, id: &str, u: &MemoryUpdate) -> Result<bool> {
        // OR IGNORE: a merged content whose hash another live row holds is refused, not an error.
        self.tx
            .prepare_cached(
                "UPDATE OR IGNORE facts SET object = ?2, content = ?3, normalized_content = ?4, content_hash = ?5, source_quote = ?6
                 WHERE id = ?1 AND invalid_at IS NULL AND superseded_by IS NULL",
            )
            .and_then(|mut st| st.execute(params![id, u.title, u.content, u.normalized, u.hash, u.facts]))
            .and_then(|n| {
                // The vector goes with the rewritten content, as in `update_fact`.
                if n == 1 && !u.embedding.is_empty() {
                    self.tx
                        .prepare_cached(
                            "INSERT OR REPLACE INTO embeddings (fact_id, conversation_id, dims, vector) VALUES (?1, ?2, ?3, ?4)",
                        )?
                        .execute(params![id, self.conversation_id, u.embedding.len() as i64, vector_to_blob(&u.embedding)])?;
                }
                Ok(n == 1)
            })
            .map_err(|e| self.err(e))
            .and_then(|changed| {
                if changed && !u.turns.is_empty() {
                    self.add_source_turns(id, &u.turns, None)?;
                }
                Ok(changed)
            })
    }

    fn add_source_turns(&mut self, id: &str, turns: &[String], from: Option<&str>) -> Result<()> {
        let read = |tx: &rusqlite::Connection, id: &str| -> rusqlite::Result<Option<String>> {
            tx.prepare_cached("SELECT source_turns FROM facts WHERE id = ?1 AND conversation_id = ?2")?
                .query_row(params![id, self.conversation_id], |r| r.get(0))
                .optional()
        };
        let Some(current) = read(self.tx, id).map_err(|e| self.err(e))? else { return Ok(()) };
        let parse = |s: &str| serde_json::from_str::<Vec<String>>(s).unwrap_or_default();
        let mut all = parse(&current);
        let inherited = match from {
            Some(f) => read(self.tx, f).map_err(|e| self.err(e))?.map(|s| parse(&s)).unwrap_or_default(),
            None => Vec::new(),
        };
        let before = all.len();
        for t in turns.iter().chain(&inherited) {
            if !t.is_empty() && !all.contains(t) {
                all.push(t.clone());
            }
        }
        if all.len() == before {
            return Ok(());
        }
        let json = serde_json::to_string(&all).map_err(|e| Error::Other(format!("serialise source turns: {e}")))?;
        self.tx
            .prepare_cached("UPDATE facts SET source_turns = ?2 WHERE id = ?1")
            .and_then(|mut st| st.execute(params![id, json]))
            .map(drop)
            .map_err(|e| self.err(e))
    }

    fn set_importance(&mut self, id: &str, importance: &str, decay: bool) -> Result<()> {
        self.tx
            .prepare_cached("UPDATE facts SET importance = ?2, decay = ?3 WHERE id = ?1")
            .and_then(|mut st| st.execute(params![id, importance, decay as i64]))
            .map(drop)
            .map_err(|e| self.err(e))
    }

    fn invalidate(&mut self, id: &str, at: Option<&str>, superseded_by: Option<&str>) -> Result<()> {
        // Only live rows are ended, and a live row's superseded_by is NULL.
        self.tx
            .prepare_cached("UPDATE facts SET invalid_at = ?2, superseded_by = ?3 WHERE id = ?1")
            .and_then(|mut st| st.execute(params![id, at, superseded_by]))
            .map(drop)
            .map_err(|e| self.err(e))
    }

    fn archive(&mut self, id: &str, event: AuditAction, by: &str, reason: &str) -> Result<()> {
        self.tx
            .prepare_cached(
                "INSERT INTO fact_history (conversation_id, fact_id, episode_id, seq, event, by_candidate, reason,
                    subject, predicate, object, fact_type, content, content_hash, confidence, valid_until,
                    invalid_at, source_episode, source_turns)
                 SELECT conversation_id, id, ?2,
                    (SELECT COUNT(*) FROM fact_history h WHERE h.conversation_id = f.conversation_id AND h.episode_id = ?2),
                    ?3, ?4, ?5, subject, predicate, object, fact_type, content, content_hash, confidence,
                    valid_until, invalid_at, source_episode, source_turns
                 FROM facts f WHERE id = ?1",
            )
            .and_then(|mut st| st.execute(params![id, self.episode_id, event.as_str(), by, reason]))
            .map(drop)
            .map_err(|e| self.err(e))
    }

    fn update_fact(&mut self, id: &str, with: &FactRec) -> Result<bool> {
        let turns = serde_json::to_string(&[&with.source_turn]).map_err(|e| Error::Other(format!("serialise source turns: {e}")))?;
        // OR IGNORE: a live row with the same hash (the partial unique index) leaves this one unchanged.
        self.tx
            .prepare_cached(
                "UPDATE OR IGNORE facts SET subject = ?2, predicate = ?3, object = ?4, kind = ?5, fact_type = ?6,
                    content = ?7, normalized_content = ?8, content_hash = ?9, confidence = ?10, valid_from = ?11,
                    valid_until = ?12, source_episode = ?13, source_turns = ?14, source_quote = ?15,
                    subject_entity = ?16, object_entity = ?17
                 WHERE id = ?1 AND invalid_at IS NULL AND superseded_by IS NULL",
            )
            .and_then(|mut st| {
                st.execute(params![
                    id,
                    with.subject,
                    with.predicate,
                    with.object,
                    kind_str(with.kind),
                    with.fact_type.as_str(),
                    with.content,
                    with.normalized,
                    with.hash,
                    with.confidence,
                    with.valid_from,
                    with.valid_until,
                    with.source_episode,
                    turns,
                    with.source_quote,
                    with.subject_entity,
                    with.object_entity,
                ])
            })
            .and_then(|n| {
                // The vector goes with the content (the FTS row follows by trigger).
                if n == 1 && !with.embedding.is_empty() {
                    self.tx
                        .prepare_cached(
                            "INSERT OR REPLACE INTO embeddings (fact_id, conversation_id, dims, vector) VALUES (?1, ?2, ?3, ?4)",
                        )?
                        .execute(params![id, self.conversation_id, with.embedding.len() as i64, vector_to_blob(&with.embedding)])?;
                }
                Ok(n == 1)
            })
            .map_err(|e| self.err(e))
    }

    fn insert_mention(&mut self, fact_id: &str, entity_id: &str, text: &str) -> Result<()> {
        self.tx
            .prepare_cached(
                "INSERT OR IGNORE INTO mentions (conversation_id, fact_id, entity_id, text, episode_id) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut st| st.execute(params![self.conversation_id, fact_id, entity_id, text, self.episode_id]))
            .map(drop)
            .map_err(|e| self.err(e))
    }
}

/// The audit rows, the verdict rows and the episode's completion mark.
fn record_decisions(tx: &Connection, plan: &WritePlan, mode: WriteMode, result: &WriteResult) -> rusqlite::Result<()> {
    let (conv, ep) = (&plan.conversation_id, &plan.episode_id);
    let mut st = tx.prepare_cached(
        "INSERT INTO audit (conversation_id, episode_id, seq, candidate_id, action, outcome,
                            fact_id, target_fact_id, reason)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for (seq, a) in result.audit.iter().enumerate() {
        st.execute(params![
            conv,
            ep,
            seq as i64,
            a.candidate_id,
            a.action.as_str(),
            a.outcome.as_str(),
            a.fact_id,
            a.target_fact_id,
            a.reason
        ])?;
    }
    let mut st = tx.prepare_cached(
        "INSERT INTO verdicts (conversation_id, episode_id, seq, candidate_id, target_fact_id, pair_reason,
                               judged, guard, verdict, review_needed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    for (seq, v) in plan.verdicts.iter().enumerate() {
        st.execute(params![
            conv,
            ep,
            seq as i64,
            v.candidate_id,
            v.target_fact_id,
            v.pair_reason.as_str(),
            v.judged.as_str(),
            v.guard,
            v.verdict.as_str(),
            v.review_needed as i64
        ])?;
    }
    let mut st = tx.prepare_cached(
        "INSERT INTO audit_provenance (conversation_id, episode_id, audit_seq, action, content, confidence, source,
                                       extractor, decider, fact_count, entity_count, review_needed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?;
    for (seq, p) in &result.provenance {
        st.execute(params![
            conv,
            ep,
            *seq as i64,
            p.action,
            p.content,
            p.confidence,
            p.source,
            p.extractor,
            p.decider,
            p.fact_count as i64,
            p.entity_count as i64,
            p.review_needed as i64
        ])?;
    }
    tx.prepare_cached("INSERT OR REPLACE INTO episode_runs (conversation_id, episode_id, write_mode) VALUES (?1, ?2, ?3)")?
        .execute(params![conv, ep, mode.as_str()])?;
    Ok(())
}

fn kind_str(k: FactKind) -> &'static str {
    match k {
        FactKind::Relationship => "relationship",
        FactKind::Literal => "literal",
    }
}

/// Feeds every row `st` returns for `params` into `h`: a tag per type and a
/// length before each text or blob, so no two rows hash alike by
/// concatenation.
fn digest_rows(h: &mut sha2::Sha256, st: &mut rusqlite::Statement<'_>, params: impl rusqlite::Params) -> rusqlite::Result<()> {
    use sha2::Digest;
    let n = st.column_count();
    let mut rows = st.query(params)?;
    while let Some(r) = rows.next()? {
        for i in 0..n {
            match r.get_ref(i)? {
                rusqlite::types::ValueRef::Null => h.update([0u8]),
                rusqlite::types::ValueRef::Integer(v) => {
                    h.update([1u8]);
                    h.update(v.to_le_bytes());
                }
                rusqlite::types::ValueRef::Real(v) => {
                    h.update([2u8]);
                    h.update(v.to_bits().to_le_bytes());
                }
                rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => {
                    h.update([3u8]);
                    h.update((b.len() as u64).to_le_bytes());
                    h.update(b);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn deferred_index_restores_the_migrations_triggers() {
        let (_, sql) = MIGRATIONS.iter().find(|(n, _)| *n == "0007_search").expect("0007");
        assert!(sql.contains(FTS_TRIGGERS), "FTS_TRIGGERS is the migration's text");
    }
    use crate::normalize::normalize_and_hash_content;
    use crate::pipeline::records::CandidateOutcome;
    use crate::pipeline::write::{Action, Effect, Proposal, policy};
    use crate::types::Turn;

    /// The write policy applied through the real store.
    trait Apply {
        fn apply(&self, plan: &WritePlan, mode: WriteMode, min_confidence: f64) -> Result<WriteResult>;
    }

    impl Apply for Store {
        fn apply(&self, plan: &WritePlan, mode: WriteMode, min_confidence: f64) -> Result<WriteResult> {
            self.write_episode(plan, mode, |tx| policy::apply(tx, plan, mode, min_confidence))
        }
    }

    fn fact(id: &str, content: &str, confidence: f64) -> FactRec {
        let n = normalize_and_hash_content(content);
        let mut f = FactRec { normalized: n.normalized, hash: n.hash, ..FactRec::for_test(id, "Alice", "p", id) };
        f.content = n.storage;
        f.confidence = confidence;
        f
    }

    fn store() -> Store {
        let s = Store::in_memory().unwrap();
        let ep = |id: &str| Episode {
            observations: vec![],
            id: id.into(),
            timestamp: Some("2024-01-01T00:00:00".into()),
            turns: vec![Turn { id: format!("{id}t"), speaker: "Alice".into(), text: "x".into() }],
        };
        s.write_conversation("c", &["Alice".into()], &[]).unwrap();
        s.write_evidence("c", 0, &ep("e1")).unwrap();
        s.write_evidence("c", 1, &ep("e2")).unwrap();
        s
    }

    pub(crate) fn plan(episode: &str, now: &str, proposals: Vec<Proposal>) -> WritePlan {
        WritePlan {
            conversation_id: "c".into(),
            episode_id: episode.into(),
            now: Some(now.into()),
            new_entities: vec![],
            new_aliases: vec![],
            proposals,
            verdicts: vec![],
            attributions: vec![],
        }
    }

    pub(crate) fn insert(f: FactRec) -> Proposal {
        Proposal { candidate_id: f.id.clone(), action: Action::Insert { fact: Box::new(f) } }
    }

    fn outcomes(r: &WriteResult) -> Vec<(String, &'static str, String)> {
        r.audit.iter().map(|a| (a.action.as_str().to_string(), a.outcome.as_str(), a.reason.clone())).collect()
    }

    #[test]
    fn an_unknown_name_read_back_from_the_store_is_an_error() {
        let s = store();
        s.apply(&plan("e1", "2024-01-01", vec![insert(fact("f1", "Alice likes tea", 0.9))]), WriteMode::Full, 0.7).unwrap();
        assert_eq!(s.audit().unwrap()[0].2.outcome, Outcome::Created);
        s.with(|c| c.execute("UPDATE audit SET outcome = 'exploded'", [])).unwrap();
        let err = crate::error::chain(&s.audit().unwrap_err());
        assert!(err.contains("unknown value \"exploded\""), "{err}");
    }

    #[test]
    fn migrations_are_recorded_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.sqlite");
        let names: Vec<String> = MIGRATIONS.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(Store::open(&p).unwrap().applied_migrations().unwrap(), names);
        assert_eq!(Store::open(&p).unwrap().applied_migrations().unwrap(), names, "reopening applies nothing twice");
    }

    #[test]
    fn safety_gates_and_race_recheck() {
        let s = store();
        let r = s.apply(&plan("e1", "2024-01-01", vec![insert(fact("f1", "Alice likes tea", 0.9))]), WriteMode::Full, 0.7).unwrap();
        assert_eq!(r.effects, vec![Effect::Inserted { id: "f1".into() }]);
        let r = s
            .apply(
                &plan(
                    "e2",
                    "2024-02-01",
                    vec![
                        insert(fact("f2", "alice likes tea.", 0.9)),
                        insert(fact("f3", "Alice likes coffee", 0.69)),
                        insert(fact("f4", " ?! ", 0.9)),
                    ],
                ),
                WriteMode::Full,
                0.7,
            )
            .unwrap();
        let o = outcomes(&r);
        assert_eq!(o[0], ("insert".into(), "deduped", "hash already live".into()));
        assert_eq!(r.audit[0].target_fact_id.as_deref(), Some("f1"));
        assert_eq!(o[1].1, "skipped");
        assert!(o[1].2.starts_with("low_fact_confidence"));
        assert_eq!(o[2], ("insert".into(), "skipped", "empty_fact_content".into()));
        assert!(r.effects.is_empty());
        assert_eq!(s.consistency_problems().unwrap(), Vec::<String>::new());
    }

    #[test]
    fn partial_unique_index_allows_one_live_row_per_hash() {
        let s = store();
        let r = s
            .apply(
                &plan("e1", "2024-01-01", vec![insert(fact("f1", "Alice likes tea", 0.9)), insert(fact("f2", "Alice likes tea", 0.9))]),
                WriteMode::Full,
                0.7,
            )
            .unwrap();
        assert_eq!(outcomes(&r)[1], ("insert".into(), "skipped", "conflict with a live fact".into()));
        assert_eq!(s.facts().unwrap().len(), 1);
    }

    #[test]
    fn invalidation_with_cascade_in_full_blocked_in_controlled_recorded_in_shadow() {
        // Controlled mode blocks the replacement whole: "works at Anthropic"
        // is not written beside "works at Google" (docs/profiles.md).
        for (mode, live_after) in [(WriteMode::Full, 1), (WriteMode::Controlled, 2), (WriteMode::Shadow, 2)] {
            let s = store();
            s.apply(
                &plan(
                    "e1",
                    "2024-01-01",
                    vec![insert(fact("f1", "Alice works at Google", 0.9)), insert(fact("f9", "Google is in Mountain View", 0.9))],
                ),
                WriteMode::Full,
                0.7,
            )
            .unwrap();
            let p = plan(
                "e2",
                "2024-02-01",
                vec![
                    Proposal {
                        candidate_id: "f2".into(),
                        action: Action::Invalidate { target: "f1".into(), by: "f2".into(), cascade: vec!["f9".into()] },
                    },
                    insert(fact("f2", "Alice works at Anthropic", 0.9)),
                ],
            );
            let r = s.apply(&p, mode, 0.7).unwrap();
            let o: Vec<&str> = r.audit.iter().map(|a| a.outcome.as_str()).collect();
            let expected = match mode {
                WriteMode::Full => vec!["invalidated", "invalidated", "created"],
                WriteMode::Controlled => vec!["blocked", "blocked", "blocked"],
                WriteMode::Shadow => vec!["recorded", "recorded", "recorded"],
            };
            assert_eq!(o, expected, "{mode:?}");
            let live: std::collections::BTreeSet<String> =
                s.facts().unwrap().into_iter().filter(|f| f.invalid_at.is_none() && f.superseded_by.is_none()).map(|f| f.id).collect();
            assert_eq!(live.len(), live_after, "{mode:?}");
            assert_eq!(s.live_fact_ids().unwrap(), live, "{mode:?}: the live ids query agrees with the rows");
            if mode == WriteMode::Controlled {
                assert!(!live.contains("f2"), "the replacing fact is not written");
                assert_eq!(r.inserts, vec![("f2".to_string(), crate::pipeline::write::InsertOutcome::Blocked, 2)]);
                assert_eq!(r.audit[2].target_fact_id.as_deref(), Some("f1"), "the blocked insert names the fact it would replace");
            }
            if mode == WriteMode::Full {
                let f1 = s.facts().unwrap().into_iter().find(|f| f.id == "f1").unwrap();
                assert_eq!((f1.invalid_at.as_deref(), f1.superseded_by.as_deref()), (Some("2024-02-01"), Some("f2")));
            }
        }
    }

    #[test]
    fn pinned_facts_are_skipped_never_invalidated() {
        let s = store();
        let mut pinned = fact("f1", "Alice works at Google", 0.9);
        pinned.pinned = true;
        s.apply(&plan("e1", "2024-01-01", vec![insert(pinned)]), WriteMode::Full, 0.7).unwrap();
        let p = plan(
            "e2",
            "2024-02-01",
            vec![
                Proposal {
                    candidate_id: "f2".into(),
                    action: Action::Invalidate { target: "f1".into(), by: "f2".into(), cascade: vec![] },
                },
                insert(fact("f2", "Alice works at Anthropic", 0.9)),
            ],
        );
        let r = s.apply(&p, WriteMode::Full, 0.7).unwrap();
        assert_eq!(outcomes(&r)[0], ("invalidate".into(), "skipped", "pinned".into()));
        assert!(s.facts().unwrap().iter().all(|f| f.invalid_at.is_none()));
    }

    #[test]
    fn invalidation_needs_its_superseding_fact_written() {
        let s = store();
        s.apply(&plan("e1", "2024-01-01", vec![insert(fact("f1", "Alice works at Google", 0.9))]), WriteMode::Full, 0.7).unwrap();
        let p = plan(
            "e2",
            "2024-02-01",
            vec![
                Proposal {
                    candidate_id: "f2".into(),
                    action: Action::Invalidate { target: "f1".into(), by: "f2".into(), cascade: vec![] },
                },
                insert(fact("f2", "Alice works at Anthropic", 0.5)),
            ],
        );
        let r = s.apply(&p, WriteMode::Full, 0.7).unwrap();
        assert_eq!(outcomes(&r)[1], ("invalidate".into(), "skipped", "superseding fact not written".into()));
        assert!(s.facts().unwrap().iter().all(|f| f.invalid_at.is_none()));
    }

    #[test]
    fn renewal_invalidates_the_expired_row_then_inserts() {
        let s = store();
        let mut old = fact("f1", "Alice drives a Honda Civic", 0.9);
        old.valid_until = Some("2024-01-15".into());
        s.apply(&plan("e1", "2024-01-01", vec![insert(old)]), WriteMode::Full, 0.7).unwrap();
        let r =
            s.apply(&plan("e2", "2024-02-01", vec![insert(fact("f2", "Alice drives a Honda Civic", 0.9))]), WriteMode::Full, 0.7).unwrap();
        let o: Vec<(&str, &str)> = r.audit.iter().map(|a| (a.action.as_str(), a.outcome.as_str())).collect();
        assert_eq!(o, vec![("renew", "invalidated"), ("insert", "created")]);
        let facts = s.facts().unwrap();
        assert_eq!(facts[0].invalid_at.as_deref(), Some("2024-02-01"));
        assert_eq!(facts[1].invalid_at, None);
    }

    #[test]
    fn closure_sets_valid_until_and_every_proposal_is_audited() {
        let s = store();
        s.apply(&plan("e1", "2024-01-01", vec![insert(fact("f1", "Alice drives a Honda Civic", 0.9))]), WriteMode::Full, 0.7).unwrap();
        let p = plan(
            "e2",
            "2024-02-01",
            vec![
                Proposal {
                    candidate_id: "c1".into(),
                    action: Action::Close { target: "f1".into(), valid_until: "2024-02-01".into(), cascade: vec![] },
                },
                Proposal {
                    candidate_id: "c2".into(),
                    action: Action::Reject { outcome: CandidateOutcome::NoiseRejected, reason: "value".into(), related: None },
                },
                Proposal {
                    candidate_id: "c3".into(),
                    action: Action::Reject { outcome: CandidateOutcome::NearDuplicate, reason: "cos".into(), related: Some("f1".into()) },
                },
            ],
        );
        let r = s.apply(&p, WriteMode::Full, 0.7).unwrap();
        let o: Vec<(&str, &str)> = r.audit.iter().map(|a| (a.candidate_id.as_str(), a.outcome.as_str())).collect();
        assert_eq!(o, vec![("c1", "closed"), ("c2", "skipped"), ("c3", "deduped")]);
        assert_eq!(s.facts().unwrap()[0].valid_until.as_deref(), Some("2024-02-01"));
        assert_eq!(s.audit().unwrap().len(), 4, "one row per proposal, across both episodes");
    }

    /// `signet`'s write policy through the real store: one proposal per fact.
    mod signet {
        use super::*;
        use crate::pipeline::signet::write::{Applied, SignetProposal, apply as signet_apply};
        use crate::pipeline::signet::{Decision, DecisionAction};

        fn proposal(f: FactRec, action: DecisionAction, target: Option<&str>) -> SignetProposal {
            let provenance = Provenance {
                action: action.as_str().into(),
                content: f.content.clone(),
                confidence: f.confidence,
                source: "e/t".into(),
                extractor: "x".into(),
                decider: "d".into(),
                fact_count: 1,
                entity_count: 0,
                review_needed: false,
            };
            let decision = Decision { action, target: target.map(str::to_string), confidence: 0.9, reason: "because".into() };
            SignetProposal { fact: f, decision: Some(decision), dropped: None, review_needed: false, mentions: vec![], provenance }
        }

        fn run(s: &Store, episode: &str, mode: WriteMode, ps: &[SignetProposal]) -> (WriteResult, Vec<Applied>) {
            let mut applied = vec![];
            let r = s
                .write_episode(&plan(episode, "2024-02-01T00:00:00", vec![]), mode, |tx| {
                    let (r, a) = signet_apply(tx, ps, mode, 0.7, Some("2024-02-01T00:00:00"))?;
                    applied = a;
                    Ok(r)
                })
                .unwrap();
            (r, applied)
        }

        #[test]
        fn the_three_gates_and_a_pinned_target() {
            let s = store();
            let mut pinned = fact("f1", "Alice works at Google", 0.9);
            pinned.pinned = true;
            let (_, a) = run(&s, "e1", WriteMode::Full, &[proposal(pinned, DecisionAction::Add, None)]);
            assert_eq!(a, [Applied::Created]);
            let mut empty = fact("f3", "...", 0.9);
            empty.normalized = String::new();
            let ps = [
                proposal(fact("f2", "Alice works at Anthropic", 0.5), DecisionAction::Add, None),
                proposal(empty, DecisionAction::Add, None),
                proposal(fact("f4", "Alice works at Google", 0.9), DecisionAction::Add, None),
                proposal(fact("f5", "Alice works at Meta", 0.9), DecisionAction::Update, Some("f1")),
                proposal(fact("f6", "Alice left Google", 0.9), DecisionAction::Delete, Some("f1")),
            ];
            let (r, a) = run(&s, "e2", WriteMode::Full, &ps);
            use Applied::*;
            assert_eq!(a, [LowConfidence, EmptyContent, Deduped, TargetSkipped, TargetSkipped]);
            assert_eq!(r.audit[2].target_fact_id.as_deref(), Some("f1"), "deduped names the existing id");
            assert_eq!(r.audit[3].reason, "pinned");
            assert!(s.history().unwrap().is_empty(), "nothing archived for a pinned target");
            assert_eq!(r.provenance.len(), r.audit.len(), "every audit row carries its provenance");
            assert_eq!(s.provenance().unwrap().len(), 6);
        }

        #[test]
        fn full_updates_in_place_and_soft_deletes_after_archiving_controlled_writes_neither_side() {
            let s = store();
            for (i, id) in ["e3", "e4"].into_iter().enumerate() {
                let ep = Episode { id: id.into(), timestamp: Some("2024-02-01T00:00:00".into()), turns: vec![], observations: vec![] };
                s.write_evidence("c", 2 + i, &ep).unwrap();
            }
            run(&s, "e1", WriteMode::Full, &[proposal(fact("f1", "Alice works at Google", 0.9), DecisionAction::Add, None)]);
            let upd = [proposal(fact("f2", "Alice works at Anthropic", 0.9), DecisionAction::Update, Some("f1"))];
            let (_, a) = run(&s, "e2", WriteMode::Controlled, &upd);
            assert_eq!(a, [Applied::Blocked]);
            let facts = s.facts().unwrap();
            assert_eq!(facts.iter().map(|f| f.content.as_str()).collect::<Vec<_>>(), ["Alice works at Google"], "neither side written");
            let (r, a) = run(&s, "e3", WriteMode::Full, &upd);
            assert_eq!(a, [Applied::Updated]);
            assert_eq!(r.effects, vec![Effect::Updated { id: "f1".into(), by: "f2".into() }]);
            assert_eq!(s.facts().unwrap()[0].content, "Alice works at Anthropic");
            let del = [proposal(fact("f3", "Alice left Anthropic", 0.9), DecisionAction::Delete, Some("f1"))];
            let (_, a) = run(&s, "e4", WriteMode::Full, &del);
            assert_eq!(a, [Applied::Deleted]);
            let f = &s.facts().unwrap()[0];
            assert_eq!((f.invalid_at.as_deref(), f.superseded_by.as_deref()), (Some("2024-02-01"), None), "soft-deleted");
            let h: Vec<(String, String)> = s.history().unwrap().into_iter().map(|h| (h.event, h.content)).collect();
            assert_eq!(h, [("update".into(), "Alice works at Google".into()), ("delete".into(), "Alice works at Anthropic".into())]);
        }

        #[test]
        fn shadow_records_every_decision_and_writes_nothing() {
            let s = store();
            let ps = [
                proposal(fact("f1", "Alice works at Google", 0.9), DecisionAction::Add, None),
                proposal(fact("f2", "Alice works at Meta", 0.9), DecisionAction::Update, Some("f0")),
                proposal(fact("f3", "Alice works at Meta", 0.9), DecisionAction::None, Some("f0")),
            ];
            let (r, a) = run(&s, "e1", WriteMode::Shadow, &ps);
            assert_eq!(a, [Applied::Recorded; 3]);
            assert!(r.audit.iter().all(|a| a.outcome == Outcome::Recorded), "{:?}", r.audit);
            assert!(s.facts().unwrap().is_empty() && s.history().unwrap().is_empty());
        }
    }
}
