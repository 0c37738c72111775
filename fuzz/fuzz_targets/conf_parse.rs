//! The `ALLOCLAB_CONF` parser of liballoclab.so (`preload/src/parse.rs`, compiled here from
//! its source: the library is a cdylib without a Rust API): any input parses without panicking,
//! every bad entry is reported once, as a piece of the input with a reason, and the count of
//! reports is the count it returns; an input made of the entries it accepted has none to report.
//! Then the debug options the input chose (profile, poison, junk, canaries, guards, quarantine,
//! sampling), if valid, run a short sequence of allocations and frees made from the input's
//! bytes on a heap with every check compiled in: contents kept, usable sizes large enough,
//! invariants held, no check firing on a correct program.
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

use alloclab_core::{Heap, Options};
use alloclab_policies::{Lifo, Single};
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
    run_with_options(&parsed.conf, data);
});

/// A few allocations and frees, sized by `data`'s bytes, under `conf`'s debug options.
fn run_with_options(conf: &options::Conf, data: &[u8]) {
    let safety = conf.safety();
    if safety.validate().is_err() {
        return;
    }
    let heap = Heap::<select::Checked<Lifo, Single>>::with_options(Options {
        safety,
        ..Options::DEFAULT
    });
    let mut live: Vec<(*mut u8, usize, u8)> = Vec::new();
    for (n, pair) in data.chunks(2).take(48).enumerate() {
        let x = u16::from_le_bytes([pair[0], *pair.get(1).unwrap_or(&0)]) as usize;
        // Sizes from 0 to 8 KiB, with a large one now and then (guard pages, huge records).
        let size = if x % 16 == 15 { x * 16 } else { x % 8193 };
        let tag = n as u8 | 1;
        if x % 3 == 0 && !live.is_empty() {
            let (p, size, tag) = live.swap_remove(x % live.len());
            check(&heap, p, size, tag);
            // SAFETY: a live allocation of this heap, freed once.
            unsafe { heap.free(p) };
            continue;
        }
        let p = heap.malloc(size);
        assert!(!p.is_null(), "malloc({size}) failed");
        assert_eq!(p as usize % 16, 0, "malloc({size}) misaligned");
        for off in 0..size.min(512) {
            // SAFETY: `off < size` bytes of a fresh allocation.
            unsafe { *p.add(off) = tag ^ off as u8 };
        }
        live.push((p, size, tag));
    }
    heap.check_invariants()
        .expect("invariants under debug options");
    for (p, size, tag) in live {
        check(&heap, p, size, tag);
        // SAFETY: as above.
        unsafe { heap.free(p) };
    }
    heap.check_invariants()
        .expect("invariants after freeing everything");
}

fn check<C: alloclab_core::Config>(heap: &Heap<C>, p: *mut u8, size: usize, tag: u8) {
    assert!(heap.usable_size(p).expect("a live allocation") >= size);
    for off in 0..size.min(512) {
        // SAFETY: `off < size` bytes of a live allocation.
        assert_eq!(unsafe { *p.add(off) }, tag ^ off as u8, "contents lost");
    }
}
