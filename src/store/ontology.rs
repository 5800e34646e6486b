//! The `dreaming` profile's ontology in the store (migration
//! `0010_dreaming`, docs/dreaming.md section 6): the read snapshot the
//! planner plans against, `apply_ontology_ops` — the only semantic mutator —
//! and the pass bookkeeping.
//!
//! `apply_ontology_ops` executes a complete plan in one short transaction
//! (no model call can happen inside: the plan is data). It enforces the write
//! caps, records every operation's effect in `onto_ops`, the evidence
//! references in `onto_evidence` and every state change in `onto_history`.
//! The transaction runs under a SQLite authorizer that denies any write to
//! the evidence tables ([`EVIDENCE_TABLES`]), so the apply path has no write
//! access to evidence whatever SQL it prepares.

use std::collections::HashSet;

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::{Connection, OptionalExtension, Savepoint, params};

use super::Store;
use crate::error::{Error, Result};
use crate::model::ontology::{
    Cardinality, ClaimFact, ClaimStatus, Effect, FlaggedAttention, OntoCaps, OntoPlan, OntoWrite, OntologyView, OpOutcome, PassRecord,
    PlannedOp, ProjectedClaim, ViewAspect, ViewClaim, ViewEntity, ViewLink,
};

/// The tables that hold evidence: the apply path may not write them.
pub const EVIDENCE_TABLES: &[&str] = &["conversations", "episodes", "turns"];

/// The authorizer of the apply transaction: reads anything, writes nothing
/// of the evidence.
fn deny_evidence_writes(ctx: AuthContext<'_>) -> Authorization {
    let table = match ctx.action {
        AuthAction::Insert { table_name } | AuthAction::Delete { table_name } => table_name,
        AuthAction::Update { table_name, .. } => table_name,
        AuthAction::DropTable { table_name } | AuthAction::AlterTable { table_name, .. } => table_name,
        _ => return Authorization::Allow,
    };
    if EVIDENCE_TABLES.contains(&table) { Authorization::Deny } else { Authorization::Allow }
}

/// Why one operation's writes could not be applied.
enum WriteErr {
    /// The store failed: the whole call rolls back.
    Sql(rusqlite::Error),
    /// A row the write depends on is missing or not active (an entity whose
    /// creation was capped, a claim already superseded): this operation fails.
    Missing(String),
}

impl From<rusqlite::Error> for WriteErr {
    fn from(e: rusqlite::Error) -> Self {
        WriteErr::Sql(e)
    }
}

/// An operation count: (operation, effect, kind, count).
pub type OpCount = (String, String, Option<String>, usize);

impl Store {
    /// The read snapshot of `conversation`'s ontology, every row in id order.
    pub fn ontology_view(&self, conversation: &str) -> Result<OntologyView> {
        self.with(|c| read_view(c, conversation))
    }

    /// Applies a complete plan in one transaction: every operation is logged
    /// with its effect; an operation the planner marked `applied` is written
    /// unless a cap stops it (`pass_cap`, `new_entity_cap`) or a row it
    /// depends on is missing (`unresolved_target`), in which case it is
    /// `failed` and writes nothing. A plan over `max_ops_per_call` is refused
    /// whole; a store error rolls the whole call back. Nothing is
    /// half-applied.
    pub fn apply_ontology_ops(&self, plan: &OntoPlan, caps: OntoCaps) -> Result<Vec<OpOutcome>> {
        if plan.ops.len() > caps.max_ops_per_call {
            return Err(Error::Config(format!(
                "apply_ontology_ops: {} operations in one call, at most {}",
                plan.ops.len(),
                caps.max_ops_per_call
            )));
        }
        self.with_evidence_locked(|tx| apply_in_tx(tx, plan, caps))
    }

    /// Runs `f` in one savepoint under the authorizer that denies writes
    /// to the evidence tables; releases it when `f` succeeds. A savepoint,
    /// not a transaction: a run's private store keeps a batch transaction
    /// open between units (`Store::open_for_run`), inside which a
    /// transaction cannot begin; outside one the savepoint is the
    /// transaction.
    fn with_evidence_locked<T>(&self, f: impl FnOnce(&mut Savepoint<'_>) -> rusqlite::Result<T>) -> Result<T> {
        self.write_with(None, |c| {
            c.authorizer(Some(deny_evidence_writes))?;
            let out = (|| {
                let mut tx = c.savepoint()?;
                let out = f(&mut tx)?;
                tx.commit()?;
                Ok(out)
            })();
            c.authorizer(None::<fn(AuthContext<'_>) -> Authorization>)?;
            out
        })
    }

    /// Runs `sql` inside the apply path's locked transaction (tests prove
    /// the lock holds).
    #[cfg(test)]
    pub(crate) fn execute_in_apply_tx(&self, sql: &str) -> Result<usize> {
        self.with_evidence_locked(|tx| tx.execute(sql, []))
    }

    /// Records a finished pass and the turns it settled (`consumed` or
    /// `withheld`), in one transaction.
    pub fn record_pass(&self, pass: &PassRecord, settled: &[(String, String, &'static str)]) -> Result<()> {
        self.with_evidence_locked(|tx| {
            tx.execute(
                "INSERT INTO dream_passes (id, conversation_id, seq, mode, trigger, status, after_episode, tool_calls,
                     ops_applied, ops_skipped, ops_failed, evidence_consumed, evidence_remaining, evidence_withheld,
                     backlog_tokens_before, backlog_tokens_after, watermark_before, watermark_after, summary, error)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
                params![
                    pass.id,
                    pass.conversation_id,
                    pass.seq as i64,
                    pass.mode,
                    pass.trigger,
                    pass.status,
                    pass.after_episode,
                    pass.tool_calls as i64,
                    pass.ops_applied as i64,
                    pass.ops_skipped as i64,
                    pass.ops_failed as i64,
                    pass.evidence_consumed as i64,
                    pass.evidence_remaining as i64,
                    pass.evidence_withheld as i64,
                    pass.backlog_tokens_before as i64,
                    pass.backlog_tokens_after as i64,
                    pass.watermark_before.map(|w| w as i64),
                    pass.watermark_after.map(|w| w as i64),
                    pass.summary,
                    pass.error,
                ],
            )?;
            let mut st = tx.prepare_cached(
                "INSERT OR REPLACE INTO dream_consumption (conversation_id, turn_id, revision, state, pass_id) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for (turn, revision, state) in settled {
                st.execute(params![pass.conversation_id, turn, revision, state, pass.id])?;
            }
            Ok(())
        })
    }

    /// The pass records, of one conversation or all, in order.
    pub fn dream_passes(&self, conversation: Option<&str>) -> Result<Vec<PassRecord>> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT id, conversation_id, seq, mode, trigger, status, after_episode, tool_calls, ops_applied, ops_skipped,
                        ops_failed, evidence_consumed, evidence_remaining, evidence_withheld, backlog_tokens_before,
                        backlog_tokens_after, watermark_before, watermark_after, summary, error
                 FROM dream_passes WHERE ?1 IS NULL OR conversation_id = ?1 ORDER BY conversation_id, seq",
            )?;
            st.query_map([conversation], |r| {
                let n = |i: usize| r.get::<_, i64>(i).map(|v| v.max(0) as usize);
                let w = |i: usize| r.get::<_, Option<i64>>(i).map(|v| v.map(|v| v.max(0) as usize));
                Ok(PassRecord {
                    id: r.get(0)?,
                    conversation_id: r.get(1)?,
                    seq: n(2)?,
                    mode: r.get(3)?,
                    trigger: r.get(4)?,
                    status: r.get(5)?,
                    after_episode: r.get(6)?,
                    tool_calls: n(7)?,
                    ops_applied: n(8)?,
                    ops_skipped: n(9)?,
                    ops_failed: n(10)?,
                    evidence_consumed: n(11)?,
                    evidence_remaining: n(12)?,
                    evidence_withheld: n(13)?,
                    backlog_tokens_before: n(14)?,
                    backlog_tokens_after: n(15)?,
                    watermark_before: w(16)?,
                    watermark_after: w(17)?,
                    summary: r.get(18)?,
                    error: r.get(19)?,
                })
            })?
            .collect()
        })
    }

