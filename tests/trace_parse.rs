//! The trace parser: logalloc's raw and munged forms, jemalloc_stats, compressed input,
//! several pids, and a precise error (line number and problem) for every kind of bad line.

mod trace_support;

use alloclab::generate::Params;
use alloclab::trace::{self, write_munged, Form, Func, Op, ParseOptions, Pid, TraceError, NO_SLOT};
use std::io::Write;
use trace_support::{generated, parse_ok, random_raw_log};

/// The example log of logalloc's README, and its munged form as the README gives it.
const README_RAW: &str = "\
18545 18545 malloc(32)=0x7f90495120e0
18545 18545 calloc(1,148)=0x7f9049537480
18545 18545 realloc(0x7f90495120e0,64)=0x7f9049536680
18545 18545 posix_memalign(256,240)=0x7f9049583300
18545 18545 jemalloc_stats()
18545 18545 free(0x7f9049536680)
";
const README_MUNGED: &str = "\
1 1 malloc(32)=#1
1 1 calloc(1,148)=#2
1 1 realloc(#1,64)=#1
1 1 posix_memalign(256,240)=#3
1 1 jemalloc_stats()
1 1 free(#1)
";

fn op(func: Func, slot: u32, old: u32, size: u64, arg: u64) -> Op {
    Op {
        func,
        thread: 0,
        slot,
        old,
        size,
        arg,
    }
}

fn line_error(text: &str) -> (u64, String) {
    match trace::parse(text.as_bytes(), &ParseOptions::default()) {
        Err(TraceError::Line(e)) => (e.line, e.problem.to_string()),
        Err(other) => panic!("expected a line error, got {other}"),
        Ok(_) => panic!("expected a line error for:\n{text}"),
    }
}

#[test]
fn readme_example_decodes_to_the_calls_it_records() {
    let t = parse_ok(README_RAW);
    assert_eq!(t.form, Some(Form::Raw));
    assert_eq!(t.pid, 18545);
    assert_eq!(t.threads, vec![18545]);
    assert_eq!(
        t.ops(),
        &[
            op(Func::Malloc, 0, NO_SLOT, 32, 0),
            op(Func::Calloc, 1, NO_SLOT, 148, 1),
            op(Func::Realloc, 0, 0, 64, 0),
            op(Func::PosixMemalign, 2, NO_SLOT, 240, 256),
            op(Func::JemallocStats, NO_SLOT, NO_SLOT, 0, 0),
            op(Func::Free, 0, NO_SLOT, 0, 0),
        ]
    );
    assert_eq!(t.slots, 3);
    assert_eq!(t.live_at_end, 2);
    assert_eq!(t.allocator_calls(), 5);
}

#[test]
fn munged_example_decodes_like_the_raw_one() {
    let raw = parse_ok(README_RAW);
    let munged = parse_ok(README_MUNGED);
    assert_eq!(munged.form, Some(Form::Munged));
    assert_eq!(munged.ops(), raw.ops());
}

#[test]
fn every_function_is_understood() {
    let t = parse_ok(
        "7 8 malloc(1)=0x10\n7 8 calloc(3,5)=0x20\n7 8 realloc(0x10,9)=0x30\n\
         7 8 posix_memalign(64,7)=0x40\n7 8 aligned_alloc(32,64)=0x50\n7 8 memalign(4096,1)=0x60\n\
         7 8 valloc(10)=0x70\n7 8 free(0x30)\n7 8 jemalloc_stats()\n",
    );
    let funcs: Vec<Func> = t.ops().iter().map(|o| o.func).collect();
    assert_eq!(
        funcs,
        vec![
            Func::Malloc,
            Func::Calloc,
            Func::Realloc,
            Func::PosixMemalign,
            Func::AlignedAlloc,
            Func::Memalign,
            Func::Valloc,
            Func::Free,
            Func::JemallocStats
        ]
    );
    let args: Vec<(u64, u64)> = t.ops().iter().map(|o| (o.size, o.arg)).collect();
    assert_eq!(
        args,
        vec![
            (1, 0),
            (5, 3),
            (9, 0),
            (7, 64),
            (64, 32),
            (1, 4096),
            (10, 4096),
            (0, 0),
            (0, 0)
        ]
    );
    assert_eq!(t.ops()[1].request(), 15);
}

#[test]
fn null_pointers_failed_calls_and_realloc_to_zero() {
    let t = parse_ok(
        "1 1 free(0x0)\n1 1 free((nil))\n1 1 realloc(0x0,8)=0x100\n\
         1 1 malloc(99999999999)=0x0\n1 1 realloc(0x100,1000000000000)=(nil)\n\
         1 1 realloc(0x100,0)=0x0\n",
    );
    let ops = t.ops();
    assert_eq!(ops[0], op(Func::Free, NO_SLOT, NO_SLOT, 0, 0));
    assert_eq!(ops[1], op(Func::Free, NO_SLOT, NO_SLOT, 0, 0));
    assert_eq!(ops[2], op(Func::Realloc, 0, NO_SLOT, 8, 0));
    // The failed malloc and the failed realloc are not replayed; realloc(p, 0) = NULL frees p.
    assert_eq!(ops[3], op(Func::Free, 0, NO_SLOT, 0, 0));
    assert_eq!(ops.len(), 4);
    assert_eq!(t.failed_in_recording, 2);
    assert_eq!(t.live_at_end, 0);
}

#[test]
fn munged_slots_that_hold_nothing_are_null() {
    // logalloc_munge.py encodes free(0x0) as the free of a never-allocated slot.
    let t = parse_ok("1 1 free(#7)\n1 1 realloc(#9,16)=#1\n1 1 free(#1)\n1 1 free(#1)\n");
    let ops = t.ops();
    assert_eq!(ops[0], op(Func::Free, NO_SLOT, NO_SLOT, 0, 0));
    assert_eq!(ops[1], op(Func::Realloc, 0, NO_SLOT, 16, 0));
    assert_eq!(ops[2], op(Func::Free, 0, NO_SLOT, 0, 0));
    assert_eq!(ops[3], op(Func::Free, NO_SLOT, NO_SLOT, 0, 0));
}

#[test]
fn tolerant_of_layout_but_not_of_content() {
    let strict = parse_ok("5 6 malloc(16)=0x10\n5 6 free(0x10)\n");
    let loose = parse_ok("\n  5\t6  malloc( 16 ) = 0x10 \r\n\n5 6 free(0X10)\r\n");
    assert_eq!(strict.ops(), loose.ops());
    assert_eq!(loose.lines, 4);
    // No trailing newline: the last line still counts.
    let t = parse_ok("5 6 malloc(16)=0x10\n5 6 free(0x10)");
    assert_eq!(t.ops(), strict.ops());
}

#[test]
fn lines_without_a_tid_use_the_pid() {
    // logalloc's first format: `<pid> <function>(...)`.
    let t = parse_ok("13663 malloc(42)=0x7f0c33502040\n13663 free(0x7f0c33502040)\n");
    assert_eq!(t.threads, vec![13663]);
    assert_eq!(t.ops().len(), 2);
}

#[test]
fn the_first_pid_is_replayed_unless_another_is_chosen() {
    let text = "10 10 malloc(1)=0x1\n20 21 malloc(2)=0x1\n20 22 malloc(3)=0x2\n10 10 free(0x1)\n";
    let first = parse_ok(text);
    assert_eq!(first.pid, 10);
    assert_eq!(first.ops().len(), 2);
    let pids: Vec<(u64, u64)> = first.pids.iter().map(|p| (p.pid, p.lines)).collect();
    assert_eq!(pids, vec![(10, 2), (20, 2)]);

    let second = trace::parse(
        text.as_bytes(),
        &ParseOptions {
            pid: Pid::Is(20),
            skip_bad: false,
        },
    )
    .unwrap();
    assert_eq!(second.pid, 20);
    assert_eq!(second.threads, vec![21, 22]);
    let sizes: Vec<u64> = second.ops().iter().map(|o| o.size).collect();
    assert_eq!(sizes, vec![2, 3]);

    match trace::parse(
        text.as_bytes(),
        &ParseOptions {
            pid: Pid::Is(30),
            skip_bad: false,
        },
    ) {
        Err(e @ TraceError::PidNotFound { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("pid 30") && msg.contains("pid 10 (2 lines)"),
                "{msg}"
            );
        }
        other => panic!("expected PidNotFound, got {other:?}"),
    }
}

#[test]
fn other_pids_are_syntax_checked_too() {
    let (line, msg) = line_error("1 1 malloc(1)=0x1\n2 2 malloc(x)=0x1\n");
    assert_eq!(line, 2);
    assert!(msg.contains("size"), "{msg}");
}

#[test]
fn each_bad_line_is_named_with_its_problem() {
    let good = "1 1 malloc(16)=0x10\n";
    let cases: &[(&str, &str)] = &[
        (
            "x 1 malloc(16)=0x10",
            "pid: expected a decimal number, found `x`",
        ),
        ("1", "expected `<pid> <tid> <function>(<args>)`"),
        ("1 1 malloc 16", "expected `<function>(<args>)`"),
        ("1 1 malloc(16=0x10", "expected `<function>(<args>)`"),
        ("1 t malloc(16)=0x20", "tid: expected a decimal number"),
        ("1 1 mallocx(16)=0x20", "unknown function `mallocx`"),
        ("1 1 malloc(16,2)=0x20", "malloc takes 1 argument, found 2"),
        ("1 1 calloc(16)=0x20", "calloc takes 2 arguments, found 1"),
        (
            "1 1 jemalloc_stats(1)",
            "jemalloc_stats takes 0 arguments, found 1",
        ),
        ("1 1 malloc(16)", "malloc needs a result"),
        ("1 1 free(0x10)=0x10", "free returns nothing"),
        ("1 1 malloc(16)=0x20 junk", "expected a pointer"),
        ("1 1 malloc(16) junk", "unexpected `junk` after the call"),
        ("1 1 malloc(16)=0xzz", "expected a pointer"),
        ("1 1 malloc(16)=#x", "expected a pointer"),
        (
            "1 1 malloc(-1)=0x20",
            "size: expected a decimal number, found `-1`",
        ),
        (
            "1 1 malloc(18446744073709551616)=0x20",
            "size: `18446744073709551616` does not fit in 64 bits",
        ),
        (
            "1 1 malloc(1)=0x10000000000000000",
            "does not fit in 64 bits",
        ),
        (
            "1 1 malloc(1)=#3",
            "slot id in a raw trace (line 1 gave a hexadecimal address)",
        ),
        ("1 1 realloc(#1,5)=#3", "slot id in a raw trace"),
        (
            "1 1 posix_memalign(24,8)=0x20",
            "alignment 24 is not a power of two",
        ),
        (
            "1 1 calloc(4294967296,4294967296)=0x20",
            "the product overflows",
        ),
        (
            "1 1 free(0x30)",
            "free(0x30): no earlier line returned this pointer",
        ),
        (
            "1 1 realloc(0x30,8)=0x40",
            "realloc(0x30): no earlier line returned this pointer",
        ),
        (
            "1 1 malloc(8)=0x10",
            "malloc returned 0x10, which line 1 returned",
        ),
    ];
    for (bad, expected) in cases {
        let text = format!("{good}{bad}\n{good}");
        let (line, msg) = line_error(&text);
        assert_eq!(line, 2, "{bad}: {msg}");
        assert!(
            msg.contains(expected),
            "{bad}: expected the message to contain `{expected}`, got `{msg}`"
        );
    }
}

#[test]
fn one_line_cannot_mix_forms() {
    let (line, msg) = line_error("1 1 realloc(#1,5)=0x10\n");
    assert_eq!(line, 1);
    assert!(
        msg.contains("hexadecimal address in a munged trace (line 1"),
        "{msg}"
    );
}

#[test]
fn munged_slot_reused_while_live_is_an_error() {
    let (line, msg) = line_error("1 1 malloc(1)=#1\n1 1 malloc(1)=#2\n1 1 malloc(2)=#1\n");
    assert_eq!(line, 3);
    assert!(msg.contains("#1") && msg.contains("line 1"), "{msg}");
}

#[test]
fn an_overlong_line_is_an_error_not_a_memory_hog() {
    let text = format!(
        "1 1 malloc(1)=0x1\n1 1 malloc({})=0x2\n",
        "1".repeat(100_000)
    );
    let (line, msg) = line_error(&text);
    assert_eq!(line, 2);
    assert!(msg.contains("longer than"), "{msg}");
}

#[test]
fn error_messages_escape_what_they_quote() {
    let (_, msg) = line_error("1 1 \u{1b}[31mevil(1)=0x1\n");
    assert!(!msg.contains('\u{1b}'), "{msg}");
    let (_, msg) = line_error(&format!("1 1 {}(1)=0x1\n", "m".repeat(500)));
    assert!(msg.len() < 300, "{msg}");
}

#[test]
fn skip_bad_counts_skips_and_keeps_the_rest_consistent() {
    let text = "1 1 malloc(16)=0x10\n1 1 free(0x99)\n1 1 bogus\n1 1 malloc(8)=0x10\n\
                1 1 free(0x10)\n1 1 malloc(8)=0x10\n";
    assert!(trace::parse(text.as_bytes(), &ParseOptions::default()).is_err());
    let t = trace::parse(
        text.as_bytes(),
        &ParseOptions {
            pid: Pid::First,
            skip_bad: true,
        },
    )
    .unwrap();
    assert_eq!(t.skipped, 3);
    let lines: Vec<u64> = t.skipped_examples.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![2, 3, 4]);
    // The skipped malloc did not take 0x10: the free on line 5 frees line 1's allocation and
    // line 6 may allocate 0x10 again.
    let funcs: Vec<Func> = t.ops().iter().map(|o| o.func).collect();
    assert_eq!(funcs, vec![Func::Malloc, Func::Free, Func::Malloc]);
    assert_eq!(t.ops()[1].slot, t.ops()[0].slot);
    assert_eq!(t.live_at_end, 1);
}

#[test]
fn gzip_and_zstd_input_decode_to_the_same_trace() {
    let text = random_raw_log(3, 5_000, 3);
    let plain = parse_ok(&text);

    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(text.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    // Two gzip members back to back (as `gzip -c >> log.gz` makes) are one stream.
    let half = text.len() / 2;
    let cut = text[..half].rfind('\n').unwrap() + 1;
    let mut two = Vec::new();
    for part in [&text[..cut], &text[cut..]] {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(part.as_bytes()).unwrap();
        two.extend(e.finish().unwrap());
    }
    let zst = zstd::encode_all(text.as_bytes(), 3).unwrap();

    for (name, bytes) in [("gzip", &gz), ("two gzip members", &two), ("zstd", &zst)] {
        let t = trace::read(bytes.as_slice(), &ParseOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(t.ops(), plain.ops(), "{name}");
        assert_eq!(t.lines, plain.lines, "{name}");
    }
    let t = trace::read(text.as_bytes(), &ParseOptions::default()).unwrap();
    assert_eq!(t.ops(), plain.ops(), "plain text through read()");
}

#[test]
fn truncated_compressed_input_is_an_io_error_after_the_lines_read() {
    let text = random_raw_log(4, 20_000, 1);
    let zst = zstd::encode_all(text.as_bytes(), 1).unwrap();
    let cut = &zst[..zst.len() / 2];
    match trace::read(cut, &ParseOptions::default()) {
        Err(e @ TraceError::Io { .. }) => {
            let TraceError::Io { after_line, .. } = &e else {
                unreachable!()
            };
            assert!(*after_line > 0, "{e}");
            assert!(e.to_string().starts_with("after line "), "{e}");
        }
        Err(e) => panic!("expected an I/O error, got {e}"),
        Ok(t) => panic!("a truncated stream parsed ({} lines)", t.lines),
    }
}

#[test]
fn writing_munged_and_parsing_again_gives_the_same_calls() {
    for seed in 1..4 {
        let raw = parse_ok(&random_raw_log(seed, 4_000, 4));
        let mut text = Vec::new();
        write_munged(&raw, &mut text).unwrap();
        let again = trace::parse(&text, &ParseOptions::default()).unwrap();
        assert_eq!(again.ops(), raw.ops(), "seed {seed}");
        assert_eq!(again.slots, raw.slots);
        assert_eq!(again.threads.len(), raw.threads.len());
    }
    let generated_trace = parse_ok(&generated(&Params {
        threads: 3,
        bursts: 30,
        stats_every: 500,
        ..Params::default()
    }));
    let mut text = Vec::new();
    write_munged(&generated_trace, &mut text).unwrap();
    let again = trace::parse(&text, &ParseOptions::default()).unwrap();
    assert_eq!(again.ops(), generated_trace.ops());
}

#[test]
fn a_slot_is_reused_only_by_the_thread_that_freed_it() {
    // So the threaded replay never waits on an order the program did not have.
    let t = parse_ok(&random_raw_log(9, 20_000, 4));
    let mut last_release: Vec<Option<u32>> = vec![None; t.slots as usize];
    let mut live = vec![false; t.slots as usize];
    let mut checked = 0;
    for op in t.ops() {
        if op.old != NO_SLOT {
            assert!(live[op.old as usize]);
            live[op.old as usize] = false;
            last_release[op.old as usize] = Some(op.thread);
        }
        match op.func {
            Func::Free if op.slot != NO_SLOT => {
                assert!(live[op.slot as usize], "free of a slot that is not live");
                live[op.slot as usize] = false;
                last_release[op.slot as usize] = Some(op.thread);
            }
            Func::Free | Func::JemallocStats => {}
            _ => {
                assert!(!live[op.slot as usize], "allocation into a live slot");
                if let Some(freer) = last_release[op.slot as usize] {
                    assert_eq!(freer, op.thread, "slot recycled across threads");
                    checked += 1;
                }
                live[op.slot as usize] = true;
            }
        }
    }
    assert!(
        checked > 1000,
        "too few recycled slots to mean anything: {checked}"
    );
}

#[test]
fn mutated_input_never_panics() {
    // What the fuzz target does, briefly: arbitrary bytes give a trace or an error.
    let base = random_raw_log(5, 300, 2).into_bytes();
    let munged = generated(&Params {
        bursts: 3,
        threads: 2,
        ..Params::default()
    })
    .into_bytes();
    let mut rng = 0x1234_5678_9abc_def1u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let alphabet = b"0123456789abcdefx#(),= \n\t\r-nilmaocfrepsgtuvjz";
    let mut outcomes = [0u32; 2];
    for round in 0..3000 {
        let mut bytes = if round % 2 == 0 {
            base.clone()
        } else {
            munged[..munged.len().min(4000)].to_vec()
        };
        for _ in 0..1 + next() % 8 {
            let i = (next() as usize) % bytes.len();
            match next() % 4 {
                0 => bytes[i] = alphabet[(next() as usize) % alphabet.len()],
                1 => bytes[i] = next() as u8,
                2 => {
                    bytes.remove(i);
                }
                _ => bytes.insert(i, alphabet[(next() as usize) % alphabet.len()]),
            }
        }
        for skip_bad in [false, true] {
            let r = trace::parse(
                &bytes,
                &ParseOptions {
                    pid: Pid::First,
                    skip_bad,
                },
            );
            outcomes[r.is_ok() as usize] += 1;
            match r {
                // Every error can be shown.
                Err(e) => assert!(!e.to_string().is_empty()),
                // Whatever parsed writes back to munged text that parses to the same calls.
                Ok(t) => {
                    let mut text = Vec::new();
                    write_munged(&t, &mut text).unwrap();
                    let again = trace::parse(&text, &ParseOptions::default()).unwrap();
                    assert_eq!(again.ops(), t.ops());
                }
            }
        }
    }
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}
