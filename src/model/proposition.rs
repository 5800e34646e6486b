//! A fact's content read as propositions about its subject, for the rules
//! stand-ins' decisions: whether a later fact restates an earlier one, and
//! whether it shows evidence that the earlier one changed (docs/pipeline.md,
//! "Evidence of change"). memform's own; no model, no config beyond the
//! antonym list.
//!
//! A [`Reading`] is computed once per fact (a few microseconds) and compared
//! many times:
//!
//! - [`Reading::restatement`] is a key: two facts about the same subject
//!   whose keys are equal say the same thing (articles, number words,
//!   "works as X" / "is an X", word order and stance adverbs aside).
//! - [`change`] is the evidence of change between an earlier and a later
//!   fact: the same holder and slot with another value, an explicit ending
//!   of a state, or a polarity flip of the same proposition.

/// The kind of evidence that a later fact replaces an earlier one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The same holder and the same single-valued slot, another value.
    Slot(String),
    /// An explicit ending ("quit", "left", "sold", "no longer", …) of the
    /// state the earlier fact states.
    Ending,
    /// The same holder, predicate family and object, opposite polarity.
    Flip,
}

/// One proposition of a fact: who it is about, what is said, of what.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Prop {
    /// Lower-cased: the fact's subject, or a possessive phrase ("ann's sister").
    holder: String,
    /// The verb's stem with its particle ("work at", "lov", "be").
    pred: String,
    /// The predicate family: "pref" for the preference verbs, else `pred`.
    family: String,
    /// Polarity: false when negated (an odd number of negations) or a
    /// negative preference ("hates").
    positive: bool,
    /// The object's content words, stemmed, sorted and distinct.
    object: Vec<String>,
    /// A single-valued slot and its value's words, when the clause names one.
    slot: Option<(String, Vec<String>)>,
    /// An explicit ending verb ("quit", "left", "sold", …): its object words.
    ends: Option<Vec<String>>,
    /// "no longer" / "not … anymore": a negated state that used to hold.
    no_longer: bool,
    /// A plan ("plans to move to Oslo", "is going to …"): its predicate and
    /// object are the planned action's; a negation of that action ends it.
    plan: bool,
    /// The ending stops an activity ("quit smoking", "stopped running",
    /// "gave up painting"): it ends the habit of that verb too.
    habit: bool,
    /// The ending names an activity by its gerund ("stopped playing
    /// squash"): the gerund's stem; it ends only that activity.
    activity: Option<String>,
    /// The clause states something that holds over time (present tense, a
    /// plan, a perfect, or the start of a state), which an ending can end;
    /// a past event cannot be ended.
    state: bool,
    /// The ending is a loss ("lost her Kindle", "lost his job"): it ends
    /// only a thing had or a post held, never an activity ("lost a chess
    /// match" ends no "plays chess").
    lost: bool,
    /// A job told with its place ("is a barista at a café", "works as a
    /// mechanic at a garage"): the place employs the holder, the value of
    /// the employer slot beside the job.
    employer: Option<Vec<String>>,
}

/// What the rules read in one fact's content.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reading {
    props: Vec<Prop>,
    /// The restatement key: subject, then the normalised words sorted.
    restatement: String,
    /// A fact of one proposition with an object: its holder, family,
    /// polarity, object, slot and ending, as a key.
    proposition: Option<String>,
}

impl Reading {
    /// Reads `content`, a third-person sentence about `subject` (the fact's
    /// subject) with the fact's `predicate` (a key-value fact's key is a
    /// slot). `antonyms` are the config's pairs: the second word of a pair
    /// reads as the negation of the first.
    pub fn of(subject: &str, predicate: &str, content: &str, antonyms: &[[String; 2]]) -> Reading {
        Reading::of_fact(subject, predicate, None, content, antonyms)
    }

    /// [`Reading::of`] for a fact whose predicate is single-valued
    /// (`single_valued_object` = its object, `single_valued_predicates`):
    /// the predicate is a slot of the subject whose value is the object, as
    /// long as the content states it as holding (not a past event).
    pub fn of_fact(subject: &str, predicate: &str, single_valued_object: Option<&str>, content: &str, antonyms: &[[String; 2]]) -> Reading {
        let named = apposition(content);
        let words = tokens(named.as_deref().unwrap_or(content));
        let subject = subject.trim().to_lowercase();
        let mut bag: Vec<String> = normal_words(&words);
        bag.sort();
        let restatement = format!("{subject}|{}", bag.join(" "));
        let mut props = propositions(&subject, &predicate.trim().to_lowercase(), &words, antonyms);
        // "dark mode: enabled", said by the subject: the subject's setting.
        if props.is_empty()
            && let Some((key, value)) = content.split_once(": ")
            && (1..=4).contains(&key.split_whitespace().count())
            && key.chars().all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        {
            let setting = tokens(&format!("{subject}'s {key} is {value}"));
            props = propositions(&subject, &key.trim().to_lowercase(), &setting, antonyms);
        }
        if let Some(object) = single_valued_object
            && let Some(p) = props.iter_mut().find(|p| p.holder == subject && p.slot.is_none())
        {
            let mut value: Vec<String> =
                tokens(object).iter().filter(|w| !FILLER.contains(&w.as_str()) && !is_time(w)).map(|w| stem(w)).collect();
            value.sort();
            value.dedup();
            p.slot = Some((predicate.trim().to_lowercase(), value));
        }
        let proposition = match props.as_slice() {
            [p] if !p.object.is_empty() => Some(format!(
                "{}|{}|{}|{}|{}|{:?}|{:?}|{}",
                p.holder,
                p.plan,
                p.family,
                p.positive,
                p.object.join(" "),
                p.slot,
                p.ends,
                p.no_longer
            )),
            _ => None,
        };
        Reading { props, restatement, proposition }
    }

    /// Reads a text that `speaker` may have said in the first person ("I
    /// quit the band", "my manager is Bruno"): its first-person words stand
    /// for the speaker, then it is read as [`Reading::of`] reads a fact
    /// (predicate unknown).
    pub fn of_speaker(speaker: &str, text: &str, antonyms: &[[String; 2]]) -> Reading {
        Reading::of(speaker, "", &Reading::in_third_person(speaker, text), antonyms)
    }

    /// `text`, said by `speaker`, with its first-person words put in the
    /// third person: what [`Reading::of_speaker`] reads as a statement
    /// about the speaker.
    pub fn in_third_person(speaker: &str, text: &str) -> String {
        let name = speaker.trim();
        let mut out = Vec::new();
        for raw in text.split_whitespace() {
            let core = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '\u{2019}');
            let lower = core.to_lowercase().replace('\u{2019}', "'");
            let with = |w: &str| raw.replacen(core, w, 1);
            out.push(match lower.as_str() {
                // "we" / "our" include the speaker: "we got married" says she did.
                "i" | "me" | "we" | "us" => with(name),
                "my" | "mine" | "our" | "ours" => with(&format!("{name}'s")),
                "i'm" | "we're" => with(&format!("{name} is")),
                "i've" | "we've" => with(&format!("{name} has")),
                "i'll" => with(&format!("{name} will")),
                "i'd" => with(&format!("{name} would")),
                "am" => with("is"),
                _ => raw.to_string(),
            });
        }
        out.join(" ")
    }

    /// The restatement key (equal keys: the same thing said again).
    pub fn restatement(&self) -> &str {
        &self.restatement
    }

    /// The proposition key: a fact of one proposition with an object, its
    /// holder, family, polarity, object, slot and ending ([`Reading::restates`]
    /// compares it beside the restatement key).
    pub fn proposition(&self) -> Option<&str> {
        self.proposition.as_deref()
    }

    /// Keys of this reading as the *earlier* fact of [`change`]: one per
    /// proposition for its holder's slot (when it names one) and one for its
    /// holder, family and object. [`change`] answers only where a key of the
    /// earlier fact equals one of [`Reading::change_probe`] of the later one,
    /// so an index over these finds every earlier fact it can answer for
    /// (a speed aid only: it decides nothing).
    pub fn change_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = Vec::with_capacity(2 * self.props.len());
        for p in &self.props {
            if let Some((slot, _)) = &p.slot {
                keys.push(format!("s\u{1f}{}\u{1f}{}", p.holder, slot_key(slot)));
            }
            // A partner in a slot is its holder's couple ([`couple_change`]).
            if let Some(h) = partner_holder(p) {
                keys.push(format!("s\u{1f}{h}\u{1f}relationship"));
            }
            keys.push(format!("f\u{1f}{}\u{1f}{}\u{1f}{}", p.holder, p.family, p.object.join("\u{1e}")));
        }
        keys
    }

    /// Keys of this reading as the *later* fact of [`change`] (see
    /// [`Reading::change_keys`]); `None` when some proposition is an ending
    /// or negative, for which any earlier fact with the same holder may
    /// show a change.
    pub fn change_probe(&self) -> Option<Vec<String>> {
        if self.props.iter().any(|p| p.ends.is_some() || !p.positive) {
            return None;
        }
        Some(self.change_keys())
    }

    /// Whether this fact restates `other`: equal restatement keys, or one
    /// proposition each with the same holder, predicate family, polarity,
    /// non-empty object and slot value.
    pub fn restates(&self, other: &Reading) -> bool {
        self.restatement == other.restatement || (self.proposition.is_some() && self.proposition == other.proposition)
    }
}

/// The evidence that `later` replaces `earlier` (both facts' readings), if
/// any; `None` means both can stand.
pub fn change(earlier: &Reading, later: &Reading) -> Option<Change> {
    for b in &later.props {
        for a in &earlier.props {
            if let Some(c) = couple_change(a, b) {
                return Some(c);
            }
            if a.holder != b.holder {
                continue;
            }
            // The same slot with another value.
            if let (Some(x @ (sa, va)), Some(y @ (_, vb))) = (&a.slot, &b.slot)
                && same_slot(x, y)
                && a.state
                && b.state
                && (a.positive || b.positive)
                && !va.is_empty()
                && !vb.is_empty()
                && values_differ(sa, va, vb)
            {
                return Some(Change::Slot(sa.clone()));
            }
            // The employer beside a job told with its place ("is a barista at
            // a café" / "works at the bank").
            let employer = |p: &Prop| match &p.slot {
                Some((n, v)) if n == "employer" => Some(v.clone()),
                _ => p.employer.clone(),
            };
            if let (Some(ea), Some(eb)) = (employer(a), employer(b))
                && a.state
                && b.state
                && a.positive
                && b.positive
                && !subset(&ea, &eb)
                && !subset(&eb, &ea)
            {
                return Some(Change::Slot("employer".into()));
            }
            // An explicit ending of a state the earlier fact states.
            if let Some(ended) = &b.ends
                && a.state
                && a.positive
                && a.ends.is_none()
                && !ended.is_empty()
                // Skipping misses one occurrence: it ends a plan, never a habit.
                && (a.plan || !matches!(b.pred.as_str(), "skip" | "skipp"))
                // Cancelling or missing a day a habit recurs on ends that
                // day's occurrence, not the habit ("goes to yoga on Tuesdays"
                // / "cancelled yoga this Tuesday").
                && (a.plan
                    || !(matches!(b.pred.as_str(), "cancel" | "cancell" | "miss" | "call off")
                        && ended.iter().any(|w| is_day(w) && a.object.contains(w))))
                // A loss ends a thing had or a post held, not an activity.
                && (!b.lost || a.family == "hav" || works(a) || a.slot.as_ref().is_some_and(|(n, _)| n.starts_with("own ")))
                && match &b.activity {
                    Some(gerund) => ends_activity(a, gerund, ended),
                    None => {
                        ends_state(a, ended)
                            || (b.habit && ends_habit(a, ended))
                            || (works(a) && !self_employed(a) && own_post(ended))
                            || (break_up(b) && partnered(a) && own_partner(ended))
                            // A partner's death, or an ending of the couple
                            // named by its noun ("called off her engagement"),
                            // ends the couple too.
                            || (partnered(a) && ((bereaved(b) && own_partner(ended)) || couple_noun(ended)))
                    }
                }
            {
                return Some(Change::Ending);
            }
            // "no longer" / "not … anymore": the same predicate, one object
            // within the other (a plan's time words say when, not what).
            let timeless = |p: &Prop| p.object.iter().filter(|w| !is_time(w)).cloned().collect::<Vec<String>>();
            let (oa, ob) = (timeless(a), timeless(b));
            if (b.no_longer || a.plan)
                && !b.positive
                && a.positive
                && a.ends.is_none()
                && (a.family == b.family
                    || (b.no_longer && same_verb(a, b) && !ob.is_empty() && subset(&ob, &oa))
                    // "is going to run a race" (read with its copula): the
                    // planned verb is a word of the plan.
                    || (a.plan && a.pred == "be" && a.object.contains(&b.pred) && !ob.is_empty() && subset(&ob, &oa)))
                && (subset(&ob, &oa) || subset(&oa, &ob))
                && (!ob.is_empty() || oa.is_empty())
            {
                return Some(Change::Ending);
            }
            // "is no longer in the choir", "no longer a member of the club":
            // out of the group a state is in.
            if b.no_longer
                && !b.positive
                && b.pred == "be"
                && b.slot.is_none()
                && a.positive
                && a.state
                && a.ends.is_none()
                && a.pred != "be"
                && let member = b.object.iter().filter(|w| !matches!(w.as_str(), "member" | "part")).cloned().collect::<Vec<_>>()
                && !member.is_empty()
                && subset(&member, &a.object)
            {
                return Some(Change::Ending);
            }
            // A polarity flip of the same proposition.
            if a.family == b.family
                && a.positive != b.positive
                && a.object == b.object
                && a.ends.is_none()
                && b.ends.is_none()
                && (a.slot.is_none() || a.slot == b.slot || b.slot.is_none())
            {
                return Some(Change::Flip);
            }
        }
    }
    None
}

/// The holder whose partner a proposition's holder is, when it names a
/// partner in a slot ("sam's girlfriend" of "Sam's girlfriend is Ada": sam).
fn partner_holder(p: &Prop) -> Option<&str> {
    let (n, _) = p.slot.as_ref().filter(|(n, _)| PARTNERS.contains(&n.as_str()))?;
    p.holder.strip_suffix(n.as_str())?.strip_suffix("'s ")
}

/// Whether a state says the holder is in no couple.
fn uncoupled(p: &Prop) -> bool {
    p.slot.as_ref().is_some_and(|(n, v)| {
        n == "relationship" && v.iter().any(|w| matches!(w.as_str(), "singl" | "single" | "divorc" | "separat" | "widow" | "widowed"))
    })
}

/// A partner named in a slot is the holder's couple: "Sam's girlfriend is
/// Ada" ends with "Sam is single" or "Sam broke up with Ada" (or "with his
/// girlfriend"), and "Sam is single" with "Sam's girlfriend is Mia".
fn couple_change(a: &Prop, b: &Prop) -> Option<Change> {
    if !(a.state && a.positive) {
        return None;
    }
    if let Some(h) = partner_holder(a)
        && h == b.holder
    {
        if b.state && b.positive && uncoupled(b) {
            return Some(Change::Slot("relationship".into()));
        }
        if let Some(ended) = &b.ends
            && break_up(b)
            && let Some((_, partner)) = &a.slot
            && (ended.iter().any(|w| partner.contains(w)) || own_partner(ended))
        {
            return Some(Change::Ending);
        }
    }
    if let Some(h) = partner_holder(b)
        && h == a.holder
        && uncoupled(a)
        && b.state
        && b.positive
    {
        return Some(Change::Slot("relationship".into()));
    }
    // A partner named in a slot and a couple with someone else named
    // ("Sam's girlfriend is Ada" / "Sam is dating Mia"), either way round.
    let named_other = |slotted: &Prop, coupled: &Prop| {
        let (Some((_, partner)), Some((n, v))) = (&slotted.slot, &coupled.slot) else { return false };
        let mut names = v.iter().filter(|w| !couple_word(w)).peekable();
        partner_holder(slotted) == Some(coupled.holder.as_str())
            && coupled.state
            && coupled.positive
            && n == "relationship"
            && !partner.is_empty()
            && names.peek().is_some()
            && names.all(|w| !partner.contains(w))
    };
    if b.state && b.positive && (named_other(a, b) || named_other(b, a)) {
        return Some(Change::Slot("relationship".into()));
    }
    None
}

/// A word of a couple's status rather than of who is in it ("dat", "marry").
fn couple_word(w: &str) -> bool {
    matches!(w, "dat" | "marry" | "marri" | "married" | "engag" | "engaged" | "see" | "seeing" | "together" | "wed")
        || STATUSES.iter().any(|s| *s == w || stem(s) == w)
}

/// Whether two values of the slot `name` differ: neither's words contain
/// the other's, or (a job or a role in a group) they differ only by a rank
/// ("captain" / "vice-captain", "manager" / "assistant manager").
fn values_differ(name: &str, a: &[String], b: &[String]) -> bool {
    // Dating, seeing someone and being together are one status.
    if name == "relationship" {
        let couple = |v: &[String]| -> Vec<String> {
            let mut v: Vec<String> =
                v.iter().map(|w| if matches!(w.as_str(), "together" | "seeing" | "see") { "dat".to_string() } else { w.clone() }).collect();
            v.sort();
            v.dedup();
            v
        };
        let (ca, cb) = (couple(a), couple(b));
        if (ca.as_slice(), cb.as_slice()) != (a, b) {
            return values_differ("relationship status", &ca, &cb);
        }
    }
    if !subset(a, b) && !subset(b, a) {
        return true;
    }
    let ranked = name == "job" || name.starts_with("role in");
    let mut diff = a.iter().filter(|w| !b.contains(w)).chain(b.iter().filter(|w| !a.contains(w))).peekable();
    ranked && diff.peek().is_some() && diff.all(|w| RANKS.iter().any(|r| stem(r) == *w))
}

/// A post held at work ("got a position at the museum").
const WORK_POSTS: &[&str] = &["job", "position", "post", "role", "placement", "internship", "career"];

/// Words of rank in a job or a role: one more or one fewer is
/// another position.
const RANKS: &[&str] = &[
    "vice",
    "deputy",
    "assistant",
    "acting",
    "junior",
    "senior",
    "associate",
    "chief",
    "head",
    "co",
    "trainee",
    "sub",
    "principal",
    "lead",
];

/// Whether a state holds a job or an employer.
fn works(a: &Prop) -> bool {
    a.employer.is_some() || a.slot.as_ref().is_some_and(|(n, _)| n == "job" || n == "employer")
}

/// Whether a job is one's own business ("runs her own bakery", "owns a
/// shop", "is a dancer who runs his own studio"): no post one loses or
/// quits without naming it.
fn self_employed(a: &Prop) -> bool {
    a.family == "hav" || a.pred.starts_with("run") || a.object.iter().any(|w| w == "own")
}

/// Whether an ending names only the holder's own post ("quit her job",
/// "left his position"), no place: it ends whatever job the holder has.
fn own_post(ended: &[String]) -> bool {
    let own = ended.iter().filter(|w| !w.ends_with('\''));
    own.clone().count() > 0 && own.into_iter().all(|w| matches!(w.as_str(), "job" | "position" | "post" | "role" | "career"))
}

/// Whether an ending is a break-up or a divorce.
fn break_up(b: &Prop) -> bool {
    matches!(b.pred.as_str(), "break up with" | "split up with" | "split from" | "separat from" | "break up" | "split up")
        || b.pred.starts_with("divorc")
}

/// Whether an ending is a death ("her husband died", "passed away").
fn bereaved(b: &Prop) -> bool {
    matches!(b.pred.as_str(), "died" | "die" | "di" | "pass away" | "passed away")
}

/// Whether an ending names the holder's couple by its noun only ("her
/// engagement", "their marriage", "the relationship").
fn couple_noun(ended: &[String]) -> bool {
    let own = ended.iter().filter(|w| !w.ends_with('\''));
    own.clone().count() > 0
        && own.into_iter().all(|w| matches!(w.as_str(), "engagement" | "marriage" | "relationship" | "engag" | "marriag"))
}

/// Whether a state is being in a couple (not single, divorced, separated
/// or widowed).
fn partnered(a: &Prop) -> bool {
    a.slot.as_ref().is_some_and(|(n, v)| {
        n == "relationship" && !v.iter().any(|w| matches!(w.as_str(), "singl" | "single" | "divorc" | "separat" | "widow" | "widowed"))
    })
}

/// Whether a break-up names the holder's partner only by the noun ("broke
/// up with her boyfriend"): it ends whatever couple the holder is in.
fn own_partner(ended: &[String]) -> bool {
    let own = ended.iter().filter(|w| !w.ends_with('\''));
    own.clone().count() > 0 && own.into_iter().all(|w| PARTNERS.iter().any(|p| stem(p) == *w))
}

/// Whether an ending of an activity (`ended`: its verb and object words)
/// ends the habit `a` states: the same verb, and no object word that `a`
/// lacks ("retired from running" ends "runs marathons", "stopped being
/// vegan" ends "is vegan"; "stopped playing football" does not end "plays
/// tennis").
fn ends_habit(a: &Prop, ended: &[String]) -> bool {
    let verb = a.pred.split(' ').next().unwrap_or("");
    ended.iter().any(|w| w == verb)
        && ended.iter().filter(|w| *w != verb).all(|w| a.object.binary_search_by(|o| o.as_str().cmp(w.trim_start_matches('@'))).is_ok())
}

/// Whether an ending that names an activity by its gerund (`gerund`, its
/// stem; `ended`: the gerund and the activity's other words) ends the state
/// `a`: the activity is the state's (its verb, or a word of its object:
/// "goes running"), and every other word of the activity is in the state's
/// object, places included ("stopped playing squash" ends "plays squash
/// with Ann", not "plays tennis" nor "watches squash on TV").
fn ends_activity(a: &Prop, gerund: &str, ended: &[String]) -> bool {
    let verb = a.pred.split(' ').next().unwrap_or("");
    let in_a = |w: &str| a.object.binary_search_by(|o| o.as_str().cmp(w)).is_ok();
    (verb == gerund || in_a(gerund)) && ended.iter().map(|w| w.trim_start_matches('@')).filter(|w| *w != gerund).all(in_a)
}

/// Whether two slots are one: the same name, a favourite named more or
/// less closely ("favourite show" / "favourite TV show": the same head
/// noun, the words of one within the other's), or a job or an employer
/// against not working at all ("is unemployed" / "works at a supermarket").
fn same_slot(a: &(String, Vec<String>), b: &(String, Vec<String>)) -> bool {
    let idle = |(n, v): &(String, Vec<String>)| n == "job" && v.len() == 1 && NOT_WORKING.contains(&v[0].as_str());
    let work = |(n, _): &(String, Vec<String>)| n == "job" || n == "employer";
    let favourite = || {
        let (x, y): (Vec<&str>, Vec<&str>) = (a.0.split(' ').collect(), b.0.split(' ').collect());
        x.first() == Some(&"favourite")
            && y.first() == Some(&"favourite")
            && x.last() == y.last()
            && (x.iter().all(|w| y.contains(w)) || y.iter().all(|w| x.contains(w)))
    };
    a.0 == b.0 || (idle(a) && work(b)) || (idle(b) && work(a)) || favourite()
}

/// The key a slot is indexed by ([`Reading::change_keys`]): slots that
/// [`same_slot`] may call one share it (a favourite by its head noun, an
/// employer with a job).
fn slot_key(name: &str) -> String {
    match name {
        "employer" => "job".to_string(),
        n if n.starts_with("favourite ") => format!("favourite {}", n.rsplit(' ').next().unwrap_or("")),
        n => n.to_string(),
    }
}

/// Whether two states have the same verb whatever its particle: "no
/// longer" ends a state of the same verb whose object holds what is no
/// longer done ("plays in a five-a-side league" / "doesn't play
/// five-a-side anymore"); a plan keeps its particle ("travel in spring" /
/// "not travel to Peru" are two plans).
fn same_verb(a: &Prop, b: &Prop) -> bool {
    let verb = |p: &Prop| p.pred.split(' ').next().unwrap_or("").to_string();
    a.family != "pref" && b.family != "pref" && verb(a) == verb(b)
}

/// Whether every word of `a` is in `b` (both sorted).
fn subset(a: &[String], b: &[String]) -> bool {
    a.iter().all(|w| b.binary_search(w).is_ok())
}

// ---------------------------------------------------------------------------
// Words

/// Lower-cased words (letters, digits, `'`), contractions expanded ("doesn't"
/// → "does not"), hyphens and other punctuation as separators.
fn tokens(text: &str) -> Vec<String> {
    let lower = text.to_lowercase().replace(['\u{2019}', '\u{2018}'], "'");
    let mut out = Vec::new();
    for raw in lower.split(|c: char| !(c.is_alphanumeric() || c == '\'')) {
        let w = raw.trim_matches('\'');
        if w.is_empty() {
            continue;
        }
        if let Some(stem) = w.strip_suffix("n't") {
            let verb = match stem {
                "ca" => "can",
                "wo" => "will",
                "sha" => "shall",
                s => s,
            };
            out.push(verb.to_string());
            out.push("not".to_string());
            continue;
        }
        match w {
            "cannot" => {
                out.push("can".into());
                out.push("not".into());
            }
            "it's" | "she's" | "he's" | "that's" => {
                out.push(w.trim_end_matches("'s").to_string());
                out.push("is".into());
            }
            "favorite" => out.push("favourite".into()),
            "favorites" => out.push("favourites".into()),
            "color" => out.push("colour".into()),
            "gray" => out.push("grey".into()),
            "colors" => out.push("colours".into()),
            _ => out.push(w.to_string()),
        }
    }
    idioms(contractions(numbers(out)))
}

