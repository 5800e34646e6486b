//! The LoCoMo importer on arbitrary JSON: never a panic; an error is one
//! line naming the file, a warning names it too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let _ = memform::dataset::locomo::looks_like(&value);
    let path = std::path::Path::new("fuzz/locomo/7.json");
    let mut warnings = Vec::new();
    match memform::dataset::locomo::import(path, "7", &value, &mut warnings) {
        Ok(conversations) => {
            for c in &conversations {
                assert!(c.speakers.len() == 2, "{:?}", c.speakers);
            }
        }
        Err(e) => {
            let msg = memform::error::chain(&e);
            assert!(!msg.contains('\n'), "a multi-line error: {msg}");
            assert!(msg.starts_with("fuzz/locomo/7.json: "), "the file is not named: {msg}");
        }
    }
    for w in &warnings {
        assert!(!w.message.contains('\n'), "a multi-line warning: {}", w.message);
    }
});
