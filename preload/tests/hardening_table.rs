//! docs/HARDENING.md's table of misuse x config, run cell by cell: each row's program must end
//! as each of its cells says under that column's `ALLOCLAB_CONF`, so the table cannot drift
//! from what the library does.

mod common;
use common::*;
use std::path::PathBuf;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// The table: its column confs, and per row the program, its arguments and the cells.
struct Table {
    confs: Vec<String>,
    rows: Vec<(String, Vec<String>, Vec<String>)>,
}

/// The text between backquotes of a cell, or the cell itself.
fn unquote(cell: &str) -> &str {
    cell.trim().trim_matches('`')
}

fn read_table() -> Table {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/HARDENING.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("| misuse | program |"));
    let header: Vec<&str> = lines
        .next()
        .expect("no table in docs/HARDENING.md")
        .split('|')
        .collect();
    // "", "misuse", "program", the confs..., "".
    let confs: Vec<String> = header[3..header.len() - 1]
        .iter()
        .map(|c| match unquote(c) {
            "default" => String::new(),
            c => c.to_string(),
        })
        .collect();
    let mut rows = Vec::new();
    for line in lines.skip(1).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').collect();
        assert_eq!(cells.len(), header.len(), "{line}");
        let mut words = unquote(cells[2]).split_whitespace();
        let program = words.next().unwrap().to_string();
        let args = words.map(str::to_string).collect();
        let ends = cells[3..cells.len() - 1]
            .iter()
            .map(|c| c.trim().to_string())
            .collect();
        rows.push((program, args, ends));
    }
    Table { confs, rows }
}

#[test]
fn every_cell_of_the_hardening_table_is_what_the_library_does() {
    let table = read_table();
    assert_eq!(
        table.confs.len(),
        5,
        "the columns changed: {:?}",
        table.confs
    );
    assert!(
        table.rows.len() >= 20,
        "rows went missing: {}",
        table.rows.len()
    );
    let hardened = c_program("hardened");
    let cxx = cxx_program("cxx");
    for (program, args, ends) in &table.rows {
        let binary: &PathBuf = match program.as_str() {
            "hardened" => &hardened,
            "cxx" => &cxx,
            other => panic!("unknown program {other}"),
        };
        for (conf, end) in table.confs.iter().zip(ends) {
            let out = run(preloaded(binary, conf).args(args), LIMIT);
            let what = format!("{program} {args:?} under {conf:?} (the table says {end}): {out:?}");
            let lines: Vec<&str> = out.stderr.lines().collect();
            match end.as_str() {
                "abort" | "fault" => {
                    let signal = if end == "abort" {
                        libc::SIGABRT
                    } else {
                        libc::SIGSEGV
                    };
                    assert_eq!(out.signal(), Some(signal), "{what}");
                    assert_eq!(lines.len(), 1, "{what}");
                    assert!(lines[0].starts_with("alloclab: "), "{what}");
                }
                "not caught" => {
                    out.assert_success(&what);
                    assert!(out.stdout.contains("survived: "), "{what}");
                }
                other => panic!("unknown cell {other:?}: {what}"),
            }
        }
    }
}