/// Idioms read as the plain words they say, so the one principle that
/// reads the plain words reads them too (docs/pipeline.md, "Fifth round"):
/// being employed by a place is working for it; being hired is starting
/// to work; being laid off, fired or made redundant is losing one's job;
/// "called it quits" is breaking up and "parted ways" splitting up;
/// putting a thing on hold is postponing it; changing one's mind about it
/// is deciding against it; "gone off", "lost interest in" and "fell out of
/// love with" are coming to dislike, "warmed to" and "came round to"
/// coming to like; being done or through with a thing is quitting it;
/// "has become <someone>'s" is "is <someone>'s".
fn idioms(words: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(words.len() + 2);
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let at = |k: usize| words.get(i + k).map(String::as_str);
        let perfect = |out: &[String]| out.last().is_some_and(|h| HAVE.contains(&h.as_str()));
        // A copula (or "got") before a passive: dropped with a "has" before
        // "been", whose perfect the new verb keeps.
        let passive = |out: &mut Vec<String>| {
            if out.last().is_some_and(|b| BE.contains(&b.as_str()) || matches!(b.as_str(), "got" | "get" | "gets" | "getting")) {
                let been = out.pop().is_some_and(|b| b == "been");
                been && perfect(out)
            } else {
                perfect(out)
            }
        };
        // Being employed by / at a place: working for / at it.
        if w == "employed" && matches!(at(1), Some("by" | "at" | "with" | "for")) && out.last().is_some_and(|b| BE.contains(&b.as_str())) {
            let was = out.last().is_some_and(|b| matches!(b.as_str(), "was" | "were"));
            let perf = passive(&mut out);
            out.push(if perf || was { "worked" } else { "works" }.into());
            out.push(if at(1) == Some("by") { "for".into() } else { words[i + 1].clone() });
            i += 2;
            continue;
        }
        // Being hired (as / at / by): starting to work (as / at / for).
        let hired = match (w, at(1)) {
            ("hired" | "recruited", Some("as" | "at" | "by")) => 1,
            ("taken", Some("on")) if matches!(at(2), Some("as" | "at" | "by")) => 2,
            _ => 0,
        };
        if hired > 0 && out.last().is_some_and(|b| BE.contains(&b.as_str()) || b == "got") {
            passive(&mut out);
            let particle = words[i + hired].as_str();
            out.extend(["started".to_string(), "working".to_string(), if particle == "by" { "for" } else { particle }.to_string()]);
            i += hired + 1;
            continue;
        }
        // Being laid off, let go, fired, sacked, dismissed or made redundant
        // (from a place): losing one's job (at it).
        let dismissed = match (w, at(1)) {
            ("laid", Some("off")) | ("let", Some("go")) | ("made", Some("redundant")) => 2,
            ("fired" | "sacked" | "dismissed", _) => 1,
            _ => 0,
        };
        if dismissed > 0 && out.last().is_some_and(|b| BE.contains(&b.as_str()) || matches!(b.as_str(), "got" | "get")) {
            let from = matches!(at(dismissed), Some("from" | "at" | "by"));
            passive(&mut out);
            out.extend(["lost".to_string(), "job".to_string()]);
            if from {
                out.push("at".into());
            }
            i += dismissed + usize::from(from);
            continue;
        }
        // "called it quits": broke up; "parted ways": split up.
        if matches!(w, "call" | "calls" | "called" | "calling") && at(1) == Some("it") && at(2) == Some("quits") {
            let broken = if perfect(&out) { "broken" } else { "broke" };
            out.extend([broken.to_string(), "up".to_string()]);
            i += 3;
            continue;
        }
        if matches!(w, "part" | "parts" | "parted" | "parting") && at(1) == Some("ways") {
            out.extend(["split".to_string(), "up".to_string()]);
            i += 2;
            continue;
        }
        // "put X on hold": postponed X.
        if matches!(w, "put" | "puts" | "putting")
            && let Some(j) =
                (i + 1..words.len().min(i + 9)).find(|&j| words[j] == "on" && words.get(j + 1).is_some_and(|h| h == "hold" || h == "ice"))
        {
            out.push("postponed".into());
            out.extend(words[i + 1..j].iter().cloned());
            i = j + 2;
            continue;
        }
        // "changed her mind about X": decided against X.
        if matches!(w, "change" | "changed" | "changes" | "changing") && at(2) == Some("mind") && matches!(at(3), Some("about" | "on")) {
            out.extend(["decided".to_string(), "against".to_string()]);
            i += 4;
            continue;
        }
        // Coming to dislike or to like a thing.
        let turned = match (w, at(1), at(2), at(3)) {
            ("gone" | "went" | "goes" | "go", Some("off"), Some(n), _) if !PARTICLES.contains(&n) => Some((2, false)),
            ("lost" | "loses" | "losing", Some("interest"), Some("in"), _) => Some((3, false)),
            ("fell" | "fallen" | "falls", Some("out"), Some("of"), Some("love")) if at(4) == Some("with") => Some((5, false)),
            ("warmed" | "warms", Some("to"), _, _) => Some((2, true)),
            ("warmed" | "warms", Some("up"), Some("to"), _) => Some((3, true)),
            ("come" | "came" | "comes", Some("round" | "around"), Some("to"), _) => Some((3, true)),
            _ => None,
        };
        if let Some((len, like)) = turned {
            let come = if perfect(&out) { "come" } else { "came" };
            out.extend([come.to_string(), "to".to_string(), if like { "like" } else { "dislike" }.to_string()]);
            i += len;
            continue;
        }
        // Done or through with a thing: quit it.
        if matches!(w, "done" | "through" | "finished")
            && at(1) == Some("with")
            && out.last().is_some_and(|b| matches!(b.as_str(), "is" | "are" | "was" | "am"))
        {
            out.pop();
            out.push("quit".into());
            i += 2;
            continue;
        }
        // Sixth round. Handing in one's notice is quitting one's job;
        // dumping a partner is breaking up with them; remarrying is getting
        // married; hitting or reaching an age is turning it; falling in love
        // with a thing is coming to love it; taking over as a role is
        // becoming it; seeing someone is dating them.
        if matches!(w, "handed" | "hands" | "hand" | "handing")
            && at(1) == Some("in")
            && (at(2) == Some("notice") || at(3) == Some("notice"))
        {
            let quit = at(2) != Some("notice");
            out.push("quit".into());
            if quit {
                out.push(words[i + 2].clone());
            }
            out.push("job".into());
            i += if quit { 4 } else { 3 };
            continue;
        }
        let partner = |k: usize| at(k).is_some_and(|n| PARTNERS.contains(&n));
        if matches!(w, "dumped" | "dumps" | "dump" | "ditched")
            && (partner(1) || (matches!(at(1), Some("her" | "his" | "their" | "my")) && partner(2)))
        {
            let broke = if perfect(&out) { "broken" } else { "broke" };
            out.extend([broke.to_string(), "up".to_string(), "with".to_string()]);
            i += 1;
            continue;
        }
        if matches!(w, "remarried" | "remarries" | "remarry") {
            out.extend(["got".to_string(), "married".to_string()]);
            i += 1;
            continue;
        }
        if matches!(w, "hit" | "hits" | "reached" | "reaches")
            && at(1).is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
            && at(2).is_none_or(|n| matches!(n, "in" | "on" | "last" | "this" | "years" | "today" | "yesterday" | "and"))
        {
            out.push("turned".into());
            i += 1;
            continue;
        }
        if matches!(w, "fell" | "fallen" | "falls") && at(1) == Some("in") && at(2) == Some("love") && at(3) == Some("with") {
            let come = if perfect(&out) { "come" } else { "came" };
            out.extend([come.to_string(), "to".to_string(), "love".to_string()]);
            i += 4;
            continue;
        }
        if matches!(w, "took" | "taken" | "takes" | "taking") && at(1) == Some("over") && at(2) == Some("as") {
            if perfect(&out) {
                out.pop();
            }
            out.extend(["was".to_string(), "made".to_string()]);
            i += 3;
            continue;
        }
        if w == "seeing" && at(1) == Some("someone") {
            out.push("dating".into());
            i += 1;
            continue;
        }
        // "are no longer together", "aren't together": split up.
        if w == "together" && !matches!(at(1), Some("with")) {
            let n = out.len();
            let negated = if n >= 3 && out[n - 2] == "no" && out[n - 1] == "longer" {
                2
            } else if n >= 2 && out[n - 1] == "not" {
                1
            } else {
                0
            };
            if negated > 0 && out.get(n - negated - 1).is_some_and(|b| BE.contains(&b.as_str())) {
                out.truncate(n - negated - 1);
                out.extend(["split".to_string(), "up".to_string()]);
                i += 1;
                continue;
            }
        }
        // "works nights at the warehouse": works at it (the time says when).
        if matches!(w, "works" | "work" | "worked" | "working")
            && matches!(at(1), Some("nights" | "days" | "evenings" | "mornings" | "weekends"))
            && matches!(at(2), Some("at" | "for" | "in"))
        {
            out.push(words[i].clone());
            i += 2;
            continue;
        }
        // "X has replaced Y as Sam's favourite Z": X is Sam's favourite Z.
        if matches!(w, "replaced" | "replaces")
            && let Some(k) =
                (i + 2..words.len().min(i + 8)).find(|&k| words[k] == "as" && words.get(k + 1).is_some_and(|n| n.ends_with("'s")))
        {
            if perfect(&out) {
                out.pop();
            }
            out.push("is".into());
            i = k + 1;
            continue;
        }
        // "instead of moving to Australia": and decided against moving there.
        if w == "instead" && at(1) == Some("of") && at(2).is_some_and(|n| n.ends_with("ing")) {
            out.extend(["and".to_string(), "decided".to_string(), "against".to_string()]);
            i += 2;
            continue;
        }
        // Switching or upgrading to a thing is having it ("switched to an iPhone").
        if matches!(w, "switched" | "switches" | "switch" | "upgraded" | "upgrades" | "upgrade")
            && at(1) == Some("to")
            && matches!(at(2), Some("a" | "an"))
        {
            if perfect(&out) {
                out.pop();
            }
            out.push("has".into());
            i += 2;
            continue;
        }
        // "moved abroad to Lyon" moved to Lyon; "all-time favourite" is
        // favourite; "as of this week" is since this week.
        if matches!(w, "abroad" | "overseas" | "inland" | "north" | "south" | "east" | "west" | "upstate" | "downstate")
            && at(1) == Some("to")
        {
            i += 1;
            continue;
        }
        if w == "all" && at(1) == Some("time") && at(2) == Some("favourite") {
            i += 2;
            continue;
        }
        if w == "as" && at(1) == Some("of") && at(2).is_some_and(|n| is_time(n) || matches!(n, "this" | "last" | "now" | "today")) {
            out.push("since".into());
            i += 2;
            continue;
        }
        // "a big cricket fan" is "a big fan of cricket".
        if matches!(w, "fan" | "fans")
            && at(1).is_none_or(|n| n != "of")
            && out.len() >= 2
            && out[out.len() - 2..].iter().any(|b| FAN_SIZES.contains(&b.as_str()))
            && out.last().is_some_and(|b| !FAN_SIZES.contains(&b.as_str()) && b != "the")
        {
            let what = out.pop().unwrap_or_default();
            out.extend([w.to_string(), "of".to_string(), what]);
            i += 1;
            continue;
        }
        // Seventh round. Finding work is getting a job; making or earning a
        // living as something is working as it; retiring (then, or with no
        // more said) is being retired; breaking it off is breaking up;
        // tying the knot is getting married; going out with someone is
        // dating them; a status that has been held is held ("has been
        // dating"); cutting a thing out is giving it up; giving a thing
        // away is giving away it; one's go-to or top thing is one's
        // favourite; a non-smoker does not smoke; a theft told with the
        // thief first is the thing stolen.
        if matches!(w, "found" | "finds" | "find" | "finding") && at(1) == Some("work") && matches!(at(2), Some("at" | "as" | "with")) {
            out.extend([w.to_string(), "job".to_string()]);
            i += 2;
            continue;
        }
        if matches!(w, "makes" | "make" | "made" | "making" | "earns" | "earn" | "earned" | "earning")
            && at(1) == Some("a")
            && at(2) == Some("living")
            && at(3) == Some("as")
        {
            let past = matches!(w, "made" | "earned") && !perfect(&out);
            if perfect(&out) {
                out.pop();
            }
            out.extend([if past { "worked" } else { "works" }.to_string(), "as".to_string()]);
            i += 4;
            continue;
        }
        if w == "retired"
            && out.last().is_some_and(|b| !BE.contains(&b.as_str()) && !matches!(b.as_str(), "got" | "get"))
            && at(1).is_none_or(|n| TIME_LEAD.contains(&n) || is_time(n) || matches!(n, "and" | "early"))
        {
            if perfect(&out) {
                out.pop();
            }
            out.extend(["is".to_string(), "retired".to_string()]);
            i += 1;
            continue;
        }
        if matches!(w, "broke" | "broken" | "breaks" | "break" | "breaking") && at(1) == Some("it") && at(2) == Some("off") {
            out.extend([w.to_string(), "up".to_string()]);
            i += 3;
            continue;
        }
        if matches!(w, "tied" | "tie" | "ties" | "tying") && at(1) == Some("the") && at(2) == Some("knot") {
            out.extend(["got".to_string(), "married".to_string()]);
            i += 3;
            continue;
        }
        if w == "going"
            && at(1) == Some("out")
            && at(2) == Some("with")
            && out.iter().rev().take(3).any(|b| BE.contains(&b.as_str()))
            && at(3).is_some_and(|n| !matches!(n, "friends" | "colleagues" | "family" | "the" | "her" | "his" | "their" | "my"))
        {
            out.push("dating".into());
            i += 3;
            continue;
        }
        if w == "been" && perfect(&out) && at(1).is_some_and(|n| STATUSES.contains(&n)) {
            out.pop();
            out.push(if out.last().is_some_and(|h| matches!(h.as_str(), "i")) { "am" } else { "is" }.into());
            i += 1;
            continue;
        }
        if matches!(w, "cut" | "cuts" | "cutting") && at(1) == Some("out") && at(2).is_some_and(|n| !matches!(n, "of" | "to" | "for")) {
            out.extend([if perfect(&out) { "given" } else { "gave" }.to_string(), "up".to_string()]);
            i += 2;
            continue;
        }
        if matches!(w, "gave" | "given" | "gives" | "give" | "giving")
            && let Some(k) = (i + 2..words.len().min(i + 6)).find(|&k| words[k] == "away")
            && words[i + 1..k].iter().all(|n| !matches!(n.as_str(), "to" | "and" | "but" | "away"))
        {
            out.extend([w.to_string(), "away".to_string()]);
            out.extend(words[i + 1..k].iter().cloned());
            i = k + 1;
            continue;
        }
        if (w == "top" || (w == "go" && at(1) == Some("to")))
            && out.last().is_some_and(|b| possessive(b))
            && at(usize::from(w == "go") + 1).is_some()
        {
            out.push("favourite".into());
            i += 1 + usize::from(w == "go");
            continue;
        }
        if w == "non"
            && let Some(doer) = at(1).and_then(|n| n.strip_suffix("er")).filter(|d| d.len() >= 3)
            && out.last().is_some_and(|b| matches!(b.as_str(), "a" | "an") || BE.contains(&b.as_str()))
        {
            if out.last().is_some_and(|b| matches!(b.as_str(), "a" | "an")) {
                out.pop();
            }
            if out.last().is_some_and(|b| BE.contains(&b.as_str())) {
                let be = out.pop().unwrap_or_default();
                out.push(if be == "am" || out.last().is_some_and(|h| h == "i") { "do" } else { "does" }.into());
            }
            out.extend(["not".to_string(), doer.to_string()]);
            i += 2;
            continue;
        }
        if matches!(w, "stole" | "nicked" | "robbed")
            && matches!(out.as_slice(), [a] if matches!(a.as_str(), "someone" | "somebody" | "thieves" | "burglars"))
            && at(1).is_some_and(possessive)
            && at(2).is_some()
        {
            out.clear();
            let end = (i + 2..words.len()).find(|&k| TIME_LEAD.contains(&words[k].as_str()) || words[k] == "and").unwrap_or(words.len());
            out.extend(words[i + 1..end].iter().cloned());
            out.extend(["was".to_string(), "stolen".to_string()]);
            i = end;
            continue;
        }
        // "has become Ann's favourite": is Ann's favourite.
        if matches!(w, "become" | "became" | "becomes") && at(1).is_some_and(|n| n.ends_with("'s") && n.len() > 2) {
            if w == "become" && perfect(&out) {
                out.pop();
            }
            out.push("is".into());
            i += 1;
            continue;
        }
        out.push(words[i].clone());
        i += 1;
    }
    out
}

/// The article and size words before "fan" in "a big cricket fan".
const FAN_SIZES: &[&str] = &["a", "an", "big", "huge", "massive", "great", "keen", "avid", "lifelong"];

/// A possessive word: a name's ("sam's") or a pronoun's ("his", "my").
fn possessive(w: &str) -> bool {
    (w.ends_with("'s") && w.len() > 2) || matches!(w, "my" | "his" | "her" | "their" | "our" | "your")
}

/// Irregular past participles ("has given up", "has left the band").
const PARTICIPLES: &[&str] = &[
    "given", "gone", "got", "gotten", "taken", "made", "left", "sold", "quit", "become", "come", "begun", "broken", "chosen", "done",
    "driven", "eaten", "fallen", "found", "grown", "heard", "held", "kept", "known", "lost", "met", "paid", "put", "run", "said", "seen",
    "sent", "set", "spent", "stood", "stolen", "taught", "thought", "told", "won", "written", "bought", "brought", "built", "caught",
    "felt", "had", "been", "moved",
];

/// A past participle: a regular "-ed" form or an irregular one.
fn is_participle(w: &str) -> bool {
    (w.ends_with("ed") && w.len() > 3) || PARTICIPLES.contains(&w)
}

/// Participles that are adjectives after a copula ("is married", "is
/// retired"): "Sam's married" is "Sam is married".
fn adjectival(w: &str) -> bool {
    STATUSES.contains(&w) || matches!(w, "retired" | "unemployed" | "employed" | "based" | "interested" | "excited" | "tired" | "bored")
}

/// "'s" after a name is "is" or "has" when what follows cannot be a
/// possessed noun phrase ("Sam's a nurse", "Sam's moved to Leeds", "Sam's
/// living in Bath", "Sam's 30"), and "has got" before what one has is
/// "has" ("has got two cats"); "Sam's sister", "Sam's hiking boots are
/// worn" stay possessives.
fn contractions(words: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(words.len() + 2);
    for (i, w) in words.iter().enumerate() {
        if let Some(name) = w.strip_suffix("'s").filter(|n| !n.is_empty())
            && let Some(verb) = contracted_verb(&words[i + 1..])
        {
            out.push(name.to_string());
            out.push(verb.to_string());
            continue;
        }
        let owned = || {
            words
                .get(i + 1)
                .is_some_and(|n| matches!(n.as_str(), "a" | "an" | "no" | "some" | "lots" | "two") || n.chars().all(|c| c.is_ascii_digit()))
        };
        if w == "got" && out.last().is_some_and(|h| matches!(h.as_str(), "has" | "have")) && owned() {
            continue;
        }
        out.push(w.clone());
    }
    out
}

/// The verb a "'s" stands for before `after`, or `None` for a possessive.
fn contracted_verb(after: &[String]) -> Option<&'static str> {
    let w = after.first()?.as_str();
    let next = after.get(1).map(String::as_str);
    let has_or_is = |x: Option<&String>| match x {
        Some(x) if is_participle(x) && !adjectival(x) => "has",
        _ => "is",
    };
    // A determiner, a negation or a stance word never opens a possessed
    // noun phrase: the next other word tells "has" from "is".
    if matches!(w, "a" | "an" | "the" | "not" | "never") || STANCE.contains(&w) {
        return Some(has_or_is(after.iter().find(|x| !matches!(x.as_str(), "not" | "never") && !STANCE.contains(&x.as_str()))));
    }
    if matches!(w, "been" | "got" | "gotten") {
        return Some("has");
    }
    // A place or a state after a preposition ("Sam's in Paris", "Sam's
    // into climbing"; not "Sam's in-laws").
    if matches!(w, "in" | "into" | "at" | "on" | "from" | "with" | "off" | "out" | "over" | "away") && next != Some("laws") {
        return Some("is");
    }
    // A participle, a status, an "-ing" form or a number before a function
    // word or the end ("Sam's moved to", "Sam's married to", "Sam's living
    // in", "Sam's 30 now").
    let function = next.is_none_or(|n| {
        FILLER.contains(&n)
            || PARTICLES.contains(&n)
            || STANCE.contains(&n)
            || n.chars().all(|c| c.is_ascii_digit())
            || matches!(n, "again" | "too" | "anymore" | "any" | "years" | "year" | "these" | "back")
    });
    if !function {
        return None;
    }
    if adjectival(w) || w == "back" || (w.ends_with("ing") && w.len() > 4) || w.chars().all(|c| c.is_ascii_digit()) {
        return Some("is");
    }
    is_participle(w).then_some("has")
}

const UNITS: &[&str] = &[
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const TENS: &[&str] = &["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];
/// Ordinal words by number ("fifth" is 5), for ages told by a birthday.
const ORDINALS: &[&str] = &[
    "zeroth",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
];
const TENTHS: &[&str] = &["twentieth", "thirtieth", "fortieth", "fiftieth", "sixtieth", "seventieth", "eightieth", "ninetieth"];

/// Number words as digits: "twenty five" → "25", "three" → "3".
fn numbers(words: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        if let Some(t) = TENS.iter().position(|x| *x == w) {
            let mut n = 20 + 10 * t;
            if let Some(u) = words.get(i + 1).and_then(|n| UNITS.iter().position(|x| x == n)).filter(|u| (1..10).contains(u)) {
                n += u;
                i += 1;
            } else if let Some(u) = words.get(i + 1).and_then(|n| ORDINALS.iter().position(|x| x == n)).filter(|u| (1..10).contains(u)) {
                // "thirty-first": 31st.
                out.push(format!("{}th", n + u));
                i += 2;
                continue;
            }
            out.push(n.to_string());
        } else if let Some(u) = UNITS.iter().position(|x| *x == w) {
            // "one" is also a pronoun ("a new one"): a digit only before a noun-like word is not checked; kept as a number.
            out.push(u.to_string());
        } else {
            out.push(w.to_string());
        }
        i += 1;
    }
    out
}

/// Words that say how the speaker holds a statement or that it holds now,
/// not what it says: dropped before anything is compared.
const STANCE: &[&str] = &[
    "now",
    "currently",
    "nowadays",
    "still",
    "honestly",
    "really",
    "actually",
    "truly",
    "definitely",
    "absolutely",
    "totally",
    "genuinely",
    "seriously",
    "certainly",
    "personally",
    "basically",
    "just",
    "also",
    "very",
    "quite",
    "lately",
    "anymore",
    "presently",
    "again",
];

/// Stance phrases of several words, dropped like [`STANCE`].
const STANCE_PHRASES: &[&[&str]] = &[
    &["these", "days"],
    &["at", "the", "moment"],
    &["right", "now"],
    &["at", "present"],
    &["any", "more"],
    &["any", "longer"],
    &["to", "be", "honest"],
    &["so", "much"],
    &["very", "much"],
    &["a", "lot"],
    &["for", "now"],
    &["after", "all"],
    &["at", "all"],
    &["in", "the", "end"],
];

/// Function words whose place, not presence, carries what they say, and
/// adverbs of habit that restate a habit ("always cycles to work"): left
/// out of the restatement key, so word order does not count ("Shopify is
/// where Omar works").
const RESTATED: &[&str] = &[
    "at",
    "in",
    "on",
    "with",
    "to",
    "of",
    "for",
    "by",
    "from",
    "during",
    "where",
    "is",
    "are",
    "was",
    "were",
    "be",
    "and",
    "always",
    "usually",
    "often",
    "regularly",
    "normally",
    "typically",
    "generally",
];

/// Determiners that do not change what is said ("a", "the", "her").
const DETERMINERS: &[&str] = &["a", "an", "the", "her", "his", "their", "its", "some"];

/// The words without stance words and phrases; "anymore" / "any more"
/// reported separately.
fn without_stance(words: &[String]) -> (Vec<String>, bool) {
    let mut out = Vec::with_capacity(words.len());
    let mut anymore = false;
    let mut i = 0;
    'next: while i < words.len() {
        for p in STANCE_PHRASES {
            if words.len() - i >= p.len() && words[i..i + p.len()].iter().zip(p.iter()).all(|(a, b)| a == b) {
                anymore |= p[0] == "any";
                i += p.len();
                continue 'next;
            }
        }
        let w = words[i].as_str();
        if STANCE.contains(&w) {
            anymore |= w == "anymore";
        } else {
            out.push(words[i].clone());
        }
        i += 1;
    }
    (out, anymore)
}

/// The restatement words: no stance words, no determiners, "no longer" as
/// "not", "works as" / "is employed as" as "is".
fn normal_words(words: &[String]) -> Vec<String> {
    let (ws, _) = without_stance(words);
    let mut out: Vec<String> = Vec::with_capacity(ws.len());
    let mut i = 0;
    while i < ws.len() {
        let w = ws[i].as_str();
        let next = ws.get(i + 1).map(String::as_str);
        if w == "no" && next == Some("longer") {
            out.push("not".into());
            i += 2;
            continue;
        }
        if matches!(w, "works" | "work" | "worked") && next == Some("as") {
            // "works as X" says "is an X".
            i += 2;
            continue;
        }
        if matches!(w, "years" | "year") && next == Some("old") && out.last().is_some_and(|n| n.chars().all(|c| c.is_ascii_digit())) {
            // "is 40 years old" says "is 40".
            i += 2;
            continue;
        }
        if w == "named" && out.last().is_some_and(|p| !BE.contains(&p.as_str()) && p != "was") {
            // "a dog named Biscuit" says "a dog called Biscuit".
            out.push("call".into());
            i += 1;
            continue;
        }
        if w == "employed" && next == Some("as") {
            // "is employed as" → "is".
            i += 2;
            continue;
        }
        let owner = i == 0 || !(possessive(&ws[i - 1]) || ws[i - 1] == "its");
        if (matches!(w, "owns" | "owned") || (w == "own" && owner)) && next.is_some() {
            // "owns a boat" says "has a boat".
            out.push("hav".into());
            i += 1;
            continue;
        }
        if !DETERMINERS.contains(&w) && !manner_adverb(w) && !RESTATED.contains(&w) {
            out.push(stem(w));
        }
        i += 1;
    }
    out
}

/// An "-ly" adverb of manner or time that adds nothing to what a fact
/// says ("happily", "recently"); not one that bounds it ("rarely", "only")
/// nor an adjective or noun that ends in "ly".
fn manner_adverb(w: &str) -> bool {
    w.len() > 4
        && w.ends_with("ly")
        && !matches!(
            w,
            "only"
                | "rarely"
                | "hardly"
                | "barely"
                | "scarcely"
                | "seldom"
                | "family"
                | "early"
                | "daily"
                | "weekly"
                | "monthly"
                | "yearly"
                | "nightly"
                | "hourly"
                | "friendly"
                | "lovely"
                | "silly"
                | "ugly"
                | "holy"
                | "jolly"
                | "july"
                | "italy"
                | "sally"
                | "emily"
                | "lily"
                | "kelly"
                | "molly"
                | "billy"
                | "supply"
                | "apply"
                | "reply"
                | "rely"
                | "ally"
                | "belly"
                | "bully"
                | "jelly"
                | "rally"
                | "tally"
                | "likely"
                | "unlikely"
                | "lonely"
                | "elderly"
                | "costly"
                | "curly"
                | "anomaly"
                | "assembly"
                | "butterfly"
        )
}

