//! The operation contract of the `dreaming` profile (docs/dreaming.md,
//! section 3): the closed set of 20 ontology operations Signet's Dreaming
//! pass may submit through `apply_ontology_ops`, their payloads, the request
//! envelope and its citations, and [`parse_apply_request`], which reads a
//! request from JSON.
//!
//! Parsing is the first layer of the guards (docs/dreaming.md, 4.1) plus
//! Signet's request checks G1–G4 (4.2). It is stricter than Signet's schema
//! on one point, as the design says: an unknown field of the envelope, of a
//! payload or of a citation is rejected (Signet's payload schemas pass
//! unknown fields through). Names are Signet's (camelCase payload fields,
//! snake_case citation fields).

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::types::string_enum;

string_enum! {
    /// The 20 operations of the Dreaming vocabulary.
    pub enum OpKind {
        CreateEntity => "create_entity",
        AddClaimValue => "add_claim_value",
        SetClaimValue => "set_claim_value",
        SupersedeClaimValue => "supersede_claim_value",
        RenameEntity => "rename_entity",
        CreateAspect => "create_aspect",
        RenameAspect => "rename_aspect",
        CreateLink => "create_link",
        UpdateLink => "update_link",
        CreatePolicy => "create_policy",
        CreateActionType => "create_action_type",
        CreateInterface => "create_interface",
        Flag => "flag",
        ArchiveEntity => "archive_entity",
        ArchiveAspect => "archive_aspect",
        ArchiveClaimValue => "archive_claim_value",
        ArchiveLink => "archive_link",
        MergeEntities => "merge_entities",
        MergeAspects => "merge_aspects",
        DeclineAttention => "decline_attention",
    }
}

string_enum! {
    /// Which provenance an operation needs (docs/dreaming.md, 3.2).
    pub enum OpClass {
        /// Writes content: cites exact quotes from evidence.
        Content => "content",
        /// Archives or merges: cites a hygiene attention record.
        Hygiene => "hygiene",
        /// Mints a hygiene attention record.
        Flag => "flag",
        /// Closes an attention record without a change.
        Attention => "attention",
    }
}

impl OpKind {
    pub fn class(self) -> OpClass {
        match self {
            OpKind::Flag => OpClass::Flag,
            OpKind::DeclineAttention => OpClass::Attention,
            OpKind::ArchiveEntity
            | OpKind::ArchiveAspect
            | OpKind::ArchiveClaimValue
            | OpKind::ArchiveLink
            | OpKind::MergeEntities
            | OpKind::MergeAspects => OpClass::Hygiene,
            _ => OpClass::Content,
        }
    }
}

string_enum! {
    /// Entity types: Signet's `ENTITY_TYPES` and the four concrete types of
    /// its label gate that `ENTITY_TYPES` lacks (organization, product,
    /// place, document; memform's addition, docs/dreaming.md 3.3).
    pub enum OntoEntityType {
        Person => "person",
        Project => "project",
        System => "system",
        Tool => "tool",
        Concept => "concept",
        Skill => "skill",
        Task => "task",
        Source => "source",
        Artifact => "artifact",
        Agent => "agent",
        Policy => "policy",
        Action => "action",
        Workflow => "workflow",
        Event => "event",
        ObjectType => "object_type",
        Interface => "interface",
        Observation => "observation",
        ClaimSlot => "claim_slot",
        ClaimValue => "claim_value",
        Unknown => "unknown",
        Organization => "organization",
        Product => "product",
        Place => "place",
        Document => "document",
    }
}

string_enum! {
    /// Link types: Signet's `DEPENDENCY_TYPES`.
    pub enum LinkType {
        Uses => "uses",
        Requires => "requires",
        OwnedBy => "owned_by",
        Owns => "owns",
        Blocks => "blocks",
        Informs => "informs",
        Maintains => "maintains",
        Implements => "implements",
        Built => "built",
        DependsOn => "depends_on",
        RelatedTo => "related_to",
        LearnedFrom => "learned_from",
        Teaches => "teaches",
        Knows => "knows",
        Assumes => "assumes",
        SupportsClaim => "supports_claim",
        AuthoredBy => "authored_by",
        LinksTo => "links_to",
        Contains => "contains",
        ContainsNote => "contains_note",
        Contradicts => "contradicts",
        Supersedes => "supersedes",
        PartOf => "part_of",
        ProducedArtifact => "produced_artifact",
        Precedes => "precedes",
        Follows => "follows",
        Triggers => "triggers",
        MayExecute => "may_execute",
        RequiresApprovalFrom => "requires_approval_from",
        Impacts => "impacts",
        Produces => "produces",
        Consumes => "consumes",
    }
}

