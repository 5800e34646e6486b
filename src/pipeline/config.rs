//! The whole configuration: the shared keys ([`Shared`], the top level of a
//! config file) and one typed section per profile (`[soda]`, `[signet]`,
//! `[memorix]`), each owned by its profile's module. Loaded from TOML,
//! overridden with `--set key=value` (`--set soda.near_dup_threshold=0.9`),
//! and written whole into each run's manifest.
//!
//! The flat keys of before sections still load, for one release, as
//! deprecated aliases: each sets the key in every section that has it and
//! leaves a warning naming the new spelling ([`Config::deprecations`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::dreaming::config::DreamingConfig;
use super::external::config::ExternalConfig;
use super::memorix::config::MemorixConfig;
use super::signet::config::SignetConfig;
use super::soda::SodaConfig;
use crate::config::{BOUNDS, Section, Shared, did_you_mean, key_line, span_line, table_of};
use crate::error::{Error, Result};

/// Every key a run reads: the shared keys (reached through `Deref`, so
/// `cfg.max_facts` reads [`Shared::max_facts`]) and the profiles' sections.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub shared: Shared,
    pub soda: SodaConfig,
    pub signet: SignetConfig,
    pub memorix: MemorixConfig,
    pub dreaming: DreamingConfig,
    pub external: ExternalConfig,
    /// What the command that starts the proxy gives an external adapter
    /// (the proxy's URL, its health): never serialised, never compared
    /// (docs/adapters.md).
    pub external_runtime: super::external::Runtime,
    /// Deprecated spellings this config was given, one warning each (not
    /// part of the config: never serialised, never compared).
    deprecations: Vec<String>,
    /// Keys set through a deprecated flat alias, with the sections the
    /// alias reached (so a section it reached but the profile does not
    /// read is not also warned about as ignored).
    aliased: Vec<(String, Vec<&'static str>)>,
}

impl PartialEq for Config {
    fn eq(&self, o: &Config) -> bool {
        self.shared == o.shared
            && self.soda == o.soda
            && self.signet == o.signet
            && self.memorix == o.memorix
            && self.dreaming == o.dreaming
            && self.external == o.external
    }
}

impl std::ops::Deref for Config {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.shared
    }
}

impl std::ops::DerefMut for Config {
    fn deref_mut(&mut self) -> &mut Shared {
        &mut self.shared
    }
}

/// The sections, by name (each named after the profile that reads it).
pub const SECTIONS: &[&str] = &[SodaConfig::NAME, SignetConfig::NAME, MemorixConfig::NAME, DreamingConfig::NAME, ExternalConfig::NAME];

/// A section's flat aliases, by section name.
fn flat_aliases(section: &str) -> &'static [(&'static str, &'static str)] {
    match section {
        "soda" => SodaConfig::FLAT_ALIASES,
        "signet" => SignetConfig::FLAT_ALIASES,
        "memorix" => MemorixConfig::FLAT_ALIASES,
        "dreaming" => DreamingConfig::FLAT_ALIASES,
        "external" => ExternalConfig::FLAT_ALIASES,
        _ => &[],
    }
}

/// A section's numeric keys' ranges, by section name.
fn bounds_of(section: &str) -> &'static [crate::config::Bound] {
    match section {
        "soda" => SodaConfig::BOUNDS,
        "signet" => SignetConfig::BOUNDS,
        "memorix" => MemorixConfig::BOUNDS,
        "dreaming" => DreamingConfig::BOUNDS,
        "external" => ExternalConfig::BOUNDS,
        _ => &[],
    }
}

/// Where a key a user spelled lands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Spelling {
    /// A shared key (top level).
    Shared(String),
    /// `section.key`.
    InSection(&'static str, String),
    /// A flat key of before sections: every section that has it now.
    Flat(String, Vec<(&'static str, &'static str)>),
}

/// The names of the shared keys and of each section's keys.
struct KeyNames {
    shared: std::collections::BTreeSet<String>,
    sections: BTreeMap<&'static str, std::collections::BTreeSet<String>>,
}