    /// What a pass has applied so far: (operations, entities created), the
    /// counts the write caps read.
    pub fn pass_applied_counts(&self, pass_id: &str) -> Result<(usize, usize)> {
        self.with(|c| {
            let (n, e): (i64, i64) = c.query_row(
                "SELECT COUNT(*), COALESCE(SUM(new_entities), 0) FROM onto_ops WHERE pass_id = ?1 AND effect = 'applied'",
                [pass_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            Ok((n.max(0) as usize, e.max(0) as usize))
        })
    }

    /// The operations of `conversation` the single-valued guard rejected
    /// (effect `failed`, kind `contradiction`): (op id, payload JSON, result
    /// JSON), in order. Each is a flagged contradiction (docs/dreaming.md, 7).
    pub fn contradiction_rejections(&self, conversation: &str) -> Result<Vec<(String, String, Option<String>)>> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT id, payload, result FROM onto_ops
                 WHERE conversation_id = ?1 AND effect = 'failed' AND kind = 'contradiction' ORDER BY rowid",
            )?;
            st.query_map([conversation], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect()
        })
    }

    /// The turns of `conversation` a pass recorded as withheld by the safety policy.
    pub fn withheld_turns(&self, conversation: &str) -> Result<HashSet<String>> {
        self.with(|c| {
            let mut st = c.prepare("SELECT turn_id FROM dream_consumption WHERE conversation_id = ?1 AND state = 'withheld'")?;
            st.query_map([conversation], |r| r.get(0))?.collect()
        })
    }

    /// The turns of `conversation` a pass settled (consumed or withheld).
    pub fn settled_turns(&self, conversation: &str) -> Result<HashSet<String>> {
        self.with(|c| {
            let mut st = c.prepare("SELECT turn_id FROM dream_consumption WHERE conversation_id = ?1")?;
            st.query_map([conversation], |r| r.get(0))?.collect()
        })
    }

    /// Operations by (operation, effect, kind) with their counts, over every
    /// conversation, sorted.
    pub fn onto_op_counts(&self) -> Result<Vec<OpCount>> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT operation, effect, kind, COUNT(*) FROM onto_ops GROUP BY operation, effect, kind ORDER BY operation, effect, kind",
            )?;
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, i64>(3)?.max(0) as usize)))?.collect()
        })
    }

    /// Every evidence reference of an applied operation: (conversation, op
    /// id, turn id, quote).
    pub fn onto_evidence(&self) -> Result<Vec<(String, String, String, String)>> {
        self.with(|c| {
            let mut st = c.prepare("SELECT conversation_id, op_id, turn_id, quote FROM onto_evidence ORDER BY op_id, seq")?;
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?.collect()
        })
    }

    /// Every claim of `conversation` (any status), in creation order, with
    /// its entity and aspect names, its citations and its pass's episode.
    pub fn claim_projection(&self, conversation: &str) -> Result<Vec<ProjectedClaim>> {
        self.with(|c| {
            let mut st =
                c.prepare("SELECT op_id, episode_id, turn_id, quote FROM onto_evidence WHERE conversation_id = ?1 ORDER BY op_id, seq")?;
            let mut cited: std::collections::HashMap<String, Vec<(String, String, String)>> = std::collections::HashMap::new();
            for row in st.query_map([conversation], |r| Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?, r.get(3)?))))? {
                let (op, citation) = row?;
                cited.entry(op).or_default().push(citation);
            }
            let mut st = c.prepare(
                "SELECT c.id, e.name, a.name, c.claim_key, c.content, c.normalized_content, c.confidence, c.status,
                        c.superseded_by, c.created_op, p.after_episode
                 FROM onto_claims c
                 JOIN onto_aspects a ON a.id = c.aspect_id
                 JOIN onto_entities e ON e.id = a.entity_id
                 LEFT JOIN onto_ops o ON o.id = c.created_op
                 LEFT JOIN dream_passes p ON p.id = o.pass_id
                 WHERE c.conversation_id = ?1 ORDER BY c.rowid",
            )?;
            st.query_map([conversation], |r| {
                let op: String = r.get(9)?;
                Ok(ProjectedClaim {
                    id: r.get(0)?,
                    entity: r.get(1)?,
                    aspect: r.get(2)?,
                    claim_key: r.get(3)?,
                    content: r.get(4)?,
                    normalized_content: r.get(5)?,
                    confidence: r.get(6)?,
                    status: super::parse_column(r, 7, ClaimStatus::parse)?,
                    superseded_by: r.get(8)?,
                    citations: cited.get(&op).cloned().unwrap_or_default(),
                    pass_after_episode: r.get(10)?,
                })
            })?
            .collect()
        })
    }

    /// Writes `claims` into `facts` (and their vectors into `embeddings`) in
    /// one transaction, so the QA search reads a dreaming run's claims as it
    /// reads other profiles' facts. The ontology is the source: these rows
    /// are its read model, never read back by the planner. Per claim: true
    /// when its row was written (false: a live row of the conversation
    /// already holds the same content hash, or the id exists).
    pub fn write_claim_facts(&self, conversation: &str, claims: &[ClaimFact]) -> Result<Vec<bool>> {
        self.write_with(Some(conversation), |c| {
            let sp = c.savepoint()?;
            let mut out = Vec::with_capacity(claims.len());
            {
                let mut ins = sp.prepare_cached(
                    "INSERT INTO facts (id, conversation_id, subject, predicate, object, kind, fact_type, content,
                        normalized_content, content_hash, confidence, valid_from, valid_until, invalid_at,
                        superseded_by, source_episode, source_turns, source_quote, pinned, subject_entity,
                        object_entity, created_at)
                     VALUES (?1, ?2, ?3, ?4, '', 'literal', 'fact', ?5, ?6, ?7, ?8, NULL, NULL, ?9, ?10, ?11, ?12, ?13, 0,
                        NULL, NULL, ?14)
                     ON CONFLICT DO NOTHING",
                )?;
                let mut vec = sp
                    .prepare_cached("INSERT OR REPLACE INTO embeddings (fact_id, conversation_id, dims, vector) VALUES (?1, ?2, ?3, ?4)")?;
                for f in claims {
                    let turns = serde_json::to_string(&f.source_turns).unwrap_or_else(|_| "[]".into());
                    let n = ins.execute(params![
                        f.id,
                        conversation,
                        f.subject,
                        f.predicate,
                        f.content,
                        f.normalized_content,
                        f.content_hash,
                        f.confidence,
                        f.ended_at,
                        f.superseded_by,
                        f.source_episode,
                        turns,
                        f.source_quote,
                        f.created_at,
                    ])?;
                    if n == 1 && !f.embedding.is_empty() {
                        vec.execute(params![f.id, conversation, f.embedding.len() as i64, super::search::vector_to_blob(&f.embedding)])?;
                    }
                    out.push(n == 1);
                }
            }
            sp.commit()?;
            Ok(out)
        })
    }

    /// The history of `conversation`'s ontology: (object id, event), in order.
    pub fn onto_history_events(&self, conversation: &str) -> Result<Vec<(String, String)>> {
        self.with(|c| {
            let mut st = c.prepare("SELECT object_id, event FROM onto_history WHERE conversation_id = ?1 ORDER BY rowid")?;
            st.query_map([conversation], |r| Ok((r.get(0)?, r.get(1)?)))?.collect()
        })
    }

    /// A link's reason (none: no such link, or no reason).
    pub fn onto_link_reason(&self, link: &str) -> Result<Option<String>> {
        self.with(|c| Ok(c.query_row("SELECT reason FROM onto_links WHERE id = ?1", [link], |r| r.get(0)).optional()?.flatten()))
    }

    /// The conversations with an ontology, sorted.
    pub fn onto_conversations(&self) -> Result<Vec<String>> {
        self.with(|c| {
            let mut st = c.prepare("SELECT DISTINCT conversation_id FROM onto_ops ORDER BY conversation_id")?;
            st.query_map([], |r| r.get(0))?.collect()
        })
    }
}

