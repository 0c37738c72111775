//! The debug-capable heap the hardening studies measure: LIFO runs, thread-local arenas, no
//! front-end cache (the `lifo` named config) with every debug check compiled in, so that the
//! options are chosen at run time, as a production build with run-time-selectable checks would.
//! `checked_variant!` makes the `fn() -> Box<dyn Subject>` a `SubjectEntry` needs for one set of
//! options.

/// `lifo` with every debug check compiled in.
pub type Checked = alloclab_policies::configs::Checked;

/// `checked_variant!(name, safety)` defines `fn name() -> Box<dyn Subject>`: a fresh
/// `Heap<Checked>` with `safety` as its options; `checked_variant!(name, Config, safety)` the
/// same with a config of the study's own.
macro_rules! checked_variant {
    ($name:ident, $safety:expr) => {
        $crate::checked::checked_variant!($name, $crate::checked::Checked, $safety);
    };
    ($name:ident, $config:ty, $safety:expr) => {
        fn $name() -> Box<dyn ::alloclab_traces::subject::Subject> {
            Box::new(alloclab_core::Heap::<$config>::with_options(
                alloclab_core::Options {
                    safety: $safety,
                    ..alloclab_core::Options::DEFAULT
                },
            ))
        }
    };
}
pub(crate) use checked_variant;

/// A `SubjectEntry` for an alloclab subject made by `make`.
pub fn entry(
    name: &str,
    make: fn() -> Box<dyn alloclab_traces::subject::Subject>,
) -> alloclab_measure::subjects::SubjectEntry {
    alloclab_measure::subjects::SubjectEntry {
        name: name.to_string(),
        kind: alloclab_measure::subjects::SubjectKind::Alloclab,
        make: std::sync::Arc::new(make),
        with_options: None,
    }
}
