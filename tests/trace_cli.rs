//! `alloclab replay` and `alloclab generate` as a person runs them: the bundled trace on a
//! fresh checkout, files in every supported form, bad input (line number, non-zero exit, no
//! panic), --skip-bad, --pid, --json, and resident sizes that see "touch".

mod trace_support;

use alloclab::trace::{bundled, ParseOptions};
use serde_json::Value;
use std::process::{Command, Output};
use trace_support::temp_path;

fn alloclab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_alloclab"))
        .args(args)
        .output()
        .expect("the alloclab binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json(args: &[&str]) -> Value {
    let out = alloclab(args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("--json prints JSON")
}

#[test]
fn replay_without_arguments_replays_the_bundled_trace() {
    let out = alloclab(&["replay"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(bundled::DEFAULT.path), "{stdout}");
    let kind = if bundled::DEFAULT.synthetic {
        "synthetic"
    } else {
        "recorded"
    };
    assert!(stdout.contains(kind), "{stdout}");
    assert!(stdout.contains("invariants hold"), "{stdout}");

    let j = json(&["replay", "--json", "--config", "mrf-current"]);
    let t = bundled::DEFAULT.parse(&ParseOptions::default()).unwrap();
    assert_eq!(j["calls"], t.allocator_calls());
    assert_eq!(j["allocator"], "mrf-current");
    assert_eq!(j["trace"]["synthetic"], bundled::DEFAULT.synthetic);
    assert_eq!(j["trace"]["made_by"], bundled::DEFAULT.made_by);
    assert_eq!(j["check"]["ok"], true);
}

#[test]
fn a_malformed_trace_names_its_line_and_fails_without_panicking() {
    let path = temp_path("bad.log");
    std::fs::write(
        &path,
        "1 1 malloc(16)=0x10\n1 1 free(0x10)\n1 1 malloc(16)=0x10\n1 1 calloc(3)=0x20\n",
    )
    .unwrap();
    let p = path.to_str().unwrap();
    let out = alloclab(&["replay", p]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("line 4: calloc takes 2 arguments, found 1"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.stdout.is_empty());

    let out = alloclab(&["replay", p, "--skip-bad", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("skipped 1 bad line"), "{stderr}");
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["trace"]["skipped_bad_lines"], 1);
    assert_eq!(j["calls"], 3);

    let out = alloclab(&["replay", temp_path("missing.log").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!text(&out.stderr).contains("panicked"));

    let out = alloclab(&["replay", p, "--config", "nonesuch"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("lifo"),
        "the error lists the configs"
    );
}

#[test]
fn compressed_traces_pids_and_threads() {
    let gz = temp_path("gen.log.gz");
    let zst = temp_path("gen.log.zst");
    let plain = temp_path("gen.log");
    for path in [&gz, &zst, &plain] {
        let out = alloclab(&[
            "generate",
            "--bursts",
            "40",
            "--threads",
            "3",
            "--output",
            path.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let head = |p: &std::path::Path| std::fs::read(p).unwrap()[..4].to_vec();
    assert_eq!(head(&gz)[..2], [0x1f, 0x8b]);
    assert_eq!(head(&zst), [0x28, 0xb5, 0x2f, 0xfd]);
    let calls: Vec<Value> = [&gz, &zst, &plain]
        .iter()
        .map(|p| json(&["replay", "--json", p.to_str().unwrap()])["calls"].clone())
        .collect();
    assert!(calls.iter().all(|c| *c == calls[0]), "{calls:?}");

    let j = json(&["replay", "--json", "--threads", plain.to_str().unwrap()]);
    assert_eq!(j["threads"], 3);
    assert_eq!(j["threaded"], true);

    // Two processes in one log: the first by default, --pid for the other.
    let two = temp_path("two.log");
    std::fs::write(
        &two,
        "300 300 malloc(10)=0x10\n400 401 malloc(20)=0x10\n400 401 malloc(30)=0x20\n300 300 free(0x10)\n",
    )
    .unwrap();
    let j = json(&["replay", "--json", two.to_str().unwrap()]);
    assert_eq!(
        (j["trace"]["pid"].clone(), j["calls"].clone()),
        (300.into(), 2.into())
    );
    let j = json(&["replay", "--json", "--pid", "400", two.to_str().unwrap()]);
    assert_eq!(
        (j["trace"]["pid"].clone(), j["calls"].clone()),
        (400.into(), 2.into())
    );
    let out = alloclab(&["replay", "--pid", "500", two.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("pid 500 does not appear"));
}

#[test]
fn touch_makes_the_requested_bytes_resident() {
    // 64 objects of 1 MiB, all live at the end: untouched, the kernel never backs them;
    // touched, every byte is written. Each replay is its own process, so its resident size
    // is its own.
    let path = temp_path("big.log");
    let log: String = (1..=64)
        .map(|i| format!("1 1 malloc(1048576)=#{i}\n"))
        .collect();
    std::fs::write(&path, log).unwrap();
    let p = path.to_str().unwrap();
    let mib = |v: &Value| v.as_f64().expect("Linux reports resident sizes") / 1048576.0;
    let cold = json(&["replay", "--json", p]);
    let hot = json(&["replay", "--json", "--touch", p]);
    assert!(mib(&cold["rss"]["end_added"]) < 16.0, "{}", cold["rss"]);
    assert!(mib(&hot["rss"]["end_added"]) >= 63.0, "{}", hot["rss"]);
    assert!(mib(&hot["rss"]["peak_added"]) >= mib(&hot["rss"]["end_added"]));
    // The heap's own figures do not depend on touching.
    assert_eq!(cold["heap"]["allocated"], hot["heap"]["allocated"]);
}