fn read_view(c: &Connection, conversation: &str) -> rusqlite::Result<OntologyView> {
    let mut view = OntologyView { conversation_id: conversation.to_string(), ..OntologyView::default() };
    let mut st =
        c.prepare("SELECT id, name, canonical_name, entity_type, status FROM onto_entities WHERE conversation_id = ?1 ORDER BY rowid")?;
    view.entities = st
        .query_map([conversation], |r| {
            Ok(ViewEntity {
                id: r.get(0)?,
                name: r.get(1)?,
                canonical_name: r.get(2)?,
                entity_type: r.get(3)?,
                active: r.get::<_, String>(4)? == "active",
                aliases: Vec::new(),
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut st = c.prepare("SELECT entity_id, canonical_alias FROM onto_aliases WHERE conversation_id = ?1 ORDER BY rowid")?;
    let aliases: Vec<(String, String)> = st.query_map([conversation], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
    for (entity, alias) in aliases {
        if let Some(e) = view.entities.iter_mut().find(|e| e.id == entity) {
            e.aliases.push(alias);
        }
    }
    let mut st = c.prepare(
        "SELECT id, entity_id, name, canonical_name, cardinality, status FROM onto_aspects WHERE conversation_id = ?1 ORDER BY rowid",
    )?;
    view.aspects = st
        .query_map([conversation], |r| {
            Ok(ViewAspect {
                id: r.get(0)?,
                entity_id: r.get(1)?,
                name: r.get(2)?,
                canonical_name: r.get(3)?,
                cardinality: super::parse_column(r, 4, Cardinality::parse)?,
                active: r.get::<_, String>(5)? == "active",
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut st = c.prepare(
        "SELECT id, aspect_id, claim_key, kind, content, normalized_content, confidence, status, superseded_by, version
         FROM onto_claims WHERE conversation_id = ?1 ORDER BY rowid",
    )?;
    view.claims = st
        .query_map([conversation], |r| {
            Ok(ViewClaim {
                id: r.get(0)?,
                aspect_id: r.get(1)?,
                claim_key: r.get(2)?,
                kind: r.get(3)?,
                content: r.get(4)?,
                normalized_content: r.get(5)?,
                confidence: r.get(6)?,
                status: super::parse_column(r, 7, ClaimStatus::parse)?,
                superseded_by: r.get(8)?,
                version: r.get(9)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut st = c.prepare(
        "SELECT id, source_entity_id, target_entity_id, link_type, status FROM onto_links WHERE conversation_id = ?1 ORDER BY rowid",
    )?;
    view.links = st
        .query_map([conversation], |r| {
            Ok(ViewLink {
                id: r.get(0)?,
                source_entity_id: r.get(1)?,
                target_entity_id: r.get(2)?,
                link_type: r.get(3)?,
                active: r.get::<_, String>(4)? == "active",
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    // Attention in the order of the log: a `flag` mints (or reopens) a
    // record, a `decline_attention` or a hygiene operation resolves the one
    // it names (`$.attentionId` of its payload or its result).
    let mut st = c.prepare(
        "SELECT operation, json_extract(payload, '$.subjectRef'), json_extract(payload, '$.priority'),
                COALESCE(json_extract(payload, '$.attentionId'), json_extract(result, '$.consumedAttention'))
         FROM onto_ops
         WHERE conversation_id = ?1 AND effect = 'applied'
           AND operation IN ('flag', 'decline_attention', 'archive_entity', 'archive_aspect', 'archive_claim_value',
                             'archive_link', 'merge_entities', 'merge_aspects')
         ORDER BY rowid",
    )?;
    let rows = st.query_map([conversation], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?, r.get::<_, Option<f64>>(2)?, r.get::<_, Option<String>>(3)?))
    })?;
    for row in rows {
        let (operation, subject, priority, resolved) = row?;
        match (operation.as_str(), subject, resolved) {
            ("flag", Some(subject), _) => {
                view.resolved_attention.retain(|a| a != &subject);
                view.flagged.retain(|f| f.subject_ref != subject);
                let priority = priority.unwrap_or(50.0).clamp(0.0, 100.0).round() as u32;
                view.flagged.push(FlaggedAttention { subject_ref: subject, priority });
            }
            (_, _, Some(id)) => {
                view.flagged.retain(|f| f.subject_ref != id);
                if !view.resolved_attention.contains(&id) {
                    view.resolved_attention.push(id);
                }
            }
            _ => {}
        }
    }
    Ok(view)
}

fn apply_in_tx(tx: &mut Savepoint<'_>, plan: &OntoPlan, caps: OntoCaps) -> rusqlite::Result<Vec<OpOutcome>> {
    let (mut applied, mut created): (i64, i64) = tx.query_row(
        "SELECT COUNT(*), COALESCE(SUM(new_entities), 0) FROM onto_ops WHERE pass_id = ?1 AND effect = 'applied'",
        [&plan.pass_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let mut out = Vec::with_capacity(plan.ops.len());
    for op in &plan.ops {
        let op_id = format!("{}/{}/{}", plan.pass_id, plan.call_seq, op.index);
        let new_entities = op.writes.iter().filter(|w| w.creates_entity()).count() as i64;
        let mut outcome = OpOutcome {
            index: op.index,
            op_id: op_id.clone(),
            effect: op.effect,
            kind: op.kind.clone(),
            message: op.message.clone(),
            result: op.result.clone(),
        };
        if op.effect == Effect::Applied {
            let fail = |o: &mut OpOutcome, kind: &str, message: String| {
                o.effect = Effect::Failed;
                o.kind = Some(kind.to_string());
                o.message = Some(message);
                o.result = None;
            };
            if let Some((kind, msg)) = caps.refusal(applied as usize, created as usize, new_entities as usize) {
                fail(&mut outcome, kind, msg);
            } else {
                let sp = tx.savepoint()?;
                match execute_writes(&sp, &plan.conversation_id, &op_id, op) {
                    Ok(()) => {
                        sp.commit()?;
                        applied += 1;
                        created += new_entities;
                    }
                    Err(WriteErr::Missing(why)) => {
                        drop(sp); // rolls back this operation's writes
                        fail(&mut outcome, "unresolved_target", why);
                    }
                    Err(WriteErr::Sql(e)) => return Err(e),
                }
            }
        }
        // A skip that still records something: a duplicate entity found by
        // cosine leaves its name as an alias of the entity it duplicates
        // (stage 2's merge). Only alias writes ride on a skip.
        if op.effect == Effect::Skipped && !op.writes.is_empty() && op.writes.iter().all(|w| matches!(w, OntoWrite::Alias { .. })) {
            let sp = tx.savepoint()?;
            match execute_writes(&sp, &plan.conversation_id, &op_id, op) {
                Ok(()) => sp.commit()?,
                Err(WriteErr::Missing(_)) => drop(sp),
                Err(WriteErr::Sql(e)) => return Err(e),
            }
        }
        let is_applied = outcome.effect == Effect::Applied;
        tx.execute(
            "INSERT INTO onto_ops (id, conversation_id, pass_id, call_seq, op_index, operation, payload, reason, confidence,
                 effect, kind, message, result, new_entities)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                op_id,
                plan.conversation_id,
                plan.pass_id,
                plan.call_seq as i64,
                op.index as i64,
                op.operation,
                op.payload,
                op.reason,
                op.confidence,
                outcome.effect.as_str(),
                outcome.kind,
                outcome.message,
                outcome.result,
                if is_applied { new_entities } else { 0 },
            ],
        )?;
        if is_applied {
            let mut st = tx.prepare_cached(
                "INSERT INTO onto_evidence (op_id, seq, conversation_id, episode_id, turn_id, revision, quote, quote_start)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            for (seq, e) in op.evidence.iter().enumerate() {
                st.execute(params![
                    op_id,
                    seq as i64,
                    plan.conversation_id,
                    e.episode_id,
                    e.turn_id,
                    e.revision,
                    e.quote,
                    e.quote_start as i64
                ])?;
            }
        }
        out.push(outcome);
    }
    Ok(out)
}

/// One history row; `seq` numbers the rows of an operation.
#[allow(clippy::too_many_arguments)]
fn history(
    tx: &Connection,
    conv: &str,
    op_id: &str,
    seq: &mut i64,
    kind: &str,
    id: &str,
    event: &str,
    before: Option<String>,
    after: Option<String>,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO onto_history (conversation_id, op_id, seq, object_kind, object_id, event, before, after)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![conv, op_id, *seq, kind, id, event, before, after],
    )?;
    *seq += 1;
    Ok(())
}

/// Renames the active row `id` of `table` (`onto_entities` or
/// `onto_aspects`, a `kind` in messages); its old name as history's `before`.
fn rename(tx: &Connection, table: &str, kind: &str, id: &str, name: &str, canonical_name: &str, op_id: &str) -> Result<String, WriteErr> {
    let before: Option<String> =
        tx.query_row(&format!("SELECT name FROM {table} WHERE id = ?1 AND status = 'active'"), [id], |r| r.get(0)).optional()?;
    let Some(before) = before else {
        return Err(WriteErr::Missing(format!("{kind} {id} not found in this agent")));
    };
    tx.execute(
        &format!("UPDATE {table} SET name = ?2, canonical_name = ?3, updated_op = ?4 WHERE id = ?1"),
        params![id, name, canonical_name, op_id],
    )?;
    Ok(serde_json::json!({"name": before}).to_string())
}

fn exists(tx: &Connection, sql: &str, id: &str) -> rusqlite::Result<bool> {
    Ok(tx.query_row(sql, [id], |_| Ok(())).optional()?.is_some())
}

fn execute_writes(tx: &Connection, conv: &str, op_id: &str, op: &PlannedOp) -> Result<(), WriteErr> {
    let live_entity = "SELECT 1 FROM onto_entities WHERE id = ?1 AND status = 'active'";
    let mut seq = 0i64;
    for w in &op.writes {
        let after = serde_json::to_string(w).ok();
        match w {
            OntoWrite::Entity { id, name, canonical_name, entity_type } => {
                tx.execute(
                    "INSERT INTO onto_entities (id, conversation_id, name, canonical_name, entity_type, created_op, updated_op)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
                    params![id, conv, name, canonical_name, entity_type, op_id],
                )?;
                history(tx, conv, op_id, &mut seq, "entity", id, "created", None, after)?;
            }
            OntoWrite::Alias { entity_id, alias, canonical_alias } => {
                if !exists(tx, live_entity, entity_id)? {
                    return Err(WriteErr::Missing(format!("entity {entity_id} not found in this agent")));
                }
                let n = tx.execute(
                    "INSERT OR IGNORE INTO onto_aliases (entity_id, conversation_id, alias, canonical_alias, created_op)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![entity_id, conv, alias, canonical_alias, op_id],
                )?;
                if n > 0 {
                    history(tx, conv, op_id, &mut seq, "alias", entity_id, "created", None, after)?;
                }
            }
            OntoWrite::Aspect { id, entity_id, name, canonical_name, cardinality } => {
                if !exists(tx, live_entity, entity_id)? {
                    return Err(WriteErr::Missing(format!("entity {entity_id} not found in this agent")));
                }
                tx.execute(
                    "INSERT INTO onto_aspects (id, entity_id, conversation_id, name, canonical_name, cardinality, created_op, updated_op)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
                    params![id, entity_id, conv, name, canonical_name, cardinality.as_str(), op_id],
                )?;
                history(tx, conv, op_id, &mut seq, "aspect", id, "created", None, after)?;
            }
            OntoWrite::Claim {
                id,
                aspect_id,
                claim_key,
                kind,
                content,
                normalized_content,
                confidence,
                valid_from,
                review_after,
                supersedes,
            } => {
                if !exists(tx, "SELECT 1 FROM onto_aspects WHERE id = ?1 AND status = 'active'", aspect_id)? {
                    return Err(WriteErr::Missing(format!("aspect {aspect_id} not found in this agent")));
                }
                let (mut version, mut root, mut previous) = (1i64, id.clone(), None::<String>);
                if let Some(old) = supersedes {
                    let row: Option<(i64, String, String)> = tx
                        .query_row(
                            "SELECT version, version_root_id, content FROM onto_claims WHERE id = ?1 AND status = 'active'",
                            [old],
                            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                        )
                        .optional()?;
                    let Some((v, r, old_content)) = row else {
                        return Err(WriteErr::Missing("No active claim values matched supersession payload".into()));
                    };
                    version = v + 1;
                    root = r;
                    previous = Some(old.clone());
                    tx.execute(
                        "UPDATE onto_claims SET status = 'superseded', superseded_by = ?2, valid_until = ?3, ended_op = ?4 WHERE id = ?1",
                        params![old, id, valid_from, op_id],
                    )?;
                    let before = serde_json::json!({"status": "active", "content": old_content}).to_string();
                    let after = serde_json::json!({"status": "superseded", "supersededBy": id}).to_string();
                    history(tx, conv, op_id, &mut seq, "claim", old, "superseded", Some(before), Some(after))?;
                }
                tx.execute(
                    "INSERT INTO onto_claims (id, aspect_id, conversation_id, claim_key, kind, content, normalized_content, confidence,
                         status, version, version_root_id, previous_claim_id, valid_from, review_after, created_op)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'active', ?9, ?10, ?11, ?12, ?13, ?14)",
                    params![
                        id,
                        aspect_id,
                        conv,
                        claim_key,
                        kind,
                        content,
                        normalized_content,
                        confidence,
                        version,
                        root,
                        previous,
                        valid_from,
                        review_after,
                        op_id
                    ],
                )?;
                history(tx, conv, op_id, &mut seq, "claim", id, "created", None, after)?;
            }
            OntoWrite::RetractClaim { id, reason } => {
                let n = tx.execute(
                    "UPDATE onto_claims SET status = 'retracted', ended_op = ?2 WHERE id = ?1 AND status = 'active'",
                    params![id, op_id],
                )?;
                if n == 0 {
                    return Err(WriteErr::Missing("Attribute not found".into()));
                }
                let after = serde_json::json!({"status": "retracted", "reason": reason}).to_string();
                history(tx, conv, op_id, &mut seq, "claim", id, "retracted", Some("{\"status\":\"active\"}".into()), Some(after))?;
            }
            OntoWrite::Link { id, source_entity_id, target_entity_id, link_type, confidence, reason } => {
                for e in [source_entity_id, target_entity_id] {
                    if !exists(tx, live_entity, e)? {
                        return Err(WriteErr::Missing(format!("entity {e} not found in this agent")));
                    }
                }
                let existing: Option<String> = tx
                    .query_row(
                        "SELECT id FROM onto_links WHERE source_entity_id = ?1 AND target_entity_id = ?2 AND link_type = ?3",
                        params![source_entity_id, target_entity_id, link_type],
                        |r| r.get(0),
                    )
                    .optional()?;
                match existing {
                    Some(existing) => {
                        tx.execute(
                            "UPDATE onto_links SET status = 'active', confidence = ?2, reason = COALESCE(?3, reason), updated_op = ?4 WHERE id = ?1",
                            params![existing, confidence, reason, op_id],
                        )?;
                        history(tx, conv, op_id, &mut seq, "link", &existing, "reactivated", None, after)?;
                    }
                    None => {
                        tx.execute(
                            "INSERT INTO onto_links (id, conversation_id, source_entity_id, target_entity_id, link_type, confidence, reason,
                                 created_op, updated_op)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
                            params![id, conv, source_entity_id, target_entity_id, link_type, confidence, reason, op_id],
                        )?;
                        history(tx, conv, op_id, &mut seq, "link", id, "created", None, after)?;
                    }
                }
            }
            OntoWrite::RenameEntity { id, name, canonical_name } => {
                let before = rename(tx, "onto_entities", "entity", id, name, canonical_name, op_id)?;
                history(tx, conv, op_id, &mut seq, "entity", id, "renamed", Some(before), after)?;
            }
            OntoWrite::RenameAspect { id, name, canonical_name } => {
                let before = rename(tx, "onto_aspects", "aspect", id, name, canonical_name, op_id)?;
                history(tx, conv, op_id, &mut seq, "aspect", id, "renamed", Some(before), after)?;
            }
            OntoWrite::ArchiveEntity { id, .. } | OntoWrite::MergeEntity { id, .. } => {
                let n = tx.execute(
                    "UPDATE onto_entities SET status = 'archived', updated_op = ?2 WHERE id = ?1 AND status = 'active'",
                    params![id, op_id],
                )?;
                if n == 0 {
                    return Err(WriteErr::Missing(format!("entity {id} not found in this agent")));
                }
                let event = if matches!(w, OntoWrite::MergeEntity { .. }) { "merged" } else { "archived" };
                history(tx, conv, op_id, &mut seq, "entity", id, event, Some("{\"status\":\"active\"}".into()), after)?;
            }
            OntoWrite::ArchiveAspect { id, reason } => {
                let n = tx.execute(
                    "UPDATE onto_aspects SET status = 'archived', updated_op = ?2 WHERE id = ?1 AND status = 'active'",
                    params![id, op_id],
                )?;
                if n == 0 {
                    return Err(WriteErr::Missing(format!("aspect {id} not found in this agent")));
                }
                history(tx, conv, op_id, &mut seq, "aspect", id, "archived", Some("{\"status\":\"active\"}".into()), after)?;
                let claims: Vec<String> = {
                    let mut st = tx.prepare("SELECT id FROM onto_claims WHERE aspect_id = ?1 AND status = 'active' ORDER BY rowid")?;
                    st.query_map([id], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?
                };
                for claim in claims {
                    tx.execute("UPDATE onto_claims SET status = 'retracted', ended_op = ?2 WHERE id = ?1", params![claim, op_id])?;
                    let after = serde_json::json!({"status": "retracted", "reason": reason, "aspectArchived": id}).to_string();
                    history(tx, conv, op_id, &mut seq, "claim", &claim, "retracted", Some("{\"status\":\"active\"}".into()), Some(after))?;
                }
            }
            OntoWrite::ArchiveLink { id, .. } => {
                let n = tx.execute(
                    "UPDATE onto_links SET status = 'archived', updated_op = ?2 WHERE id = ?1 AND status = 'active'",
                    params![id, op_id],
                )?;
                if n == 0 {
                    return Err(WriteErr::Missing("Link not found".into()));
                }
                history(tx, conv, op_id, &mut seq, "link", id, "archived", Some("{\"status\":\"active\"}".into()), after)?;
            }
            OntoWrite::UpdateLink { id, link_type, reason } => {
                let before: Option<(String, Option<String>)> = tx
                    .query_row("SELECT link_type, reason FROM onto_links WHERE id = ?1 AND conversation_id = ?2", params![id, conv], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })
                    .optional()?;
                let Some((old_type, old_reason)) = before else {
                    return Err(WriteErr::Missing("Link not found".into()));
                };
                tx.execute(
                    "UPDATE onto_links SET link_type = ?2, reason = COALESCE(?3, reason), updated_op = ?4 WHERE id = ?1",
                    params![id, link_type, reason, op_id],
                )?;
                let before = serde_json::json!({"linkType": old_type, "reason": old_reason}).to_string();
                history(tx, conv, op_id, &mut seq, "link", id, "updated", Some(before), after)?;
            }
            OntoWrite::MoveAspect { id, entity_id } => {
                if !exists(tx, live_entity, entity_id)? {
                    return Err(WriteErr::Missing(format!("entity {entity_id} not found in this agent")));
                }
                let before: Option<String> =
                    tx.query_row("SELECT entity_id FROM onto_aspects WHERE id = ?1", [id], |r| r.get(0)).optional()?;
                let Some(before) = before else {
                    return Err(WriteErr::Missing(format!("aspect {id} not found in this agent")));
                };
                tx.execute("UPDATE onto_aspects SET entity_id = ?2, updated_op = ?3 WHERE id = ?1", params![id, entity_id, op_id])?;
                let before = serde_json::json!({"entityId": before}).to_string();
                history(tx, conv, op_id, &mut seq, "aspect", id, "moved", Some(before), after)?;
            }
            OntoWrite::MoveClaims { from_aspect, to_aspect } => {
                let claims: Vec<String> = {
                    let mut st = tx.prepare("SELECT id FROM onto_claims WHERE aspect_id = ?1 ORDER BY rowid")?;
                    st.query_map([from_aspect], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?
                };
                tx.execute("UPDATE onto_claims SET aspect_id = ?2 WHERE aspect_id = ?1", params![from_aspect, to_aspect])?;
                for claim in claims {
                    let before = serde_json::json!({"aspectId": from_aspect}).to_string();
                    let after = serde_json::json!({"aspectId": to_aspect}).to_string();
                    history(tx, conv, op_id, &mut seq, "claim", &claim, "moved", Some(before), Some(after))?;
                }
            }
            OntoWrite::RepointLink { id, source_entity_id, target_entity_id } => {
                let before: Option<(String, String)> = tx
                    .query_row("SELECT source_entity_id, target_entity_id FROM onto_links WHERE id = ?1", [id], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })
                    .optional()?;
                let Some((s0, t0)) = before else {
                    return Err(WriteErr::Missing("Link not found".into()));
                };
                tx.execute(
                    "UPDATE onto_links SET source_entity_id = ?2, target_entity_id = ?3, updated_op = ?4 WHERE id = ?1",
                    params![id, source_entity_id, target_entity_id, op_id],
                )?;
                let before = serde_json::json!({"source": s0, "target": t0}).to_string();
                history(tx, conv, op_id, &mut seq, "link", id, "moved", Some(before), after)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Episode, Turn};

    fn store() -> Store {
        let s = Store::in_memory().unwrap();
        s.write_conversation("c1", &["Ann".into()], &[]).unwrap();
        let episode = Episode {
            id: "e1".into(),
            timestamp: None,
            turns: vec![Turn { id: "t1".into(), speaker: "Ann".into(), text: "I moved to Lisbon.".into() }],
            observations: Vec::new(),
        };
        s.write_evidence("c1", 0, &episode).unwrap();
        s
    }

    fn evidence() -> Vec<crate::model::ontology::EvidenceRef> {
        vec![crate::model::ontology::EvidenceRef {
            episode_id: "e1".into(),
            turn_id: "t1".into(),
            revision: "r".into(),
            quote: "moved to Lisbon".into(),
            quote_start: 2,
        }]
    }

    fn op(index: usize, writes: Vec<OntoWrite>) -> PlannedOp {
        PlannedOp {
            index,
            operation: "create_entity".into(),
            payload: "{}".into(),
            reason: None,
            confidence: None,
            effect: Effect::Applied,
            kind: None,
            message: None,
            result: None,
            writes,
            evidence: evidence(),
        }
    }

    fn entity(n: usize) -> OntoWrite {
        OntoWrite::Entity { id: format!("c1/o{n}"), name: format!("E{n}"), canonical_name: format!("e{n}"), entity_type: "person".into() }
    }

    fn caps() -> OntoCaps {
        OntoCaps { max_ops_per_call: 100, max_ops_per_pass: 500, max_new_entities_per_pass: 50 }
    }

    fn plan(call: usize, ops: Vec<PlannedOp>) -> OntoPlan {
        OntoPlan { conversation_id: "c1".into(), pass_id: "c1/p1".into(), call_seq: call, ops }
    }

    fn turns(s: &Store) -> String {
        s.with(|c| {
            let mut st = c.prepare("SELECT conversation_id, episode_id, id, seq, speaker, text FROM turns ORDER BY id")?;
            let rows: Vec<String> = st
                .query_map([], |r| {
                    Ok(format!(
                        "{}|{}|{}|{}|{}|{}",
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, String>(5)?
                    ))
                })?
                .collect::<rusqlite::Result<_>>()?;
            Ok(rows.join("\n"))
        })
        .unwrap()
    }

    #[test]
    fn the_apply_path_cannot_write_evidence() {
        let s = store();
        let before = turns(&s);
        for sql in [
            "UPDATE turns SET text = 'rewritten'",
            "DELETE FROM turns",
            "INSERT INTO turns (conversation_id, episode_id, id, seq, speaker, text) VALUES ('c1', 'e1', 't9', 9, 'x', 'y')",
            "UPDATE episodes SET timestamp = 'now'",
            "DELETE FROM conversations",
        ] {
            let err = s.execute_in_apply_tx(sql).err().map(|e| format!("{e:?}")).unwrap_or_default();
            assert!(
                err.contains("not authorized") || err.contains("AuthorizationForStatementDenied") || err.contains("authoriz"),
                "{sql}: {err}"
            );
        }
        // The ontology itself is writable inside the same transaction.
        assert!(s.execute_in_apply_tx("DELETE FROM onto_ops").is_ok());
        s.apply_ontology_ops(&plan(1, vec![op(0, vec![entity(1)])]), caps()).unwrap();
        assert_eq!(turns(&s), before);
        // And the lock is lifted once the apply path is done: evidence is
        // written raw as before.
        let episode = Episode {
            id: "e2".into(),
            timestamp: None,
            turns: vec![Turn { id: "t2".into(), speaker: "Ann".into(), text: "Hello.".into() }],
            observations: Vec::new(),
        };
        s.write_evidence("c1", 1, &episode).unwrap();
        assert!(turns(&s).contains("t2"));
    }

    #[test]
    fn the_new_entity_cap_stops_a_flood_over_calls_and_counts_it() {
        let s = store();
        let caps = OntoCaps { max_new_entities_per_pass: 7, ..caps() };
        let mut failed = 0;
        let mut n = 0;
        for call in 0..10 {
            let ops: Vec<PlannedOp> = (0..100).map(|i| op(i, vec![entity(call * 100 + i + 1)])).collect();
            for o in s.apply_ontology_ops(&plan(call, ops), caps).unwrap() {
                match o.effect {
                    Effect::Applied => n += 1,
                    Effect::Failed => {
                        assert_eq!(o.kind.as_deref(), Some("new_entity_cap"));
                        failed += 1;
                    }
                    Effect::Skipped => panic!("nothing is skipped"),
                }
            }
        }
        assert_eq!((n, failed), (7, 993));
        assert_eq!(s.ontology_view("c1").unwrap().entities.len(), 7);
        let counts = s.onto_op_counts().unwrap();
        assert!(counts.contains(&("create_entity".into(), "failed".into(), Some("new_entity_cap".into()), 993)), "{counts:?}");
    }

    #[test]
    fn the_pass_cap_and_the_call_cap() {
        let s = store();
        let caps = OntoCaps { max_ops_per_pass: 3, max_ops_per_call: 5, ..caps() };
        let ops: Vec<PlannedOp> = (0..5).map(|i| op(i, vec![entity(i + 1)])).collect();
        let out = s.apply_ontology_ops(&plan(1, ops), caps).unwrap();
        let kinds: Vec<Option<&str>> = out.iter().map(|o| o.kind.as_deref()).collect();
        assert_eq!(kinds, vec![None, None, None, Some("pass_cap"), Some("pass_cap")]);
        // Over the call cap: refused whole, nothing logged or written.
        let ops: Vec<PlannedOp> = (0..6).map(|i| op(i, vec![entity(i + 10)])).collect();
        assert!(s.apply_ontology_ops(&plan(2, ops), caps).is_err());
        assert_eq!(s.onto_op_counts().unwrap().iter().map(|c| c.3).sum::<usize>(), 5);
        assert_eq!(s.ontology_view("c1").unwrap().entities.len(), 3);
    }

    #[test]
    fn an_operation_whose_dependency_is_missing_fails_whole_and_the_rest_applies() {
        let s = store();
        let aspect = OntoWrite::Aspect {
            id: "c1/a1".into(),
            entity_id: "c1/o1".into(),
            name: "home".into(),
            canonical_name: "home".into(),
            cardinality: Cardinality::Single,
        };
        let orphan = OntoWrite::Aspect {
            id: "c1/a2".into(),
            entity_id: "c1/o99".into(),
            name: "x".into(),
            canonical_name: "x".into(),
            cardinality: Cardinality::Multi,
        };
        // Operation 1 writes an alias first, then fails on its aspect: the
        // alias is rolled back with it.
        let alias = OntoWrite::Alias { entity_id: "c1/o1".into(), alias: "Annie".into(), canonical_alias: "annie".into() };
        let out = s.apply_ontology_ops(&plan(1, vec![op(0, vec![entity(1), aspect]), op(1, vec![alias, orphan])]), caps()).unwrap();
        assert_eq!(out[0].effect, Effect::Applied);
        assert_eq!((out[1].effect, out[1].kind.as_deref()), (Effect::Failed, Some("unresolved_target")));
        let view = s.ontology_view("c1").unwrap();
        assert_eq!((view.entities.len(), view.aspects.len()), (1, 1));
        assert!(view.entities[0].aliases.is_empty(), "the failed operation's alias was rolled back");
        assert_eq!(s.onto_evidence().unwrap().len(), 1, "evidence references of applied operations only");
    }

    #[test]
    fn a_superseding_claim_versions_the_slot_and_records_history() {
        let s = store();
        let aspect = OntoWrite::Aspect {
            id: "c1/a1".into(),
            entity_id: "c1/o1".into(),
            name: "home".into(),
            canonical_name: "home".into(),
            cardinality: Cardinality::Single,
        };
        let claim = |id: &str, content: &str, supersedes: Option<&str>| OntoWrite::Claim {
            id: id.into(),
            aspect_id: "c1/a1".into(),
            claim_key: "lives_in".into(),
            kind: "attribute".into(),
            content: content.into(),
            normalized_content: content.to_lowercase(),
            confidence: 0.9,
            valid_from: None,
            review_after: None,
            supersedes: supersedes.map(str::to_string),
        };
        s.apply_ontology_ops(&plan(1, vec![op(0, vec![entity(1), aspect, claim("c1/c1", "Ann lives in Porto", None)])]), caps()).unwrap();
        s.apply_ontology_ops(&plan(2, vec![op(0, vec![claim("c1/c2", "Ann lives in Lisbon", Some("c1/c1"))])]), caps()).unwrap();
        // A second supersession of the same old claim finds it no longer active.
        let out = s.apply_ontology_ops(&plan(3, vec![op(0, vec![claim("c1/c3", "Ann lives in Faro", Some("c1/c1"))])]), caps()).unwrap();
        assert_eq!(out[0].kind.as_deref(), Some("unresolved_target"));
        let view = s.ontology_view("c1").unwrap();
        let statuses: Vec<(&str, ClaimStatus, Option<&str>, i64)> =
            view.claims.iter().map(|c| (c.id.as_str(), c.status, c.superseded_by.as_deref(), c.version)).collect();
        assert_eq!(statuses, vec![("c1/c1", ClaimStatus::Superseded, Some("c1/c2"), 1), ("c1/c2", ClaimStatus::Active, None, 2)]);
        let events: Vec<(String, String)> = s
            .with(|c| {
                let mut st = c.prepare("SELECT object_id, event FROM onto_history ORDER BY op_id, seq")?;
                st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect()
            })
            .unwrap();
        assert!(
            events.contains(&("c1/c1".into(), "superseded".into())) && events.contains(&("c1/c2".into(), "created".into())),
            "{events:?}"
        );
    }

    /// A run's private store keeps its batch transaction open between
    /// units: the apply path and the pass records write inside it (a
    /// transaction could not begin there), and the batch commits them.
    #[test]
    fn the_apply_path_writes_inside_a_runs_open_batch() {
        let dir = std::env::temp_dir().join(format!("memform-onto-batch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("store.sqlite");
        let s = Store::open_for_run(&path).unwrap();
        s.write_conversation("c1", &["Ann".into()], &[]).unwrap();
        let episode = Episode {
            id: "e1".into(),
            timestamp: None,
            turns: vec![Turn { id: "t1".into(), speaker: "Ann".into(), text: "I moved to Lisbon.".into() }],
            observations: Vec::new(),
        };
        s.write_evidence("c1", 0, &episode).unwrap();
        let plan = OntoPlan { conversation_id: "c1".into(), pass_id: "c1/p1".into(), call_seq: 1, ops: vec![op(0, vec![entity(1)])] };
        let out = s.apply_ontology_ops(&plan, caps()).unwrap();
        assert_eq!(out[0].effect, Effect::Applied);
        let pass = PassRecord {
            id: "c1/p1".into(),
            conversation_id: "c1".into(),
            mode: "content".into(),
            trigger: "every-episodes".into(),
            status: "completed".into(),
            after_episode: "e1".into(),
            ..PassRecord::default()
        };
        s.record_pass(&pass, &[("t1".into(), "r".into(), "consumed")]).unwrap();
        s.finish().unwrap();
        drop(s);
        let s = Store::open(&path).unwrap();
        assert_eq!(s.ontology_view("c1").unwrap().entities.len(), 1);
        assert_eq!(s.dream_passes(Some("c1")).unwrap().len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
