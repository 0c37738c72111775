//! `Coverage`: what the generated operations exercised of the run-reuse protocol, counted by
//! the `Harness` on every small allocation and free, so that the kit can say what it checked
//! and fail when a dimension was never reached (a pass that never exercised a decision says
//! nothing about it).

use core::fmt;

/// Counts of the protocol situations a run of the kit reached (summed over every case).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Small allocations served while the bin's non-full runs lay in at least 2 chunks.
    pub span_2_chunks: u64,
    /// ... in at least 4 chunks.
    pub span_4_chunks: u64,
    /// Small allocations whose bin had at least 2 non-full runs to pick from.
    pub picks_among_2: u64,
    /// ... at least 8.
    pub picks_among_8: u64,
    /// Runs that became non-full below every other non-full run of their bin.
    pub nonfull_lowest: u64,
    /// ... above every other.
    pub nonfull_highest: u64,
    /// ... between two others.
    pub nonfull_middle: u64,
    /// Runs that became non-full while another run of their bin was current (had served the
    /// bin's last allocation and was still non-full).
    pub nonfull_beside_current: u64,
    /// Frees into a run the policy already knew (`freed`).
    pub freed_into_known: u64,
    /// Runs removed because they became full (`Removal::Full`).
    pub removed_full: u64,
    /// Runs removed because they became entirely free (`Removal::Empty`).
    pub removed_empty: u64,
    /// Most arenas one case allocated small regions from.
    pub arenas: usize,
    /// Small allocations checked against a reference model's prediction.
    pub model_checked_picks: u64,
    /// Runs the reference model says a wrapping policy took over (`Removal::Taken`): the
    /// engine never issues it, so only a model can count it, and it is not required.
    pub removed_taken: u64,
}

impl Coverage {
    /// Adds `other`'s counts (and keeps the larger arena count).
    pub fn add(&mut self, other: &Coverage) {
        self.span_2_chunks += other.span_2_chunks;
        self.span_4_chunks += other.span_4_chunks;
        self.picks_among_2 += other.picks_among_2;
        self.picks_among_8 += other.picks_among_8;
        self.nonfull_lowest += other.nonfull_lowest;
        self.nonfull_highest += other.nonfull_highest;
        self.nonfull_middle += other.nonfull_middle;
        self.nonfull_beside_current += other.nonfull_beside_current;
        self.freed_into_known += other.freed_into_known;
        self.removed_full += other.removed_full;
        self.removed_empty += other.removed_empty;
        self.arenas = self.arenas.max(other.arenas);
        self.model_checked_picks += other.model_checked_picks;
        self.removed_taken += other.removed_taken;
    }

    /// Every dimension with its count and what it means, in summary order.
    pub fn dimensions(&self) -> [(&'static str, u64); 12] {
        [
            ("picks, non-full runs in 2+ chunks", self.span_2_chunks),
            ("picks, non-full runs in 4+ chunks", self.span_4_chunks),
            ("picks among 2+ non-full runs", self.picks_among_2),
            ("picks among 8+ non-full runs", self.picks_among_8),
            ("became non-full at the lowest address", self.nonfull_lowest),
            (
                "became non-full at the highest address",
                self.nonfull_highest,
            ),
            ("became non-full at a middle address", self.nonfull_middle),
            (
                "became non-full beside a current run",
                self.nonfull_beside_current,
            ),
            ("frees into known runs (freed)", self.freed_into_known),
            ("removals, Full", self.removed_full),
            ("removals, Empty", self.removed_empty),
            ("arenas in one case (needs 2+)", self.arenas as u64),
        ]
    }

    /// The dimensions never exercised (the arena one: fewer than 2 arenas), by name.
    pub fn gaps(&self) -> Vec<&'static str> {
        self.dimensions()
            .into_iter()
            .filter(|&(name, n)| n == 0 || (name.starts_with("arenas") && n < 2))
            .map(|(name, _)| name)
            .collect()
    }
}

impl fmt::Display for Coverage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, n) in self.dimensions() {
            writeln!(f, "  {name:<42} {n:>8}")?;
        }
        writeln!(
            f,
            "  {:<42} {:>8}",
            "removals, Taken (per the model)", self.removed_taken
        )?;
        write!(
            f,
            "  {:<42} {:>8}",
            "picks checked against the model", self.model_checked_picks
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Coverage;

    /// Every count different, so a count added to the wrong field, or not at all, shows.
    fn numbered(from: u64) -> Coverage {
        Coverage {
            span_2_chunks: from,
            span_4_chunks: from + 1,
            picks_among_2: from + 2,
            picks_among_8: from + 3,
            nonfull_lowest: from + 4,
            nonfull_highest: from + 5,
            nonfull_middle: from + 6,
            nonfull_beside_current: from + 7,
            freed_into_known: from + 8,
            removed_full: from + 9,
            removed_empty: from + 10,
            arenas: from as usize + 11,
            model_checked_picks: from + 12,
            removed_taken: from + 13,
        }
    }

    /// Kills cargo-mutants' `replace += with *= in Coverage::add` (`verify/src/coverage.rs`,
    /// survivor of the campaign's shard 1): the kit sums cases' coverage with `add`, and no
    /// test read a sum. Counts add; the arena count is the larger one.
    #[test]
    fn add_sums_every_count_and_keeps_the_larger_arena_count() {
        let mut sum = numbered(2);
        sum.add(&numbered(100));
        let (a, b) = (numbered(2), numbered(100));
        let expect = Coverage {
            span_2_chunks: a.span_2_chunks + b.span_2_chunks,
            span_4_chunks: a.span_4_chunks + b.span_4_chunks,
            picks_among_2: a.picks_among_2 + b.picks_among_2,
            picks_among_8: a.picks_among_8 + b.picks_among_8,
            nonfull_lowest: a.nonfull_lowest + b.nonfull_lowest,
            nonfull_highest: a.nonfull_highest + b.nonfull_highest,
            nonfull_middle: a.nonfull_middle + b.nonfull_middle,
            nonfull_beside_current: a.nonfull_beside_current + b.nonfull_beside_current,
            freed_into_known: a.freed_into_known + b.freed_into_known,
            removed_full: a.removed_full + b.removed_full,
            removed_empty: a.removed_empty + b.removed_empty,
            arenas: b.arenas,
            model_checked_picks: a.model_checked_picks + b.model_checked_picks,
            removed_taken: a.removed_taken + b.removed_taken,
        };
        assert_eq!(sum, expect);
    }

    /// Kills `replace Coverage::dimensions -> [(&'static str, u64); 12] with [("xyzzy", 0);
    /// 12]` (shard 1): the kit fails a pass whose dimension count is 0 by name, so each name
    /// must be distinct and each count the field it names.
    #[test]
    fn each_dimension_is_named_once_with_its_own_count() {
        let c = numbered(1000);
        let dims = c.dimensions();
        let counts: Vec<u64> = dims.iter().map(|&(_, n)| n).collect();
        assert_eq!(
            counts,
            [
                c.span_2_chunks,
                c.span_4_chunks,
                c.picks_among_2,
                c.picks_among_8,
                c.nonfull_lowest,
                c.nonfull_highest,
                c.nonfull_middle,
                c.nonfull_beside_current,
                c.freed_into_known,
                c.removed_full,
                c.removed_empty,
                c.arenas as u64,
            ]
        );
        let mut names: Vec<&str> = dims.iter().map(|&(name, _)| name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), dims.len(), "dimension names repeat: {dims:?}");
    }
}
