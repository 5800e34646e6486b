//! What the `dreaming` profile's capability registry reads and records in
//! the store (migration `0012_dream_tools`, docs/dreaming.md section 7): a
//! conversation's evidence as stored, the evidence references of a claim or
//! a link, the operations of a pass, the runbook a pass wrote and the tool
//! calls it made. The registry itself (`pipeline::dreaming::registry`)
//! decides; these are its reads and its two bookkeeping writes.

use rusqlite::{OptionalExtension, params};

use super::Store;
use crate::error::Result;
use crate::types::{Episode, Turn};

/// One evidence reference of an applied operation.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EvidenceRow {
    pub episode: String,
    pub turn: String,
    pub revision: String,
    pub quote: String,
}

/// One logged operation of a pass: (operation, effect, message).
pub type PassOp = (String, String, Option<String>);

/// One logged operation, as `onto_ops` holds it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OpRow {
    pub id: String,
    pub pass_id: String,
    pub operation: String,
    /// The payload as JSON.
    pub payload: String,
    pub effect: String,
    pub kind: Option<String>,
    pub message: Option<String>,
    /// What it produced (JSON), if anything.
    pub result: Option<String>,
}

/// One recorded tool call of a pass.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ToolCallRow {
    pub pass_id: String,
    pub seq: usize,
    pub tool: String,
    pub input: String,
    pub output: String,
    pub ok: bool,
}

impl Store {
    /// The stored evidence of `conversation`: its episodes in order, each
    /// with its turns in order (no observations).
    pub fn evidence_of(&self, conversation: &str) -> Result<Vec<Episode>> {
        self.with(|c| {
            let mut st = c.prepare("SELECT id, timestamp FROM episodes WHERE conversation_id = ?1 ORDER BY seq")?;
            let mut episodes: Vec<Episode> = st
                .query_map([conversation], |r| {
                    Ok(Episode { id: r.get(0)?, timestamp: r.get(1)?, turns: Vec::new(), observations: Vec::new() })
                })?
                .collect::<rusqlite::Result<_>>()?;
            let mut st = c.prepare("SELECT episode_id, id, speaker, text FROM turns WHERE conversation_id = ?1 ORDER BY seq")?;
            let rows = st
                .query_map([conversation], |r| Ok((r.get::<_, String>(0)?, Turn { id: r.get(1)?, speaker: r.get(2)?, text: r.get(3)? })))?;
            for row in rows {
                let (episode, turn) = row?;
                if let Some(e) = episodes.iter_mut().find(|e| e.id == episode) {
                    e.turns.push(turn);
                }
            }
            Ok(episodes)
        })
    }

    /// The conversations whose evidence the store holds, sorted.
    pub fn evidence_conversations(&self) -> Result<Vec<String>> {
        self.with(|c| {
            let mut st = c.prepare("SELECT id FROM conversations ORDER BY id")?;
            st.query_map([], |r| r.get(0))?.collect()
        })
    }

    /// The evidence references of the operation that created a claim
    /// (`object` = `claim`) or a link (`link`) of `conversation`; `None`
    /// when there is no such object.
    pub fn object_evidence(&self, conversation: &str, object: &str, id: &str) -> Result<Option<Vec<EvidenceRow>>> {
        let sql = match object {
            "claim" => "SELECT created_op FROM onto_claims WHERE conversation_id = ?1 AND id = ?2",
            _ => "SELECT created_op FROM onto_links WHERE conversation_id = ?1 AND id = ?2",
        };
        self.with(|c| {
            let op: Option<String> = c.query_row(sql, params![conversation, id], |r| r.get(0)).optional()?;
            let Some(op) = op else { return Ok(None) };
            let mut st = c.prepare(
                "SELECT episode_id, turn_id, revision, quote FROM onto_evidence WHERE conversation_id = ?1 AND op_id = ?2 ORDER BY seq",
            )?;
            let rows = st
                .query_map(params![conversation, op], |r| {
                    Ok(EvidenceRow { episode: r.get(0)?, turn: r.get(1)?, revision: r.get(2)?, quote: r.get(3)? })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(Some(rows))
        })
    }

    /// The logged operations of a pass, in order.
    pub fn pass_ops(&self, pass_id: &str) -> Result<Vec<PassOp>> {
        self.with(|c| {
            let mut st = c.prepare("SELECT operation, effect, message FROM onto_ops WHERE pass_id = ?1 ORDER BY call_seq, op_index")?;
            st.query_map([pass_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect()
        })
    }

    /// Every logged operation of `conversation`, in order: what `memform
    /// ontology-extract` reports.
    pub fn onto_op_rows(&self, conversation: &str) -> Result<Vec<OpRow>> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT id, pass_id, operation, payload, effect, kind, message, result FROM onto_ops
                 WHERE conversation_id = ?1 ORDER BY rowid",
            )?;
            st.query_map([conversation], |r| {
                Ok(OpRow {
                    id: r.get(0)?,
                    pass_id: r.get(1)?,
                    operation: r.get(2)?,
                    payload: r.get(3)?,
                    effect: r.get(4)?,
                    kind: r.get(5)?,
                    message: r.get(6)?,
                    result: r.get(7)?,
                })
            })?
            .collect()
        })
    }

    /// Stores (or replaces: the last write wins) the runbook of a pass.
    pub fn write_runbook(&self, conversation: &str, pass_id: &str, runbook: &str) -> Result<()> {
        self.write_with(Some(conversation), |c| {
            c.execute(
                "INSERT OR REPLACE INTO dream_runbooks (pass_id, conversation_id, runbook) VALUES (?1, ?2, ?3)",
                params![pass_id, conversation, runbook],
            )?;
            Ok(())
        })
    }

    /// The runbook a pass wrote, if any.
    pub fn runbook_of(&self, pass_id: &str) -> Result<Option<String>> {
        self.with(|c| c.query_row("SELECT runbook FROM dream_runbooks WHERE pass_id = ?1", [pass_id], |r| r.get(0)).optional())
    }

    /// Records one tool call of a pass.
    pub fn record_tool_call(&self, conversation: &str, call: &ToolCallRow) -> Result<()> {
        self.write_with(Some(conversation), |c| {
            c.execute(
                "INSERT OR REPLACE INTO dream_tool_calls (pass_id, seq, conversation_id, tool, input, output, ok)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![call.pass_id, call.seq as i64, conversation, call.tool, call.input, call.output, call.ok],
            )?;
            Ok(())
        })
    }

    /// The recorded tool calls of a pass, in order.
    pub fn tool_calls_of(&self, pass_id: &str) -> Result<Vec<ToolCallRow>> {
        self.with(|c| {
            let mut st = c.prepare("SELECT pass_id, seq, tool, input, output, ok FROM dream_tool_calls WHERE pass_id = ?1 ORDER BY seq")?;
            st.query_map([pass_id], |r| {
                Ok(ToolCallRow {
                    pass_id: r.get(0)?,
                    seq: r.get::<_, i64>(1)?.max(0) as usize,
                    tool: r.get(2)?,
                    input: r.get(3)?,
                    output: r.get(4)?,
                    ok: r.get(5)?,
                })
            })?
            .collect()
        })
    }
}
