//! The `ALLOCLAB_CONF` parser of liballoclab.so (`preload/src/parse.rs`, compiled here from
//! its source: the library is a cdylib without a Rust API): any input parses without panicking,
//! every bad entry is reported once, as a piece of the input with a reason, and the count of
//! reports is the count it returns; an input made of the entries it accepted has none to report.
#![no_main]
#![allow(dead_code)]

#[path = "../../preload/src/line.rs"]
mod line;
#[path = "../../preload/src/options.rs"]
mod options;
#[path = "../../preload/src/parse.rs"]
mod parse;
#[path = "../../preload/src/select.rs"]
mod select;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let range = data.as_ptr_range();
    let mut reported: Vec<(usize, usize)> = Vec::new();
    let parsed = parse::parse(data, &mut |b: parse::Bad<'_>| {
        let r = b.entry.as_ptr_range();
        assert!(
            range.start <= r.start && r.end <= range.end,
            "a reported entry is not a piece of the input"
        );
        assert!(!b.entry.is_empty() && !b.why.is_empty(), "an empty report");
        reported.push((r.start as usize - range.start as usize, b.entry.len()));
    });
    assert_eq!(
        parsed.bad,
        reported.len(),
        "reports and the bad count disagree"
    );
    // Keep only the entries that were not reported: nothing is left to report.
    let mut kept = Vec::new();
    let mut at = 0;
    for raw in data.split(|&b| b == b',') {
        let start = at;
        at += raw.len() + 1;
        let inside = |&(off, len): &(usize, usize)| off >= start && off + len <= start + raw.len();
        if !reported.iter().any(inside) {
            kept.extend_from_slice(raw);
            kept.push(b',');
        }
    }
    let again = parse::parse(&kept, &mut |b: parse::Bad<'_>| {
        panic!(
            "an accepted entry is refused on its own: {:?}: {}",
            String::from_utf8_lossy(b.entry),
            b.why
        )
    });
    assert_eq!(again.bad, 0);
    let mut help = String::new();
    parse::write_help(&mut help).expect("help text");
});
