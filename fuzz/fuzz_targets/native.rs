//! The native conversation importer on arbitrary bytes: never a panic; an
//! error is one line naming the file.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("fuzz/conversations/c.json");
    if let Err(e) = memform::dataset::native::parse(path, data) {
        let msg = memform::error::chain(&e);
        assert!(!msg.contains('\n'), "a multi-line error: {msg}");
        assert!(msg.starts_with("fuzz/conversations/c.json: "), "the file is not named: {msg}");
    }
});