impl Config {
    /// The default sections' tables, by name.
    fn default_tables() -> Result<BTreeMap<&'static str, toml::Table>> {
        let d = Config::default();
        Ok(BTreeMap::from([
            (SodaConfig::NAME, table_of(&d.soda).map_err(Error::Config)?),
            (SignetConfig::NAME, table_of(&d.signet).map_err(Error::Config)?),
            (MemorixConfig::NAME, table_of(&d.memorix).map_err(Error::Config)?),
            (DreamingConfig::NAME, table_of(&d.dreaming).map_err(Error::Config)?),
            (ExternalConfig::NAME, table_of(&d.external).map_err(Error::Config)?),
        ]))
    }

    /// The shared keys' names and each section's, from the defaults:
    /// computed once (every override and every key of a file read asks).
    fn key_names() -> Result<&'static KeyNames> {
        static NAMES: std::sync::OnceLock<std::result::Result<KeyNames, String>> = std::sync::OnceLock::new();
        NAMES
            .get_or_init(|| {
                let shared = table_of(&Shared::default())?.into_iter().map(|(k, _)| k).collect();
                let sections = Config::default_tables()
                    .map_err(|e| crate::error::chain(&e))?
                    .into_iter()
                    .map(|(name, t)| (name, t.into_iter().map(|(k, _)| k).collect()))
                    .collect();
                Ok(KeyNames { shared, sections })
            })
            .as_ref()
            .map_err(|e| Error::Config(e.clone()))
    }

    /// The config as one TOML table: the shared keys, then one sub-table per section.
    pub fn to_table(&self) -> Result<toml::Table> {
        let mut t = table_of(&self.shared).map_err(Error::Config)?;
        t.insert(SodaConfig::NAME.into(), toml::Value::Table(table_of(&self.soda).map_err(Error::Config)?));
        t.insert(SignetConfig::NAME.into(), toml::Value::Table(table_of(&self.signet).map_err(Error::Config)?));
        t.insert(MemorixConfig::NAME.into(), toml::Value::Table(table_of(&self.memorix).map_err(Error::Config)?));
        t.insert(DreamingConfig::NAME.into(), toml::Value::Table(table_of(&self.dreaming).map_err(Error::Config)?));
        t.insert(ExternalConfig::NAME.into(), toml::Value::Table(table_of(&self.external).map_err(Error::Config)?));
        Ok(t)
    }

    /// Every spelling a key may have: shared keys, `section.key`, and the
    /// deprecated flat aliases (for did-you-mean).
    fn spellings() -> Result<Vec<String>> {
        let d = Config::default();
        let mut all: Vec<String> = table_of(&d.shared).map_err(Error::Config)?.keys().cloned().collect();
        all.extend(SECTIONS.iter().map(|s| s.to_string()));
        for (name, t) in Config::default_tables()? {
            all.extend(t.keys().map(|k| format!("{name}.{k}")));
            all.extend(flat_aliases(name).iter().map(|(a, _)| a.to_string()));
        }
        all.sort();
        all.dedup();
        Ok(all)
    }

    /// What `key` names, or an unknown-key error (with a did-you-mean).
    fn spelling(key: &str, flag: &str) -> Result<Spelling> {
        let unknown = |what: String| -> Result<Spelling> {
            let all = Config::spellings()?;
            let hint = did_you_mean(key, all.iter().map(String::as_str)).map(|s| format!(" (did you mean {s}?)")).unwrap_or_default();
            Err(Error::Config(crate::error::one_line(&format!("{flag}{what}{hint}"))))
        };
        if let Some((section, k)) = key.split_once('.') {
            let Some(name) = SECTIONS.iter().copied().find(|s| *s == section) else {
                return unknown(format!("{key}: unknown config section {section:?}; the sections are {}", SECTIONS.join(", ")));
            };
            if !Config::key_names()?.sections.get(name).is_some_and(|t| t.contains(k)) {
                return unknown(format!("{key}: unknown config key"));
            }
            return Ok(Spelling::InSection(name, k.to_string()));
        }
        if Config::key_names()?.shared.contains(key) {
            return Ok(Spelling::Shared(key.to_string()));
        }
        let targets: Vec<(&'static str, &'static str)> =
            SECTIONS.iter().flat_map(|s| flat_aliases(s).iter().filter(|(a, _)| *a == key).map(move |(_, k)| (*s, *k))).collect();
        if targets.is_empty() {
            return unknown(format!("{key}: unknown config key"));
        }
        Ok(Spelling::Flat(key.to_string(), targets))
    }

    /// The warning a deprecated flat key gives.
    fn deprecation(key: &str, targets: &[(&str, &str)]) -> String {
        let new: Vec<String> = targets.iter().map(|(s, k)| format!("{s}.{k}")).collect();
        format!("config key {key} is deprecated: write {} (one release more, then it is refused)", new.join(" and "))
    }

    /// The config from one TOML table (a file's, or `run.json`'s): shared
    /// keys at the top, sections as sub-tables; a dotted key is a section's
    /// key, a flat key of before sections sets every section that has it
    /// (a section's own setting of the same key wins). `Err((section, key,
    /// message))` names what is wrong.
    fn from_table(table: toml::Table) -> std::result::Result<Config, (Option<&'static str>, String, String)> {
        let fail = |section: Option<&'static str>, key: &str, e: Error| {
            let m = match e {
                Error::Config(m) => m,
                other => crate::error::chain(&other),
            };
            (section, key.to_string(), m)
        };
        let mut shared = toml::Table::new();
        let mut from_alias: BTreeMap<&'static str, toml::Table> = BTreeMap::new();
        let mut own: BTreeMap<&'static str, toml::Table> = BTreeMap::new();
        let mut deprecations = Vec::new();
        let mut aliased = Vec::new();
        for (key, value) in table {
            if let Some(name) = SECTIONS.iter().copied().find(|s| *s == key) {
                let toml::Value::Table(t) = value else {
                    return Err((None, key.clone(), format!("{key}: expected a table of the {key} profile's keys ([{key}])")));
                };
                for (k, v) in t {
                    match Config::spelling(&format!("{name}.{k}"), "") {
                        Ok(_) => {
                            own.entry(name).or_default().insert(k, v);
                        }
                        Err(e) => return Err(fail(Some(name), &k, e)),
                    }
                }
                continue;
            }
            match Config::spelling(&key, "").map_err(|e| fail(None, &key, e))? {
                Spelling::Shared(k) => {
                    shared.insert(k, value);
                }
                Spelling::InSection(name, k) => {
                    own.entry(name).or_default().insert(k, value);
                }
                Spelling::Flat(k, targets) => {
                    for (s, sk) in &targets {
                        from_alias.entry(s).or_default().insert(sk.to_string(), value.clone());
                    }
                    deprecations.push(Config::deprecation(&k, &targets));
                    aliased.push((k, targets.iter().map(|(s, _)| *s).collect()));
                }
            }
        }
        let mut section = |name: &'static str| -> toml::Value {
            let mut t = from_alias.remove(name).unwrap_or_default();
            t.extend(own.remove(name).unwrap_or_default());
            toml::Value::Table(t)
        };
        Ok(Config {
            shared: typed(None, toml::Value::Table(shared))?,
            soda: typed(Some(SodaConfig::NAME), section(SodaConfig::NAME))?,
            signet: typed(Some(SignetConfig::NAME), section(SignetConfig::NAME))?,
            memorix: typed(Some(MemorixConfig::NAME), section(MemorixConfig::NAME))?,
            dreaming: typed(Some(DreamingConfig::NAME), section(DreamingConfig::NAME))?,
            external: typed(Some(ExternalConfig::NAME), section(ExternalConfig::NAME))?,
            external_runtime: Default::default(),
            deprecations,
            aliased,
        })
    }

    /// The warnings for deprecated spellings this config was given, each once.
    pub fn deprecations(&self) -> Vec<String> {
        let mut d = self.deprecations.clone();
        d.dedup();
        d
    }

    /// Reads a TOML file of overrides. A key outside its range is an error
    /// naming the file, the line and the range (relations between keys are
    /// checked by [`Config::validate`], once every override is in).
    pub fn from_toml_file(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        crate::error::reject_bom(path, &bytes)?;
        let text = String::from_utf8(bytes)
            .map_err(|e| Error::input(path, format!("not UTF-8 (invalid byte at offset {})", e.utf8_error().valid_up_to())))?;
        Self::from_toml_str(path, &text)
    }

    /// [`Config::from_toml_file`] on text already read; `path` names it in errors.
    pub fn from_toml_str(path: &Path, text: &str) -> Result<Self> {
        let table: toml::Table =
            toml::from_str(text).map_err(|e| Error::input(path, format!("{}{}", span_line(text, e.span()), e.message())))?;
        let cfg =
            Config::from_table(table).map_err(|(section, key, m)| Error::input(path, format!("{}{m}", line_of(text, section, &key))))?;
        if let Err((section, key, message)) = cfg.check_ranges() {
            return Err(Error::input(path, format!("{}{message}", line_of(text, section, key))));
        }
        Ok(cfg)
    }

    /// Applies one `key=value` override; the value is parsed as TOML (so
    /// `0.9`, `true`, `"hashed"`, `["a","b"]`), falling back to a bare string.
    pub fn set(&mut self, assignment: &str) -> Result<()> {
        self.set_from("--set", assignment)
    }

    /// [`Config::set`] for an override given by `flag` (`--set`, `--grid`,
    /// `--set-a`…), which errors name.
    pub fn set_from(&mut self, flag: &str, assignment: &str) -> Result<()> {
        let (key, value) = assignment.split_once('=').ok_or_else(|| Error::Config(format!("{flag} {assignment:?}: expected key=value")))?;
        let key = key.trim();
        let value = value.trim();
        let spelling = Config::spelling(key, &format!("{flag} "))?;
        let targets: Vec<(Option<&'static str>, String)> = match &spelling {
            Spelling::Shared(k) => vec![(None, k.clone())],
            Spelling::InSection(s, k) => vec![(Some(*s), k.clone())],
            Spelling::Flat(_, t) => t.iter().map(|(s, k)| (Some(*s), k.to_string())).collect(),
        };
        let mut table = self.to_table()?;
        let parsed: toml::Value = toml::from_str::<toml::Table>(&format!("v = {value}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.to_string()));
        for (section, k) in &targets {
            let slot = match section {
                None => Some(&mut table),
                Some(s) => table.get_mut(*s).and_then(toml::Value::as_table_mut),
            };
            let Some(slot) = slot else { continue };
            let v = match (slot.get(k), parsed.clone()) {
                (Some(toml::Value::Float(_)), toml::Value::Integer(i)) => toml::Value::Float(i as f64),
                (_, p) => p,
            };
            slot.insert(k.clone(), v);
        }
        let mut next =
            Config::from_table(table).map_err(|(_, _, m)| Error::Config(crate::error::one_line(&format!("{flag} {key}={value}: {m}"))))?;
        // llm_url is serialised without its userinfo (never into an
        // artefact); an override of another key keeps the URL as given.
        if !targets.iter().any(|(s, k)| s.is_none() && k == "llm_url") {
            next.shared.llm_url = self.shared.llm_url.clone();
        }
        next.deprecations = std::mem::take(&mut self.deprecations);
        next.aliased = std::mem::take(&mut self.aliased);
        if let Spelling::Flat(k, t) = spelling {
            next.deprecations.push(Config::deprecation(&k, &t));
            next.aliased.push((k, t.iter().map(|(s, _)| *s).collect()));
        }
        *self = next;
        Ok(())
    }

    /// The first key outside its range: its section, the key and the message.
    fn check_ranges(&self) -> std::result::Result<(), (Option<&'static str>, &'static str, String)> {
        let sectioned = |name: &'static str, r: std::result::Result<(), (&'static str, String)>| {
            r.map_err(|(k, m)| (Some(name), k, format!("{name}.{m}")))
        };
        self.shared.check().map_err(|(k, m)| (None, k, m))?;
        sectioned(SodaConfig::NAME, self.soda.check())?;
        sectioned(SignetConfig::NAME, self.signet.check())?;
        sectioned(MemorixConfig::NAME, self.memorix.check())?;
        sectioned(DreamingConfig::NAME, self.dreaming.check())?;
        sectioned(ExternalConfig::NAME, self.external.check())
    }

    /// Every numeric key within its range, then the relations between keys,
    /// then the profile's name. The first violation is the error.
    pub fn validate(&self) -> Result<()> {
        self.check_ranges().map_err(|(_, _, message)| Error::Config(message))?;
        super::profiles::by_name(&self.profile).map(drop)
    }

    /// `key`'s value within its range, when it has one (any spelling).
    pub fn check_key(&self, key: &str) -> Result<()> {
        let targets: Vec<(&str, String)> = match Config::spelling(key, "")? {
            Spelling::Shared(k) => return self.shared.check_key(&k),
            Spelling::InSection(s, k) => vec![(s, k)],
            Spelling::Flat(_, t) => t.into_iter().map(|(s, k)| (s, k.to_string())).collect(),
        };
        let table = self.to_table()?;
        for (s, k) in targets {
            if let Some(b) = bounds_of(s).iter().find(|b| b.key == k) {
                b.check(table.get(s).and_then(|t| t.get(&k))).map_err(|m| Error::Config(format!("{s}.{m}")))?;
            }
        }
        Ok(())
    }

    /// `key`'s value (any spelling; a flat key of before sections: its
    /// first section's), as JSON; `None` for an unknown key.
    pub fn value_of(&self, key: &str) -> Option<serde_json::Value> {
        let json = serde_json::to_value(self).ok()?;
        match Config::spelling(key, "").ok()? {
            Spelling::Shared(k) => json.get(&k).cloned(),
            Spelling::InSection(s, k) => json.get(s)?.get(&k).cloned(),
            Spelling::Flat(_, t) => t.first().and_then(|(s, k)| json.get(*s)?.get(*k).cloned()),
        }
    }

    /// The sections `key` (any spelling) is in: empty for a shared key.
    pub fn sections_of(key: &str) -> Result<Vec<&'static str>> {
        Ok(match Config::spelling(key, "")? {
            Spelling::Shared(_) => Vec::new(),
            Spelling::InSection(s, _) => vec![s],
            Spelling::Flat(_, t) => t.iter().map(|(s, _)| *s).collect(),
        })
    }

    /// One line per key set away from its default in a section that
    /// `profile` does not read: such a key is ignored, and the run says so,
    /// naming the profile that reads it. A deprecated flat key that also
    /// reached `profile`'s own section is not repeated for the others.
    pub fn ignored_by(&self, profile: &str) -> Result<Vec<String>> {
        let set = self.to_table()?;
        let defaults = Config::default_tables()?;
        let mut out = Vec::new();
        for (name, default) in &defaults {
            if super::external::config::reads(profile, name) {
                continue;
            }
            let Some(toml::Value::Table(t)) = set.get(*name) else { continue };
            for (k, v) in t {
                if default.get(k) == Some(v) {
                    continue;
                }
                let via_alias = self.aliased.iter().any(|(a, sections)| {
                    sections.contains(name)
                        && sections.contains(&profile)
                        && flat_aliases(name).iter().any(|(alias, key)| alias == a && key == k)
                });
                if !via_alias {
                    out.push(format!("config key {name}.{k} is read by profile {name}, not {profile}: it is ignored"));
                }
            }
        }
        Ok(out)
    }

    /// The default configuration as TOML, each numeric key followed by its
    /// range as a comment (what `memform config` prints): the shared keys,
    /// then `profile`'s section, or every section when `profile` is `None`.
    pub fn documented_defaults(profile: Option<&str>) -> Result<String> {
        if let Some(p) = profile {
            super::profiles::by_name(p)?;
        }
        let d = Config::default();
        let mut out =
            String::from("# memform config: the shared keys, then each profile's section; numeric keys with their allowed range.\n");
        annotate(&mut out, &pretty(&d.shared)?, BOUNDS);
        let sections = [
            (SodaConfig::NAME, pretty(&d.soda)?),
            (SignetConfig::NAME, pretty(&d.signet)?),
            (MemorixConfig::NAME, pretty(&d.memorix)?),
            (DreamingConfig::NAME, pretty(&d.dreaming)?),
            (ExternalConfig::NAME, pretty(&d.external)?),
        ];
        for (name, text) in sections {
            if profile.is_some_and(|p| !super::external::config::reads(p, name)) {
                continue;
            }
            out.push_str(&format!("\n# read by profile {name} only\n[{name}]\n"));
            annotate(&mut out, &text, bounds_of(name));
        }
        Ok(out)
    }
}

