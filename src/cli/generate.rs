//! `alloclab generate`: writes a synthetic trace for the run-reuse study's premise (bursts of
//! same-size objects built up and torn down together, among long-lived objects).

use alloclab_traces::generate::{generate, Lifetimes, Params, SizeMix, Teardown};
use alloclab_traces::trace::Func;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

fn burst_range(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}`: expected MIN..MAX"))?;
    let parse = |v: &str| {
        v.trim()
            .parse::<u32>()
            .map_err(|_| format!("`{v}`: expected a whole number"))
    };
    let (lo, hi) = (parse(a)?, parse(b)?);
    if lo == 0 || lo > hi {
        return Err(format!("`{s}`: need 1 <= MIN <= MAX"));
    }
    Ok((lo, hi))
}

/// Options of `alloclab generate` (see `alloclab_traces::generate` for the model).
#[derive(clap::Args, Debug, Clone)]
pub struct GenerateArgs {
    /// Seed of every random choice: the same parameters give the same trace.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Bursts in all, over all threads.
    #[arg(long, default_value_t = 300)]
    pub bursts: u64,
    /// Objects per burst, MIN..MAX.
    #[arg(long, default_value = "20..1000", value_parser = burst_range)]
    pub burst_size: (u32, u32),
    /// A burst's objects hold at most this many bytes together (bursts of large objects are
    /// short).
    #[arg(long, default_value_t = 1 << 20)]
    pub max_burst_bytes: u64,
    /// Size mix: SIZE[:WEIGHT] or MIN-MAX[:WEIGHT], comma separated.
    #[arg(long, default_value = SizeMix::DEFAULT)]
    pub sizes: SizeMix,
    /// Lifetime mix: weights of burst (dies with its burst), survivor (outlives it), long
    /// (long-lived, another size, allocated mid-burst), temp (freed on the next step).
    #[arg(long, default_value = Lifetimes::DEFAULT)]
    pub lifetimes: Lifetimes,
    /// Capacity of the long-lived pool (when full, a random member is freed).
    #[arg(long, default_value_t = 4000)]
    pub long_lived: u32,
    /// Order of a burst's teardown: fifo, lifo or random.
    #[arg(long, default_value = "fifo")]
    pub teardown: Teardown,
    /// Simulated threads (they share the long-lived pool, so some frees cross threads).
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    /// Percent of burst steps that also reallocate a long-lived object.
    #[arg(long, default_value_t = 1)]
    pub realloc_percent: u32,
    /// Write `jemalloc_stats()` every this many calls (0: never).
    #[arg(long, default_value_t = 0)]
    pub stats_every: u64,
    /// Output file: `.gz` is gzip, `.zst` zstd, anything else plain text. Default: standard
    /// output, plain.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

impl GenerateArgs {
    fn params(&self) -> Params {
        Params {
            seed: self.seed,
            bursts: self.bursts,
            burst_size: self.burst_size,
            max_burst_bytes: self.max_burst_bytes,
            sizes: self.sizes.clone(),
            lifetimes: self.lifetimes,
            long_lived: self.long_lived,
            teardown: self.teardown,
            threads: self.threads,
            realloc_percent: self.realloc_percent,
            stats_every: self.stats_every,
        }
    }
}

fn write_to(args: &GenerateArgs) -> io::Result<alloclab_traces::generate::Summary> {
    let params = args.params();
    let Some(path) = &args.output else {
        let mut out = BufWriter::new(io::stdout().lock());
        let s = generate(&params, &mut out)?;
        out.flush()?;
        return Ok(s);
    };
    let file = BufWriter::new(File::create(path)?);
    let name = path.to_string_lossy();
    if name.ends_with(".zst") {
        let mut z = BufWriter::new(zstd::stream::write::Encoder::new(file, 19)?);
        let s = generate(&params, &mut z)?;
        z.into_inner()
            .map_err(|e| e.into_error())?
            .finish()?
            .flush()?;
        Ok(s)
    } else if name.ends_with(".gz") {
        let mut g = BufWriter::new(flate2::write::GzEncoder::new(
            file,
            flate2::Compression::best(),
        ));
        let s = generate(&params, &mut g)?;
        g.into_inner()
            .map_err(|e| e.into_error())?
            .finish()?
            .flush()?;
        Ok(s)
    } else {
        let mut f = file;
        let s = generate(&params, &mut f)?;
        f.flush()?;
        Ok(s)
    }
}

/// The `generate` command.
pub fn main(args: &GenerateArgs) -> ExitCode {
    let where_to = args
        .output
        .as_ref()
        .map_or("standard output".to_string(), |p| p.display().to_string());
    match write_to(args) {
        Ok(s) => {
            let counts: Vec<String> = Func::ALL
                .iter()
                .filter(|f| s.counts[f.index()] > 0)
                .map(|f| format!("{} {}", f.name(), s.counts[f.index()]))
                .collect();
            eprintln!(
                "alloclab generate: wrote {} lines of synthetic trace to {where_to} ({}); \
                 at most {} objects live, {} live at the end",
                s.lines(),
                counts.join(", "),
                s.peak_live,
                s.live_at_end
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("alloclab generate: {where_to}: {e}");
            ExitCode::FAILURE
        }
    }
}
