//! Config parsing on arbitrary text: a TOML file (shared keys, sections or
//! the deprecated flat keys), then its first line as a `--set` override;
//! never a panic, errors on one line, and a config that passes `validate`
//! has every numeric key in its range.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memform::pipeline::Config;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = std::path::Path::new("fuzz.toml");
    let one_line = |e: &memform::error::Error| {
        let msg = memform::error::chain(e);
        assert!(!msg.contains('\n'), "a multi-line error: {msg}");
    };
    let mut cfg = match Config::from_toml_str(path, text) {
        Ok(c) => c,
        Err(e) => {
            one_line(&e);
            Config::default()
        }
    };
    let first = text.lines().next().unwrap_or_default();
    if let Err(e) = cfg.set(first) {
        one_line(&e);
    }
    match cfg.validate() {
        Ok(()) => {
            for b in memform::config::BOUNDS {
                assert!(cfg.check_key(b.key).is_ok(), "{}", b.key);
            }
            for b in <memform::pipeline::soda::SodaConfig as memform::config::Section>::BOUNDS {
                assert!(cfg.check_key(&format!("soda.{}", b.key)).is_ok(), "soda.{}", b.key);
            }
        }
        Err(e) => one_line(&e),
    }
});