/// A config struct as TOML text, in its fields' order.
fn pretty<T: Serialize>(v: &T) -> Result<String> {
    toml::to_string_pretty(v).map_err(|e| Error::Config(format!("serialise config: {e}")))
}

/// Appends `text` to `out`, each numeric key of `bounds` followed by its range.
fn annotate(out: &mut String, text: &str, bounds: &[crate::config::Bound]) {
    for line in text.lines() {
        out.push_str(line);
        let key = line.split_once(" = ").map(|(k, _)| k.trim());
        if let Some(b) = key.and_then(|k| bounds.iter().find(|b| b.key == k)) {
            out.push_str(&format!("  # {}", b.range));
        }
        out.push('\n');
    }
}

/// `line N: ` for the line that sets `key` of `section` in a config text:
/// in the section, dotted, or by a flat key of before sections.
fn line_of(text: &str, section: Option<&str>, key: &str) -> String {
    let found = key_line(text, section, key);
    match section {
        Some(s) if found.is_empty() => flat_aliases(s)
            .iter()
            .filter(|(_, k)| *k == key)
            .map(|(alias, _)| key_line(text, None, alias))
            .find(|l| !l.is_empty())
            .unwrap_or_default(),
        _ => found,
    }
}

/// A table as `T`; an error names the key (`section.key`) it is about.
fn typed<T: serde::de::DeserializeOwned>(
    section: Option<&'static str>,
    value: toml::Value,
) -> std::result::Result<T, (Option<&'static str>, String, String)> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let key = e.path().to_string();
        let shown = match section {
            Some(s) => format!("{s}.{key}"),
            None => key.clone(),
        };
        (section, key, format!("{shown}: {}", e.inner().message()))
    })
}

