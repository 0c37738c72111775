//! Parsing `ALLOCLAB_CONF` (comma-separated `key:value` entries, as jemalloc's `MALLOC_CONF`)
//! against the option table, and printing `ALLOCLAB_CONF=help`.
//!
//! Entries apply left to right (a repeated key: the last one wins), except that `config:` is
//! the base the other policy keys override wherever they stand. A bad entry is reported on one
//! line and ignored; the caller aborts afterwards if `abort_conf:true` was given anywhere.
//! Nothing here allocates: the input is a byte slice, messages go through `Line`.

use crate::line::Line;
use crate::options::{find, Conf, OPTIONS};
use core::fmt::Write;

/// What parsing found.
pub struct Parsed {
    /// The configuration (defaults where entries were bad or absent).
    pub conf: Conf,
    /// Entries reported as bad.
    pub bad: usize,
    /// Whether `help` was asked for.
    pub help: bool,
}

/// A bad entry: the entry as written, why, and what would have been accepted.
pub struct Bad<'a> {
    /// The whole entry.
    pub entry: &'a [u8],
    /// Why it was refused.
    pub why: &'static str,
    /// The values its option accepts, if the key was known.
    pub expected: Option<&'static str>,
}

/// Parses `input`, calling `report` for each bad entry.
pub fn parse(input: &[u8], report: &mut dyn FnMut(Bad<'_>)) -> Parsed {
    parse_onto(Conf::defaults(), input, report)
}

/// Parses `input` on top of `conf`: its entries apply after those that made `conf`, as if
/// they followed them in one string (a library's built-in conf, then `ALLOCLAB_CONF`).
pub fn parse_onto(conf: Conf, input: &[u8], report: &mut dyn FnMut(Bad<'_>)) -> Parsed {
    let mut conf = conf;
    let mut bad = 0;
    let mut help = false;
    for raw in input.split(|&b| b == b',') {
        let entry = raw.trim_ascii();
        if entry.is_empty() {
            continue;
        }
        if entry == b"help" {
            help = true;
            continue;
        }
        let refusal = match entry.iter().position(|&b| b == b':') {
            None => Some(("expected key:value", None)),
            Some(colon) => {
                let key = entry[..colon].trim_ascii();
                let value = entry[colon + 1..].trim_ascii();
                match find(key) {
                    None => Some(("unknown option (ALLOCLAB_CONF=help lists them)", None)),
                    Some(opt) => (opt.set)(&mut conf, value)
                        .err()
                        .map(|why| (why, Some(opt.values))),
                }
            }
        };
        if let Some((why, expected)) = refusal {
            bad += 1;
            report(Bad {
                entry,
                why,
                expected,
            });
        }
    }
    Parsed { conf, bad, help }
}

/// Prints a bad entry as one line: `alloclab: ALLOCLAB_CONF entry 'x:y': why (expected ...);
/// ignored`.
pub fn print_bad(b: Bad<'_>) {
    print_bad_from("ALLOCLAB_CONF", b);
}

/// Prints a bad entry of `source` (`ALLOCLAB_CONF`, or the library's built-in conf) as
/// [`print_bad`] does.
pub fn print_bad_from(source: &str, b: Bad<'_>) {
    let mut l = Line::new();
    l.str(source)
        .str(" entry '")
        .bytes(b.entry)
        .str("': ")
        .str(b.why);
    if let Some(values) = b.expected {
        l.str(" (expected ").str(values).str(")");
    }
    l.str("; ignored");
    l.print();
}

/// Writes the help text: every option, its values, its default and its meaning.
pub fn write_help(w: &mut dyn Write) -> core::fmt::Result {
    writeln!(
        w,
        "alloclab: ALLOCLAB_CONF=key:value,key:value,... (entries apply left to right; \
         config: is the base the other policy keys override). Options:"
    )?;
    for o in OPTIONS.iter() {
        writeln!(w, "  {:<13} {}", o.name, o.help)?;
        writeln!(
            w,
            "  {:<13}   values: {}   default: {}",
            "", o.values, o.default
        )?;
    }
    writeln!(
        w,
        "  {:<13} print this list (the program then runs on)",
        "help"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::{Arenas, Reuse};

    fn run(input: &str) -> (Parsed, Vec<String>) {
        let mut msgs = Vec::new();
        let p = parse(input.as_bytes(), &mut |b| {
            msgs.push(format!(
                "{}|{}|{}",
                String::from_utf8_lossy(b.entry),
                b.why,
                b.expected.unwrap_or("-")
            ))
        });
        (p, msgs)
    }

    #[test]
    fn good_entries_apply() {
        let (p, msgs) = run("config:mrf, arenas : round-robin ,narenas:3,stats_print:true,,");
        assert!(msgs.is_empty(), "{msgs:?}");
        assert_eq!(p.bad, 0);
        let s = p.conf.selection();
        assert_eq!(
            (s.reuse, s.current_run, s.arenas),
            (Reuse::Mrf, false, Arenas::RoundRobin)
        );
        assert_eq!(s.options.narenas, 3);
        assert!(p.conf.stats_print && !p.help);
        // `config` is the base wherever it stands; a repeated key: the last wins.
        let (p, _) = run("reuse:addr-ordered,config:mrf-current,reuse:lifo,help");
        let s = p.conf.selection();
        assert_eq!((s.reuse, s.current_run), (Reuse::Lifo, true));
        assert!(p.help);
    }

    #[test]
    fn the_environment_applies_on_top_of_a_built_in_conf() {
        let built_in = parse(b"profile:debug,narenas:4", &mut |_| panic!("bad"));
        // Left alone, the built-in entries stand.
        let alone = parse_onto(built_in.conf, b"", &mut |_| panic!("bad"));
        assert_eq!(alone.conf.safety(), alloclab_core::Safety::DEBUG);
        assert_eq!(alone.conf.selection().options.narenas, 4);
        // The environment's entries come after them: a later profile replaces the built-in
        // one, an explicit option overrides it, and untouched built-in entries remain.
        let env = parse_onto(built_in.conf, b"profile:default,poison:all", &mut |_| {
            panic!("bad")
        });
        let safety = env.conf.safety();
        assert_eq!(safety.poison, alloclab_core::Poison::All);
        assert_eq!(
            alloclab_core::Safety {
                poison: alloclab_core::Poison::None,
                ..safety
            },
            alloclab_core::Safety::OFF
        );
        assert_eq!(env.conf.selection().options.narenas, 4);
    }

    #[test]
    fn bad_entries_are_reported_once_each_and_ignored() {
        let (p, msgs) = run("reuse:fifo,frobnicate:1,narenas:lots,arenas,config:mrf,narenas:2000");
        assert_eq!(
            msgs,
            [
                "reuse:fifo|unknown value|addr-ordered|lifo|mrf|config",
                "frobnicate:1|unknown option (ALLOCLAB_CONF=help lists them)|-",
                "narenas:lots|not a decimal number|0..=1024",
                "arenas|expected key:value|-",
                "narenas:2000|out of range|0..=1024",
            ]
        );
        assert_eq!(p.bad, 5);
        // Everything else took effect; the bad ones left the defaults.
        let s = p.conf.selection();
        assert_eq!(
            (s.reuse, s.arenas, s.options.narenas),
            (Reuse::Mrf, Arenas::Thread, 0)
        );
    }

    #[test]
    fn parsing_and_messages_never_allocate() {
        /// Discards text (the help goes nowhere, without allocating).
        struct Sink(usize);
        impl Write for Sink {
            fn write_str(&mut self, s: &str) -> core::fmt::Result {
                self.0 += s.len();
                Ok(())
            }
        }
        let input = b"config:mrf,reuse:fifo,bogus,narenas:99999999999999999999,arenas:hashed,help,\
            profile:hardened,poison:some,poison_size:128,junk:true,zero:false,canary:profile,\
            guard:true,quarantine:65536";
        let mut bad = 0;
        let mut sink = Sink(0);
        let mut line_len = 0;
        let n = crate::alloc_count::during(|| {
            let p = parse(input, &mut |b| {
                bad += 1;
                let mut l = Line::new();
                l.str("ALLOCLAB_CONF entry '")
                    .bytes(b.entry)
                    .str("': ")
                    .str(b.why);
                line_len += l.as_bytes().len();
            });
            assert!(p.help && p.bad == 3);
            write_help(&mut sink).unwrap();
        });
        assert_eq!(n, 0, "parsing allocated");
        assert_eq!(bad, 3);
        assert!(sink.0 > 1000 && line_len > 60);
        // The counter does see allocations (so the zero above means something).
        assert_eq!(
            crate::alloc_count::during(|| drop(std::hint::black_box(vec![1u8; 10]))),
            1
        );
    }

    #[test]
    fn help_lists_every_option_with_values_and_default() {
        let mut s = String::new();
        write_help(&mut s).unwrap();
        for o in OPTIONS.iter() {
            let at = s.find(&format!("  {:<13} {}", o.name, o.help)).unwrap();
            let rest = &s[at..];
            assert!(rest.contains(&format!("values: {}   default: {}", o.values, o.default)));
        }
        assert!(s.lines().count() == 2 * OPTIONS.len() + 2);
    }
}