string_enum! {
    /// The kind of a rejection or a skip (docs/dreaming.md, section 4),
    /// counted by the metrics. Only the kinds the contract and the pure
    /// checks produce are here; the graph-state guards add theirs with the
    /// store.
    pub enum GuardKind {
        /// Not JSON, a wrong type, a missing or unknown field, an empty text.
        Schema => "schema",
        /// No operations, or more than a call may hold.
        RequestSize => "request_size",
        /// An operation outside the 20.
        UnknownOperation => "unknown_operation",
        /// A confidence that is not a finite number in [0, 1].
        ConfidenceRange => "confidence_range",
        /// A text over its size cap, or a request over its size.
        PayloadTooLarge => "payload_too_large",
        /// The request's scope is not the pass's conversation, or a citation
        /// names a turn of another conversation.
        ScopeMismatch => "scope_mismatch",
        /// A required text that is blank, where Signet's applicator mapping
        /// reports `missing payload.<field>`.
        UnresolvedTarget => "unresolved_target",
        /// A hygiene operation without valid attention provenance.
        AttentionProvenance => "attention_provenance",
        /// A content operation without a usable citation.
        MissingEvidence => "missing_evidence",
        /// A quote that is not in the cited turn.
        QuoteNotFound => "quote_not_found",
        /// A citation that names no turn of the conversation.
        UnknownSource => "unknown_source",
        /// A citation at a revision the turn does not have.
        StaleRevision => "stale_revision",
        /// A citation of a turn the safety policy withholds.
        WithheldSource => "withheld_source",
        /// An entity name the label gate rejects.
        EntityLabel => "entity_label",
    }
}

/// A rejected request, or a rejected operation: its kind, the operation's
/// index (none for the request as a whole) and the message (Signet's where
/// Signet has one).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub kind: GuardKind,
    pub index: Option<usize>,
    pub message: String,
}

impl Rejection {
    pub fn request(kind: GuardKind, message: impl Into<String>) -> Rejection {
        Rejection { kind, index: None, message: message.into() }
    }

    pub fn at(index: usize, kind: GuardKind, message: impl Into<String>) -> Rejection {
        Rejection { kind, index: Some(index), message: message.into() }
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

/// The size caps of a request (docs/dreaming.md, section 5). Not config keys
/// yet: the profile is not wired; they become `dreaming_*` keys with it.
#[derive(Debug, Clone, PartialEq)]
pub struct ContractLimits {
    /// Operations per `apply_ontology_ops` call (Signet's
    /// `DREAMING_MAX_OPERATIONS_PER_REQUEST`).
    pub max_ops_per_call: usize,
    /// Characters of a payload text (`name`, `value`, `definition`, `reason`, …).
    pub max_text_chars: usize,
    /// Characters of a citation's quote.
    pub max_quote_chars: usize,
    /// Citations of one operation.
    pub max_citations: usize,
    /// Characters of a request's JSON.
    pub max_request_chars: usize,
}

impl Default for ContractLimits {
    fn default() -> Self {
        ContractLimits {
            max_ops_per_call: 100,
            max_text_chars: 2_000,
            max_quote_chars: 1_000,
            max_citations: 10,
            max_request_chars: 256_000,
        }
    }
}

// ---- payloads ----

/// `create_entity`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateEntity {
    pub name: String,
    #[serde(rename = "type")]
    pub entity_type: OntoEntityType,
}

/// `add_claim_value` and `set_claim_value`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClaimValue {
    pub entity_id: String,
    pub aspect_id: String,
    pub claim_key: String,
    pub value: String,
    /// When a future temporal claim is to be reviewed (an ISO timestamp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_after: Option<String>,
}

/// `supersede_claim_value`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SupersedeClaim {
    pub entity_id: String,
    pub aspect_id: String,
    pub claim_key: String,
    /// The new value.
    pub value: String,
    /// The claim superseded; none: the slot's current active claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribute_id: Option<String>,
}

/// `rename_entity`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RenameEntity {
    pub entity_id: String,
    pub new_name: String,
}

/// `create_aspect`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateAspect {
    pub entity_id: String,
    pub name: String,
}

/// `rename_aspect`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RenameAspect {
    pub entity_id: String,
    pub aspect_id: String,
    pub new_name: String,
}

/// `create_link`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateLink {
    pub from_entity_id: String,
    pub to_entity_id: String,
    pub link_type: LinkType,
}