impl Serialize for Config {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.to_table().map_err(serde::ser::Error::custom)?.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Config {
    /// From `run.json`'s `config` (either layout): an unknown key is an
    /// error; deprecated flat keys load as their sections' keys.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Config, D::Error> {
        let table = toml::Table::deserialize(d)?;
        Config::from_table(table).map_err(|(_, _, m)| serde::de::Error::custom(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_overrides_numbers_and_rejects_unknown_keys() {
        let mut c = Config::default();
        c.set("soda.near_dup_threshold=0.9").unwrap();
        assert_eq!(c.soda.near_dup_threshold, 0.9);
        assert_eq!(c.signet.near_dup_threshold, 0.95, "a section key sets that section only");
        c.set("soda.entity_merge_threshold=1").unwrap();
        assert_eq!(c.soda.entity_merge_threshold, 1.0);
        c.set("embedder=hashed").unwrap();
        let err = c.set("no_such_key=1").unwrap_err().to_string();
        assert!(err.contains("unknown config key"), "{err}");
        let err = c.set("max_facts=lots").unwrap_err().to_string();
        assert!(err.contains("max_facts"), "{err}");
        assert!(c.deprecations().is_empty());
    }

    #[test]
    fn a_flat_key_of_before_sections_sets_every_section_that_has_it_with_a_warning() {
        let mut c = Config::default();
        c.set("near_dup_threshold=0.9").unwrap();
        assert_eq!((c.soda.near_dup_threshold, c.signet.near_dup_threshold), (0.9, 0.9));
        c.set("memorix_high_min=0.8").unwrap();
        assert_eq!(c.memorix.high_min, 0.8);
        let d = c.deprecations();
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].contains("near_dup_threshold is deprecated: write soda.near_dup_threshold and signet.near_dup_threshold"), "{d:?}");
        assert!(d[1].contains("memorix_high_min is deprecated: write memorix.high_min"), "{d:?}");
        // The flat spelling reached soda's section, so signet's copy is not
        // also reported as ignored under soda; memorix's is.
        let ignored = c.ignored_by("soda").unwrap();
        assert_eq!(ignored, vec!["config key memorix.high_min is read by profile memorix, not soda: it is ignored"]);
    }