/// A crude, consistent stem: irregular forms first, then -ies/-ied → y,
/// -ing, -ed, -es, -s, -e stripped (leaving at least three letters).
fn stem(w: &str) -> String {
    let irregular = match w {
        "went" | "gone" | "goes" | "going" => "go",
        "has" | "had" | "have" | "having" => "hav",
        "is" | "was" | "are" | "were" | "am" | "be" | "been" | "being" => "be",
        "left" | "leaves" | "leaving" | "leave" => "leav",
        "sold" | "sells" | "selling" | "sell" => "sell",
        "bought" | "buys" | "buy" | "buying" => "buy",
        "got" | "gets" | "getting" | "gotten" => "get",
        "broke" | "breaks" | "broken" | "break" => "break",
        "gave" | "gives" | "given" | "give" => "giv",
        "won" | "wins" | "win" | "winning" => "win",
        "lost" | "loses" | "lose" | "losing" => "los",
        "quit" | "quits" | "quitting" => "quit",
        "ran" | "runs" | "run" | "running" => "run",
        "met" | "meets" | "meet" => "meet",
        "took" | "takes" | "taken" | "take" => "tak",
        "made" | "makes" | "make" => "mak",
        "does" | "did" | "do" | "done" => "do",
        "began" | "begun" | "begins" | "begin" => "begin",
        "wrote" | "writes" | "written" | "write" => "writ",
        "taught" | "teaches" | "teach" => "teach",
        "studies" | "studied" | "study" | "studying" => "study",
        _ => "",
    };
    if !irregular.is_empty() {
        return irregular.to_string();
    }
    if w.chars().any(|c| c.is_ascii_digit()) || w.len() <= 3 {
        return w.to_string();
    }
    let mut s = w;
    for (suffix, min) in [("ies", 3), ("ied", 3)] {
        if let Some(r) = s.strip_suffix(suffix)
            && r.len() >= min
        {
            return format!("{r}y");
        }
    }
    for suffix in ["ing", "ed", "es", "s"] {
        if let Some(r) = s.strip_suffix(suffix)
            && r.len() >= 3
            && !(suffix == "s" && r.ends_with('s'))
        {
            s = r;
            break;
        }
    }
    // A doubled final consonant of a stripped form ("stopped" → "stop").
    let b = s.as_bytes();
    if s.len() != w.len() && b.len() >= 4 && b[b.len() - 1] == b[b.len() - 2] && !b"aeiouls".contains(&b[b.len() - 1]) {
        s = &s[..s.len() - 1];
    }
    s.strip_suffix('e').filter(|r| r.len() >= 3).unwrap_or(s).to_string()
}

// ---------------------------------------------------------------------------
// Propositions

/// Preference verbs by polarity (stems).
const LIKE: &[&str] = &["lov", "lik", "enjoy", "ador", "prefer"];
const DISLIKE: &[&str] = &["hat", "dislik", "detest", "loath", "avoid", "dread", "despis"];

/// Verbs that end a state ("quit the band", "sold the car"), as stems; a
/// particle may follow.
const ENDINGS: &[&str] = &[
    "quit", "leav", "sell", "stop", "cancel", "cancell", "resign", "retir", "divorc", "abandon", "skipp", "skip", "withdrew", "withdraw",
    "scrap", "scrapp", "ditch", "shelv", "postpon", "rehom", "stolen", "trad", "swap", "swapp", "donat", "replac", "end", "clos",
];
/// [`ENDINGS`] that are habits in the present: endings only when done.
const PAST_ENDINGS: &[&str] = &["donat", "replac", "end", "clos"];

/// Endings of a verb and its particles ("moved out of", "broke up with"),
/// as predicates.
const ENDING_PHRASES: &[&str] = &[
    "mov out of",
    "mov out",
    "break up with",
    "split up with",
    "giv up",
    "call off",
    "drop out of",
    "drop out",
    "get rid of",
    "giv away",
    "decid against",
    "pull out of",
    "back out of",
    "split from",
    "separat from",
    "trad in",
    "step down",
    "step down as",
    "step down from",
    "step away from",
    "shut down",
];

/// Words of an outing on one day ("left the party early"): leaving then
/// is an event, not an ending.
const SAME_DAY: &[&str] = &["early", "late", "today", "tonight", "yesterday", "morning", "afternoon", "evening"];

/// Verbs of coming to hold a preference ("has grown to love").
const GROW: &[&str] =
    &["grown", "grew", "grow", "come", "came", "learned", "learnt", "started", "start", "starts", "began", "begun", "begin"];

/// Not working, as a job slot's value: excludes any job or employer.
const NOT_WORKING: &[&str] = &["unemploy", "retir", "jobless"];

/// A preference said with a copula ("a big fan of", "keen on", "tired
/// of"): whether it likes, and the phrase.
const COPULA_PREFS: &[(&[&str], bool)] = &[
    (&["fan", "of"], true),
    (&["keen", "on"], true),
    (&["fond", "of"], true),
    (&["crazy", "about"], true),
    (&["obsessed", "with"], true),
    (&["passionate", "about"], true),
    (&["tired", "of"], false),
    (&["sick", "of"], false),
    (&["fed", "up", "with"], false),
    (&["bored", "of"], false),
    (&["bored", "with"], false),
];

/// Where a copula preference phrase starts after the copula (only
/// determiners and intensifiers before it), its length and polarity.
fn copula_preference(rest: &[String]) -> Option<(usize, usize, bool)> {
    let k = rest.iter().position(|w| !matches!(w.as_str(), "a" | "an" | "big" | "huge" | "great" | "real" | "massive" | "so"))?;
    COPULA_PREFS
        .iter()
        .find(|(phrase, _)| rest.len() >= k + phrase.len() && rest[k..k + phrase.len()].iter().zip(phrase.iter()).all(|(a, b)| a == b))
        .map(|(phrase, like)| (k, phrase.len(), *like))
}

/// Words that close the thing an ending names: a reason, a purpose, a
/// further clause ("left his job *to* pursue dancing", "*because* …").
const ENDED_STOP: &[&str] = &[
    "and", "but", "because", "so", "since", "due", "after", "before", "when", "while", "for", "which", "that", "who", "where", "although",
    "though", "if", "to", "into",
];
/// What an ending ends matches a state: a word of the thing it names is in
/// the state's object or is the state's verb ("cancelled her honeymoon"
/// ends "plans to honeymoon in Japan"), or the thing is a post, a home or
/// an outing and its place is the state's ("left her job at the bakery"
/// ends "works at the bakery"; "left her umbrella at the library" does not
/// end "volunteers at the library").
fn ends_state(a: &Prop, ended: &[String]) -> bool {
    let verb = a.pred.split(' ').next().unwrap_or("");
    let in_a = |w: &str| a.object.binary_search_by(|o| o.as_str().cmp(w)).is_ok();
    let (places, things): (Vec<&String>, Vec<&String>) = ended.iter().partition(|w| w.starts_with('@'));
    things.iter().any(|w| in_a(w) || w.as_str() == verb)
        || (things.iter().any(|w| POSTS.contains(&w.as_str())) && places.iter().any(|w| in_a(&w[1..])))
}

/// Things that are where they are held: a post, a home, a course, an outing.
const POSTS: &[&str] = &[
    "job",
    "position",
    "post",
    "role",
    "work",
    "flat",
    "apartment",
    "hous",
    "house",
    "home",
    "room",
    "cours",
    "class",
    "trip",
    "holiday",
    "vacation",
    "visit",
    "stay",
    "plan",
    "place",
    "shift",
    "lesson",
];

/// Nouns whose "to" phrase names where they go ("trip to Japan").
const TO_NOUNS: &[&str] = &["trip", "visit", "move", "vacation", "holiday", "flight", "journey", "tour", "plan", "plans", "wedding"];

/// What an ending ends: the words of the noun phrase after it, with the
/// places attached to it ("job at the bakery", "trip to Japan"), up to a
/// reason, a purpose or another clause; no filler, time words or numbers;
/// stemmed, sorted, distinct.
fn ended(rest: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut heads: Vec<&str> = Vec::new();
    // After "at", "in", "on", "by", "near": where the ended thing is, not
    // what it is ("left her umbrella at the library"), marked `@`.
    let mut place = false;
    for w in rest {
        let w = w.as_str();
        if ENDED_STOP.contains(&w) && !(w == "to" && heads.iter().any(|h| TO_NOUNS.contains(h))) {
            break;
        }
        // A past verb after the thing named starts another clause ("lost
        // her job, started a shop": the comma is gone).
        if !out.is_empty() && is_past_form(w) {
            break;
        }
        heads.push(w);
        // ("gave up on buying a house": an "on" right after the verb is its particle).
        if matches!(w, "at" | "in" | "on" | "by" | "near") && (heads.len() > 1 || w != "on") {
            place = true;
        }
        if FILLER.contains(&w) || TIME_WORDS.contains(&w) || w.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        out.push(if place { format!("@{}", stem(w)) } else { stem(w) });
    }
    out.sort();
    out.dedup();
    out
}

/// Verbs that begin a state (a past form of one still holds: "joined a
/// band", "bought a car"), as stems.
const INCHOATIVE: &[&str] = &[
    "join",
    "start",
    "buy",
    "adopt",
    "get",
    "mov",
    "becam",
    "becom",
    "sign",
    "enrol",
    "enroll",
    "found",
    "open",
    "begin",
    "book",
    "turn",
    "relocat",
    "settl",
    "marry",
    "promot",
    "retrain",
    "qualify",
    "transferr",
    "transfer",
    "elect",
    "appoint",
    "vot",
];

/// Modal verbs: auxiliaries only before a verb. After a copula or at the
/// end of a clause the word is a noun or a name ("favourite month is May",
/// "her husband is Will").
const MODALS: &[&str] = &["will", "would", "can", "could", "should", "may", "might", "must", "shall"];

/// Modal and auxiliary words before a main verb.
const AUX: &[&str] =
    &["do", "does", "did", "will", "would", "can", "could", "should", "may", "might", "must", "shall", "to", "going", "used"];
const BE: &[&str] = &["is", "are", "was", "were", "am", "be", "been", "being"];
const HAVE: &[&str] = &["has", "have", "had"];

/// Nouns whose possessive names another person or animal, not an attribute:
/// "Ann's sister works as …" is about the sister.
const HOLDERS: &[&str] = &[
    "sister",
    "brother",
    "mother",
    "father",
    "mom",
    "mum",
    "dad",
    "son",
    "daughter",
    "kid",
    "kids",
    "child",
    "children",
    "friend",
    "friends",
    "cousin",
    "aunt",
    "uncle",
    "grandma",
    "grandpa",
    "grandmother",
    "grandfather",
    "niece",
    "nephew",
    "neighbour",
    "neighbor",
    "colleague",
    "coworker",
    "roommate",
    "parents",
    "family",
    "dog",
    "cat",
    "pet",
    "puppy",
    "kitten",
    "team",
    "band",
    "sibling",
    "siblings",
    "baby",
    "grandson",
    "granddaughter",
];

/// Single-valued attributes of a person ("Ann's manager is …").
const SLOT_NOUNS: &[&str] = &[
    "age",
    "job",
    "occupation",
    "profession",
    "manager",
    "boss",
    "partner",
    "boyfriend",
    "girlfriend",
    "husband",
    "wife",
    "fiance",
    "fiancee",
    "spouse",
    "school",
    "university",
    "college",
    "major",
    "hometown",
    "address",
    "employer",
    "role",
    "position",
    "title",
    "salary",
    "budget",
    "level",
    "mode",
    "status",
    "coach",
    "teacher",
    "mentor",
    "birthday",
    "name",
    "leader",
];

/// Occupations, the head nouns of a job ("is a nurse", "is a stay-at-home
/// dad"): one at a time, like "works as" (compared by [`stem`]).
const OCCUPATIONS: &[&str] = &[
    "nurse",
    "teacher",
    "engineer",
    "postman",
    "postwoman",
    "paramedic",
    "mechanic",
    "driver",
    "chef",
    "cook",
    "waiter",
    "waitress",
    "barista",
    "bartender",
    "accountant",
    "lawyer",
    "attorney",
    "doctor",
    "dentist",
    "surgeon",
    "pilot",
    "plumber",
    "electrician",
    "carpenter",
    "programmer",
    "developer",
    "designer",
    "technician",
    "librarian",
    "cashier",
    "clerk",
    "baker",
    "butcher",
    "farmer",
    "firefighter",
    "officer",
    "soldier",
    "consultant",
    "analyst",
    "architect",
    "journalist",
    "reporter",
    "photographer",
    "tutor",
    "professor",
    "lecturer",
    "researcher",
    "scientist",
    "vet",
    "veterinarian",
    "pharmacist",
    "therapist",
    "counselor",
    "counsellor",
    "receptionist",
    "secretary",
    "courier",
    "trucker",
    "translator",
    "realtor",
    "salesperson",
    "homemaker",
    "freelancer",
    "hairdresser",
    "barber",
    "gardener",
    "cleaner",
    "janitor",
    "nanny",
    "caregiver",
    "carer",
    "instructor",
    "paralegal",
    "midwife",
    "optician",
    "banker",
    "cashier",
    "dispatcher",
    "welder",
    "machinist",
    "bricklayer",
    "roofer",
    "painter",
    "tailor",
    "florist",
    "chemist",
    "biologist",
    "economist",
    "auditor",
    "broker",
    "underwriter",
    "administrator",
    "coordinator",
    "supervisor",
    "foreman",
    "intern",
    "apprentice",
    "tester",
    "assistant",
    "actor",
    "actress",
    "artist",
    "writer",
    "author",
    "editor",
    "musician",
    "singer",
    "dancer",
    "builder",
    "labourer",
    "laborer",
    "decorator",
    "plasterer",
    "locksmith",
    "surveyor",
    "physiotherapist",
    "physio",
    "psychologist",
    "psychiatrist",
    "physician",
    "detective",
    "policeman",
    "policewoman",
    "solicitor",
    "barrister",
    "judge",
    "bookkeeper",
    "shopkeeper",
    "housekeeper",
    "childminder",
    "babysitter",
    "trainer",
    "lifeguard",
    "ranger",
    "dietitian",
    "nutritionist",
    "radiographer",
    "statistician",
    "mathematician",
    "physicist",
    "coder",
    "animator",
    "illustrator",
    "copywriter",
    "recruiter",
    "entrepreneur",
    "salesman",
    "saleswoman",
    "attendant",
    "steward",
    "stewardess",
    "sailor",
    "fisherman",
    "chauffeur",
    "priest",
    "pastor",
    "vicar",
    "rabbi",
    "imam",
    "politician",
    "councillor",
    "diplomat",
    "headteacher",
    "principal",
    "curator",
    "archivist",
    "historian",
    "geologist",
    "groomer",
    "sommelier",
    "brewer",
    "jeweller",
    "jeweler",
    "potter",
    "sculptor",
    "videographer",
    "filmmaker",
    "producer",
    "composer",
    "comedian",
    "footballer",
    "referee",
    "warden",
    "inspector",
    "actuary",
    "teller",
    "executive",
    "ceo",
    "founder",
    "optometrist",
    "hygienist",
    "zookeeper",
    "mover",
    "miner",
    "porter",
    "guard",
    "bouncer",
    "landscaper",
    "beekeeper",
    "seamstress",
    "cobbler",
    "fishmonger",
    "grocer",
];

/// [`OCCUPATIONS`] as stems, computed once.
fn occupation_stems() -> &'static std::collections::HashSet<String> {
    static STEMS: std::sync::OnceLock<std::collections::HashSet<String>> = std::sync::OnceLock::new();
    STEMS.get_or_init(|| OCCUPATIONS.iter().map(|o| stem(o)).collect())
}

/// Things one person usually has one of at a time ("has an iPhone 8",
/// "has a Pixel phone"): a word ending in one names the thing.
const SINGLE_THINGS: &[&str] = &["phone", "car", "laptop", "truck", "van", "motorbike", "motorcycle", "scooter", "apartment", "flat"];

/// Verbs of holding a position in a group ("chairs the association").
const ROLE_VERBS: &[&str] = &["chair", "captain", "coach", "head", "lead"];

/// What a person "finds" a thing when they dislike it, as stems.
const DULL: &[&str] = &["boring", "dull", "tedious", "tiresom", "annoying", "unbearabl"];

/// Relationship statuses ("is single", "is married to …"): one at a time.
const STATUSES: &[&str] = &["single", "married", "engaged", "dating", "divorced", "separated", "widowed", "seeing", "together"];

/// A partner one has ("has a girlfriend named …"): a relationship status.
const PARTNERS: &[&str] = &["partner", "boyfriend", "girlfriend", "husband", "wife", "fiance", "fiancee", "spouse"];

/// Possessed attributes that are people: "Sam's girlfriend is Mia" is the
/// slot's value, "Sam's girlfriend is vegan" says something of her.
const PERSON_SLOTS: &[&str] = &[
    "partner",
    "boyfriend",
    "girlfriend",
    "husband",
    "wife",
    "fiance",
    "fiancee",
    "spouse",
    "manager",
    "boss",
    "coach",
    "teacher",
    "mentor",
    "leader",
];

/// Nouns of a place of study ("attends Oakfield School").
const SCHOOLS: &[&str] =
    &["school", "academy", "college", "university", "uni", "institute", "primary", "secondary", "nursery", "kindergarten", "preschool"];

/// Words of an object that say nothing of what it is.
const FILLER: &[&str] = &[
    "a", "an", "the", "her", "his", "their", "its", "my", "our", "your", "some", "and", "or", "of", "in", "on", "at", "for", "with", "by",
    "from", "to", "as", "about", "this", "that", "these", "those", "not", "no", "longer", "never", "which", "who", "it", "them", "him",
    "she", "he", "they", "there", "up", "out", "off", "into", "any",
];

const PARTICLES: &[&str] =
    &["at", "as", "for", "in", "to", "with", "out", "of", "up", "off", "from", "on", "into", "rid", "away", "against", "down"];

/// Verbs of intention whose "to" names a planned action ("plans to move").
const PLAN_VERBS: &[&str] = &["plan", "want", "hop", "intend", "aim", "expect", "decid"];

/// The fact's propositions: its clauses (split at "and" or "but" before a
/// finite verb, at ";"), each about the subject (or a possessed holder).
fn propositions(subject: &str, predicate: &str, words: &[String], antonyms: &[[String; 2]]) -> Vec<Prop> {
    let subject_words: Vec<String> = tokens(subject);
    if subject_words.is_empty() {
        return Vec::new();
    }
    // Stance words before the subject lead nothing ("These days, Ann …").
    let words = &words[leading_stance(words)..];
    // "Basketball is now Ann's favourite sport": the attribute named last.
    let inverted = inverted_attribute(words, &subject_words);
    let words = inverted.as_deref().unwrap_or(words);
    // "Sam and Ann broke up": the couple named with the subject second.
    let n = subject_words.len();
    let pair: Option<Vec<String>> = (words.len() > n + 3
        && words[1] == "and"
        && named_at(words, 2, &subject_words)
        && words[1 + n] == subject_words[n - 1]
        && !FILLER.contains(&words[0].as_str())
        && !words[0].ends_with("'s")
        && (is_finite(&words[2 + n]) || BE.contains(&words[2 + n].as_str())))
    .then(|| subject_words.iter().cloned().chain(["and".to_string(), words[0].clone()]).chain(words[2 + n..].iter().cloned()).collect());
    let words = pair.as_deref().unwrap_or(words);
    // Where the subject is first named (after a time lead such as "In May,").
    let Some(at) = (0..words.len().min(TIME_LEAD_MAX + 1)).find(|&i| named_at(words, i, &subject_words)) else {
        return Vec::new();
    };
    if at > 0 && !TIME_LEAD.contains(&words[0].as_str()) && !words[..at].iter().all(|w| STANCE.contains(&w.as_str())) {
        // Named after something that is not a time lead: the sentence is
        // about something else ("Tom told Ann …").
        return Vec::new();
    }
    let after = at + subject_words.len();
    let mut holder = subject.to_string();
    let mut rest: &[String] = &words[after - 1..];
    let mut slot_noun: Option<String> = None;
    // The words of a possessed thing ("Amara's charity quiz night"), and
    // whether it is a person's (someone else's, or a person: "Ann's
    // sister") rather than a thing or an animal the subject has.
    let mut possessed: Option<(Vec<String>, bool)> = None;
    let mut passive_ending = false;
    let couple: Vec<String>;
    let tail_words: Vec<String>;
    let last = &words[after - 1];
    if last.ends_with("'s") || last.ends_with('\'') {
        // "Ann's <noun phrase> is/verb …".
        // Without stance words ("favourite band these days is …"), "anymore" kept.
        let (mut tail, anymore) = without_stance(&words[after..]);
        if anymore {
            tail.push("anymore".into());
        }
        // An attribute that "has changed to", "switched to" or "became" a
        // value now is that value: "favourite colour has changed to purple".
        if let Some(k) = tail.iter().position(|w| BE.contains(&w.as_str()) || is_finite(w) || w == "became") {
            let h = usize::from(HAVE.contains(&tail[k].as_str()));
            let len = match tail.get(k + h).map(String::as_str) {
                Some("changed" | "switched") if tail.get(k + h + 1).is_some_and(|w| w == "to") => h + 2,
                Some("became" | "become") => h + 1,
                _ => 0,
            };
            if len > 0 {
                tail.splice(k..k + len, ["is".to_string()]);
            }
        }
        tail_words = tail;
        let tail = &tail_words[..];
        let verb = tail.iter().position(|w| BE.contains(&w.as_str()) || is_finite(w)).unwrap_or(tail.len());
        let head: Vec<&str> = tail[..verb].iter().map(String::as_str).filter(|w| !matches!(*w, "new" | "current" | "old")).collect();
        if head.is_empty() || verb == tail.len() {
            return Vec::new();
        }
        let head_text = canonical_slot(&head.join(" "));
        // "… was called off": a passive ending, not an attribute's value.
        passive_ending = tail.get(verb + 1).is_some_and(|w| {
            let v = stem(w);
            (ENDINGS.contains(&v.as_str()) && !STATUSES.contains(&w.as_str()))
                || (v == "call" && tail.get(verb + 2).is_some_and(|p| p == "off"))
        });
        let is_copula = BE.contains(&tail[verb].as_str()) && !passive_ending;
        // A compound whose last word is an attribute ("team leader") names
        // the attribute, not the person or group before it; the head noun is
        // the last before a preposition ("manager at work", "birthday party").
        let last_noun =
            head.iter().take_while(|w| !matches!(**w, "at" | "of" | "in" | "for" | "on" | "to" | "from")).last().copied().unwrap_or("");
        let manager = head_text == "manager";
        let person =
            head.iter().any(|w| HOLDERS.contains(w)) && !SLOT_NOUNS.contains(&last_noun) && !PERSON_SLOTS.contains(&last_noun) && !manager;
        // "Ann's home is in Cork" says where she lives.
        let home = head_text == "home" && tail.get(verb + 1).is_some_and(|w| matches!(w.as_str(), "in" | "at" | "near"));
        let attribute = home
            || head.first() == Some(&"favourite")
            || manager
            || (!person && (SLOT_NOUNS.contains(&last_noun) || head_text == predicate || head == ["relationship"]));
        if is_copula && attribute {
            if PERSON_SLOTS.contains(&last_noun) || head_text == "manager" {
                // "Sam's girlfriend is Mia": the slot's value; "… is vegan": a fact of hers.
                holder = format!("{subject}'s {head_text}");
            }
            slot_noun = Some(head_text);
        } else {
            holder = format!("{subject}'s {head_text}");
            // Whose it is: the head noun phrase, before a preposition ("surprise
            // party for her mum" is the subject's party).
            let someone = head
                .iter()
                .take_while(|w| !matches!(**w, "at" | "of" | "in" | "for" | "on" | "to" | "from" | "with"))
                .any(|w| w.ends_with("'s") || w.ends_with('\'') || (HOLDERS.contains(w) && !ANIMALS.contains(w)));
            possessed = Some((head.iter().map(|w| stem(w)).collect(), someone));
        }
        rest = &tail[verb..];
    } else {
        rest = &rest[1..];
        // "Ann and Sam broke up": Ann broke up with Sam.
        if let Some(c) = couple_ending(rest) {
            couple = c;
            rest = &couple;
        } else if let Some(k) = conjunct(rest) {
            // "Ann and her partner bought a house": Ann bought a house.
            rest = &rest[k..];
        }
    }
    let mut out = Vec::new();
    for clause in split_clauses(rest) {
        if let Some(mut p) = clause_prop(&holder, &clause, slot_noun.as_deref(), antonyms) {
            // A possessed thing that is gone is no longer had: "Amara's quiz
            // night was called off", "Omar's dog passed away", "Kira's cat
            // lives with her mother now", "Jon's trip is off".
            if let Some((words, someone)) = &possessed
                && (p.ends.as_ref().is_some_and(Vec::is_empty) || (passive_ending && !*someone) || gone(&p, &clause, *someone))
            {
                let mut words: Vec<String> = words.iter().filter(|w| !FILLER.contains(&w.as_str())).cloned().collect();
                words.sort();
                words.dedup();
                p.holder = subject.to_string();
                p.ends = Some(words);
                p.activity = None;
                p.positive = true;
                p.slot = None;
            }
            // "Ann reports to Julia": Ann's manager is Julia; so is "Ann got a
            // new coach called Bo" her coach.
            if let Some((n, _)) = p.slot.as_ref().filter(|(n, _)| PERSON_SLOTS.contains(&n.as_str()) && !PARTNERS.contains(&n.as_str()))
                && holder == subject
            {
                p.holder = format!("{subject}'s {n}");
            }
            out.push(p);
        }
        // Later clauses are about the subject itself.
        slot_noun = None;
    }
    out
}

/// Animals: a possessive naming one is about an animal the subject has.
const ANIMALS: &[&str] = &["dog", "cat", "pet", "puppy", "kitten"];