/// `update_link`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateLink {
    pub link_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_type: Option<LinkType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `create_policy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreatePolicy {
    pub entity_id: String,
    /// The policy kind.
    pub name: String,
    /// The policy content.
    pub definition: String,
}

/// `create_action_type` and `create_interface`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Named {
    pub name: String,
}

/// `flag`: mints a hygiene attention record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Flag {
    /// `entity:<id>`, `aspect:<id>`, `attribute:<id>`, `link:<id>` or
    /// `duplicate:<canonical name>`.
    pub subject_ref: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<BTreeMap<String, String>>,
    /// 0–100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
}

/// `archive_entity`, `archive_aspect`, `archive_claim_value`, `archive_link`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Archive {
    pub target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `merge_entities`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MergeEntities {
    /// Every entity of the duplicate group, at least two.
    pub targets: Vec<String>,
    pub survivor: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `merge_aspects`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MergeAspects {
    pub entity_id: String,
    /// The surviving aspect.
    pub target: String,
    /// The aspects folded into it, at least one.
    pub sources: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `decline_attention`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeclineAttention {
    pub attention_id: String,
}

/// An operation's payload, by operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    CreateEntity(CreateEntity),
    AddClaimValue(ClaimValue),
    SetClaimValue(ClaimValue),
    SupersedeClaimValue(SupersedeClaim),
    RenameEntity(RenameEntity),
    CreateAspect(CreateAspect),
    RenameAspect(RenameAspect),
    CreateLink(CreateLink),
    UpdateLink(UpdateLink),
    CreatePolicy(CreatePolicy),
    CreateActionType(Named),
    CreateInterface(Named),
    Flag(Flag),
    ArchiveEntity(Archive),
    ArchiveAspect(Archive),
    ArchiveClaimValue(Archive),
    ArchiveLink(Archive),
    MergeEntities(MergeEntities),
    MergeAspects(MergeAspects),
    DeclineAttention(DeclineAttention),
}

/// A text field of a payload: its name, its value, and whether it is
/// required (a required text must not be blank).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextField<'a> {
    pub name: &'static str,
    pub value: &'a str,
    pub required: bool,
}

impl Op {
    pub fn kind(&self) -> OpKind {
        match self {
            Op::CreateEntity(_) => OpKind::CreateEntity,
            Op::AddClaimValue(_) => OpKind::AddClaimValue,
            Op::SetClaimValue(_) => OpKind::SetClaimValue,
            Op::SupersedeClaimValue(_) => OpKind::SupersedeClaimValue,
            Op::RenameEntity(_) => OpKind::RenameEntity,
            Op::CreateAspect(_) => OpKind::CreateAspect,
            Op::RenameAspect(_) => OpKind::RenameAspect,
            Op::CreateLink(_) => OpKind::CreateLink,
            Op::UpdateLink(_) => OpKind::UpdateLink,
            Op::CreatePolicy(_) => OpKind::CreatePolicy,
            Op::CreateActionType(_) => OpKind::CreateActionType,
            Op::CreateInterface(_) => OpKind::CreateInterface,
            Op::Flag(_) => OpKind::Flag,
            Op::ArchiveEntity(_) => OpKind::ArchiveEntity,
            Op::ArchiveAspect(_) => OpKind::ArchiveAspect,
            Op::ArchiveClaimValue(_) => OpKind::ArchiveClaimValue,
            Op::ArchiveLink(_) => OpKind::ArchiveLink,
            Op::MergeEntities(_) => OpKind::MergeEntities,
            Op::MergeAspects(_) => OpKind::MergeAspects,
            Op::DeclineAttention(_) => OpKind::DeclineAttention,
        }
    }

    /// Every text field of the payload, in the payload's field order (the
    /// elements of `targets` and `sources` as required texts).
    pub fn texts(&self) -> Vec<TextField<'_>> {
        fn req<'v>(name: &'static str, value: &'v str) -> TextField<'v> {
            TextField { name, value, required: true }
        }
        fn opt<'v>(name: &'static str, value: &'v Option<String>) -> Option<TextField<'v>> {
            value.as_deref().map(|value| TextField { name, value, required: false })
        }
        let mut out = Vec::new();
        match self {
            Op::CreateEntity(p) => out.push(req("name", &p.name)),
            Op::AddClaimValue(p) | Op::SetClaimValue(p) => {
                out.extend([req("entityId", &p.entity_id), req("aspectId", &p.aspect_id), req("claimKey", &p.claim_key)]);
                out.push(req("value", &p.value));
                out.extend(opt("reviewAfter", &p.review_after));
            }
            Op::SupersedeClaimValue(p) => {
                out.extend([req("entityId", &p.entity_id), req("aspectId", &p.aspect_id), req("claimKey", &p.claim_key)]);
                out.push(req("value", &p.value));
                out.extend(opt("attributeId", &p.attribute_id));
            }
            Op::RenameEntity(p) => out.extend([req("entityId", &p.entity_id), req("newName", &p.new_name)]),
            Op::CreateAspect(p) => out.extend([req("entityId", &p.entity_id), req("name", &p.name)]),
            Op::RenameAspect(p) => out.extend([req("entityId", &p.entity_id), req("aspectId", &p.aspect_id), req("newName", &p.new_name)]),
            Op::CreateLink(p) => out.extend([req("fromEntityId", &p.from_entity_id), req("toEntityId", &p.to_entity_id)]),
            Op::UpdateLink(p) => {
                out.push(req("linkId", &p.link_id));
                out.extend(opt("reason", &p.reason));
            }
            Op::CreatePolicy(p) => out.extend([req("entityId", &p.entity_id), req("name", &p.name), req("definition", &p.definition)]),
            Op::CreateActionType(p) | Op::CreateInterface(p) => out.push(req("name", &p.name)),
            Op::Flag(p) => {
                out.push(req("subjectRef", &p.subject_ref));
                if let Some(details) = &p.details {
                    out.extend(details.values().map(|v| TextField { name: "details", value: v.as_str(), required: false }));
                }
            }
            Op::ArchiveEntity(p) | Op::ArchiveAspect(p) | Op::ArchiveClaimValue(p) | Op::ArchiveLink(p) => {
                out.push(req("target", &p.target));
                out.extend(opt("reason", &p.reason));
            }
            Op::MergeEntities(p) => {
                out.extend(p.targets.iter().map(|t| req("targets", t)));
                out.push(req("survivor", &p.survivor));
                out.extend(opt("reason", &p.reason));
            }
            Op::MergeAspects(p) => {
                out.extend([req("entityId", &p.entity_id), req("target", &p.target)]);
                out.extend(p.sources.iter().map(|s| req("sources", s)));
                out.extend(opt("newName", &p.new_name));
                out.extend(opt("reason", &p.reason));
            }
            Op::DeclineAttention(p) => out.push(req("attentionId", &p.attention_id)),
        }
        out
    }
}

/// One exact-quote citation of a content operation (`{quote, source_ref}`;
/// `source_kind` and `source_id` are optional and must agree with
/// `source_ref`; `revision` is memform's: the cited turn's revision).
/// Signet's `source_path` is not accepted: a turn has no path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Citation {
    /// `turn:<turn id>`.
    pub source_ref: String,
    pub quote: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    /// SHA-256 hex of the turn's text, when the citer knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

/// One operation of a request: its payload and the envelope's fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    pub op: Op,
    pub reason: Option<String>,
    /// Content operations: the citations. `None` when the field is absent.
    pub evidence: Option<Vec<Citation>>,
    /// Hygiene operations: `attention:$<index>` or `attention:<id>`.
    pub provenance: Option<String>,
    pub confidence: Option<f64>,
    /// `review_required` makes a content operation a pending proposal.
    pub risk: Option<String>,
}

/// An `apply_ontology_ops` request: the scope (memform: a conversation) and
/// its operations, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyRequest {
    pub agent_id: String,
    pub operations: Vec<Operation>,
}

/// The envelope's fields, in Signet's order.
const ENVELOPE_FIELDS: &[&str] = &["operation", "payload", "reason", "evidence", "provenance", "confidence", "risk"];

/// Signet's message for a bad confidence (G4).
pub const CONFIDENCE_ERROR: &str = "confidence must be a finite number between 0 and 1";

/// Reads an `apply_ontology_ops` request from JSON: the schema with unknown
/// fields and operations rejected (docs/dreaming.md, 4.1) and Signet's
/// request checks G1–G4 (4.2). The operations are read in order and the
/// first that fails rejects the whole request; nothing is read from or
/// written to a store.
pub fn parse_apply_request(json: &str, limits: &ContractLimits) -> Result<ApplyRequest, Rejection> {
    let chars = json.chars().count();
    if chars > limits.max_request_chars {
        let msg = format!("request is {chars} characters, at most {}", limits.max_request_chars);
        return Err(Rejection::request(GuardKind::PayloadTooLarge, msg));
    }
    let value: Value =
        serde_json::from_str(json).map_err(|e| Rejection::request(GuardKind::Schema, format!("request is not JSON: {e}")))?;
    let Value::Object(mut top) = value else {
        return Err(Rejection::request(GuardKind::Schema, "request: expected an object"));
    };
    if let Some(unknown) = top.keys().find(|k| !matches!(k.as_str(), "agentId" | "operations")) {
        return Err(Rejection::request(GuardKind::Schema, format!("unknown field `{unknown}` in the request")));
    }
    let agent_id = match top.remove("agentId") {
        Some(Value::String(s)) if !s.is_empty() => s,
        Some(Value::String(_)) => return Err(Rejection::request(GuardKind::Schema, "agentId: must not be empty")),
        Some(_) => return Err(Rejection::request(GuardKind::Schema, "agentId: expected a string")),
        None => return Err(Rejection::request(GuardKind::Schema, "agentId: required")),
    };
    let raw_ops = match top.remove("operations") {
        Some(Value::Array(a)) => a,
        Some(_) => return Err(Rejection::request(GuardKind::Schema, "operations: expected an array")),
        None => return Err(Rejection::request(GuardKind::Schema, "operations: required")),
    };
    if raw_ops.is_empty() {
        return Err(Rejection::request(GuardKind::RequestSize, "operations are required"));
    }
    if raw_ops.len() > limits.max_ops_per_call {
        let msg = format!("operations cannot exceed {} items", limits.max_ops_per_call);
        return Err(Rejection::request(GuardKind::RequestSize, msg));
    }
    let operations = raw_ops.into_iter().enumerate().map(|(i, raw)| parse_operation(i, raw, limits)).collect::<Result<Vec<_>, _>>()?;
    Ok(ApplyRequest { agent_id, operations })
}

fn schema(i: usize, message: impl Into<String>) -> Rejection {
    Rejection::at(i, GuardKind::Schema, message)
}

fn parse_operation(i: usize, raw: Value, limits: &ContractLimits) -> Result<Operation, Rejection> {
    let Value::Object(mut obj) = raw else {
        return Err(schema(i, format!("operations[{i}]: expected an object")));
    };
    if let Some(unknown) = obj.keys().find(|k| !ENVELOPE_FIELDS.contains(&k.as_str())) {
        return Err(schema(i, format!("unknown field `{unknown}` in operations[{i}]")));
    }
    let name = match obj.remove("operation") {
        Some(Value::String(s)) => s,
        Some(_) => return Err(schema(i, format!("operations[{i}].operation: expected a string"))),
        None => return Err(schema(i, format!("operations[{i}].operation: required"))),
    };
    let Some(kind) = OpKind::parse(&name) else {
        return Err(Rejection::at(i, GuardKind::UnknownOperation, format!("Unsupported ontology proposal operation: {name}")));
    };
    let payload = match obj.remove("payload") {
        Some(Value::Object(p)) => p,
        Some(_) => return Err(schema(i, format!("operations[{i}].payload: expected an object"))),
        None => return Err(schema(i, format!("operations[{i}].payload: required"))),
    };
    let op = parse_payload(i, kind, payload)?;
    let reason = optional_string(i, &mut obj, "reason")?;
    let provenance = optional_string(i, &mut obj, "provenance")?;
    if provenance.as_deref() == Some("") {
        return Err(schema(i, format!("operations[{i}].provenance: must not be empty")));
    }
    let risk = match obj.remove("risk") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(_) => return Err(schema(i, format!("operations[{i}].risk: expected a string or null"))),
    };
    let confidence = match obj.remove("confidence") {
        None => None,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(c) if c.is_finite() && (0.0..=1.0).contains(&c) => Some(c),
            _ => return Err(Rejection::at(i, GuardKind::ConfidenceRange, CONFIDENCE_ERROR)),
        },
        Some(_) => return Err(Rejection::at(i, GuardKind::ConfidenceRange, CONFIDENCE_ERROR)),
    };
    let evidence = match obj.remove("evidence") {
        None => None,
        Some(Value::Array(items)) => {
            if items.len() > limits.max_citations {
                let msg = format!("operations[{i}].evidence: {} citations, at most {}", items.len(), limits.max_citations);
                return Err(Rejection::at(i, GuardKind::PayloadTooLarge, msg));
            }
            let mut cites = Vec::with_capacity(items.len());
            for (c, item) in items.into_iter().enumerate() {
                let cite: Citation = deserialize(item).map_err(|e| schema(i, format!("operations[{i}].evidence[{c}]{e}")))?;
                let quote_chars = cite.quote.chars().count();
                if quote_chars > limits.max_quote_chars {
                    let msg = format!("operations[{i}].evidence[{c}].quote: {quote_chars} characters, at most {}", limits.max_quote_chars);
                    return Err(Rejection::at(i, GuardKind::PayloadTooLarge, msg));
                }
                cites.push(cite);
            }
            Some(cites)
        }
        Some(_) => return Err(schema(i, format!("operations[{i}].evidence: expected an array"))),
    };
    let operation = Operation { op, reason, evidence, provenance, confidence, risk };
    check_sizes(i, &operation, limits)?;
    Ok(operation)
}

fn optional_string(i: usize, obj: &mut Map<String, Value>, key: &str) -> Result<Option<String>, Rejection> {
    match obj.remove(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(schema(i, format!("operations[{i}].{key}: expected a string"))),
    }
}

/// Deserialises `value` as `T`, the error prefixed with the path inside it
/// (`.payload.entityId: …`, or `: …` at its root).
fn deserialize<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." { format!(": {}", e.inner()) } else { format!(".{path}: {}", e.inner()) }
    })
}

fn parse_payload(i: usize, kind: OpKind, payload: Map<String, Value>) -> Result<Op, Rejection> {
    let value = Value::Object(payload);
    let err = |e: String| schema(i, format!("operations[{i}].payload{e}"));
    let op = match kind {
        OpKind::CreateEntity => Op::CreateEntity(deserialize(value).map_err(err)?),
        OpKind::AddClaimValue => Op::AddClaimValue(deserialize(value).map_err(err)?),
        OpKind::SetClaimValue => Op::SetClaimValue(deserialize(value).map_err(err)?),
        OpKind::SupersedeClaimValue => Op::SupersedeClaimValue(deserialize(value).map_err(err)?),
        OpKind::RenameEntity => Op::RenameEntity(deserialize(value).map_err(err)?),
        OpKind::CreateAspect => Op::CreateAspect(deserialize(value).map_err(err)?),
        OpKind::RenameAspect => Op::RenameAspect(deserialize(value).map_err(err)?),
        OpKind::CreateLink => Op::CreateLink(deserialize(value).map_err(err)?),
        OpKind::UpdateLink => Op::UpdateLink(deserialize(value).map_err(err)?),
        OpKind::CreatePolicy => Op::CreatePolicy(deserialize(value).map_err(err)?),
        OpKind::CreateActionType => Op::CreateActionType(deserialize(value).map_err(err)?),
        OpKind::CreateInterface => Op::CreateInterface(deserialize(value).map_err(err)?),
        OpKind::Flag => Op::Flag(deserialize(value).map_err(err)?),
        OpKind::ArchiveEntity => Op::ArchiveEntity(deserialize(value).map_err(err)?),
        OpKind::ArchiveAspect => Op::ArchiveAspect(deserialize(value).map_err(err)?),
        OpKind::ArchiveClaimValue => Op::ArchiveClaimValue(deserialize(value).map_err(err)?),
        OpKind::ArchiveLink => Op::ArchiveLink(deserialize(value).map_err(err)?),
        OpKind::MergeEntities => Op::MergeEntities(deserialize(value).map_err(err)?),
        OpKind::MergeAspects => Op::MergeAspects(deserialize(value).map_err(err)?),
        OpKind::DeclineAttention => Op::DeclineAttention(deserialize(value).map_err(err)?),
    };
    // Array bounds and ranges Signet's schema states (`min(2)`, `min(1)`, 0–100).
    match &op {
        Op::MergeEntities(p) if p.targets.len() < 2 => {
            return Err(schema(i, format!("operations[{i}].payload.targets: at least 2 entities, got {}", p.targets.len())));
        }
        Op::MergeAspects(p) if p.sources.is_empty() => {
            return Err(schema(i, format!("operations[{i}].payload.sources: at least 1 aspect")));
        }
        Op::Flag(Flag { priority: Some(p), .. }) if !(p.is_finite() && (0.0..=100.0).contains(p)) => {
            return Err(schema(i, format!("operations[{i}].payload.priority: a number from 0 to 100, got {p}")));
        }
        _ => {}
    }
    Ok(op)
}

/// Every text `min(1)` (Signet's schema: an empty required text fails the
/// schema; a blank one passes it and is the applicator mapping's to reject),
/// and the size caps.
fn check_sizes(i: usize, operation: &Operation, limits: &ContractLimits) -> Result<(), Rejection> {
    for field in operation.op.texts() {
        // `details` values are plain strings and `reviewAfter` is not in
        // Signet's listed schema (its applicator ignores a blank one): both
        // may be empty; every other text is `min(1)`.
        let may_be_empty = matches!(field.name, "details" | "reviewAfter");
        if field.value.is_empty() && !may_be_empty {
            return Err(schema(i, format!("operations[{i}].payload.{}: must not be empty", field.name)));
        }
        let n = field.value.chars().count();
        if n > limits.max_text_chars {
            let msg = format!("operations[{i}].payload.{}: {n} characters, at most {}", field.name, limits.max_text_chars);
            return Err(Rejection::at(i, GuardKind::PayloadTooLarge, msg));
        }
    }
    if let Some(reason) = &operation.reason {
        let n = reason.chars().count();
        if n > limits.max_text_chars {
            let msg = format!("operations[{i}].reason: {n} characters, at most {}", limits.max_text_chars);
            return Err(Rejection::at(i, GuardKind::PayloadTooLarge, msg));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<ApplyRequest, Rejection> {
        parse_apply_request(json, &ContractLimits::default())
    }

    /// One operation wrapped in a request.
    fn one(op: &str) -> Result<ApplyRequest, Rejection> {
        parse(&format!(r#"{{"agentId":"conv-1","operations":[{op}]}}"#))
    }

    // Signet's `dreaming-operation-contract.test.ts`, case by case.

    #[test]
    fn dreaming_claim_operations_accept_id_based_targets() {
        let req = one(
            r#"{"operation":"set_claim_value","payload":{"entityId":"e-signet","aspectId":"a-identity","claimKey":"purpose","value":"Signet preserves durable agent context."}}"#,
        )
        .expect("parses");
        let Op::SetClaimValue(p) = &req.operations[0].op else { panic!("wrong operation {:?}", req.operations[0].op) };
        assert_eq!((p.entity_id.as_str(), p.claim_key.as_str()), ("e-signet", "purpose"));
    }

    #[test]
    fn dreaming_operations_expose_the_shared_entity_type_vocabulary() {
        let ok = one(r#"{"operation":"create_entity","payload":{"name":"Signet","type":"system"}}"#).expect("parses");
        assert_eq!(ok.operations[0].op, Op::CreateEntity(CreateEntity { name: "Signet".into(), entity_type: OntoEntityType::System }));
        let bad = one(r#"{"operation":"create_entity","payload":{"name":"Signet","type":"made_up_type"}}"#).unwrap_err();
        assert_eq!(bad.kind, GuardKind::Schema);
        assert!(bad.message.contains("operations[0].payload.type"), "{}", bad.message);
    }

    #[test]
    fn flag_ops_are_part_of_the_dreaming_vocabulary() {
        let req = one(r#"{"operation":"flag","payload":{"subjectRef":"entity:e-husk","details":{"reason":"zero_active_attributes"}}}"#)
            .expect("parses");
        assert_eq!(req.operations[0].op.kind().class(), OpClass::Flag);
    }

    #[test]
    fn decline_attention_is_part_of_the_vocabulary_and_requires_an_attention_id() {
        assert!(one(r#"{"operation":"decline_attention","payload":{"attentionId":"attention-uuid"}}"#).is_ok());
        let bad = one(r#"{"operation":"decline_attention","payload":{}}"#).unwrap_err();
        assert_eq!((bad.kind, bad.index), (GuardKind::Schema, Some(0)));
        assert!(bad.message.contains("attentionId"), "{}", bad.message);
    }

    // Signet's request checks in `dreaming-operations.test.ts` that need no store.

    #[test]
    fn rejects_an_unsupported_operation_before_touching_the_graph() {
        let bad = one(r#"{"operation":"drop_everything","payload":{}}"#).unwrap_err();
        assert_eq!(bad.kind, GuardKind::UnknownOperation);
        assert_eq!(bad.message, "Unsupported ontology proposal operation: drop_everything");
        // The shared vocabulary's operations that are not Dreaming's.
        for name in ["restore_claim_version", "attach_interface", "pin_entity"] {
            let bad = one(&format!(r#"{{"operation":"{name}","payload":{{"attribute_id":"a"}}}}"#)).unwrap_err();
            assert_eq!(bad.kind, GuardKind::UnknownOperation, "{name}");
        }
    }

    #[test]
    fn rejects_an_oversized_apply_request_before_minting_or_writing() {
        let flags: Vec<String> = (0..101).map(|i| format!(r#"{{"operation":"flag","payload":{{"subjectRef":"entity:e-{i}"}}}}"#)).collect();
        let bad = parse(&format!(r#"{{"agentId":"conv-1","operations":[{}]}}"#, flags.join(","))).unwrap_err();
        assert_eq!((bad.kind, bad.index), (GuardKind::RequestSize, None));
        assert_eq!(bad.message, "operations cannot exceed 100 items");
        let hundred = parse(&format!(r#"{{"agentId":"conv-1","operations":[{}]}}"#, flags[..100].join(","))).expect("100 fit");
        assert_eq!(hundred.operations.len(), 100);
    }

    #[test]
    fn operations_are_required() {
        let bad = parse(r#"{"agentId":"conv-1","operations":[]}"#).unwrap_err();
        assert_eq!((bad.kind, bad.message.as_str()), (GuardKind::RequestSize, "operations are required"));
    }

    // memform's strictness (docs/dreaming.md, 3.1): unknown fields anywhere.

    #[test]
    fn unknown_fields_are_rejected_everywhere() {
        let payload = one(r#"{"operation":"create_entity","payload":{"name":"Acme","type":"project","colour":"red"}}"#).unwrap_err();
        assert_eq!(payload.kind, GuardKind::Schema);
        assert!(payload.message.contains("unknown field `colour`"), "{}", payload.message);
        let envelope = one(r#"{"operation":"create_entity","payload":{"name":"Acme","type":"project"},"force":true}"#).unwrap_err();
        assert_eq!(envelope.message, "unknown field `force` in operations[0]");
        let citation = one(
            r#"{"operation":"create_entity","payload":{"name":"Acme","type":"project"},"evidence":[{"source_ref":"turn:t1","quote":"Acme","page":3}]}"#,
        )
        .unwrap_err();
        assert!(citation.message.starts_with("operations[0].evidence[0]"), "{}", citation.message);
        assert!(citation.message.contains("unknown field `page`"), "{}", citation.message);
        let path = one(
            r#"{"operation":"create_entity","payload":{"name":"Acme","type":"project"},"evidence":[{"source_ref":"turn:t1","quote":"Acme","source_path":"notes.md"}]}"#,
        )
        .unwrap_err();
        assert!(path.message.contains("unknown field `source_path`"), "{}", path.message);
        let top = parse(r#"{"agentId":"c","operations":[],"dryRun":true}"#).unwrap_err();
        assert_eq!(top.message, "unknown field `dryRun` in the request");
    }

    #[test]
    fn the_first_bad_operation_in_order_rejects_the_request() {
        let bad = parse(
            r#"{"agentId":"c","operations":[
                {"operation":"flag","payload":{"subjectRef":"entity:a"}},
                {"operation":"create_entity","payload":{"name":"","type":"project"}},
                {"operation":"nope","payload":{}}]}"#,
        )
        .unwrap_err();
        assert_eq!((bad.kind, bad.index), (GuardKind::Schema, Some(1)));
        assert_eq!(bad.message, "operations[1].payload.name: must not be empty");
    }

    #[test]
    fn optional_texts_are_min_1_except_plain_strings() {
        assert!(one(r#"{"operation":"flag","payload":{"subjectRef":"entity:a","details":{"note":""}}}"#).is_ok());
        let reason = one(r#"{"operation":"archive_entity","payload":{"target":"e","reason":""},"provenance":"attention:x"}"#).unwrap_err();
        assert_eq!(reason.message, "operations[0].payload.reason: must not be empty");
        let attribute = one(r#"{"operation":"supersede_claim_value","payload":{"entityId":"e","aspectId":"a","claimKey":"k","value":"v","attributeId":""}}"#)
            .unwrap_err();
        assert_eq!(attribute.kind, GuardKind::Schema);
    }

    #[test]
    fn confidence_priority_and_array_bounds() {
        for c in ["1.5", "-0.1", "\"high\""] {
            let bad = one(&format!(r#"{{"operation":"flag","payload":{{"subjectRef":"entity:a"}},"confidence":{c}}}"#)).unwrap_err();
            assert_eq!((bad.kind, bad.message.as_str()), (GuardKind::ConfidenceRange, CONFIDENCE_ERROR), "{c}");
        }
        assert!(one(r#"{"operation":"flag","payload":{"subjectRef":"entity:a"},"confidence":1}"#).is_ok());
        let priority = one(r#"{"operation":"flag","payload":{"subjectRef":"entity:a","priority":101}}"#).unwrap_err();
        assert_eq!(priority.kind, GuardKind::Schema);
        let targets = one(r#"{"operation":"merge_entities","payload":{"targets":["e-1"],"survivor":"e-1"}}"#).unwrap_err();
        assert!(targets.message.contains("at least 2 entities"), "{}", targets.message);
        let sources = one(r#"{"operation":"merge_aspects","payload":{"entityId":"e","target":"a","sources":[]}}"#).unwrap_err();
        assert!(sources.message.contains("at least 1 aspect"), "{}", sources.message);
        let link =
            one(r#"{"operation":"create_link","payload":{"fromEntityId":"a","toEntityId":"b","linkType":"friends_with"}}"#).unwrap_err();
        assert_eq!(link.kind, GuardKind::Schema);
    }

    #[test]
    fn size_caps_are_counted_rejections() {
        let limits =
            ContractLimits { max_text_chars: 10, max_quote_chars: 5, max_citations: 1, max_request_chars: 400, ..Default::default() };
        let long = parse_apply_request(
            r#"{"agentId":"c","operations":[{"operation":"create_entity","payload":{"name":"Acme Corporation","type":"organization"}}]}"#,
            &limits,
        )
        .unwrap_err();
        assert_eq!(long.kind, GuardKind::PayloadTooLarge);
        assert_eq!(long.message, "operations[0].payload.name: 16 characters, at most 10");
        let quote = parse_apply_request(
            r#"{"agentId":"c","operations":[{"operation":"create_entity","payload":{"name":"Acme","type":"project"},"evidence":[{"source_ref":"turn:t","quote":"Acme Co"}]}]}"#,
            &limits,
        )
        .unwrap_err();
        assert_eq!((quote.kind, quote.index), (GuardKind::PayloadTooLarge, Some(0)));
        let huge = parse_apply_request(&format!(r#"{{"agentId":"{}","operations":[]}}"#, "x".repeat(500)), &limits).unwrap_err();
        assert_eq!((huge.kind, huge.index), (GuardKind::PayloadTooLarge, None));
    }

    #[test]
    fn malformed_requests_are_schema_rejections() {
        for (json, message) in [
            ("not json", "request is not JSON"),
            ("[]", "request: expected an object"),
            (r#"{"operations":[]}"#, "agentId: required"),
            (r#"{"agentId":"","operations":[]}"#, "agentId: must not be empty"),
            (r#"{"agentId":"c","operations":{}}"#, "operations: expected an array"),
            (r#"{"agentId":"c","operations":[3]}"#, "operations[0]: expected an object"),
            (r#"{"agentId":"c","operations":[{"payload":{}}]}"#, "operations[0].operation: required"),
        ] {
            let bad = parse(json).unwrap_err();
            assert_eq!(bad.kind, GuardKind::Schema, "{json}");
            assert!(bad.message.starts_with(message), "{json}: {}", bad.message);
        }
    }

    #[test]
    fn every_operation_reads_with_its_class() {
        let ops = [
            (r#"{"operation":"create_entity","payload":{"name":"Aster","type":"place"}}"#, OpClass::Content),
            (
                r#"{"operation":"add_claim_value","payload":{"entityId":"e","aspectId":"a","claimKey":"k","value":"v","reviewAfter":"2026-08-03T00:00:00Z"}}"#,
                OpClass::Content,
            ),
            (
                r#"{"operation":"supersede_claim_value","payload":{"entityId":"e","aspectId":"a","claimKey":"k","value":"v"}}"#,
                OpClass::Content,
            ),
            (r#"{"operation":"rename_entity","payload":{"entityId":"e","newName":"n"}}"#, OpClass::Content),
            (r#"{"operation":"create_aspect","payload":{"entityId":"e","name":"n"}}"#, OpClass::Content),
            (r#"{"operation":"rename_aspect","payload":{"entityId":"e","aspectId":"a","newName":"n"}}"#, OpClass::Content),
            (r#"{"operation":"create_link","payload":{"fromEntityId":"a","toEntityId":"b","linkType":"related_to"}}"#, OpClass::Content),
            (r#"{"operation":"update_link","payload":{"linkId":"l","linkType":"knows","reason":"r"}}"#, OpClass::Content),
            (r#"{"operation":"create_policy","payload":{"entityId":"e","name":"n","definition":"d"}}"#, OpClass::Content),
            (r#"{"operation":"create_action_type","payload":{"name":"Deploy"}}"#, OpClass::Content),
            (r#"{"operation":"create_interface","payload":{"name":"Storage"}}"#, OpClass::Content),
            (r#"{"operation":"archive_entity","payload":{"target":"e","reason":"r"}}"#, OpClass::Hygiene),
            (r#"{"operation":"archive_aspect","payload":{"target":"a"}}"#, OpClass::Hygiene),
            (r#"{"operation":"archive_claim_value","payload":{"target":"c"}}"#, OpClass::Hygiene),
            (r#"{"operation":"archive_link","payload":{"target":"l"}}"#, OpClass::Hygiene),
            (r#"{"operation":"merge_entities","payload":{"targets":["a","b"],"survivor":"a"}}"#, OpClass::Hygiene),
            (r#"{"operation":"merge_aspects","payload":{"entityId":"e","target":"a","sources":["b"],"newName":"t"}}"#, OpClass::Hygiene),
            (r#"{"operation":"decline_attention","payload":{"attentionId":"x"}}"#, OpClass::Attention),
        ];
        for (json, class) in ops {
            let req = one(json).unwrap_or_else(|e| panic!("{json}: {e}"));
            assert_eq!(req.operations[0].op.kind().class(), class, "{json}");
        }
        assert_eq!(OpKind::ALL.len(), 20);
        assert_eq!(LinkType::ALL.len(), 32);
        assert_eq!(OntoEntityType::ALL.len(), 24);
    }
}