    #[test]
    fn a_file_in_either_layout_gives_the_same_config() {
        let dir = tempfile::tempdir().unwrap();
        let flat = dir.path().join("flat.toml");
        std::fs::write(&flat, "max_facts = 5\nnear_dup_threshold = 0.9\nmemorix_search = \"store\"\n").unwrap();
        let sectioned = dir.path().join("sections.toml");
        std::fs::write(
            &sectioned,
            "max_facts = 5\n[soda]\nnear_dup_threshold = 0.9\n[signet]\nnear_dup_threshold = 0.9\n[memorix]\nsearch = \"store\"\n",
        )
        .unwrap();
        let a = Config::from_toml_file(&flat).unwrap();
        let b = Config::from_toml_file(&sectioned).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.deprecations().len(), 2);
        assert!(b.deprecations().is_empty());
        // A section's own setting wins over a flat alias, whatever the order.
        let both = dir.path().join("both.toml");
        std::fs::write(&both, "near_dup_threshold = 0.9\n[soda]\nnear_dup_threshold = 0.92\n").unwrap();
        let c = Config::from_toml_file(&both).unwrap();
        assert_eq!((c.soda.near_dup_threshold, c.signet.near_dup_threshold), (0.92, 0.9));
    }

    #[test]
    fn unknown_keys_name_file_line_and_a_close_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "max_facts = 5\nnear_dup_treshold = 0.9\n").unwrap();
        let err = Config::from_toml_file(&p).unwrap_err().to_string();
        assert!(err.contains("c.toml: line 2: near_dup_treshold: unknown config key (did you mean near_dup_threshold?)"), "{err}");
        std::fs::write(&p, "[memorix]\nhigh_min = 0.8\nnear_dup_threshold = 0.9\n").unwrap();
        let err = Config::from_toml_file(&p).unwrap_err().to_string();
        assert!(err.contains("c.toml: line 3: memorix.near_dup_threshold: unknown config key"), "{err}");
        std::fs::write(&p, "[sodaa]\nnear_dup_threshold = 0.9\n").unwrap();
        let err = Config::from_toml_file(&p).unwrap_err().to_string();
        assert!(err.contains("sodaa: unknown config key (did you mean soda"), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn every_numeric_key_has_a_range_and_the_defaults_are_in_it() {
        fn numeric(t: &toml::Table) -> Vec<String> {
            t.iter().filter(|(_, v)| matches!(v, toml::Value::Integer(_) | toml::Value::Float(_))).map(|(k, _)| k.clone()).collect()
        }
        let keys = |b: &[crate::config::Bound]| {
            let mut k: Vec<String> = b.iter().map(|b| b.key.to_string()).collect();
            k.sort();
            k
        };
        let d = Config::default();
        assert_eq!(numeric(&table_of(&d.shared).unwrap()), keys(BOUNDS));
        assert_eq!(numeric(&table_of(&d.soda).unwrap()), keys(SodaConfig::BOUNDS));
        assert_eq!(numeric(&table_of(&d.signet).unwrap()), keys(SignetConfig::BOUNDS));
        assert_eq!(numeric(&table_of(&d.memorix).unwrap()), keys(MemorixConfig::BOUNDS));
        d.validate().unwrap();
        let printed = Config::documented_defaults(None).unwrap();
        assert!(printed.contains("hashed_dims = 256  # 1..=8192"), "{printed}");
        assert!(printed.contains("entity_merge_threshold = 0.88  # [0.0, 1.0]"), "{printed}");
        assert!(printed.contains("high_min = 0.75  # [0.0, 1.0]"), "{printed}");
        let reread = Config::from_toml_str(Path::new("printed.toml"), &printed).unwrap();
        assert_eq!(reread, Config::default());
        let memorix = Config::documented_defaults(Some("memorix")).unwrap();
        assert!(memorix.contains("[memorix]") && !memorix.contains("[soda]") && memorix.contains("hashed_dims"), "{memorix}");
        assert!(Config::documented_defaults(Some("nope")).is_err());
    }

    fn refused(set: &str) -> String {
        let mut c = Config::default();
        match c.set(set) {
            Err(e) => e.to_string(),
            Ok(()) => c.validate().expect_err(set).to_string(),
        }
    }

    #[test]
    fn out_of_range_values_name_the_key_and_range() {
        for (set, want) in [
            ("hashed_dims=4000000000", "hashed_dims = 4000000000: must be within 1..=8192"),
            ("hashed_dims=0", "hashed_dims = 0: must be within 1..=8192"),
            ("llm_timeout_secs=1e300", "llm_timeout_secs = 1e300: must be within [0.1, 3600.0]"),
            ("llm_timeout_secs=nan", "llm_timeout_secs = NaN: must be within [0.1, 3600.0]"),
            ("llm_timeout_secs=inf", "llm_timeout_secs = inf: must be within"),
            ("llm_max_retries=200", "llm_max_retries = 200: must be within 0..=10"),
            ("soda.entity_merge_threshold=-0.1", "soda.entity_merge_threshold = -0.1: must be within [0.0, 1.0]"),
            ("soda.max_pairs_per_candidate=0", "soda.max_pairs_per_candidate = 0: must be within 1..=1000"),
            ("memorix.high_min=2", "memorix.high_min = 2.0: must be within [0.0, 1.0]"),
            ("llm_temperature=3", "llm_temperature = 3.0: must be within [0.0, 2.0]"),
        ] {
            let err = refused(set);
            assert!(err.contains(want), "{set}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn relations_between_keys_are_checked() {
        assert!(refused("soda.value_contextual_min=0.9").contains("soda.value_contextual_min = 0.9 is above value_core_min = 0.7"));
        assert!(refused("min_fact_chars=3000").contains("min_fact_chars = 3000 is above max_fact_chars = 2000"));
        assert!(refused("soda.contradiction_band_min=0.99").contains("soda.contradiction_band_min = 0.99 is above near_dup_threshold"));
        let err = refused(r#"soda.multi_valued_predicates=["likes", "Works At "]"#);
        assert!(err.contains(r#"predicate "works at" is in both single_valued_predicates and multi_valued_predicates"#), "{err}");
        assert!(refused("memorix.medium_min=0.9").contains("memorix.medium_min = 0.9 is above high_min = 0.75"));
        assert!(refused("profile=nope").contains("unknown profile"));
        let mut c = Config::default();
        c.set("soda.value_contextual_min=0.7").unwrap();
        c.validate().unwrap();
    }

    #[test]
    fn a_file_value_out_of_range_names_the_file_line_and_range() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "max_facts = 5\n[soda]\nnear_dup_threshold = nan\n").unwrap();
        let err = Config::from_toml_file(&p).unwrap_err().to_string();
        assert!(err.contains("c.toml: line 3: soda.near_dup_threshold = NaN: must be within [0.0, 1.0]"), "{err}");
        std::fs::write(&p, b"\xEF\xBB\xBFmax_facts = 5\n").unwrap();
        let err = Config::from_toml_file(&p).unwrap_err().to_string();
        assert!(err.contains("c.toml: line 1 column 1: starts with a UTF-8 byte-order mark"), "{err}");
    }

    #[test]
    fn set_from_names_its_flag() {
        let mut c = Config::default();
        let err = c.set_from("--grid", "bogus=1").unwrap_err().to_string();
        assert!(err.contains("--grid bogus: unknown config key") && !err.contains("--set"), "{err}");
        let err = c.set_from("--grid", "max_facts=x").unwrap_err().to_string();
        assert!(err.contains("--grid max_facts=x"), "{err}");
        c.set_from("--grid", "hashed_dims=9000").unwrap();
        assert!(c.check_key("hashed_dims").unwrap_err().to_string().contains("1..=8192"));
        assert!(c.check_key("embedder").is_ok());
        assert_eq!(Config::sections_of("near_dup_threshold").unwrap(), vec!["soda", "signet"]);
        assert_eq!(c.value_of("hashed_dims"), Some(serde_json::json!(9000)));
        assert_eq!(c.value_of("near_dup_threshold"), Some(serde_json::json!(0.95)));
        assert_eq!(c.value_of("memorix.high_min"), Some(serde_json::json!(0.75)));
        assert_eq!(c.value_of("bogus"), None);
        assert_eq!(Config::sections_of("memorix.search").unwrap(), vec!["memorix"]);
        assert!(Config::sections_of("max_facts").unwrap().is_empty());
    }

    #[test]
    fn an_override_keeps_a_credential_bearing_llm_url_as_given() {
        let mut c = Config::default();
        c.set("llm_url=http://user:KEY@host:1").unwrap();
        assert_eq!(c.llm_url, "http://user:KEY@host:1");
        c.set("soda.near_dup_threshold=0.9").unwrap();
        assert_eq!(c.llm_url, "http://user:KEY@host:1", "the URL survives another key's override");
        assert!(!serde_json::to_string(&c).unwrap().contains("KEY"), "but is never serialised with its key");
    }

    #[test]
    fn run_json_round_trips_in_the_new_layout_and_reads_the_old_one() {
        let mut c = Config::default();
        c.set("soda.near_dup_threshold=0.9").unwrap();
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["soda"]["near_dup_threshold"], 0.9);
        assert_eq!(json["max_facts"], 20);
        let back: Config = serde_json::from_value(json).unwrap();
        assert_eq!(back, c);
        let old = serde_json::json!({"max_facts": 20, "near_dup_threshold": 0.9, "memorix_high_min": 0.75});
        let read: Config = serde_json::from_value(old).unwrap();
        assert_eq!(read.soda.near_dup_threshold, 0.9);
        assert!(serde_json::from_value::<Config>(serde_json::json!({"bogus": 1})).is_err());
    }
}