/// "has a new coach, Priti" / "has a new favourite café, Luma": a name
/// after a comma names the person or the favourite one has, as "called"
/// does ("has a new coach called Priti").
fn apposition(content: &str) -> Option<String> {
    let (left, right) = content.split_once(", ")?;
    let right = right.trim().trim_end_matches('.');
    let n = right.split_whitespace().count();
    if !(1..=5).contains(&n) || !right.chars().next().is_some_and(char::is_uppercase) || right.contains(',') {
        return None;
    }
    let lower = tokens(left);
    let k = lower.iter().rposition(|w| matches!(w.as_str(), "a" | "an"))?;
    let has = lower[..k].last().is_some_and(|w| matches!(w.as_str(), "has" | "have" | "got" | "found"));
    let head = lower.last()?;
    let named = lower[k..].iter().any(|w| w == "favourite") || PERSON_SLOTS.contains(&head.as_str());
    (has && named && lower.len() - k <= 5).then(|| format!("{left} called {right}"))
}

/// How many words at the start are stance words or phrases.
fn leading_stance(words: &[String]) -> usize {
    let mut i = 0;
    'next: while i < words.len() {
        for p in STANCE_PHRASES {
            if words.len() - i >= p.len() && words[i..i + p.len()].iter().zip(p.iter()).all(|(a, b)| a == b) {
                i += p.len();
                continue 'next;
            }
        }
        if !STANCE.contains(&words[i].as_str()) {
            break;
        }
        i += 1;
    }
    i
}

/// "<value> is <Subject>'s favourite <noun>" (or another attribute) said
/// the other way round: "<Subject>'s favourite <noun> is <value>".
fn inverted_attribute(words: &[String], subject: &[String]) -> Option<Vec<String>> {
    if named_at(words, 0, subject) {
        return None;
    }
    let be = words.iter().take(6).position(|w| matches!(w.as_str(), "is" | "was"))?;
    if be == 0 || words[..be].iter().any(|w| BE.contains(&w.as_str()) || w.ends_with("'s")) {
        return None;
    }
    let at = be + 1 + leading_stance(&words[be + 1..]);
    if !named_at(words, at, subject) || !words[at + subject.len() - 1].ends_with("'s") {
        return None;
    }
    let np = &words[at + subject.len()..];
    let head = np.iter().find(|w| !matches!(w.as_str(), "new" | "current" | "old"))?;
    if head != "favourite" && !SLOT_NOUNS.contains(&head.as_str()) {
        return None;
    }
    let mut out: Vec<String> = words[at..].to_vec();
    out.push("is".into());
    out.extend(words[..be].iter().cloned());
    Some(out)
}

/// One name for the attributes that are one slot: a boss, a line manager,
/// a supervisor and a team lead are the one a person reports to, their
/// manager.
fn canonical_slot(head: &str) -> String {
    match head {
        "boss" | "line manager" | "supervisor" | "manager" | "team lead" | "team leader" => "manager".into(),
        "address" | "home address" => "home".into(),
        h if h.starts_with("favourite ") && h.ends_with(" place to eat") => {
            // A place to eat is a restaurant.
            format!("{} restaurant", h.trim_end_matches(" place to eat"))
        }
        h if h.starts_with("favourite ") => {
            // A favourite's head noun by one name: a movie is a film, a
            // novel a book, a series or programme a show, a track a song,
            // a dish or meal food.
            let (rest, last) = h.rsplit_once(' ').unwrap_or((h, ""));
            let last = match last {
                "movie" | "movies" | "flick" | "films" => "film",
                "novel" | "novels" | "books" => "book",
                "series" | "programme" | "program" | "shows" => "show",
                "track" | "tune" | "songs" => "song",
                "dish" | "meal" | "foods" => "food",
                "beverage" | "drinks" => "drink",
                "writer" | "writers" | "authors" => "author",
                "eatery" | "restaurants" => "restaurant",
                l => l,
            };
            format!("{rest} {last}")
        }
        h => h.to_string(),
    }
}

/// "and Sam broke up" (after the subject): the words of "broke up with
/// Sam", so the couple's ending reads as the subject's.
fn couple_ending(rest: &[String]) -> Option<Vec<String>> {
    if rest.first().is_none_or(|w| w != "and") {
        return None;
    }
    let k =
        (2..=4.min(rest.len().saturating_sub(1))).find(|&k| matches!(stem(&rest[k]).as_str(), "break" | "split" | "separat" | "divorc"))?;
    // ("Ann and Sam have split up": a perfect's "have" is no verb of theirs.)
    let perfect = |i: usize| i + 1 == k && HAVE.contains(&rest[i].as_str());
    // (The word after "and" is the partner's name or noun: "Idris" is no verb.)
    if (2..k).any(|i| !perfect(i) && (is_finite(&rest[i]) || BE.contains(&rest[i].as_str()))) {
        return None;
    }
    let mut out: Vec<String> = vec![rest[k].clone()];
    let mut tail = k + 1;
    if rest.get(tail).is_some_and(|w| w == "up") {
        out.push("up".into());
        out.push("with".into());
        tail += 1;
    } else if stem(&rest[k]) != "divorc" {
        out.push("from".into());
    }
    out.extend((1..k).filter(|&i| !perfect(i)).map(|i| rest[i].clone()));
    out.extend(rest[tail..].iter().cloned());
    Some(out)
}

/// "and <someone> <verb> …" after the subject: where the verb starts, so
/// what a conjoined subject does is said of the subject too. Not when the
/// conjunct is someone's possession ("Ann and Tom's daughter live …").
fn conjunct(rest: &[String]) -> Option<usize> {
    if rest.first().is_none_or(|w| w != "and") {
        return None;
    }
    let k = (2..=4.min(rest.len().saturating_sub(1))).find(|&k| BE.contains(&rest[k].as_str()) || is_finite(&rest[k]))?;
    let between = &rest[1..k];
    (!between.iter().any(|w| w.ends_with("'s") || w.ends_with('\'') || is_finite(w) || BE.contains(&w.as_str()))).then_some(k)
}

/// Whether a clause about a possessed thing says it is gone for its owner:
/// it died, it is off or not happening, or (a thing or an animal, not a
/// person) it now lives with or belongs to someone named.
fn gone(p: &Prop, clause: &[String], someone: bool) -> bool {
    let pred = p.pred.as_str();
    if !someone && matches!(pred, "died" | "di" | "pass away" | "pass on") && p.positive {
        return true;
    }
    // A plan that fell through is off.
    if matches!(pred, "fell" | "fall" | "fallen") && p.positive && clause.iter().any(|w| w == "through") {
        return true;
    }
    if pred == "be" && p.object.is_empty() && clause.iter().any(|w| w == "off") {
        return true;
    }
    if pred == "happen" && !p.positive {
        return true;
    }
    if !someone && p.positive && matches!(pred, "liv with" | "belong to" | "stay with") {
        // "… lives with her mother", not "… lives with her" (the owner).
        let k = clause.iter().position(|w| matches!(w.as_str(), "with" | "to")).map_or(clause.len(), |k| k + 1);
        let named = &clause[k.min(clause.len())..];
        let bare = named.first().is_some_and(|w| matches!(w.as_str(), "her" | "him" | "them" | "me" | "us"))
            && named.get(1).is_none_or(|w| matches!(w.as_str(), "and" | "now" | "still"));
        return !bare && !p.object.is_empty();
    }
    false
}

/// Words that open a time lead before the subject ("In May, Ann …").
const TIME_LEAD: &[&str] = &["in", "on", "during", "last", "this", "after", "before", "yesterday", "today", "recently", "since", "at"];
/// The longest time lead before the subject, in words.
const TIME_LEAD_MAX: usize = 4;

/// Time words that do not say what an ending ends ("sold the car last week").
const TIME_WORDS: &[&str] = &[
    "last",
    "week",
    "month",
    "year",
    "day",
    "today",
    "yesterday",
    "ago",
    "early",
    "late",
    "recently",
    "weekend",
    "morning",
    "night",
    "evening",
    "afternoon",
    "soon",
    "next",
    "first",
    "time",
];

/// Whether the subject's words start at `i` (the last may be possessive).
fn named_at(words: &[String], i: usize, subject: &[String]) -> bool {
    if i + subject.len() > words.len() {
        return false;
    }
    subject.iter().enumerate().all(|(k, s)| {
        let w = &words[i + k];
        w == s || (k + 1 == subject.len() && (*w == format!("{s}'s") || *w == format!("{s}'")))
    })
}

/// A third-person present or a past form: "works", "worked", "quit".
fn is_finite(w: &str) -> bool {
    (w.len() > 3 && (w.ends_with('s') && !w.ends_with("ss") || w.ends_with("ed")))
        || matches!(
            w,
            "went" | "left" | "sold" | "quit" | "broke" | "got" | "bought" | "won" | "lost" | "gave" | "made" | "took" | "met" | "split"
        )
        || HAVE.contains(&w)
        || AUX.contains(&w) && !matches!(w, "to" | "going" | "used")
}

/// Splits at ";" (already gone: punctuation separates words) and at "and"
/// / "but" followed by a finite verb, a negation or "no longer".
fn split_clauses(words: &[String]) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new()];
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).map(String::as_str).unwrap_or("");
        // (A modal that ends the sentence is a word: "April and May".)
        let modal_word = MODALS.contains(&next) && words.get(i + 2).is_none();
        if matches!(w.as_str(), "and" | "but")
            && !out.last().is_some_and(Vec::is_empty)
            && ((is_finite(next) || BE.contains(&next)) && !HOLDERS.contains(&next) && !modal_word)
        {
            out.push(Vec::new());
            continue;
        }
        if let Some(last) = out.last_mut() {
            last.push(w.clone());
        }
    }
    out.retain(|c| !c.is_empty());
    out
}

/// One clause after its holder: "is single", "no longer plays tennis",
/// "works as a nurse", "quit the band".
fn clause_prop(holder: &str, clause: &[String], slot_noun: Option<&str>, antonyms: &[[String; 2]]) -> Option<Prop> {
    let (ws, anymore) = without_stance(clause);
    let mut negations = 0usize;
    let mut no_longer = anymore;
    let mut i = 0;
    let mut saw_be = false;
    let mut saw_have = false;
    let mut aux = false;
    let mut plan = false;
    let mut began = false;
    // "used to": a past state, not a present one.
    let mut used = false;
    // Skip auxiliaries and negations before the main verb.
    while i < ws.len() {
        let w = ws[i].as_str();
        let next = ws.get(i + 1).map(String::as_str);
        if w == "no" && next == Some("longer") {
            negations += 1;
            no_longer = true;
            i += 2;
            continue;
        }
        if matches!(w, "not" | "never") {
            negations += 1;
            i += 1;
            continue;
        }
        if BE.contains(&w) {
            saw_be = true;
            i += 1;
            continue;
        }
        // "has" before a participle is an auxiliary ("has given up", "has left").
        if HAVE.contains(&w) && next.is_some_and(|n| is_participle(n) || matches!(n, "not" | "never" | "no") || GROW.contains(&n)) {
            saw_have = true;
            aux = true;
            i += 1;
            continue;
        }
        if MODALS.contains(&w) && (saw_be || next.is_none()) {
            // "is May": a word of the value, not an auxiliary.
            break;
        }
        // An adverb of manner or time before the verb says how or when, not
        // what ("finally sold", "recently moved").
        if (manner_adverb(w) || w == "already") && next.is_some() {
            i += 1;
            continue;
        }
        if AUX.contains(&w) {
            aux = true;
            plan |= w == "going" && next == Some("to");
            used |= w == "used" && next == Some("to") && !saw_be;
            i += 1;
            continue;
        }
        break;
    }
    let present_or_plan = |w: &str| saw_have || aux || (saw_be && w.ends_with("ing")) || BE.contains(&w) || !is_past_form(w);
    // The copula: "is single", "is a nurse", "is 30 years old".
    let (pred, particle_end, verb_word) = if i >= ws.len() || (saw_be && (slot_noun.is_some() || !is_verbish(&ws[i]))) {
        ("be".to_string(), i, "is".to_string())
    } else {
        let mut i = i;
        // A plan: the planned action is the predicate ("plans to move to Oslo").
        if PLAN_VERBS.contains(&stem(&ws[i]).as_str()) && ws.get(i + 1).is_some_and(|w| w == "to") && i + 2 < ws.len() {
            plan = true;
            i += 2;
        }
        // A plan given up: "has decided not to study medicine", "decided
        // (that) she won't study medicine".
        if stem(&ws[i]) == "decid"
            && ws.get(i + 1).is_some_and(|w| w == "not")
            && ws.get(i + 2).is_some_and(|w| w == "to")
            && i + 3 < ws.len()
        {
            plan = true;
            negations += 1;
            i += 3;
        } else if stem(&ws[i]) == "decid" {
            let k = i + 1 + usize::from(ws.get(i + 1).is_some_and(|w| w == "that"));
            if ws.get(k).is_some_and(|w| matches!(w.as_str(), "she" | "he" | "they" | "i" | "we"))
                && ws.get(k + 1).is_some_and(|w| matches!(w.as_str(), "will" | "would"))
                && ws.get(k + 2).is_some_and(|w| w == "not")
                && k + 3 < ws.len()
            {
                plan = true;
                negations += 1;
                i = k + 3;
            }
        }
        // A preference one came to hold is held: "has grown to love X".
        if GROW.contains(&ws[i].as_str())
            && ws.get(i + 1).is_some_and(|w| w == "to")
            && ws.get(i + 2).is_some_and(|w| LIKE.contains(&stem(w).as_str()) || DISLIKE.contains(&stem(w).as_str()))
        {
            i += 2;
        }
        // The start of an activity is the activity, from now on: "started
        // working at the hospital" works at the hospital, and so does one
        // that one ended up in or went back to ("ended up settling in
        // Denver", "went back to work as a paralegal").
        let activity_at = |k: usize| {
            ws.get(k).is_some_and(|w| w.ends_with("ing") && w.len() > 4)
                || (ws.get(k).is_some_and(|w| w == "work") && ws.get(k + 1).is_some_and(|w| matches!(w.as_str(), "as" | "at" | "for")))
        };
        let phase = match stem(&ws[i]).as_str() {
            "start" | "begin" | "began" => 1,
            // Switching or changing to an activity, or moving into one, starts it.
            "switch" | "chang" if ws.get(i + 1).is_some_and(|w| w == "to") => 2,
            "mov" if ws.get(i + 1).is_some_and(|w| w == "into") => 2,
            "end" if ws.get(i + 1).is_some_and(|w| w == "up") => 2,
            "go" | "return" | "get" | "mov" if ws.get(i + 1).is_some_and(|w| w == "back") && ws.get(i + 2).is_some_and(|w| w == "to") => 3,
            "return" if ws.get(i + 1).is_some_and(|w| w == "to") => 2,
            _ => 0,
        };
        if phase > 0 && activity_at(i + phase) {
            began = true;
            i += phase;
        }
        let v = stem(&ws[i]);
        let mut end = i + 1;
        let mut pred = v.clone();
        // Antonyms: the second word of a pair reads as a negated first.
        if let Some([a, _]) = antonyms.iter().find(|[_, b]| *b == ws[i]) {
            pred = stem(a);
            negations += 1;
        }
        // A preposition before a time ("retire in spring", "move in May")
        // says when, not what: no particle.
        if let Some(p) = ws.get(end).filter(|p| PARTICLES.contains(&p.as_str()) && !time_adjunct(&ws[end + 1..])) {
            // A direction before "to" says which way one moved, not where:
            // "moved down to Brighton" moved to Brighton.
            let direction = matches!(p.as_str(), "down" | "up" | "over" | "out" | "away" | "across")
                && ws.get(end + 1).is_some_and(|w| w == "to")
                && matches!(v.as_str(), "mov" | "reloc" | "relocat");
            pred = if direction { format!("{pred} to") } else { format!("{pred} {p}") };
            end += 1 + usize::from(direction);
            let second = |q: &&String| match q.as_str() {
                "of" => pred.ends_with(" out") || pred.ends_with(" rid"),
                "with" => pred.ends_with(" out") || pred.ends_with(" up"),
                "from" => pred.ends_with(" out") || pred.ends_with(" down") || pred.ends_with(" away"),
                "as" => pred.ends_with(" down"),
                _ => false,
            };
            if let Some(q) = ws.get(end).filter(second) {
                pred = format!("{pred} {q}");
                end += 1;
            }
        }
        (pred, end, ws[i].clone())
    };
    let mut rest = &ws[particle_end.min(ws.len())..];
    // A preference said with a copula: "is a big fan of X", "is tired of X".
    let mut copula_pref: Option<bool> = None;
    if pred == "be"
        && let Some((k, len, like)) = copula_preference(rest)
    {
        copula_pref = Some(like);
        rest = &rest[k + len..];
    }
    // Objects: antonym second words flip the polarity ("is disabled").
    let mut object: Vec<String> = Vec::new();
    for w in rest {
        if FILLER.contains(&w.as_str()) {
            if matches!(w.as_str(), "not" | "never") {
                negations += 1;
            }
            continue;
        }
        if let Some([a, _]) = antonyms.iter().find(|[_, b]| b == w) {
            negations += 1;
            object.push(stem(a));
        } else if is_time(w) {
            // A time word as it is (the stemmer would read "spring" as "spr"),
            // so it is still known as a time.
            object.push(w.clone());
        } else {
            object.push(stem(w));
        }
    }
    // "no X" as the object's determiner: "has no car".
    if rest.first().is_some_and(|w| w == "no") && !no_longer {
        negations += 1;
    }
    object.sort();
    object.dedup();
    let verb_stem = pred.split(' ').next().unwrap_or("").to_string();
    // "can't stand X" dislikes X; "is into X" likes it; "finds X boring" dislikes it.
    let cannot_stand = matches!(verb_stem.as_str(), "stand" | "bear" | "stomach") && negations % 2 == 1;
    let into = pred == "be" && rest.first().is_some_and(|w| w == "into");
    let is_dull = |w: &String| DULL.iter().any(|d| stem(d) == *w);
    let dull = verb_stem == "find" && object.iter().any(is_dull);
    if dull {
        object.retain(|w| !is_dull(w));
    }
    let family = if LIKE.contains(&verb_stem.as_str())
        || DISLIKE.contains(&verb_stem.as_str())
        || cannot_stand
        || into
        || dull
        || copula_pref.is_some()
    {
        "pref".to_string()
    } else if matches!(verb_stem.as_str(), "own" | "possess") {
        // Owning is having: "owns a boat" / "no longer has a boat".
        "hav".to_string()
    } else {
        pred.clone()
    };
    let positive = negations.is_multiple_of(2) != (DISLIKE.contains(&verb_stem.as_str()) || dull || copula_pref == Some(false));
    // Slots, their values without the times they hold at.
    let slot = if let Some(noun) = slot_noun { Some((noun.to_string(), object.clone())) } else { verb_slot(&pred, &ws, rest, &object) }
        .map(|(name, value)| {
            // A value that is only a time ("favourite season is autumn") keeps it.
            let timeless = if name == "age" || name == "shift" || value.iter().all(|w| is_time(w)) {
                value
            } else {
                value.into_iter().filter(|w| !is_time(w)).collect()
            };
            // An occupation's agent noun is its verb ("teacher", "teaches").
            let timeless = if name == "job" { agent_nouns(&timeless) } else { timeless };
            (name, timeless)
        });
    // A birthday tells an age, and a job one got or took is held from then on.
    let begins = slot
        .as_ref()
        .is_some_and(|(n, _)| n == "age" || ((n == "employer" || n == "job") && object.iter().any(|w| WORK_POSTS.contains(&w.as_str()))));
    // Endings: what they end.
    // Giving a thing to someone ends having it ("gave his bike to his cousin").
    let given = verb_stem == "giv"
        && rest.windows(2).any(|w| w[0] == "to" && matches!(w[1].as_str(), "his" | "her" | "their" | "a" | "an" | "the" | "my" | "our"));
    // Leaving a place early, today or at a time of day is an event, not an
    // ending ("left the bank at six").
    let clock = |w: &[String]| w[0] == "at" && (w[1].chars().all(|c| c.is_ascii_digit()) || matches!(w[1].as_str(), "noon" | "midnight"));
    let outing = verb_stem == "leav" && (clause.iter().any(|w| SAME_DAY.contains(&w.as_str())) || clause.windows(2).any(clock));
    // Dropping a plan or an idea ends it.
    let dropped = verb_stem == "drop" && pred == "drop" && rest.iter().any(|w| matches!(w.as_str(), "plan" | "plans" | "idea"));
    // A planned ending ("plans to retire") is a plan: nothing ends until it happens.
    // Losing a thing ends having it, and losing one's job the post; a
    // game, a match or one's keys lost end no state of that kind
    // (`Prop::lost`, [`change`]).
    // Ending verbs that also name a habit in the present ("closes the shop
    // at six", "donates to the food bank") end something only when done.
    let done = is_past_form(&verb_word) || saw_have;
    let lost = verb_stem == "los" && pred == "los" && !saw_be && done;
    let ends =
        if ((ENDINGS.contains(&verb_stem.as_str()) && !saw_be && pred != "end up" && (done || !PAST_ENDINGS.contains(&verb_stem.as_str())))
            || ENDING_PHRASES.contains(&pred.as_str())
            || given
            || dropped
            || lost)
            && !outing
            && !plan
        {
            (negations == 0).then(|| ended(rest))
        } else {
            None
        };
    // An ending of an activity ends its habit: "quit smoking", "retired
    // from running", "stopped being vegan".
    let gerund = rest.first().filter(|w| w.ends_with("ing") && w.len() > 4).map(|w| stem(w));
    let habit = matches!(verb_stem.as_str(), "quit" | "stop") || pred == "giv up" || (ends.is_some() && gerund.is_some());
    // The activity an ending names by its gerund ("stopped playing squash").
    let activity = if ends.is_some() { gerund } else { None };
    let state =
        (pred == "be" || present_or_plan(&verb_word) || INCHOATIVE.contains(&verb_stem.as_str()) || plan || began || begins) && !used;
    Some(Prop {
        holder: holder.to_string(),
        lost: lost && negations == 0,
        employer: employer_of(slot.as_ref(), rest),
        pred,
        family,
        positive,
        object,
        slot,
        ends,
        no_longer: no_longer && negations > 0,
        plan,
        habit,
        activity,
        state,
    })
}

/// Whether the phrase after a preposition (up to the next preposition or
/// clause) is a time: its words, determiners aside, are time words, months,
/// seasons or years ("in spring", "in the summer of 2021", "in June"; not
/// "in Spring Hill").
fn time_adjunct(words: &[String]) -> bool {
    let phrase: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .take_while(|w| !PARTICLES.contains(w) && !matches!(*w, "and" | "but" | "because" | "so" | "when" | "while"))
        .filter(|w| !matches!(*w, "the" | "a" | "an" | "this" | "that"))
        .collect();
    !phrase.is_empty() && phrase.iter().all(|w| is_time(w))
}

/// The number of an ordinal ("46th" → "46", "fifth" → "5").
fn ordinal(w: &str) -> Option<String> {
    if let Some(n) = ORDINALS.iter().position(|o| *o == w).filter(|n| *n > 0) {
        return Some(n.to_string());
    }
    if let Some(t) = TENTHS.iter().position(|o| *o == w) {
        return Some((20 + 10 * t).to_string());
    }
    let n = w.strip_suffix("st").or_else(|| w.strip_suffix("nd")).or_else(|| w.strip_suffix("rd")).or_else(|| w.strip_suffix("th"))?;
    (!n.is_empty() && n.chars().all(|c| c.is_ascii_digit())).then(|| n.to_string())
}

