//! How numbers and names appear in reports.

/// An estimate with its interval, `estimate [lo, hi]`, each in `unit` as `format_value` writes
/// it.
pub fn format_interval(ci: &crate::stats::ConfidenceInterval, unit: &str) -> String {
    format!(
        "{} [{}, {}]",
        format_value(ci.estimate, unit),
        format_value(ci.lo, unit),
        format_value(ci.hi, unit)
    )
}

/// `value` in `unit` (as in `analysis::METRICS`) for a human: times in s/ms/µs, sizes in
/// binary units, rates with a k/M/G prefix, ratios and per-operation counts with three
/// significant digits.
pub fn format_value(value: f64, unit: &str) -> String {
    if !value.is_finite() {
        return if value.is_nan() {
            "n/a".into()
        } else {
            "∞".into()
        };
    }
    match unit {
        "s" => {
            let a = value.abs();
            if a >= 1.0 || a == 0.0 {
                format!("{} s", sig3(value))
            } else if a >= 1e-3 {
                format!("{} ms", sig3(value * 1e3))
            } else {
                format!("{} µs", sig3(value * 1e6))
            }
        }
        "bytes" => {
            const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
            let mut v = value;
            let mut k = 0;
            while v.abs() >= 1024.0 && k + 1 < UNITS.len() {
                v /= 1024.0;
                k += 1;
            }
            if k == 0 {
                format!("{v:.0} B")
            } else {
                format!("{} {}", sig3(v), UNITS[k])
            }
        }
        "1/s" => {
            let (v, prefix) = si(value);
            format!("{} {prefix}/s", sig3(v))
        }
        "ns" => {
            let a = value.abs();
            if a >= 1e9 {
                format!("{} s", sig3(value * 1e-9))
            } else if a >= 1e6 {
                format!("{} ms", sig3(value * 1e-6))
            } else if a >= 1e3 {
                format!("{} µs", sig3(value * 1e-3))
            } else {
                format!("{} ns", sig3(value))
            }
        }
        "count" => format!("{value:.0}"),
        _ => sig3(value),
    }
}

fn si(value: f64) -> (f64, &'static str) {
    let a = value.abs();
    if a >= 1e9 {
        (value / 1e9, "G")
    } else if a >= 1e6 {
        (value / 1e6, "M")
    } else if a >= 1e3 {
        (value / 1e3, "k")
    } else {
        (value, "")
    }
}

/// Three significant digits, no exponent for everyday magnitudes.
pub(crate) fn sig3(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let magnitude = v.abs().log10().floor() as i32;
    if !(-4..=6).contains(&magnitude) {
        return format!("{v:.2e}");
    }
    let decimals = (2 - magnitude).max(0) as usize;
    format!("{v:.decimals$}")
}

/// A ratio with its interval: `1.04 [0.98, 1.10]`.
pub(crate) fn ratio_text(estimate: f64, lo: f64, hi: f64) -> String {
    format!("{:.3} [{:.3}, {:.3}]", estimate, lo, hi)
}

/// Decimals every report prints a p value with.
pub const P_DECIMALS: usize = 3;

/// A p value as every report prints it: [`P_DECIMALS`] decimals, and `< 0.001` for a p that
/// would print as zero at that precision (no report claims `0.000`), `n/a` for none.
pub fn p_text(p: f64) -> String {
    let floor = 10f64.powi(-(P_DECIMALS as i32));
    if p.is_nan() {
        "n/a".into()
    } else if p < floor {
        format!("< {floor:.P_DECIMALS$}")
    } else {
        format!("{p:.P_DECIMALS$}")
    }
}

/// A relative effect (`0.042` → `4.2%`).
pub(crate) fn percent_text(effect: f64) -> String {
    if effect.is_infinite() {
        "none".into()
    } else if effect.is_nan() {
        "n/a".into()
    } else {
        format!("{}%", sig3(effect * 100.0))
    }
}

/// An equivalence margin (`0.02` → `±2%`, `0.005` → `±0.5%`).
pub fn margin_text(margin: f64) -> String {
    let p = margin * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("±{p:.0}%")
    } else {
        format!("±{}%", sig3(p).trim_end_matches('0'))
    }
}

/// A name made safe for a file name: letters, digits, `-`, `_` and `.` kept, anything else `_`.
pub fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_by_unit() {
        assert_eq!(format_value(1.5, "s"), "1.50 s");
        assert_eq!(format_value(0.0123, "s"), "12.3 ms");
        assert_eq!(format_value(0.000_045_6, "s"), "45.6 µs");
        assert_eq!(format_value(512.0, "bytes"), "512 B");
        assert_eq!(format_value(3.0 * 1024.0 * 1024.0, "bytes"), "3.00 MiB");
        assert_eq!(format_value(2_340_000.0, "1/s"), "2.34 M/s");
        assert_eq!(format_value(17.0, "count"), "17");
        assert_eq!(format_value(0.0421, "ratio"), "0.0421");
        assert_eq!(format_value(f64::NAN, "s"), "n/a");
    }

    #[test]
    fn texts() {
        assert_eq!(p_text(0.00001), "< 0.001");
        assert_eq!(p_text(2.0 / 3432.0), "< 0.001");
        assert_eq!(p_text(0.0), "< 0.001");
        assert_eq!(p_text(0.001), "0.001");
        assert_eq!(p_text(0.0312), "0.031");
        assert_eq!(p_text(1.0), "1.000");
        assert_eq!(p_text(f64::NAN), "n/a");
        assert_eq!(percent_text(0.042), "4.20%");
        assert_eq!(percent_text(f64::INFINITY), "none");
        assert_eq!(margin_text(0.02), "±2%");
        assert_eq!(margin_text(0.005), "±0.5%");
        assert_eq!(margin_text(0.1), "±10%");
        assert_eq!(slug("trace/python touch"), "trace_python_touch");
        assert_eq!(ratio_text(1.0, 0.9, 1.1), "1.000 [0.900, 1.100]");
    }
}
