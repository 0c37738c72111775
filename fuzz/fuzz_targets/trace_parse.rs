//! The logalloc trace parser (`alloclab_traces::trace::parse`): any bytes give a trace or an error,
//! never a panic, with bad lines stopping the parse or skipped; and a trace written back in the
//! munged form parses again to the same operations.
#![no_main]

use alloclab_traces::trace::{parse, write_munged, ParseOptions, Pid};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for skip_bad in [false, true] {
        let options = ParseOptions {
            pid: Pid::First,
            skip_bad,
        };
        let Ok(trace) = parse(data, &options) else {
            continue;
        };
        let mut munged = Vec::new();
        write_munged(&trace, &mut munged).expect("writing to memory");
        let again = parse(&munged, &ParseOptions::default())
            .unwrap_or_else(|e| panic!("a munged trace does not parse: {e}"));
        assert_eq!(
            again.ops(),
            trace.ops(),
            "the munged round trip changed the operations"
        );
    }
});