/// A job's words with agent nouns as their verb ("teacher" → "teach"), so
/// "works as a teacher" and "teaches for a living" are one value.
fn agent_nouns(words: &[String]) -> Vec<String> {
    let mut v: Vec<String> = words
        .iter()
        .map(|w| match w.strip_suffix("er") {
            Some(r) if r.len() >= 4 => stem(r),
            _ => w.clone(),
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Homes one can rent, share, own or buy.
/// What a team at work is called ("the sales team", "the HR department").
const TEAMS: &[&str] = &["team", "department", "dept", "division"];

/// Homes one lives on rather than in.
const ON_HOMES: &[&str] = &["houseboat", "boat", "barge", "farm", "ranch", "campus", "base", "island", "estate"];

const DWELLINGS: &[&str] = &["house", "flat", "apartment", "studio", "cottage", "bungalow", "condo", "townhouse", "home", "room"];

/// Businesses one runs for a living.
const BUSINESSES: &[&str] =
    &["busines", "business", "company", "firm", "shop", "restaurant", "cafe", "caf", "bakery", "salon", "agency", "startup", "store"];

/// Employers by kind: an activity at or for one is a job.
const EMPLOYERS: &[&str] = &["company", "firm", "agency", "startup", "corporation", "factory", "warehouse", "consultancy", "contractor"];

/// A time word, a month or a year: when a value holds, not what it is.
fn is_time(w: &str) -> bool {
    TIME_WORDS.contains(&w)
        || matches!(
            w,
            "januari"
                | "january"
                | "february"
                | "februari"
                | "march"
                | "april"
                | "may"
                | "june"
                | "july"
                | "juli"
                | "august"
                | "september"
                | "october"
                | "november"
                | "december"
                | "spring"
                | "summer"
                | "autumn"
                | "fall"
                | "winter"
                | "ago"
                | "sinc"
                | "since"
        )
        || (w.len() == 4 && w.chars().all(|c| c.is_ascii_digit()))
}

/// A day of the week or the weekend (stemmed or not: "tuesday", "tuesdays").
fn is_day(w: &str) -> bool {
    let w = w.trim_end_matches('s');
    matches!(w, "monday" | "tuesday" | "wednesday" | "thursday" | "friday" | "saturday" | "sunday" | "weekend")
}

/// A simple past form ("worked", "went"): an event, not a state.
fn is_past_form(w: &str) -> bool {
    (w.ends_with("ed") && w.len() > 3)
        || matches!(
            w,
            "went"
                | "left"
                | "sold"
                | "quit"
                | "broke"
                | "got"
                | "bought"
                | "won"
                | "lost"
                | "gave"
                | "made"
                | "took"
                | "met"
                | "ran"
                | "began"
                | "wrote"
                | "taught"
                | "came"
                | "saw"
                | "told"
                | "said"
                | "found"
                | "felt"
                | "kept"
                | "held"
                | "brought"
                | "thought"
                | "spent"
                | "sent"
                | "built"
                | "ate"
                | "drank"
                | "flew"
                | "drove"
                | "rode"
                | "swam"
                | "sang"
                | "won't"
        )
}

/// A word that can be a main verb after a copula ("is working", "is
/// married" is a status, not a verb).
fn is_verbish(w: &str) -> bool {
    (w.ends_with("ing") && w.len() > 4 && !matches!(w, "dating" | "seeing"))
        || (w.ends_with("ed")
            && !STATUSES.contains(&w)
            && w.len() > 4
            && !matches!(w, "interested" | "excited" | "tired" | "retired" | "employed" | "unemployed" | "based"))
}

/// A role in a group: "(the) captain of her netball team" is the slot
/// "role in netball team" with the value "captain".
fn role_in(rest: &[String]) -> Option<(String, Vec<String>)> {
    let stems = |ws: &[String]| {
        let mut v: Vec<String> = ws.iter().filter(|w| !FILLER.contains(&w.as_str())).map(|w| stem(w)).collect();
        v.sort();
        v.dedup();
        v
    };
    let k = rest.iter().position(|w| matches!(w.as_str(), "of" | "on" | "at" | "for" | "in"))?;
    let role = stems(&rest[..k]);
    let group = stems(&rest[k + 1..]);
    ((1..=3).contains(&role.len()) && !group.is_empty() && !group.iter().any(|w| is_time(w)))
        .then(|| (format!("role in {}", group.join(" ")), role))
}

/// The employer a job told with its place names ("a barista at a café",
/// "a mechanic at his uncle's garage"; not "at night", not "stay at
/// home"): the place's words after the last "at".
fn employer_of(slot: Option<&(String, Vec<String>)>, rest: &[String]) -> Option<Vec<String>> {
    if slot.is_none_or(|(n, _)| n != "job") {
        return None;
    }
    let k = rest.iter().rposition(|w| w == "at")?;
    if k > 0 && rest[k - 1] == "stay" {
        return None;
    }
    let mut v: Vec<String> = rest[k + 1..].iter().filter(|w| !FILLER.contains(&w.as_str()) && !is_time(w)).map(|w| stem(w)).collect();
    v.sort();
    v.dedup();
    (!v.is_empty()).then_some(v)
}

/// The slot a verb clause names: relationship status, age, job, employer,
/// home, school, team, car.
fn verb_slot(pred: &str, ws: &[String], rest: &[String], object: &[String]) -> Option<(String, Vec<String>)> {
    let slot = |name: &str| Some((name.to_string(), object.to_vec()));
    let stems = |ws: &[String]| {
        let mut v: Vec<String> = ws.iter().filter(|w| !FILLER.contains(&w.as_str())).map(|w| stem(w)).collect();
        v.sort();
        v.dedup();
        v
    };
    let has_seq = |seq: &[&str]| ws.windows(seq.len()).any(|w| w.iter().zip(seq).all(|(a, b)| a == b));
    let verb = pred.split(' ').next().unwrap_or("");
    let with = |extra: &str, drop: &[&str]| {
        let mut v: Vec<String> = object.iter().filter(|w| !drop.contains(&w.as_str())).cloned().collect();
        if !extra.is_empty() {
            v.push(extra.to_string());
        }
        v.sort();
        v.dedup();
        v
    };
    // "calls Berlin home": lives there.
    if verb == "call" && rest.len() >= 2 && rest.last().is_some_and(|w| w == "home") && !FILLER.contains(&rest[rest.len() - 2].as_str()) {
        return Some(("home".into(), stems(&rest[..rest.len() - 1])));
    }
    // "celebrated turning 34": an age, whatever frames the turning.
    if let Some(n) = rest.windows(2).find(|w| w[0] == "turning" && w[1].chars().all(|c| c.is_ascii_digit())).map(|w| w[1].clone()) {
        return Some(("age".into(), vec![n]));
    }
    // A favourite one has, named: "has a new favourite café called Luma"
    // (or "…, Luma": [`apposition`]).
    if matches!(verb, "hav" | "get" | "found" | "find" | "discover")
        && let Some(f) = rest.iter().position(|w| w == "favourite")
        && let Some(k) = rest.iter().position(|w| matches!(w.as_str(), "called" | "named"))
        && f + 1 < k
        && k + 1 < rest.len()
    {
        let head: Vec<&str> = rest[f..k].iter().map(String::as_str).filter(|w| !matches!(*w, "new" | "current")).collect();
        return Some((canonical_slot(&head.join(" ")), stems(&rest[k + 1..])));
    }
    // Working under someone: they are one's manager.
    if pred == "work" && rest.first().is_some_and(|w| w == "under") && rest.len() >= 2 {
        return Some(("manager".into(), stems(&rest[1..])));
    }
    // Moving, switching, changing or transferring to a school, or a degree
    // done at one: the school one attends.
    let moved = matches!(pred, "mov to" | "switch to" | "chang to" | "transferr to" | "transfer to");
    let degree = matches!(verb, "do" | "doing" | "pursu" | "tak" | "enrol" | "enroll" | "complet")
        && rest
            .iter()
            .any(|w| matches!(w.as_str(), "degree" | "master's" | "masters" | "phd" | "doctorate" | "diploma" | "course" | "mba"));
    if (moved || degree)
        && let Some(k) = rest.iter().rposition(|w| w == "at").map(|k| k + 1).or(moved.then_some(0))
        && rest[k..].iter().any(|w| SCHOOLS.contains(&w.as_str()))
        && !rest[k..].iter().any(|w| DWELLINGS.contains(&w.as_str()) || matches!(w.as_str(), "near" | "by" | "in" | "next"))
    {
        return Some(("school".into(), stems(&rest[k..])));
    }
    // Appointed, elected or voted to a position in a group.
    if matches!(verb, "appoint" | "elect" | "vot")
        && let Some(role) = role_in(&rest[usize::from(rest.first().is_some_and(|w| w == "as"))..])
    {
        return Some(role);
    }
    // How one earns a living ("drives a bus for a living", "sells earrings
    // full time"): the occupation, whatever the verb.
    if pred != "be" && (has_seq(&["for", "a", "living"]) || has_seq(&["full", "time"]) || has_seq(&["part", "time"])) {
        return Some(("job".into(), with(verb, &["liv", "full", "part", "time"])));
    }
    // Teaching at a school, waiting tables: occupations told by their verb.
    if (verb == "teach" && rest.iter().any(|w| SCHOOLS.contains(&w.as_str()))) || (verb == "wait" && object.iter().any(|w| w == "tabl")) {
        return Some(("job".into(), with(verb, &[])));
    }
    // A home one rents, shares, owns or bought ("rents a flat in Camden"):
    // the place it is in, as "lives in" says (not one bought for someone
    // else or as an investment).
    if matches!(verb, "rent" | "shar" | "buy" | "own" | "hav" | "get")
        && let Some(k) = rest.iter().rposition(|w| w == "in")
        && (rest[..k].iter().any(|w| DWELLINGS.contains(&w.as_str()))
            || (rest[..k].iter().any(|w| w == "place") && rest[..k].iter().any(|w| w == "own")))
        && !rest.iter().any(|w| matches!(w.as_str(), "for" | "as" | "investment" | "holiday"))
        && k + 1 < rest.len()
    {
        return Some(("home".into(), stems(&rest[k + 1..])));
    }
    // "lives near the beach in Brighton", "lives on his own in Bath": the
    // town one lives in.
    if (matches!(pred, "liv" | "liv near" | "liv with" | "liv on" | "liv by" | "mov in")
        || (pred == "mov" && rest.starts_with(&["back".to_string(), "in".to_string()])))
        && let Some(k) = rest.iter().rposition(|w| w == "in")
        && k + 1 < rest.len()
    {
        return Some(("home".into(), stems(&rest[k + 1..])));
    }
    // "got a job as a lifeguard": the occupation.
    if let Some(k) = rest.windows(2).position(|w| WORK_POSTS.contains(&w[0].as_str()) && w[1] == "as")
        && matches!(verb, "get" | "tak" | "land" | "accept" | "start" | "hav" | "begin" | "found")
        && k + 2 < rest.len()
    {
        return Some(("job".into(), stems(&rest[k + 2..])));
    }
    // Getting, taking or starting a job at a place: that place employs one.
    if let Some(k) = rest.windows(2).position(|w| WORK_POSTS.contains(&w[0].as_str()) && matches!(w[1].as_str(), "at" | "with"))
        && matches!(verb, "get" | "tak" | "land" | "accept" | "start" | "hav" | "begin" | "found")
        && k + 2 < rest.len()
    {
        return Some(("employer".into(), stems(&rest[k + 2..])));
    }
    // Becoming an occupation, retraining or being promoted: the job.
    if matches!(verb, "becam" | "becom")
        && !object.iter().any(|w| occupation_stems().contains(w))
        && let Some(role) = role_in(rest)
    {
        return Some(role);
    }
    if (matches!(verb, "becam" | "becom") && object.iter().any(|w| occupation_stems().contains(w)))
        || matches!(pred, "retrain as" | "qualify as" | "promot to")
    {
        return Some(("job".into(), agent_nouns(object)));
    }
    // Running or owning a business is one's occupation ("runs her own
    // catering business").
    if matches!(verb, "run" | "own") && object.iter().any(|w| BUSINESSES.contains(&w.as_str())) {
        return Some(("job".into(), with("", &["own"])));
    }
    // An activity at or for an employer ("builds hardware at a robotics
    // startup", "delivers groceries for an app company") is one's job.
    if pred != "be"
        && !matches!(verb, "volunteer" | "work" | "visit" | "eat" | "buy" | "shop" | "meet" | "stay" | "go" | "hav" | "liv")
        && let Some(k) = rest.iter().rposition(|w| matches!(w.as_str(), "at" | "for"))
        && rest[k + 1..].last().is_some_and(|w| EMPLOYERS.contains(&w.as_str()))
        && !rest.iter().any(|w| is_time(w) || matches!(w.as_str(), "weekends" | "weekend" | "sometimes" | "occasionally"))
    {
        let mut v = vec![verb.to_string()];
        v.extend(stems(&rest[..k]));
        v.sort();
        v.dedup();
        return Some(("job".into(), v));
    }
    // A person one has in a slot, named: "got a new manager called Priti"
    // is the manager slot with her name (a partner is a status, below).
    if matches!(verb, "hav" | "get")
        && let Some(k) = rest.iter().position(|w| matches!(w.as_str(), "called" | "named"))
        && let Some(noun) =
            rest[..k].last().map(|w| canonical_slot(w)).filter(|n| PERSON_SLOTS.contains(&n.as_str()) && !PARTNERS.contains(&n.as_str()))
        && k + 1 < rest.len()
    {
        return Some((noun, stems(&rest[k + 1..])));
    }
    // A thing one has one of ("has a Pixel phone"): its kind is the slot,
    // the words that tell which one are the value.
    if matches!(verb, "hav" | "own" | "buy" | "get" | "driv")
        && let Some(thing) = SINGLE_THINGS.iter().find(|t| object.iter().any(|w| w.ends_with(stem(t).as_str())))
    {
        return Some((format!("own {thing}"), with("", &[stem(thing).as_str(), "new", "old", "current", "second", "hand"])));
    }
    // A shift or a schedule: one at a time ("works the night shift", "is on
    // the day shift").
    if (pred != "be" || rest.first().is_some_and(|w| w == "on")) && object.iter().any(|w| w == "shift") {
        return Some(("shift".into(), with("", &["shift"])));
    }
    // Holding a position in a group ("chairs the association"), the same
    // slot as "is the chair of the association".
    if ROLE_VERBS.contains(&verb) && pred == verb && !object.is_empty() && !object.iter().any(|w| is_time(w)) {
        return Some((format!("role in {}", object.join(" ")), vec![verb.to_string()]));
    }
    if pred == "be" {
        let mut after = ws.iter().skip_while(|w| BE.contains(&w.as_str()) || matches!(w.as_str(), "not" | "never")).map(String::as_str);
        let (first, second) = (after.next()?, after.next().unwrap_or(""));
        if STATUSES.contains(&first)
            || (first == "back" && STATUSES.contains(&second))
            || (matches!(first, "a" | "an") && matches!(second, "widow" | "widower"))
            || (first == "in" && object.iter().any(|w| w == "relationship"))
        {
            return slot("relationship");
        }
        // Not working: "is unemployed", "is out of work", "is retired".
        if matches!(first, "unemployed" | "jobless" | "retired") || (first == "out" && second == "of" && object.iter().any(|w| w == "work"))
        {
            return Some(("job".into(), vec![if first == "retired" { "retir".into() } else { "unemploy".into() }]));
        }
        // Based somewhere (not for a while): where one lives.
        if first == "based" && second == "in" && !rest.iter().any(|w| is_time(w) || matches!(w.as_str(), "for" | "this" | "until")) {
            return Some(("home".into(), object.iter().filter(|w| *w != "bas" && *w != "based").cloned().collect()));
        }
        // "is in the sales team", "is on the design team": one's team.
        if matches!(first, "in" | "on")
            && object.last().is_some_and(|w| TEAMS.contains(&w.as_str()))
            && rest.last().is_some_and(|w| TEAMS.contains(&w.as_str()))
        {
            return Some(("team".into(), object.to_vec()));
        }
        // "is at Riverside Nursery": the school one attends (not at a
        // time: "is at the school today").
        if first == "at"
            && rest.iter().any(|w| SCHOOLS.contains(&w.as_str()))
            && !rest.iter().any(|w| is_time(w) || matches!(w.as_str(), "today" | "tonight" | "this" | "for" | "with"))
        {
            return Some(("school".into(), stems(&rest[1..])));
        }
        // "is 30", "is 30 years old".
        // A time it holds from says when, not what ("is 55 as of this week").
        if object.first().is_some_and(|w| w.chars().all(|c| c.is_ascii_digit()))
            && (object[1..].iter().all(|w| is_time(w) || w == "since")
                || object.iter().any(|w| w == "year") && object.iter().any(|w| w == "old"))
        {
            return Some(("age".into(), object[..1].to_vec()));
        }
        // An occupation: "is a nurse", "is a stay-at-home dad".
        if matches!(first, "a" | "an") {
            let np: Vec<&String> =
                rest.iter().skip(1).take_while(|w| !matches!(w.as_str(), "at" | "for" | "in" | "on" | "of" | "with")).collect();
            let home = has_seq(&["stay", "at", "home"]);
            let volunteer = np.iter().any(|w| w.starts_with("volunteer"));
            if home || (np.iter().any(|w| occupation_stems().contains(&stem(w))) && !volunteer) {
                return Some(("job".into(), if home { vec!["homemak".into()] } else { object.to_vec() }));
            }
        }
        // A role in something: "is the captain of her netball team" (one
        // role per group), and one she was made, appointed, elected, named
        // or voted ("was made captain of her netball team").
        if matches!(first, "a" | "an" | "the") {
            return role_in(rest);
        }
        if matches!(first, "made" | "appointed" | "elected" | "named" | "voted") {
            return role_in(&rest[1 + usize::from(second == "as")..]);
        }
        return None;
    }
    match pred {
        "work as" => Some(("job".into(), agent_nouns(object))),
        "work at" | "work for" => slot("employer"),
        "work on" if object.iter().any(|w| w == "team") => slot("team"),
        // Moving to another team at work is leaving the one one was in; a
        // department is a team.
        "mov to" | "transferr to" | "transfer to" | "switch to" | "switch" if object.iter().any(|w| TEAMS.contains(&w.as_str())) => {
            slot("team")
        }
        "work in" if object.last().is_some_and(|w| TEAMS.contains(&w.as_str()) && w != "team") => slot("team"),
        // What one lives on, if it is a dwelling ("lives on a houseboat"; not "on pasta").
        "liv on" if object.iter().any(|w| DWELLINGS.contains(&w.as_str()) || ON_HOMES.contains(&w.as_str())) => slot("home"),
        // Working in a place named with its article ("works in a factory")
        // is being employed there ("works in marketing", "in London": no).
        "work in" if rest.first().is_some_and(|w| matches!(w.as_str(), "a" | "an" | "the")) => slot("employer"),
        "mov" if rest.first().is_some_and(|w| w == "back") && rest.get(1).is_some_and(|w| w == "to") => {
            Some(("home".into(), object.iter().filter(|w| *w != "back").cloned().collect()))
        }
        "liv in" | "mov to" | "mov into" | "reloc to" | "relocat to" | "settl in" | "resid in" => slot("home"),
        "propos to" => Some(("relationship".into(), vec!["engag".into()])),
        "study at" => slot("school"),
        "report to" if !rest.iter().any(|w| is_time(w) || matches!(w.as_str(), "every" | "weekly" | "quarterly" | "monthly" | "daily")) => {
            slot("manager")
        }
        "sign with" | "sign for" => slot("team"),
        "transferr to" | "transfer to" | "go to" if rest.iter().any(|w| SCHOOLS.contains(&w.as_str())) => slot("school"),
        "play for" => slot("team"),
        "driv" => slot("car"),
        "turn" if object.first().is_some_and(|w| w.chars().all(|c| c.is_ascii_digit())) => Some(("age".into(), object[..1].to_vec())),
        // "celebrated his 46th birthday": 46 (not someone else's birthday).
        _ if object.iter().any(|w| w == "birthday") && !rest.iter().any(|w| w.ends_with("'s") || w.ends_with('\'')) => {
            let n = object.iter().find_map(|w| ordinal(w))?;
            Some(("age".into(), vec![n]))
        }
        // "married Theo" is married to him: the status with the partner.
        "dat" | "marry" => Some(("relationship".into(), with(verb, &[]))),
        "get" if rest.first().is_some_and(|w| matches!(stem(w).as_str(), "marry" | "engag" | "divorc")) => slot("relationship"),
        "hav" if rest.iter().any(|w| PARTNERS.contains(&w.as_str())) => slot("relationship"),
        "attend" if rest.iter().any(|w| SCHOOLS.contains(&w.as_str())) => slot("school"),
        // Starting at a school is attending it from then on.
        "start at" | "begin at" if rest.iter().any(|w| SCHOOLS.contains(&w.as_str())) => slot("school"),
        _ if verb == "study" => {
            let k = rest.iter().position(|w| w == "at")?;
            Some(("school".into(), stems(&rest[k + 1..])))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    //! Each decision rule pinned with the kinds of pair it is for, and the
    //! kinds it must leave alone (memform's own sentences).
    use super::*;

    /// [`change`] answers only where the later fact's probe is `None` or
    /// shares a key with the earlier fact's [`Reading::change_keys`]: what
    /// the pairing index relies on. Random facts of every kind the rules read.
    #[test]
    fn change_answers_only_on_shared_change_keys() {
        use crate::state::random::{Rng, fact};
        let antonyms = antonyms();
        let mut r = Rng(0x51_7cc1_b727_220a);
        let facts: Vec<Reading> = (0..300)
            .map(|_| {
                let (s, p, o, c) = fact(&mut r);
                let single = ["works at", "lives in", "is married to", "has manager"].contains(&p.as_str());
                Reading::of_fact(&s, &p, single.then_some(o.as_str()), &c, &antonyms)
            })
            .collect();
        let (mut changes, mut probed) = (0, 0);
        for a in &facts {
            let keys = a.change_keys();
            for b in &facts {
                if change(a, b).is_some() {
                    changes += 1;
                    if let Some(probe) = b.change_probe() {
                        probed += 1;
                        assert!(probe.iter().any(|k| keys.contains(k)), "{a:?} / {b:?}");
                    }
                }
            }
        }
        assert!(changes > 500 && probed > 200, "{changes} changes, {probed} through keys");
    }

    fn antonyms() -> Vec<[String; 2]> {
        [("enabled", "disabled"), ("love", "hate"), ("likes", "dislikes")].iter().map(|(a, b)| [a.to_string(), b.to_string()]).collect()
    }

    fn read(subject: &str, content: &str) -> Reading {
        Reading::of(subject, "states", content, &antonyms())
    }

    /// The evidence that the second sentence replaces the first (subject Maya).
    fn evidence(first: &str, second: &str) -> Option<Change> {
        change(&read("Maya", first), &read("Maya", second))
    }

    fn restated(first: &str, second: &str) -> bool {
        read("Maya", second).restates(&read("Maya", first))
    }

    #[track_caller]
    fn update(first: &str, second: &str, want: Change) {
        assert_eq!(evidence(first, second), Some(want), "{first:?} → {second:?}: {:#?} / {:#?}", read("Maya", first), read("Maya", second));
        assert!(!restated(first, second), "{first:?} / {second:?} read as a restatement");
    }

    #[track_caller]
    fn coexist(first: &str, second: &str) {
        assert_eq!(evidence(first, second), None, "{first:?} → {second:?}: {:#?} / {:#?}", read("Maya", first), read("Maya", second));
        assert!(!restated(first, second), "{first:?} / {second:?} read as a restatement");
    }

    #[track_caller]
    fn duplicate(first: &str, second: &str) {
        assert!(restated(first, second), "{first:?} / {second:?}: {:#?} / {:#?}", read("Maya", first), read("Maya", second));
        assert_eq!(evidence(first, second), None, "{first:?} → {second:?}");
    }

    #[test]
    fn the_same_slot_with_another_value_replaces() {
        let slot = |s: &str| Change::Slot(s.to_string());
        update("Maya works as a pharmacist", "Maya works as a carpenter", slot("job"));
        update("Maya works at a law firm downtown", "Maya works at the city museum", slot("employer"));
        update("Maya lives in Lisbon", "Maya moved to Porto", slot("home"));
        update("Maya lives in Lisbon", "Maya now lives in Porto", slot("home"));
        update("Maya is single", "Maya is dating Theo", slot("relationship"));
        update("Maya is dating Theo", "Maya is married to Theo", slot("relationship"));
        update("Maya is engaged to Theo", "Maya got married", slot("relationship"));
        update("Maya is 27 years old", "Maya is twenty-eight years old", slot("age"));
        update("Maya is 27", "Maya turned 28", slot("age"));
        update("Maya's favourite band is The Owls", "Maya's favorite band is now Low Tide", slot("favourite band"));
        update("Maya's manager is Ingrid", "Maya's new manager is Bruno", slot("manager"));
        update("Maya studies at Ridgeway College", "Maya studies at the Northfield Institute", slot("school"));
        update("Maya plays for the Harbour Hawks", "Maya plays for the Valley Foxes", slot("team"));
        update("Maya has a boyfriend named Theo", "Maya is single", slot("relationship"));
        update("Maya is not seeing anyone", "Maya is dating Theo", slot("relationship"));
        update("Maya is separated from her husband", "Maya is back together with her husband", slot("relationship"));
        update("Maya is the secretary of the rowing club", "Maya is a coach at the rowing club", slot("role in club row"));
        update("Maya works on the billing team", "Maya works on the mobile team", slot("team"));
        update("Maya attends Hillcrest School", "Maya attends Larkfield Academy", slot("school"));
        update("Maya is studying for a diploma at Brookvale", "Maya is studying for a diploma at Westmere", slot("school"));
        update("Maya's girlfriend is Ines", "Maya's girlfriend is Clara", slot("girlfriend"));
        // A value's time is not its value; a past state is no current value.
        coexist("Maya moved to Porto in 2020", "Maya moved to a bigger flat in Porto in March");
        coexist("Maya worked at a law firm from 2012 to 2016", "Maya works at the city museum");
        coexist("Maya lived in Lisbon as a student", "Maya lives in Porto");
        // A person in a slot: what is said of her is not the slot's value.
        coexist("Maya's girlfriend is vegetarian", "Maya is not vegetarian");
        // The same value, or one within the other, is no change.
        coexist("Maya lives in Lisbon", "Maya lives in Lisbon with two flatmates");
        assert_eq!(evidence("Maya works as a pharmacist", "Maya works as a pharmacist"), None);
    }

    #[test]
    fn the_common_shapes_of_a_slot_are_one_slot() {
        let slot = |s: &str| Change::Slot(s.to_string());
        // An occupation, whatever its shape: "is a X", "works as X", a verb
        // "for a living" or "full time", teaching at a school, waiting tables.
        update("Maya is a librarian", "Maya works as a welder", slot("job"));
        update("Maya is a stay-at-home mum", "Maya works as a florist", slot("job"));
        update("Maya repairs bikes for a living", "Maya is a dentist", slot("job"));
        update("Maya teaches maths at a primary school", "Maya works as a translator", slot("job"));
        update("Maya waits tables at a diner", "Maya paints houses full time", slot("job"));
        // Home: moving back, relocating, settling.
        update("Maya lives in Galway", "Maya relocated to Cork", slot("home"));
        update("Maya lives in Galway", "Maya moved back to Sligo", slot("home"));
        // A thing one has one of, told apart by its make or model.
        update("Maya has a Nokia phone", "Maya has an iPhone 12", slot("own phone"));
        update("Maya drives a red Fiat car", "Maya bought a Volvo car", slot("own car"));
        // A position in a group, by verb or by noun.
        update("Maya is the secretary of the chess club", "Maya chairs the chess club", slot("role in chess club"));
        // A shift.
        update("Maya works the early shift at the depot", "Maya works the late shift at the depot", slot("shift"));
        // Negatives: another holder, a hobby beside a job, the same job told
        // twice, a new phone of the same model, another group.
        coexist("Maya is a librarian", "Maya's brother works as a welder");
        coexist("Maya is a librarian", "Maya plays the cello in an orchestra");
        coexist("Maya is a librarian", "Maya works as a librarian at the city library");
        coexist("Maya has a phone", "Maya has a new phone");
        coexist("Maya chairs the chess club", "Maya is the secretary of the hiking club");
        coexist("Maya is a librarian", "Maya is a fan of jazz");
        coexist("Maya lives in Galway", "Maya's sister relocated to Cork");
    }

    #[test]
    fn an_explicit_ending_ends_the_state_it_names() {
        update("Maya plays bass in a band", "Maya quit the band", Change::Ending);
        update("Maya works at the bakery on Elm Street", "Maya left her job at the bakery", Change::Ending);
        update("Maya owns a blue scooter", "Maya sold her scooter last week", Change::Ending);
        update("Maya lives in a flat in Lisbon", "Maya moved out of her flat in Lisbon", Change::Ending);
        update("Maya is dating Theo", "Maya broke up with Theo", Change::Ending);
        update("Maya plans to visit Japan in April", "Maya cancelled her trip to Japan", Change::Ending);
        update("Maya smokes", "Maya quit smoking", Change::Ending);
        update("Maya joined a climbing club", "Maya quit the climbing club", Change::Ending);
        update("Maya has three goldfish", "Maya gave her goldfish to a neighbour", Change::Ending);
        update("Maya booked a sailing course for June", "Maya cancelled her sailing course", Change::Ending);
        update("Maya is organising a street party", "Maya's street party was called off", Change::Ending);
        update("Maya plans to learn Korean next year", "Maya has decided against learning Korean", Change::Ending);
        update("Maya plans to enter the city marathon", "Maya withdrew from the city marathon", Change::Ending);
        update("Maya plans to move to Oslo in May", "Maya is not moving to Oslo", Change::Ending);
        update("Maya plans to visit Rome in May", "Maya scrapped her Rome trip", Change::Ending);
        update("Maya is hosting a book swap in June", "Maya postponed the book swap", Change::Ending);
        update("Maya is married to Theo", "Maya split from Theo", Change::Ending);
        // Giving someone advice to do something is no giving away.
        coexist("Maya supports Theo with his shop", "Maya gives Theo tips to grow his shop");
        // An event in the past is not a state an ending can end.
        coexist("Maya went to a party at Theo's flat", "Maya left the party early");
        // An ending of something else ends nothing here.
        coexist("Maya plays bass in a band", "Maya quit her job at the bakery");
        // Time words are not what an ending ends.
        coexist("Maya volunteers every week", "Maya sold her bike last week");
        coexist("Maya works at the bakery", "Maya left work early today");
    }

    #[test]
    fn no_longer_and_not_anymore_end_the_same_predicate() {
        update("Maya plays tennis every Sunday", "Maya no longer plays tennis", Change::Ending);
        update("Maya eats meat", "Maya doesn't eat meat anymore", Change::Ending);
        update("Maya loves horror films", "Maya doesn't like horror films any more", Change::Ending);
        update("Maya is vegetarian", "Maya is not vegetarian anymore", Change::Ending);
        // A negation of a different proposition.
        coexist("Maya plays tennis", "Maya doesn't watch tennis anymore");
        coexist("Maya eats fish", "Maya no longer eats meat");
        coexist("Maya likes dogs", "Maya does not like cats");
    }

    #[test]
    fn a_polarity_flip_of_the_same_proposition_replaces() {
        update("Maya loves sushi", "Maya hates sushi", Change::Flip);
        update("Maya really loves jazz these days", "Honestly, Maya can't stand jazz now", Change::Flip);
        update("Maya dislikes running", "Maya enjoys running now", Change::Flip);
        update("Maya is really into board games", "Maya avoids board games", Change::Flip);
        update("Maya loves knitting scarves", "Maya finds knitting scarves boring", Change::Flip);
        update("Maya has a car", "Maya doesn't have a car", Change::Flip);
        update("Maya's dark mode is enabled", "Maya's dark mode is disabled", Change::Flip);
        update("dark mode: enabled", "dark mode: disabled", Change::Flip);
        // Antonyms about different objects, or a negation elsewhere.
        coexist("Maya loves cats", "Maya hates spiders");
        coexist("Maya loves her new job", "Maya hates the commute to her new job");
        coexist("Maya thinks the plan is good", "Maya encourages Theo not to give up on the plan");
    }

    #[test]
    fn another_holder_or_another_time_is_no_change() {
        // Family members: a possessive that names a person.
        coexist("Maya works as a nurse", "Maya's brother works as a chef");
        coexist("Maya is single", "Maya's sister is married");
        coexist("Maya's sister lives in Oslo", "Maya lives in Bergen");
        // Events at different times; wins and losses of different games.
        coexist("Maya went hiking on Saturday", "Maya went hiking last weekend");
        coexist("Maya's team won the semi-final", "Maya's team lost the final");
        coexist("Maya won a chess tournament in March", "Maya lost a chess match yesterday");
        // Multi-valued preferences.
        coexist("Maya loves jazz", "Maya loves hiking");
        coexist("Maya has a cat", "Maya has a dog");
        // A negation and shared words alone are no evidence.
        coexist("Maya believes Theo has potential", "Maya tells Theo not to let anything stop him");
    }

    #[test]
    fn first_person_words_stand_for_the_speaker() {
        let old = Reading::of_speaker("Maya", "I go to a book club every month.", &[]);
        assert_eq!(change(&old, &Reading::of_speaker("Maya", "Quick note: I quit the book club", &[])), None, "a label is not the subject");
        assert_eq!(change(&old, &Reading::of_speaker("Maya", "I quit the book club.", &[])), Some(Change::Ending));
        let mine = Reading::of_speaker("Maya", "My manager is Ingrid.", &[]);
        assert_eq!(change(&mine, &Reading::of_speaker("Maya", "My manager is Bruno now.", &[])), Some(Change::Slot("manager".into())));
        assert!(Reading::of_speaker("Maya", "I'm a nurse", &[]).restates(&read("Maya", "Maya works as a nurse")));
    }

    #[test]
    fn wider_shapes_of_a_slot() {
        let slot = |s: &str| Change::Slot(s.to_string());
        // An occupation one became, retrained as, was promoted to, or runs as a business.
        update("Maya is a chemist", "Maya became a florist", slot("job"));
        update("Maya is a cashier", "Maya retrained as an electrician", slot("job"));
        update("Maya is a junior analyst", "Maya was promoted to senior analyst", slot("job"));
        update("Maya works as a librarian", "Maya runs her own bakery", slot("job"));
        update("Maya is unemployed", "Maya works at a garden centre", slot("job"));
        update("Maya is out of work", "Maya works as a courier", slot("job"));
        update("Maya works at a bank", "Maya got a job at the town museum", slot("employer"));
        update("Maya works at a bank", "Maya started working at the town museum", slot("employer"));
        update("Maya packs boxes for a shipping company", "Maya designs logos at a branding agency", slot("job"));
        // Home: a dwelling one rents or bought, where one is based, a home noun.
        update("Maya rents a room in Oxford", "Maya bought a cottage in Kendal", slot("home"));
        update("Maya lives in Oslo", "Maya is based in Tromso", slot("home"));
        update("Maya lives in Oslo", "Maya's home is in Bergen", slot("home"));
        update("Maya lives near the harbour in Oslo", "Maya lives on her own in Bergen", slot("home"));
        // Relationship, age, favourite, manager, team, school, shift.
        update("Maya is engaged to Theo", "Maya married Theo in May", slot("relationship"));
        update("Maya is married", "Maya is a widow", slot("relationship"));
        update("Maya is 44", "Maya celebrated her 45th birthday", slot("age"));
        update("Maya's favourite drink is cider", "Maya's favourite drink these days is kombucha", slot("favourite drink"));
        update("Maya's favourite poet is Keats", "Yeats is now Maya's favourite poet", slot("favourite poet"));
        update("Maya's boss is Ingrid", "Maya reports to Bruno now", slot("manager"));
        update("Maya's team leader is Ingrid", "Maya's team leader is Bruno", slot("manager"));
        update("Maya plays for the Harbour Hawks", "Maya signed with the Valley Foxes", slot("team"));
        update("Maya studies at Brookvale College", "Maya transferred to Westmere College", slot("school"));
        update("Maya is on the early shift", "Maya is on the late shift", slot("shift"));
        // Negatives: another holder, a recurring event, a stay, someone else's
        // birthday, a hobby at a place that is no employer, an investment.
        coexist("Maya is married to Theo", "Maya's sister is divorced");
        coexist("Maya's boss is Ingrid", "Maya reports to the board every month");
        coexist("Maya lives in Oslo", "Maya is based in Bergen for the summer");
        coexist("Maya is 44", "Maya celebrated her son's 12th birthday");
        coexist("Maya works as a nurse", "Maya repairs bikes for her neighbours");
        coexist("Maya lives in Oslo", "Maya bought a flat in Bergen as an investment");
        coexist("Maya works at a bank", "Maya's brother got a job at the museum");
        duplicate("Maya is 40", "Maya is forty years old");
        assert_eq!(evidence("Maya works as a teacher", "Maya teaches for a living"), None, "an agent noun is its verb");
    }

    /// Three cases of the second round's own that its rules got wrong
    /// (found when the merged tree's tests first ran), fixed in the third
    /// round by principle, each beside what its rule must leave alone.
    #[test]
    fn known_misses_of_the_second_round() {
        let slot = |s: &str| Change::Slot(s.to_string());
        // A modal after a copula is a word of the value ("is May", "is Will"),
        // not an auxiliary; before a verb it still is one.
        update("Maya's favourite month is May", "Maya's favourite month is October", slot("favourite month"));
        update("Maya's favourite month is October", "May is now Maya's favourite month", slot("favourite month"));
        update("Maya's favourite month is May", "Maya's favourite month these days is June", slot("favourite month"));
        duplicate("Maya's favourite month is May", "May is Maya's favourite month");
        coexist("Maya's favourite month is May", "Maya's favourite day is Friday");
        coexist("Maya's favourite month is May", "Maya's sister's favourite month is October");
        coexist("Maya lives in Oslo", "Maya may visit Bergen in May");
        // A preposition before a time is no particle ("retire in spring"), so
        // a decision not to do what was planned ends the plan; a decision not
        // to do something else, or another person's, ends nothing.
        update("Maya plans to retire in spring", "Maya has decided not to retire", Change::Ending);
        update("Maya plans to move in June", "Maya decided not to move", Change::Ending);
        coexist("Maya plans to retire in spring", "Maya has decided not to sell her house");
        coexist("Maya plans to retire in spring", "Maya's husband has decided not to retire");
        coexist("Maya plans to travel in spring", "Maya decided not to travel to Peru");
        coexist("Maya plans to move in June", "Maya decided not to move in with Theo");
        // A place whose name starts with a time word is still a place.
        update("Maya lives in Spring Hill", "Maya lives in Oak Park", slot("home"));
        coexist("Maya lives in Spring Hill", "Maya lives in Spring Hill with Theo");
        // An ending that names an activity by its gerund ends only that
        // activity: the state's verb (or a word of its object) and every
        // other word of the activity.
        coexist("Maya plays tennis", "Maya stopped playing squash");
        coexist("Maya watches squash on TV", "Maya stopped playing squash");
        coexist("Maya swims at the lido", "Maya stopped swimming in the sea");
        update("Maya plays squash with Ann", "Maya stopped playing squash", Change::Ending);
        update("Maya goes running every morning", "Maya stopped running", Change::Ending);
        update("Maya is learning Japanese", "Maya gave up learning Japanese", Change::Ending);
    }

    /// A third set of memform's own pairs, written before the third round's
    /// rules were changed or measured (kinds of docs/pairs.md, another
    /// speaker): the decision each should get, counted and listed.
    #[test]
    fn third_round_fresh_pairs() {
        // (first, second, true = update / false = coexist)
        let pairs: &[(&str, &str, bool)] = &[
            // Updates: job, home, relationship, age, favourite, ownership,
            // a plan cancelled, an ending, a flip with stance words, roles.
            ("Tomas works as a bus driver", "Tomas is a paramedic now", true),
            ("Tomas works at a call centre", "Tomas works for the city council", true),
            ("Tomas lives in Leeds", "Tomas moved to Manchester last month", true),
            ("Tomas shares a flat in Bristol", "Tomas lives in Cardiff", true),
            ("Tomas is married to Elena", "Tomas is divorced", true),
            ("Tomas is single", "Tomas is engaged to Priya", true),
            ("Tomas is 52", "Tomas turned 53 in August", true),
            ("Tomas's favourite film is Alien", "Tomas's favourite film these days is Arrival", true),
            ("Tomas's favorite sport is cricket", "Rugby is Tomas's favourite sport now", true),
            ("Tomas owns a motorbike", "Tomas sold his motorbike", true),
            ("Tomas has a Samsung phone", "Tomas has a Pixel phone now", true),
            ("Tomas plans to run the Berlin marathon", "Tomas pulled out of the Berlin marathon", true),
            ("Tomas is planning a trip to Iceland", "Tomas called off his trip to Iceland", true),
            ("Tomas goes to a pottery class on Tuesdays", "Tomas no longer goes to the pottery class", true),
            ("Tomas drinks coffee every morning", "Tomas doesn't drink coffee anymore", true),
            ("Tomas enjoys gardening", "Honestly, Tomas hates gardening these days", true),
            ("Tomas can't stand country music", "Tomas really loves country music now", true),
            ("Tomas's manager is Greta", "Tomas's boss is now Hamid", true),
            ("Tomas is the treasurer of the allotment society", "Tomas is the chair of the allotment society", true),
            ("Tomas studies at Kingsford College", "Tomas studies at the Harlow Institute", true),
            ("Tomas volunteers at the food bank", "Tomas stopped volunteering at the food bank", true),
            ("Tomas is dating Marco", "Tomas and Marco broke up", true),
            // Coexists: multi-valued, family members, another time, a negation
            // or antonym about something else, games, a related topic, an
            // ending of something else, a past event, a plan of another thing.
            ("Tomas likes jazz", "Tomas likes hip hop too", false),
            ("Tomas lives in Leeds", "Tomas's daughter moved to York", false),
            ("Tomas works as a bus driver", "Tomas's wife works as a dentist", false),
            ("Tomas visited Rome in 2018", "Tomas visited Rome last spring", false),
            ("Tomas eats fish", "Tomas doesn't eat red meat anymore", false),
            ("Tomas likes his neighbours", "Tomas does not like his neighbour's dog", false),
            ("Tomas loves his garden", "Tomas hates mowing the lawn", false),
            ("Tomas's team won the league", "Tomas's team lost the cup final", false),
            ("Tomas plays guitar", "Tomas bought a new amplifier", false),
            ("Tomas plays football on Saturdays", "Tomas stopped playing golf", false),
            ("Tomas went to a concert on Friday", "Tomas left the concert early", false),
            ("Tomas is vegetarian", "Tomas's son is not vegetarian", false),
            ("Tomas plans to retire next year", "Tomas decided not to sell his house", false),
            ("Tomas's favourite month is June", "Tomas's favourite day is Friday", false),
            ("Tomas works at the bakery", "Tomas left his keys at the bakery", false),
        ];
        let at = |c: &str| Reading::of("Tomas", "states", c, &antonyms());
        let wrong: Vec<String> = pairs
            .iter()
            .filter_map(|(first, second, replaces)| {
                let (a, b) = (at(first), at(second));
                let got = change(&a, &b);
                let right = got.is_some() == *replaces && !b.restates(&a);
                (!right).then(|| format!("{first:?} → {second:?}: want {}, got {got:?}", if *replaces { "update" } else { "coexist" }))
            })
            .collect();
        let updates = pairs.iter().filter(|p| p.2).count();
        assert!(updates >= 20 && pairs.len() - updates >= 12, "{updates} updates of {}", pairs.len());
        assert!(wrong.is_empty(), "{} of {} right; wrong:\n{}", pairs.len() - wrong.len(), pairs.len(), wrong.join("\n"));
    }

    /// What a pair of the fresh-pairs tests should be decided as.
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Want {
        Update,
        Duplicate,
        Coexist,
    }

    /// The pairs decided otherwise than wanted, described: `observed` read
    /// as third-person statements about `who`, `said` as `who`'s own
    /// first-person turns (their words standing for her). An update must be
    /// a change and no restatement, a duplicate a restatement and no
    /// change, a coexisting pair neither.
    fn wrongly_decided(who: &str, observed: &[(&str, &str, Want)], said: &[(&str, &str, Want)]) -> Vec<String> {
        let at = |c: &str| Reading::of(who, "states", c, &antonyms());
        let first_person = |c: &str| Reading::of_speaker(who, c, &antonyms());
        let judged = observed.iter().map(|p| (p, at(p.0), at(p.1))).chain(said.iter().map(|p| (p, first_person(p.0), first_person(p.1))));
        judged
            .filter_map(|((first, second, want), a, b)| {
                let (got, merged) = (change(&a, &b), b.restates(&a));
                let right = match want {
                    Want::Update => got.is_some() && !merged,
                    Want::Duplicate => merged && got.is_none(),
                    Want::Coexist => got.is_none() && !merged,
                };
                (!right).then(|| format!("{first:?} → {second:?}: want {want:?}, got {got:?}, restated {merged}"))
            })
            .collect()
    }

    /// Fails unless the pairs decided wrong are exactly the `known` misses
    /// (each named by its start), of `all` pairs: a new miss shows, and so
    /// does a known one now decided right.
    #[track_caller]
    fn assert_only_known_misses(wrong: &[String], known: &[&str], all: usize) {
        let unexpected: Vec<&String> = wrong.iter().filter(|w| !known.iter().any(|k| w.starts_with(k))).collect();
        let fixed: Vec<&&str> = known.iter().filter(|k| !wrong.iter().any(|w| w.starts_with(*k))).collect();
        assert!(
            unexpected.is_empty() && fixed.is_empty(),
            "{} of {all} right; wrong and not known ({}):\n{}\nknown misses now right (update the list and docs/pipeline.md): {fixed:?}",
            all - wrong.len(),
            unexpected.len(),
            unexpected.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
        );
    }

    /// A fourth set of memform's own pairs, written before the fourth
    /// round's rules were changed or measured, in the phrasings a person
    /// uses in chat (contractions, "these days", "switched", "ended up",
    /// "got a new", tense mixes): updates, restatements and coexisting
    /// pairs of every kind of docs/pairs.md, another speaker. Each is
    /// counted right when it gets its decision: an update shows evidence of
    /// change and is no restatement; a restatement restates and shows none;
    /// a coexisting pair neither.
    #[test]
    fn fourth_round_fresh_pairs() {
        use Want::{Coexist as C, Duplicate as D, Update as U};
        // Third-person observations about Rosa.
        let observed: &[(&str, &str, Want)] = &[
            // Updates. Job.
            ("Rosa works as a receptionist at a dental clinic", "Rosa switched careers and is now a software tester", U),
            ("Rosa is a primary school teacher", "Rosa ended up taking a job as a data analyst", U),
            ("Rosa works at Tesco", "Rosa got a new job at Lidl", U),
            ("Rosa's a barista at a coffee shop", "Rosa's a nurse now", U),
            ("Rosa is a stay-at-home mum", "Rosa went back to work as a paralegal", U),
            ("Rosa works at the garden centre", "Rosa's been working at a vet clinic since June", U),
            ("Rosa works for Deloitte", "Rosa quit Deloitte to go freelance", U),
            // Home.
            ("Rosa lives in Glasgow", "Rosa moved down to Brighton in the spring", U),
            ("Rosa rents an apartment in Madrid", "Rosa's living in Valencia these days", U),
            ("Rosa lives in a shared house in Leeds", "Rosa's moved into a flat in Sheffield", U),
            ("Rosa lives in Boston", "Rosa ended up settling in Denver", U),
            ("Rosa lives in Cork", "Rosa and her partner bought a house in Kinsale", U),
            // Relationship status.
            ("Rosa is in a relationship with Sam", "Rosa and Sam split last month", U),
            ("Rosa has a girlfriend", "Rosa is single again", U),
            ("Rosa is dating Kai", "Rosa got engaged to Kai", U),
            ("Rosa is married to Omar", "Rosa and Omar got divorced", U),
            ("Rosa is seeing someone", "Rosa's single now", U),
            // Age.
            ("Rosa is 29", "Rosa just turned thirty", U),
            ("Rosa's daughter is 4", "Rosa's daughter just had her fifth birthday", U),
            ("Rosa's son Leo is 6", "Rosa's son Leo is 7 now", U),
            // Favourites.
            ("Rosa's favourite TV show is Succession", "Rosa's new favourite show is The Bear", U),
            ("Rosa's favourite food is ramen", "These days Rosa's favourite food is tacos", U),
            ("Rosa's favorite colour is green", "Rosa's favourite color has changed to purple", U),
            // Ownership.
            ("Rosa owns a Honda Civic", "Rosa finally sold the Civic", U),
            ("Rosa has a Kindle", "Rosa gave her Kindle to her niece", U),
            ("Rosa drives a Ford Fiesta", "Rosa traded the Fiesta for a Tesla", U),
            ("Rosa has a PlayStation", "Rosa doesn't have her PlayStation anymore", U),
            // A plan cancelled.
            ("Rosa is going to Japan to study next spring", "Rosa isn't going to Japan after all", U),
            ("Rosa is planning to repaint the kitchen", "Rosa gave up on repainting the kitchen", U),
            ("Rosa wants to adopt a greyhound", "Rosa decided she won't adopt a greyhound", U),
            // Endings, "no longer", "not … anymore".
            ("Rosa eats meat", "Rosa went vegan and stopped eating meat", U),
            ("Rosa is a member of the tennis club", "Rosa isn't a member of the tennis club anymore", U),
            ("Rosa smokes", "Rosa's given up smoking", U),
            ("Rosa plays in a five-a-side league", "Rosa doesn't play five-a-side anymore", U),
            ("Rosa is into rock climbing", "Rosa's not into climbing any more", U),
            // A flip with stance words around it.
            ("Rosa loves reality TV", "Rosa honestly can't stand reality TV these days", U),
            ("Rosa hates running", "Rosa's actually come to enjoy running", U),
            ("Rosa enjoys her job at the library", "Rosa doesn't enjoy her job at the library at all now", U),
            // Roles: manager, team, school.
            ("Rosa's team lead is Marcus", "Rosa reports to Jenna these days", U),
            ("Rosa plays for Ashford Rovers", "Rosa's playing for Kingsbury Town now", U),
            ("Rosa's son attends Hillside Primary School", "Rosa's son started at Oakwood Academy", U),
            ("Rosa's manager is Dev", "Rosa got a new manager called Priti", U),
            // Restatements.
            ("Rosa is a nurse", "Rosa's a nurse", D),
            ("Rosa lives in Leeds", "Rosa's living in Leeds these days", D),
            ("Rosa has two cats", "Rosa has got 2 cats", D),
            ("Rosa is thirty-one", "Rosa is 31 years old", D),
            ("Rosa loves gardening", "Rosa absolutely adores gardening", D),
            ("Rosa goes swimming every Friday", "Every Friday Rosa goes swimming", D),
            ("Rosa doesn't eat meat", "Rosa does not eat meat", D),
            ("Rosa is married to Omar", "Rosa's married to Omar", D),
            ("Rosa can't stand olives", "Rosa really dislikes olives", D),
            ("Rosa's favourite film is Amélie", "Amélie is Rosa's favourite film", D),
            ("Rosa is in a relationship with Sam", "Rosa is still in a relationship with Sam these days", D),
            ("Rosa works as an electrician", "Rosa's an electrician", D),
            ("Rosa is not into football", "Rosa isn't into football", D),
            // Coexisting: family members, multi-valued, another time, a
            // negation or antonym about something else, games, a related
            // topic, a one-off, a past state, a possessive beside a contraction.
            ("Rosa lives in Glasgow", "Rosa's sister's moved to London", C),
            ("Rosa is single", "Rosa's best friend just got engaged", C),
            ("Rosa loves Italian food", "Rosa's gotten into Thai food lately", C),
            ("Rosa plays the violin", "Rosa's picked up the ukulele as well", C),
            ("Rosa works at the library", "Rosa's not working this Saturday", C),
            ("Rosa drives a Toyota", "Rosa's brother sold his Toyota", C),
            ("Rosa lived in Rome as a student", "Rosa lives in Turin", C),
            ("Rosa has a dog called Biscuit", "Rosa got a second dog", C),
            ("Rosa has an iPhone", "Rosa got a new case for her iPhone", C),
            ("Rosa loves her job", "Rosa hates her new commute", C),
            ("Rosa won the club quiz in March", "Rosa lost the pub quiz on Friday", C),
            ("Rosa plans to visit Lisbon in June", "Rosa decided not to visit Porto", C),
            ("Rosa is vegetarian", "Rosa doesn't eat fish", C),
            ("Rosa goes to yoga on Mondays", "Rosa skipped yoga this Monday", C),
            ("Rosa works at the bank", "Rosa left the bank at six", C),
            ("Rosa's daughter is 5", "Rosa is 35", C),
            ("Rosa's favourite band is Blur", "Rosa's favourite album is Parklife", C),
            ("Rosa is married to Omar", "Rosa and Omar had a big row last night", C),
            ("Rosa teaches at a primary school", "Rosa teaches piano on weekends too", C),
            ("Rosa owns a flat in Leeds", "Rosa's renting a room in London for the summer", C),
            ("Rosa supports Celtic", "Rosa supports the Scotland team too", C),
            ("Rosa's mum lives in Dublin", "Rosa lives in Galway", C),
            ("Rosa used to live in Paris", "Rosa lives in Lyon", C),
            ("Rosa is learning Spanish", "Rosa is learning Italian as well", C),
            ("Rosa went to Spain last summer", "Rosa is going to Portugal this summer", C),
            ("Rosa is a nurse", "Rosa's husband is a nurse too", C),
            ("Rosa loves hiking", "Rosa's hiking boots are worn out", C),
            ("Rosa is married", "Rosa's married sister lives in Cork", C),
            ("Rosa has a car", "Rosa's car is in the garage", C),
        ];
        // First-person turns, read with the speaker's words standing for her.
        let said: &[(&str, &str, Want)] = &[
            ("I live in Bristol", "I've moved to Bath", U),
            ("I'm engaged to Lee", "We got married in May", U),
            ("I play the drums in a band", "I'm not in the band anymore", U),
            ("My favourite podcast is Serial", "My favourite podcast is now Radiolab", U),
            ("I love my job", "I'm sick of my commute", C),
            ("I'm a nurse", "I work as a nurse", D),
        ];
        let wrong = wrongly_decided("Rosa", observed, said);
        let all = observed.len() + said.len();
        let count = |w: Want| observed.iter().chain(said).filter(|p| p.2 == w).count();
        assert!(
            count(U) >= 40 && count(D) >= 12 && count(C) >= 25,
            "{} updates, {} restatements, {} coexisting",
            count(U),
            count(D),
            count(C)
        );
        assert!(wrong.is_empty(), "{} of {all} right; wrong ({}):\n{}", all - wrong.len(), wrong.len(), wrong.join("\n"));
    }

    /// A fifth set of memform's own pairs, written before the fifth round's
    /// rules were changed or measured: updates of every kind of
    /// docs/pairs.md in phrasings the earlier rounds did not use (losing a
    /// job, being laid off or hired, "calls X home", "has her own place",
    /// "called it quits", "turning 34", "a new favourite", "replaced X with
    /// Y", "put on hold", "any longer", "can't bear", "gone off", "works
    /// under", …), restatements and coexisting pairs, another speaker.
    /// Counted as in `fourth_round_fresh_pairs`.
    #[test]
    fn fifth_round_fresh_pairs() {
        use Want::{Coexist as C, Duplicate as D, Update as U};
        // Third-person observations about Noor.
        let observed: &[(&str, &str, Want)] = &[
            // Updates. Job.
            ("Noor works as a graphic designer at an ad agency", "Noor is now a yoga instructor", U),
            ("Noor works at a hotel reception desk", "Noor took a position at the city hospital", U),
            ("Noor is a software developer at a startup", "Noor was hired as a project manager at a bank", U),
            ("Noor works for a logistics company", "Noor is employed by the county council", U),
            ("Noor is a freelance photographer", "Noor landed a full-time job at a newspaper", U),
            ("Noor is a nurse at St Mary's", "Noor switched to working as a midwife", U),
            ("Noor works at a call centre", "Noor lost her job at the call centre", U),
            ("Noor works as a cashier at Aldi", "Noor quit her job", U),
            ("Noor works at the town library", "Noor was laid off from the library", U),
            // Home.
            ("Noor lives in Manchester", "Noor has relocated to Edinburgh", U),
            ("Noor lives with her parents in Lagos", "Noor now has her own place in Abuja", U),
            ("Noor lives in a studio flat in Hackney", "Noor lives in a terraced house in Croydon", U),
            ("Noor lives in Toronto", "Noor is living in Vancouver now", U),
            ("Noor lives in Dublin", "Noor now calls Berlin home", U),
            ("Noor lives on a houseboat in Amsterdam", "Noor lives in Utrecht these days", U),
            // Relationship status.
            ("Noor is engaged to Karim", "Noor and Karim are now married", U),
            ("Noor is married to Karim", "Noor is divorced from Karim", U),
            ("Noor is single", "Noor has a boyfriend called Idris", U),
            ("Noor is in a long-distance relationship with Idris", "Noor and Idris have called it quits", U),
            ("Noor has a girlfriend", "Noor is no longer with her girlfriend", U),
            // Age.
            ("Noor is 33", "Noor celebrated turning 34", U),
            ("Noor's son Adam is 9 years old", "Noor's son Adam turned ten last week", U),
            ("Noor's dog Pepper is 3 years old", "Noor's dog Pepper is four now", U),
            ("Noor is 60", "Noor had her 61st birthday in June", U),
            // Favourites.
            ("Noor's favourite restaurant is Dishoom", "Noor has a new favourite restaurant, Hoppers", U),
            ("Noor's favourite season is summer", "Autumn has become Noor's favourite season", U),
            ("Noor's favourite board game is Catan", "Noor's favourite board game is now Wingspan", U),
            ("Noor's favourite city is Rome", "Lisbon is Noor's favourite city now", U),
            // Ownership.
            ("Noor owns a Vespa", "Noor got rid of her Vespa", U),
            ("Noor has a MacBook Air", "Noor replaced her MacBook with a ThinkPad", U),
            ("Noor owns a flat in Leeds", "Noor sold her flat in Leeds", U),
            ("Noor has a parrot named Kiwi", "Noor's parrot Kiwi passed away", U),
            ("Noor owns a road bike", "Noor's road bike was stolen last month", U),
            ("Noor owns two horses", "Noor no longer owns any horses", U),
            ("Noor has a Kindle", "Noor lost her Kindle on the train", U),
            // A plan cancelled.
            ("Noor plans to study in Canada next year", "Noor has given up on studying in Canada", U),
            ("Noor is planning a surprise party for her mum", "Noor's surprise party for her mum is cancelled", U),
            ("Noor is going to run a half marathon in October", "Noor won't be running the half marathon", U),
            ("Noor intends to buy a house this year", "Noor has put buying a house on hold", U),
            ("Noor wants to learn to surf", "Noor has abandoned the idea of learning to surf", U),
            ("Noor is booked on a cruise to Norway in July", "Noor cancelled the Norway cruise", U),
            // Endings, "no longer", "not … anymore".
            ("Noor sings in a community choir", "Noor isn't singing in the choir anymore", U),
            ("Noor volunteers at an animal shelter", "Noor doesn't volunteer at the shelter any longer", U),
            ("Noor is a member of a book club", "Noor dropped out of her book club", U),
            ("Noor is vegan", "Noor is not vegan any longer", U),
            ("Noor drinks alcohol", "Noor has stopped drinking alcohol", U),
            // A flip with stance words around it.
            ("Noor loves horror films", "Noor can't bear horror films these days", U),
            ("Noor hates coffee", "Noor has started to love coffee", U),
            ("Noor enjoys running", "Noor doesn't enjoy running anymore", U),
            ("Noor is a big fan of country music", "Noor has gone off country music", U),
            ("Noor doesn't like cats", "Noor adores cats these days", U),
            ("Noor hates cooking", "Noor actually likes cooking now", U),
            // Roles: manager, team, school, title, shift.
            ("Noor's boss is Fiona", "Noor now works under Gareth", U),
            ("Noor plays for Leyton Orient Ladies", "Noor is now playing for Millwall Lionesses", U),
            ("Noor's daughter goes to Parkside Primary School", "Noor's daughter has moved to St Anne's School", U),
            ("Noor is the vice-captain of her cricket team", "Noor was made captain of her cricket team", U),
            ("Noor works the morning shift at the cafe", "Noor has switched to the evening shift at the cafe", U),
            ("Noor studies law at Leeds University", "Noor is studying at Durham University now", U),
            ("Noor's coach is Mr Evans", "Noor has a new coach, Ms Patel", U),
            // Restatements.
            ("Noor lives in Cardiff", "Noor still lives in Cardiff", D),
            ("Noor is married to Karim", "Noor and Karim are married", D),
            ("Noor loves baking bread", "Noor really enjoys baking bread", D),
            ("Noor's favourite author is Zadie Smith", "Zadie Smith is Noor's favourite author", D),
            ("Noor is 33 years old", "Noor is thirty-three", D),
            ("Noor doesn't drink coffee", "Noor never drinks coffee", D),
            ("Noor walks her dog every morning", "Every morning Noor walks her dog", D),
            ("Noor works at the Royal Free Hospital", "Noor is employed at the Royal Free Hospital", D),
            ("Noor is a vegetarian", "Noor is vegetarian", D),
            ("Noor plays the cello", "Noor honestly still plays the cello", D),
            ("Noor has three children", "Noor has 3 children", D),
            ("Noor is not a fan of football", "Noor isn't a fan of football", D),
            // Coexisting: family members, multi-valued, another time, a
            // negation or antonym about something else, games, a related
            // topic, a one-off, someone else's ending, a loss of a game.
            ("Noor lives in Manchester", "Noor's brother has relocated to Edinburgh", C),
            ("Noor loves jazz", "Noor has started to love reggae", C),
            ("Noor works at a bank", "Noor worked at a bakery as a teenager", C),
            ("Noor owns a Vespa", "Noor's neighbour got rid of his Vespa", C),
            ("Noor's favourite singer is Adele", "Noor's favourite song is Skyfall", C),
            ("Noor is engaged to Karim", "Noor's sister is now married", C),
            ("Noor plays the piano", "Noor stopped taking guitar lessons", C),
            ("Noor likes tea", "Noor doesn't like coffee anymore", C),
            ("Noor plans to visit Kyoto in April", "Noor cancelled her dentist appointment", C),
            ("Noor's team won the regional quiz", "Noor's team lost the national quiz", C),
            ("Noor plays chess at a club", "Noor lost a chess match on Sunday", C),
            ("Noor has a cat named Tofu", "Noor's cat Tofu had kittens", C),
            ("Noor is 33", "Noor's husband is 35", C),
            ("Noor goes swimming on Sundays", "Noor missed swimming last Sunday", C),
            ("Noor works at the hospital", "Noor left the hospital late last night", C),
            ("Noor lives in Leeds", "Noor spent the summer in Lisbon", C),
            ("Noor loves her flat", "Noor hates her noisy neighbours", C),
            ("Noor has a MacBook", "Noor bought a new charger for her MacBook", C),
            ("Noor supports Arsenal", "Noor supports the England women's team as well", C),
            ("Noor is learning French", "Noor's daughter gave up learning French", C),
            ("Noor works at a bank", "Noor lost her keys at the bank", C),
            ("Noor works as a nurse", "Noor's son quit his job", C),
        ];
        // First-person turns, read with the speaker's words standing for her.
        let said: &[(&str, &str, Want)] = &[
            ("I'm a vet", "I retrained as a pilot last year", U),
            ("I work at Boots", "I lost my job at Boots", U),
            ("My favourite band is Wet Leg", "My new favourite band is Fontaines D.C.", U),
            ("I'm dating Idris", "Idris and I broke up", U),
            ("I own a Golf", "I sold the Golf", U),
            ("I live in Cork", "I still live in Cork", D),
            ("I play the cello", "I lost my cello bow", C),
        ];
        let wrong = wrongly_decided("Noor", observed, said);
        let all = observed.len() + said.len();
        let count = |w: Want| observed.iter().chain(said).filter(|p| p.2 == w).count();
        assert!(
            count(U) >= 50 && count(D) >= 12 && count(C) >= 20,
            "{} updates, {} restatements, {} coexisting",
            count(U),
            count(D),
            count(C)
        );
        assert!(wrong.is_empty(), "{} of {all} right; wrong ({}):\n{}", all - wrong.len(), wrong.len(), wrong.join("\n"));
    }

    /// A sixth set of memform's own pairs, written before the sixth round's
    /// rules were changed or measured and without reading `test`, in
    /// phrasings the earlier sets did not use ("handed in her notice",
    /// "packed up and moved", "started seeing", "dumped", "hit 30", "as of
    /// this week", "has replaced … as", "upgraded to", "pulled out of", "has
    /// come to hate", "is not keen on", "took over as"): updates,
    /// restatements and coexisting pairs of every kind of docs/pairs.md,
    /// another speaker. Counted as [`fifth_round_fresh_pairs`] counts.
    #[test]
    fn sixth_round_fresh_pairs() {
        use Want::{Coexist as C, Duplicate as D, Update as U};
        // Third-person observations about Ines.
        let observed: &[(&str, &str, Want)] = &[
            // Updates. Job.
            ("Ines works as an accountant", "Ines is a full-time painter these days", U),
            ("Ines is a waitress at Nando's", "Ines now works in marketing", U),
            ("Ines teaches maths at a secondary school", "Ines left teaching to become a plumber", U),
            ("Ines works at Google", "Ines joined Microsoft in March", U),
            ("Ines is an electrician", "Ines has started a new career as a firefighter", U),
            ("Ines works nights at a warehouse", "Ines got a day job at a bookshop", U),
            ("Ines drives a bus for the council", "Ines retired from driving buses", U),
            ("Ines works in a factory", "Ines was made redundant from the factory", U),
            ("Ines is a junior doctor", "Ines became a consultant surgeon", U),
            ("Ines works for Amazon", "Ines handed in her notice at Amazon", U),
            ("Ines runs a food truck", "Ines closed her food truck business", U),
            // Home.
            ("Ines lives in Porto", "Ines has moved abroad to Lyon", U),
            ("Ines lives in a flat above a shop", "Ines moved into a cottage in the countryside", U),
            ("Ines lives in Bristol", "Ines is now based in Bath", U),
            ("Ines lives with her boyfriend in Camden", "Ines moved back in with her parents in Kent", U),
            ("Ines lives in Seattle", "Ines packed up and moved to Austin", U),
            ("Ines lives in student halls", "Ines has moved out of student halls", U),
            ("Ines lives in Oslo", "Ines's new address is in Bergen", U),
            ("Ines rents a room in Brixton", "Ines bought a house in Margate", U),
            ("Ines lives in Nairobi", "Ines has been living in Mombasa since January", U),
            // Relationship status.
            ("Ines is single", "Ines started seeing someone named Leo", U),
            ("Ines is dating Leo", "Ines and Leo are no longer together", U),
            ("Ines is engaged to Leo", "Ines called off her engagement to Leo", U),
            ("Ines is married", "Ines's husband died last year", U),
            ("Ines has a boyfriend", "Ines dumped her boyfriend", U),
            ("Ines is divorced", "Ines remarried in 2022", U),
            ("Ines is seeing Leo", "Ines ended things with Leo", U),
            // Age.
            ("Ines is 41", "Ines just turned 42", U),
            ("Ines is 29 years old", "Ines hit 30 in May", U),
            ("Ines's daughter Lily is 4", "Ines's daughter Lily is now five years old", U),
            ("Ines is 18", "Ines celebrated her 19th birthday on Saturday", U),
            ("Ines's cat Mochi is 12", "Ines's cat Mochi turned 13", U),
            ("Ines is 54", "Ines is 55 as of this week", U),
            // Favourites.
            ("Ines's favourite food is pizza", "Ines's favourite food these days is ramen", U),
            ("Ines's favourite colour is blue", "Ines's new favourite colour is green", U),
            ("Ines's favourite TV show is Friends", "Ines's all-time favourite show is now The Wire", U),
            ("Ines's favourite sport is tennis", "Padel has replaced tennis as Ines's favourite sport", U),
            ("Ines's favourite drink is lemonade", "Ines prefers iced tea to lemonade now", U),
            ("Ines's favourite podcast is Serial", "Ines's top podcast at the moment is Radiolab", U),
            ("Ines's favourite holiday destination is Crete", "Ines's favourite holiday destination has changed to Madeira", U),
            // Ownership.
            ("Ines owns a Toyota Corolla", "Ines traded her Corolla for a Kia", U),
            ("Ines has a hamster", "Ines's hamster died", U),
            ("Ines owns a Samsung phone", "Ines switched to an iPhone", U),
            ("Ines has a caravan", "Ines sold the caravan to her cousin", U),
            ("Ines owns a piano", "Ines gave her piano to a school", U),
            ("Ines has a motorbike", "Ines doesn't have a motorbike anymore", U),
            ("Ines owns a holiday home in Spain", "Ines no longer owns the holiday home in Spain", U),
            ("Ines has a PlayStation 4", "Ines upgraded to a PlayStation 5", U),
            ("Ines owns a bakery", "Ines sold her bakery", U),
            // A plan cancelled.
            ("Ines plans to move to Australia", "Ines has decided to stay in the UK instead of moving to Australia", U),
            ("Ines is saving up for a trip to Peru", "Ines called off her trip to Peru", U),
            ("Ines is going to start a PhD in the autumn", "Ines is no longer starting a PhD", U),
            ("Ines wants to get a dog", "Ines has decided against getting a dog", U),
            ("Ines is organising a reunion for her class in May", "Ines scrapped the class reunion", U),
            ("Ines plans to paint the kitchen yellow", "Ines dropped the idea of painting the kitchen", U),
            ("Ines is training for the London Marathon", "Ines pulled out of the London Marathon", U),
            // Endings, "no longer", "not … anymore".
            ("Ines smokes cigarettes", "Ines gave up cigarettes", U),
            ("Ines goes to the gym every day", "Ines doesn't go to the gym anymore", U),
            ("Ines eats meat", "Ines has stopped eating meat", U),
            ("Ines plays in a darts league", "Ines isn't in the darts league anymore", U),
            ("Ines is a member of the Labour party", "Ines is no longer a Labour party member", U),
            ("Ines takes the train to work", "Ines no longer takes the train to work", U),
            ("Ines coaches a kids' football team", "Ines stopped coaching the kids' football team", U),
            // A flip with stance words around it.
            ("Ines loves spicy food", "Ines really dislikes spicy food these days", U),
            ("Ines hates jogging", "Ines now genuinely enjoys jogging", U),
            ("Ines likes the city", "Ines has come to hate the city", U),
            ("Ines dislikes opera", "Ines has fallen in love with opera", U),
            ("Ines enjoys camping", "Ines is not keen on camping anymore", U),
            ("Ines likes reality TV", "These days Ines can't stand reality TV", U),
            // Roles: manager, team, school, title.
            ("Ines is the treasurer of the tennis club", "Ines took over as chair of the tennis club", U),
            ("Ines's manager is Tom", "Ines reports to Priya now", U),
            ("Ines plays for the Bristol Bears", "Ines joined Bath Rugby", U),
            ("Ines's son attends Oakwood Primary", "Ines's son started at Hillside Academy", U),
            ("Ines is in the sales team", "Ines moved to the finance team", U),
            ("Ines studies at Oxford", "Ines transferred to Cambridge", U),
            ("Ines is head of science at her school", "Ines stepped down as head of science", U),
            // Restatements.
            ("Ines has two cats", "Ines has 2 cats", D),
            ("Ines works as a librarian", "Ines is a librarian", D),
            ("Ines goes running every morning", "Every morning, Ines goes running", D),
            ("Ines is married to Leo", "Ines is still married to Leo", D),
            ("Ines loves gardening", "Ines absolutely loves gardening", D),
            ("Ines's favourite colour is blue", "Ines's favorite color is blue", D),
            ("Ines plays the violin", "Ines plays violin", D),
            ("Ines is 41 years old", "Ines is forty-one", D),
            ("Ines doesn't eat pork", "Ines does not eat pork", D),
            ("Ines is allergic to peanuts", "Ines has a peanut allergy", D),
            ("Ines works at the post office", "Ines currently works at the post office", D),
            ("Ines has a dog called Biscuit", "Ines has a dog named Biscuit", D),
            ("Ines visits her grandmother on Sundays", "On Sundays Ines visits her grandmother", D),
            ("Ines hates mornings", "Ines really hates mornings", D),
            ("Ines drives a red Fiat", "Ines drives a red Fiat these days", D),
            // Coexisting: family members, multi-valued, another time, a
            // negation or antonym about something else, games, a related
            // topic, a one-off, someone else's ending, a past state.
            ("Ines lives in Porto", "Ines's parents moved to Faro", C),
            ("Ines loves sushi", "Ines loves tacos too", C),
            ("Ines works as an accountant", "Ines worked as a lifeguard one summer", C),
            ("Ines owns a Toyota", "Ines's sister sold her Toyota", C),
            ("Ines is married to Leo", "Ines's best friend got divorced", C),
            ("Ines plays tennis", "Ines gave up on the crossword today", C),
            ("Ines likes dogs", "Ines doesn't like wasps", C),
            ("Ines's team won the pub quiz", "Ines's team lost the darts final", C),
            ("Ines goes to yoga on Tuesdays", "Ines cancelled yoga this Tuesday", C),
            ("Ines works at the hospital", "Ines quit her book club", C),
            ("Ines lives in Bristol", "Ines stayed in Cardiff for the weekend", C),
            ("Ines has a hamster", "Ines bought a cage for her hamster", C),
            ("Ines plans to visit Japan", "Ines cancelled her gym membership", C),
            ("Ines is 41", "Ines's daughter is 12", C),
            ("Ines's favourite food is pizza", "Ines's favourite drink is cola", C),
            ("Ines is learning Spanish", "Ines stopped learning the guitar", C),
            ("Ines is a nurse", "Ines's husband became a teacher", C),
            ("Ines drives a Fiat", "Ines sold her old bike", C),
            ("Ines loves her garden", "Ines hates the slugs in her garden", C),
            ("Ines plays chess online", "Ines lost a chess game to her nephew", C),
            ("Ines works from home", "Ines left home early this morning", C),
            ("Ines is single", "Ines went on a date last night", C),
            ("Ines lives in Oslo", "Ines used to live in Bergen", C),
            ("Ines is vegetarian", "Ines is no longer vegan", C),
        ];
        // First-person turns, read with the speaker's words standing for her.
        let said: &[(&str, &str, Want)] = &[
            ("I work at a pub", "I've just started a job at a hotel", U),
            ("I live in Leeds", "I moved to York last month", U),
            ("My partner is Sam", "Sam and I aren't together anymore", U),
            ("I have a Fiat", "I don't have a car anymore", U),
            ("I have two kids", "I've got 2 kids", D),
            ("I play football", "My brother quit football", C),
            ("I live in Leeds", "I visited York last weekend", C),
        ];
        let wrong = wrongly_decided("Ines", observed, said);
        let all = observed.len() + said.len();
        let count = |w: Want| observed.iter().chain(said).filter(|p| p.2 == w).count();
        assert!(
            count(U) >= 70 && count(D) >= 15 && count(C) >= 25,
            "{} updates, {} restatements, {} coexisting",
            count(U),
            count(D),
            count(C)
        );
        // The sixth round's rules leave these wrong, on purpose: what they
        // need is knowledge the principles do not hold (a field of work
        // from a place, an employer or a team one "joined", a university by
        // its town, a console's model number, a car's maker, a preference
        // between two things, a paraphrase of "allergic to").
        // docs/pipeline.md lists them. ("top" as favourite was one; the
        // seventh round reads it.)
        let known = [
            "\"Ines is a waitress at Nando's\" → \"Ines now works in marketing\"",
            "\"Ines works at Google\" → \"Ines joined Microsoft in March\"",
            "\"Ines's favourite drink is lemonade\" → \"Ines prefers iced tea to lemonade now\"",
            "\"Ines has a PlayStation 4\" → \"Ines upgraded to a PlayStation 5\"",
            "\"Ines plays for the Bristol Bears\" → \"Ines joined Bath Rugby\"",
            "\"Ines studies at Oxford\" → \"Ines transferred to Cambridge\"",
            "\"Ines is allergic to peanuts\" → \"Ines has a peanut allergy\"",
            "\"I have a Fiat\" → \"I don't have a car anymore\"",
        ];
        assert_only_known_misses(&wrong, &known, all);
    }

    /// A seventh set of memform's own pairs, written before the seventh
    /// round's rules were changed or measured and without reading `test`,
    /// in phrasings the earlier sets did not use ("relocated to", "got his
    /// own place", "broke it off", "tied the knot", "is off", "won't be
    /// going … after all", "has cut out", "has grown to love", "signed
    /// for", "go-to"), about a man this time: updates, restatements and
    /// coexisting pairs of every kind of docs/pairs.md, another speaker.
    /// Counted as [`fifth_round_fresh_pairs`] counts.
    #[test]
    fn seventh_round_fresh_pairs() {
        use Want::{Coexist as C, Duplicate as D, Update as U};
        // Third-person observations about Dev.
        let observed: &[(&str, &str, Want)] = &[
            // Updates. Job.
            ("Dev works as a chef at a hotel", "Dev is now a delivery driver", U),
            ("Dev is a software engineer at Spotify", "Dev has left Spotify and works at Shopify now", U),
            ("Dev works at a call centre", "Dev found work at a garage", U),
            ("Dev is a postman", "Dev gave up his job as a postman", U),
            ("Dev is unemployed", "Dev landed a job as a lab technician", U),
            ("Dev works for the council", "Dev was let go by the council", U),
            ("Dev is a personal trainer", "Dev now makes a living as a photographer", U),
            ("Dev works at Aldi", "Dev is working at Morrisons these days", U),
            ("Dev is a student", "Dev graduated and now works as an architect", U),
            ("Dev works as a carpenter", "Dev retired last spring", U),
            ("Dev teaches yoga", "Dev stopped teaching yoga to work in a bank", U),
            // Home.
            ("Dev lives in Leicester", "Dev relocated to Dublin for work", U),
            ("Dev lives on a houseboat", "Dev now lives in a flat in Hackney", U),
            ("Dev lives in Toronto", "Dev's home is in Vancouver now", U),
            ("Dev lives with his parents", "Dev got his own place in Salford", U),
            ("Dev lives in Berlin", "Dev left Berlin and settled in Munich", U),
            ("Dev lives in a one-bedroom flat", "Dev moved into a three-bedroom house", U),
            ("Dev lives in Glasgow", "Dev has been in Aberdeen since he moved last year", U),
            ("Dev lives near the beach in Brighton", "Dev moved inland to Crawley", U),
            ("Dev shares a flat with two friends", "Dev lives alone now", U),
            ("Dev lives in Perth", "Dev is living in Sydney at the moment", U),
            ("Dev lives in the city centre", "Dev has moved out to the suburbs", U),
            // Relationship status.
            ("Dev is single", "Dev has a girlfriend now", U),
            ("Dev has a girlfriend named Ana", "Dev and Ana broke it off", U),
            ("Dev is married to Ana", "Dev and Ana got divorced", U),
            ("Dev is in a relationship with Ana", "Dev is single again", U),
            ("Dev is engaged to Ana", "Dev and Ana tied the knot in August", U),
            ("Dev is dating Ana", "Dev proposed to Ana and she said yes", U),
            ("Dev is married", "Dev separated from his wife", U),
            ("Dev's girlfriend is Ana", "Dev is now going out with Bea", U),
            ("Dev is in a long-distance relationship", "Dev's long-distance relationship ended", U),
            // Age.
            ("Dev is 36", "Dev turned 37 last week", U),
            ("Dev is 59 years old", "Dev is now sixty", U),
            ("Dev's son Arlo is 7", "Dev's son Arlo just had his eighth birthday", U),
            ("Dev is twenty-five", "Dev is 26 now", U),
            ("Dev's dog Pepper is 3 years old", "Dev's dog Pepper is four", U),
            ("Dev is 44", "Dev celebrated turning 45", U),
            // Favourites.
            ("Dev's favourite band is Oasis", "Dev's favourite band is now Blur", U),
            ("Dev's favourite film is Jaws", "Dev has a new favourite film, Parasite", U),
            ("Dev's favourite restaurant is Dishoom", "Dev's favourite place to eat these days is Padella", U),
            ("Dev's favourite game is FIFA", "Dev's go-to game is Minecraft now", U),
            ("Dev's favourite season is summer", "Autumn is Dev's favourite season now", U),
            ("Dev's favourite author is Stephen King", "Dev's favourite writer these days is Sally Rooney", U),
            ("Dev's favourite fruit is mango", "Dev's favourite fruit has become kiwi", U),
            ("Dev's favourite football team is Chelsea", "Dev now supports Arsenal instead of Chelsea", U),
            // Ownership.
            ("Dev owns a Ford Fiesta", "Dev sold his Ford Fiesta", U),
            ("Dev has a goldfish", "Dev's goldfish passed away", U),
            ("Dev owns a bike", "Dev's bike was stolen", U),
            ("Dev has an Android phone", "Dev got rid of his Android phone", U),
            ("Dev owns a boat", "Dev no longer has his boat", U),
            ("Dev owns a camera", "Dev lost his camera on holiday", U),
            ("Dev has a flat in Leeds", "Dev sold his flat in Leeds", U),
            ("Dev owns a Mazda", "Dev replaced his Mazda with a Tesla", U),
            ("Dev has two rabbits", "Dev gave his rabbits away", U),
            ("Dev owns a laptop", "Dev's laptop broke and he threw it out", U),
            ("Dev has a season ticket at Anfield", "Dev gave up his season ticket", U),
            // A plan cancelled.
            ("Dev plans to run a half marathon in October", "Dev withdrew from the half marathon", U),
            ("Dev is going to Italy in June", "Dev's trip to Italy is off", U),
            ("Dev wants to open a cafe", "Dev has abandoned his plan to open a cafe", U),
            ("Dev is planning a surprise party for Ana", "Dev cancelled the surprise party", U),
            ("Dev intends to learn Japanese", "Dev has given up on learning Japanese", U),
            ("Dev is thinking about adopting a cat", "Dev changed his mind about adopting a cat", U),
            ("Dev is going to the Glastonbury festival", "Dev won't be going to Glastonbury after all", U),
            ("Dev plans to propose to Ana at Christmas", "Dev has scrapped his plan to propose at Christmas", U),
            ("Dev is booked on a cruise in May", "Dev cancelled his cruise", U),
            // Endings, "no longer", "not … anymore".
            ("Dev plays the drums in a band", "Dev quit the band", U),
            ("Dev is a vegetarian", "Dev eats meat again", U),
            ("Dev drinks coffee every morning", "Dev has cut out coffee", U),
            ("Dev goes climbing every weekend", "Dev has given up climbing", U),
            ("Dev is a member of a cycling club", "Dev left the cycling club", U),
            ("Dev volunteers at a food bank", "Dev no longer volunteers at the food bank", U),
            ("Dev takes piano lessons", "Dev's piano lessons have ended", U),
            ("Dev smokes", "Dev is a non-smoker now", U),
            ("Dev works out at the gym", "Dev cancelled his gym membership", U),
            // A flip with stance words around it.
            ("Dev loves rollercoasters", "Dev honestly hates rollercoasters now", U),
            ("Dev can't stand olives", "Dev loves olives these days", U),
            ("Dev enjoys hiking", "Dev no longer enjoys hiking", U),
            ("Dev dislikes winter", "Dev has grown to love winter", U),
            ("Dev likes his job", "Dev has started to dislike his job", U),
            ("Dev adores musicals", "Dev is sick of musicals now", U),
            ("Dev hates gardening", "Dev now really enjoys gardening", U),
            ("Dev is a fan of Marvel films", "Dev isn't into Marvel films anymore", U),
            // Roles: manager, team, school, title, department.
            ("Dev is the goalkeeper for his five-a-side team", "Dev plays as a striker for his five-a-side team now", U),
            ("Dev's supervisor is Karen", "Dev's new supervisor is Imran", U),
            ("Dev is a shift leader at the cinema", "Dev was promoted to cinema manager", U),
            ("Dev's daughter is at Riverside Nursery", "Dev's daughter now goes to Greenfield Primary", U),
            ("Dev is the secretary of the residents' association", "Dev became chair of the residents' association", U),
            ("Dev works in the IT department", "Dev transferred to the HR department", U),
            ("Dev plays for Crawley Town", "Dev signed for Brighton", U),
            ("Dev studies history at York", "Dev switched his degree to economics", U),
            // Restatements.
            ("Dev has four grandchildren", "Dev has 4 grandchildren", D),
            ("Dev works as a plumber", "Dev is a plumber", D),
            ("Dev cycles to work every day", "Every day Dev cycles to work", D),
            ("Dev lives in Leeds", "Dev lives in Leeds these days", D),
            ("Dev loves fishing", "Dev really loves fishing", D),
            ("Dev's favourite colour is grey", "Dev's favorite color is gray", D),
            ("Dev plays the trumpet", "Dev plays trumpet", D),
            ("Dev is 52", "Dev is fifty-two years old", D),
            ("Dev doesn't own a car", "Dev does not own a car", D),
            ("Dev is married to Ana", "Dev is still married to Ana", D),
            ("Dev has a parrot called Rio", "Dev owns a parrot named Rio", D),
            ("Dev hates spiders", "Dev honestly hates spiders", D),
            ("Dev goes swimming on Fridays", "On Fridays Dev goes swimming", D),
            ("Dev works at the library", "Dev is currently working at the library", D),
            ("Dev is a huge fan of cricket", "Dev is a big cricket fan", D),
            ("Dev speaks three languages", "Dev speaks 3 languages", D),
            // Coexisting: family members, multi-valued, another time, a
            // negation or antonym about something else, games, a related
            // topic, a one-off, someone else's ending, a past state.
            ("Dev lives in Leicester", "Dev's daughter moved to Leeds for university", C),
            ("Dev loves pizza", "Dev also loves curry", C),
            ("Dev is a chef", "Dev worked as a bartender in his twenties", C),
            ("Dev owns a Ford Fiesta", "Dev's dad sold his Ford", C),
            ("Dev is married to Ana", "Dev's cousin is getting divorced", C),
            ("Dev plays golf", "Dev gave up on the jigsaw puzzle", C),
            ("Dev likes cats", "Dev doesn't like mice", C),
            ("Dev's team won the league", "Dev's team lost the cup final", C),
            ("Dev goes climbing on Saturdays", "Dev skipped climbing this Saturday", C),
            ("Dev works at the bank", "Dev quit his pottery class", C),
            ("Dev lives in Glasgow", "Dev spent a week in Edinburgh", C),
            ("Dev has a goldfish", "Dev bought a new tank for his goldfish", C),
            ("Dev plans to visit Rome", "Dev cancelled his dentist appointment", C),
            ("Dev is 36", "Dev's wife is 34", C),
            ("Dev's favourite band is Oasis", "Dev's favourite album is Definitely Maybe", C),
            ("Dev is learning Italian", "Dev stopped learning the drums", C),
            ("Dev is a teacher", "Dev's wife became a nurse", C),
            ("Dev drives a Mazda", "Dev sold his old scooter", C),
            ("Dev loves his new flat", "Dev hates the stairs to his flat", C),
            ("Dev plays poker", "Dev lost a poker game to his brother", C),
            ("Dev works from home", "Dev left home at six this morning", C),
            ("Dev is single", "Dev went on a blind date on Friday", C),
            ("Dev lives in Toronto", "Dev used to live in Montreal", C),
            ("Dev is vegetarian", "Dev doesn't eat fish either", C),
            ("Dev supports Liverpool", "Dev supports the Welsh rugby team too", C),
            ("Dev owns a bike", "Dev's bike got a flat tyre", C),
            ("Dev is dating Ana", "Dev's friend Sam broke up with his girlfriend", C),
            ("Dev's favourite film is Jaws", "Dev didn't like the new Jaws documentary", C),
        ];
        // First-person turns, read with the speaker's words standing for him.
        let said: &[(&str, &str, Want)] = &[
            ("I'm a chef", "I work as a delivery driver now", U),
            ("I live in Leicester", "I've moved to Nottingham", U),
            ("I'm single", "I've been seeing someone for a month", U),
            ("I have a bike", "Someone stole my bike", U),
            ("My favourite film is Jaws", "Jaws isn't my favourite film anymore, Heat is", U),
            ("I'm planning a trip to Peru", "I've cancelled the Peru trip", U),
            ("I play the drums", "I play drums", D),
            ("I live in Leicester", "My sister lives in Derby", C),
            ("I love hiking", "I hate hiking in the rain", C),
        ];
        let wrong = wrongly_decided("Dev", observed, said);
        let all = observed.len() + said.len();
        let count = |w: Want| observed.iter().chain(said).filter(|p| p.2 == w).count();
        assert!(
            count(U) >= 80 && count(D) >= 16 && count(C) >= 28,
            "{} updates, {} restatements, {} coexisting",
            count(U),
            count(D),
            count(C)
        );
        // The seventh round's rules leave these wrong, on purpose: what they
        // need is knowledge the principles do not hold (a student's
        // graduating as the end of studying, a household rather than a
        // town, "has been in" a town, a proposal's answer, supporting a team
        // as a favourite, a thing thrown out by a pronoun, what a
        // vegetarian eats, lessons that end, a position on a team, a
        // promotion from a role, "IT" read as a pronoun, a degree's
        // subject, a second clause of "Heat is"). docs/pipeline.md lists them.
        let known = [
            "\"Dev is a student\" → \"Dev graduated and now works as an architect\"",
            "\"Dev lives with his parents\" → \"Dev got his own place in Salford\"",
            "\"Dev lives in Glasgow\" → \"Dev has been in Aberdeen since he moved last year\"",
            "\"Dev shares a flat with two friends\" → \"Dev lives alone now\"",
            "\"Dev is dating Ana\" → \"Dev proposed to Ana and she said yes\"",
            "\"Dev's favourite football team is Chelsea\" → \"Dev now supports Arsenal instead of Chelsea\"",
            "\"Dev owns a laptop\" → \"Dev's laptop broke and he threw it out\"",
            "\"Dev is a vegetarian\" → \"Dev eats meat again\"",
            "\"Dev takes piano lessons\" → \"Dev's piano lessons have ended\"",
            "\"Dev is the goalkeeper for his five-a-side team\" → \"Dev plays as a striker for his five-a-side team now\"",
            "\"Dev is a shift leader at the cinema\" → \"Dev was promoted to cinema manager\"",
            "\"Dev works in the IT department\" → \"Dev transferred to the HR department\"",
            "\"Dev studies history at York\" → \"Dev switched his degree to economics\"",
            "\"My favourite film is Jaws\" → \"Jaws isn't my favourite film anymore, Heat is\"",
        ];
        assert_only_known_misses(&wrong, &known, all);
    }

    /// The seventh round's principles (docs/pipeline.md, "Seventh round"),
    /// each beside what it must leave alone.
    #[test]
    fn seventh_round_principles() {
        let slot = |s: &str| Change::Slot(s.to_string());
        // Idioms say plain words.
        update("Maya works at a call centre", "Maya found work at a garage", slot("employer"));
        coexist("Maya works at a call centre", "Maya found her keys at the garage");
        update("Maya is a nurse", "Maya makes a living as a photographer", slot("job"));
        update("Maya works as a carpenter", "Maya retired last spring", slot("job"));
        coexist("Maya works as a carpenter", "Maya's father retired last spring");
        coexist("Maya works as a carpenter", "Maya retired her old laptop");
        update("Maya has a boyfriend named Theo", "Maya and Theo broke it off", Change::Ending);
        coexist("Maya has a boyfriend named Theo", "Maya broke off a piece of bread");
        update("Maya is engaged to Theo", "Maya and Theo tied the knot", slot("relationship"));
        update("Maya is single", "Maya is going out with Theo", slot("relationship"));
        coexist("Maya is single", "Maya is going out with friends tonight");
        update("Maya is single", "Maya has been dating Theo for a month", slot("relationship"));
        update("Maya drinks coffee every morning", "Maya has cut out coffee", Change::Ending);
        coexist("Maya drinks coffee every morning", "Maya cut out a recipe for cake");
        update("Maya has two rabbits", "Maya gave her rabbits away", Change::Ending);
        coexist("Maya has two rabbits", "Maya gave her old coat away");
        update("Maya's favourite game is FIFA", "Maya's go-to game is Minecraft now", slot("favourite game"));
        update("Maya's favourite podcast is Serial", "Maya's top podcast is Radiolab", slot("favourite podcast"));
        coexist("Maya's favourite podcast is Serial", "Maya reached the top of the hill");
        update("Maya smokes", "Maya is a non-smoker now", Change::Flip);
        update("Maya has a bike", "Someone stole Maya's bike", Change::Ending);
        coexist("Maya has a bike", "Someone stole her neighbour's car");
        // A favourite by its noun's other names; "place to eat" is a restaurant.
        update("Maya's favourite author is Stephen King", "Maya's favourite writer is Sally Rooney", slot("favourite author"));
        update("Maya's favourite restaurant is Dishoom", "Maya's favourite place to eat is Padella", slot("favourite restaurant"));
        coexist("Maya's favourite restaurant is Dishoom", "Maya's favourite place to read is the library");
        // Directions say which way, not where.
        update("Maya lives near the beach in Brighton", "Maya moved inland to Crawley", slot("home"));
        // A department is a team; a home one lives on; a school one is at.
        update("Maya is in the sales team", "Maya transferred to the finance department", slot("team"));
        update("Maya lives on a houseboat", "Maya now lives in a flat in Hackney", slot("home"));
        coexist("Maya lives in Leeds", "Maya lives on instant noodles");
        update("Maya's daughter is at Riverside Nursery", "Maya's daughter now goes to Greenfield Primary", slot("school"));
        coexist("Maya's daughter goes to Greenfield Primary", "Maya's daughter is at the school library today");
        // A partner named in a slot and a couple with someone else named.
        update("Maya's boyfriend is Theo", "Maya is dating Leo now", slot("relationship"));
        coexist("Maya's boyfriend is Theo", "Maya is dating Theo");
        // Restatements: owning is having; "an X fan" is "a fan of X"; grey is gray.
        duplicate("Maya has a parrot called Rio", "Maya owns a parrot named Rio");
        duplicate("Maya is a huge fan of cricket", "Maya is a big cricket fan");
        duplicate("Maya's favourite colour is grey", "Maya's favorite color is gray");
        assert!(!restated("Maya has a parrot called Rio", "Maya owns a parrot named Pip"));
        assert!(!restated("Maya is a huge fan of cricket", "Maya is a big rugby fan"));
    }

    /// The sixth round's principles (docs/pipeline.md, "Sixth round"), each
    /// beside what it must leave alone.
    #[test]
    fn sixth_round_principles() {
        let slot = |s: &str| Change::Slot(s.to_string());
        let changed = |a: &str, b: &str| assert!(evidence(a, b).is_some() && !restated(b, a), "{a:?} → {b:?}: want a change");
        // Idioms: notice handed in, a partner dumped, remarried, an age hit,
        // fallen in love, taken over as, seeing someone.
        update("Maya works at the bank", "Maya handed in her notice", Change::Ending);
        coexist("Maya works at the bank", "Maya's brother handed in his notice");
        update("Maya has a boyfriend", "Maya dumped her boyfriend", Change::Ending);
        coexist("Maya has a boyfriend", "Maya dumped her old sofa");
        update("Maya is divorced", "Maya remarried", slot("relationship"));
        update("Maya is engaged to Theo", "Maya got married in June", slot("relationship"));
        update("Maya is 29", "Maya hit 30", slot("age"));
        coexist("Maya is 29", "Maya hit 30 goals this season");
        update("Maya dislikes opera", "Maya fell in love with opera", Change::Flip);
        coexist("Maya loves jazz", "Maya fell in love with opera");
        update("Maya is the treasurer of the chess club", "Maya took over as chair of the chess club", slot("role in chess club"));
        coexist("Maya is the treasurer of the chess club", "Maya took over as chair of the book club");
        update("Maya is single", "Maya started seeing someone", slot("relationship"));
        coexist("Maya is single", "Maya started seeing a therapist");
        // A couple no longer together, split with the subject second; a
        // partner's death; the couple's ending named by its noun.
        update("Maya is dating Theo", "Maya and Theo are no longer together", Change::Ending);
        update("Maya is dating Theo", "Theo and Maya split up", Change::Ending);
        coexist("Maya is dating Theo", "Maya and Theo are together");
        update("Maya is married to Theo", "Maya's husband passed away", Change::Ending);
        coexist("Maya is married to Theo", "Maya's grandfather passed away");
        update("Maya is engaged to Theo", "Maya called off her engagement", Change::Ending);
        coexist("Maya is engaged to Theo", "Maya's sister called off her engagement");
        coexist("Maya is single", "Maya called off the meeting");
        // Times and directions say when and which way, not what.
        update("Maya lives in Oslo", "Maya moved abroad to Lyon", slot("home"));
        update("Maya is 54", "Maya is 55 as of today", slot("age"));
        update("Maya's favourite film is Alien", "Maya's all-time favourite film is Heat", slot("favourite film"));
        update("Maya works nights at a warehouse", "Maya got a day job at a bookshop", slot("employer"));
        // Replaced as a favourite; instead of doing a plan; switched to a thing.
        update("Maya's favourite sport is tennis", "Padel has replaced tennis as Maya's favourite sport", slot("favourite sport"));
        update("Maya plans to move to Oslo", "Maya decided to stay in Bergen instead of moving to Oslo", Change::Ending);
        coexist("Maya plans to move to Oslo", "Maya took the bus instead of walking to work");
        changed("Maya has a Nokia phone", "Maya switched to an iPhone");
        coexist("Maya has a Nokia phone", "Maya switched to a standing desk");
        // A team at work, a workplace with its article, a school by its kind,
        // a home moved back into.
        update("Maya is in the sales team", "Maya moved to the finance team", slot("team"));
        coexist("Maya lives in Leeds", "Maya moved to the finance team");
        update("Maya works in a factory", "Maya was made redundant from the factory", Change::Ending);
        coexist("Maya works in a factory", "Maya's husband was made redundant");
        update("Maya's son attends Oakwood Primary", "Maya's son started at Hillside Academy", slot("school"));
        update("Maya lives in Camden", "Maya moved back in with her parents in Kent", slot("home"));
        // "named" says "called"; one occasion of a habit is not the habit.
        duplicate("Maya has a dog called Biscuit", "Maya has a dog named Biscuit");
        assert!(!restated("Maya has a dog named Biscuit", "Maya has a dog named Pickle"));
        coexist("Maya goes to yoga on Tuesdays", "Maya cancelled yoga this Tuesday");
        coexist("Maya swims on Sundays", "Maya missed swimming on Sunday");
        update("Maya plans to go to yoga on Tuesday", "Maya cancelled yoga this Tuesday", Change::Ending);
    }

    /// The fifth round's principles (docs/pipeline.md, "Fifth round"), each
    /// beside what it must leave alone.
    #[test]
    fn fifth_round_principles() {
        let slot = |s: &str| Change::Slot(s.to_string());
        // Employed by, hired, laid off: working, starting to work, losing the job.
        duplicate("Maya works for the museum", "Maya is employed by the museum");
        update("Maya is a cashier", "Maya was hired as a welder", slot("job"));
        update("Maya works at the museum", "Maya was laid off", Change::Ending);
        coexist("Maya works at the museum", "Maya's brother was laid off");
        coexist("Maya works at a bank", "Maya hired a cleaner");
        // One's own post, named without its place, is whatever job one has.
        update("Maya works as a welder", "Maya quit her job", Change::Ending);
        coexist("Maya plays in a band", "Maya quit her job");
        coexist("Maya works as a welder", "Maya quit her job at the bakery");
        coexist("Maya runs her own bakery", "Maya lost her job");
        coexist("Maya owns a bakery", "Maya lost her job, opened a bakery and loves it");
        coexist("Maya is a florist who runs her own shop", "Maya quit her job");
        // A loss ends a thing had or a post held, never an activity.
        update("Maya owns a drone", "Maya lost her drone", Change::Ending);
        coexist("Maya plays chess", "Maya lost a chess match");
        coexist("Maya works at a bank", "Maya lost her keys at the bank");
        // A job told with its place names the employer.
        update("Maya is a barista at a cafe", "Maya works at the bank", slot("employer"));
        coexist("Maya is a nurse at the city hospital", "Maya works at the city hospital");
        coexist("Maya works as a guard at night", "Maya works at a bank");
        coexist("Maya is a nurse at the city hospital", "Maya is a volunteer driver at the food bank");
        // A break-up with one's partner, named by the noun, ends the couple.
        update("Maya is married to Theo", "Maya split from her husband", Change::Ending);
        update("Maya is in a relationship with Theo", "Maya and Theo called it quits", Change::Ending);
        update("Maya is dating Theo", "Theo and Maya broke up", Change::Ending);
        coexist("Maya is married to Theo", "Maya's sister broke up with her boyfriend");
        coexist("Maya is dating Theo", "Theo and Ann broke up");
        // A rank makes another position.
        update("Maya is the vice-captain of the rowing club", "Maya is the captain of the rowing club", slot("role in club row"));
        update("Maya is the treasurer of the chess club", "Maya was elected chair of the chess club", slot("role in chess club"));
        coexist("Maya is the captain of the rowing club", "Maya is the captain of the chess club");
        // Homes by other names.
        update("Maya lives in Oslo", "Maya calls Bergen home", slot("home"));
        update("Maya lives in Oslo", "Maya has her own place in Bergen", slot("home"));
        coexist("Maya lives in Oslo", "Maya calls her mum at home");
        coexist("Maya lives in Oslo", "Maya has a place in the choir");
        // Turning an age; a favourite's head noun by one name; a named one.
        update("Maya is 33", "Maya celebrated turning 34", slot("age"));
        coexist("Maya is 33", "Maya's son is turning 5");
        update("Maya's favourite film is Alien", "Maya's favourite movie is Heat", slot("favourite film"));
        update("Maya's coach is Ann", "Maya has a new coach, Bo", slot("coach"));
        coexist("Maya's coach is Ann", "Maya has a new dog, Bo");
        // A school moved to, a degree done at one.
        update("Maya's son attends Hillside School", "Maya's son moved to Oakwood Academy", slot("school"));
        update("Maya lives in Oslo", "Maya moved to a flat near the university", slot("home"));
        update("Maya is doing a PhD at Leeds University", "Maya is doing a PhD at York University", slot("school"));
        // Plans put on hold or changed one's mind about.
        update("Maya plans to buy a flat", "Maya has put buying a flat on hold", Change::Ending);
        update("Maya plans to adopt a dog", "Maya changed her mind about adopting a dog", Change::Ending);
        coexist("Maya plans to adopt a dog", "Maya changed her mind about the paint colour");
        // Coming to dislike or to like; done with; "any longer".
        update("Maya loves opera", "Maya has gone off opera", Change::Flip);
        update("Maya is into chess", "Maya lost interest in chess", Change::Flip);
        update("Maya hates olives", "Maya has warmed to olives", Change::Flip);
        update("Maya loves horror films", "Maya can't bear horror films", Change::Flip);
        update("Maya sings in a choir", "Maya is done with the choir", Change::Ending);
        update("Maya eats meat", "Maya doesn't eat meat any longer", Change::Ending);
        coexist("Maya loves hiking", "Maya has gone off to university");
        coexist("Maya loves opera", "Maya has gone off ballet");
    }

    #[test]
    fn wider_shapes_of_an_ending() {
        update("Maya owns a kayak", "Maya traded in her kayak", Change::Ending);
        update("Maya has two rabbits", "Maya rehomed her rabbits", Change::Ending);
        update("Maya has a tortoise named Shelby", "Maya's tortoise Shelby died", Change::Ending);
        update("Maya owns a scooter", "Maya's scooter was stolen", Change::Ending);
        update("Maya has a horse called Bess", "Maya's horse Bess lives with her cousin now", Change::Ending);
        update("Maya is planning a trip to Peru", "Maya's trip to Peru is off", Change::Ending);
        update("Maya is hosting a barbecue on Sunday", "Maya's barbecue isn't happening", Change::Ending);
        update("Maya plans to open a cafe", "Maya dropped her plans to open a cafe", Change::Ending);
        update("Maya intends to learn Greek", "Maya has decided not to learn Greek", Change::Ending);
        update("Maya is dating Theo", "Maya and Theo split up", Change::Ending);
        update("Maya swims every morning", "Maya has retired from swimming", Change::Ending);
        update("Maya is vegetarian", "Maya stopped being vegetarian", Change::Ending);
        update("Maya sings in a gospel choir", "Maya is no longer in the gospel choir", Change::Ending);
        update("Maya coaches a junior hockey team", "Maya stepped down as coach of the junior hockey team", Change::Ending);
        update("Maya plans to honeymoon in Peru", "Maya cancelled her honeymoon in Peru", Change::Ending);
        update("Maya works at the post office", "Maya left her job at the post office", Change::Ending);
        update("Maya owns a boat", "Maya no longer has a boat", Change::Ending);
        // Negatives: a thing left at a place, a visit, someone else's pet, a
        // pet that lives with its owner, a planned ending, an outing.
        coexist("Maya volunteers at the museum", "Maya left her scarf at the museum");
        coexist("Maya drinks tea every day", "Maya stopped by the tea shop");
        coexist("Maya has a dog", "Maya's friend's dog died");
        coexist("Maya has a cat called Pip", "Maya's cat Pip lives with her and Theo");
        coexist("Maya works at a bakery", "Maya plans to quit her job at the bakery");
        coexist("Maya sings in a choir", "Maya left the choir rehearsal early");
        coexist("Maya is married to Theo", "Maya's sister and her husband split up");
    }

    #[test]
    fn wider_shapes_of_a_flip() {
        update("Maya loves opera", "These days Maya hates opera", Change::Flip);
        update("Maya adores musicals", "Maya is not a fan of musicals now", Change::Flip);
        update("Maya loves the seaside", "Maya is tired of the seaside", Change::Flip);
        update("Maya is a big fan of rugby", "Maya can't stand rugby anymore", Change::Ending);
        update("Maya hates baking", "Maya has grown to love baking", Change::Flip);
        update("Maya likes techno", "Maya is sick of techno", Change::Flip);
        // Negatives: tired of something else, tired after something.
        coexist("Maya loves the seaside", "Maya is tired of the traffic");
        coexist("Maya loves rugby", "Maya is tired after rugby practice");
        duplicate("Maya is a big fan of rugby", "Maya loves rugby");
    }

    #[test]
    fn restatements_merge() {
        duplicate("Maya adopted a cat", "Maya adopted the cat");
        duplicate("Maya has two dogs", "Maya has 2 dogs");
        duplicate("Maya is twenty-five", "Maya is 25");
        duplicate("Maya works as a nurse", "Maya is a nurse");
        duplicate("In May, Maya adopted a cat", "Maya adopted a cat in May");
        duplicate("Blue is Maya's favourite colour", "Maya's favorite color is blue");
        duplicate("Maya loves hiking", "Maya really loves hiking");
        duplicate("Maya recently adopted a kitten", "Maya adopted a kitten");
        duplicate("Maya loves hiking", "Maya enjoys hiking");
        duplicate("Maya works at Lumen Labs", "Lumen Labs is where Maya works");
        duplicate("Maya walks to work", "Maya always walks to work");
        duplicate("After dinner, Maya reads poetry", "Maya reads poetry after dinner");
        // Not restatements: another value, another time, a negation.
        assert!(!restated("Maya has two dogs", "Maya has three dogs"));
        assert!(!restated("Maya went to Paris in 2019", "Maya went to Paris in 2022"));
        assert!(!restated("Maya likes tea", "Maya does not like tea"));
        assert!(!restated("Maya works as a nurse", "Maya's mother works as a nurse"));
        assert!(!restated("Maya rarely drinks coffee", "Maya drinks coffee"));
        assert!(!restated("Maya plans to visit Rome", "Maya visited Rome"));
    }
}
