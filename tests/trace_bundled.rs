//! The bundled traces are what their "made by" line says: running that command again gives
//! the same trace, and traces/README.md gives the same line.

use alloclab::trace::{bundled, ParseOptions};
use std::io::Read;
use std::process::Command;

#[test]
fn each_bundled_trace_is_remade_by_its_command() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/traces/README.md"))
        .expect("traces/README.md");
    for b in bundled::ALL {
        let made_by = b.made_by.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            readme.contains(&made_by),
            "traces/README.md does not give `{made_by}`"
        );
        if !b.synthetic {
            // Recorded traces cannot be remade byte for byte (addresses and thread interleaving
            // differ from run to run): they must parse strictly, from the file they name.
            let on_disk =
                std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/").to_string() + b.path)
                    .unwrap_or_else(|e| panic!("{}: {e}", b.path));
            assert!(
                on_disk == b.bytes,
                "{}: embedded bytes are not the file's",
                b.path
            );
            let t = b
                .parse(&ParseOptions::default())
                .unwrap_or_else(|e| panic!("{}: {e}", b.path));
            assert!(t.allocator_calls() > 100_000, "{}", b.path);
            continue;
        }
        let mut args: Vec<&str> = made_by.split(' ').collect();
        assert_eq!(args.remove(0), "alloclab");
        // Write plain text to standard output instead of the compressed file.
        let out_at = args
            .iter()
            .position(|a| *a == "--output")
            .expect("the command names its output");
        assert!(b.path.ends_with(args[out_at + 1]) || args[out_at + 1] == b.path);
        args.drain(out_at..out_at + 2);
        let out = Command::new(env!("CARGO_BIN_EXE_alloclab"))
            .args(&args)
            .output()
            .expect("alloclab runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut shipped = Vec::new();
        zstd::stream::read::Decoder::new(b.bytes)
            .unwrap()
            .read_to_end(&mut shipped)
            .unwrap();
        assert!(
            out.stdout == shipped,
            "{}: the command makes a different trace ({} bytes, shipped {})",
            b.path,
            out.stdout.len(),
            shipped.len()
        );
        let t = b.parse(&ParseOptions::default()).unwrap();
        assert!(t.allocator_calls() > 100_000);
    }
}
