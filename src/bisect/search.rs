//! The search of a bisect, over a predicate on states `0..=n` (issue 32): state 0 must
//! pass and state `n` fail, then a binary search names the first failing state in at most
//! ⌈log2 n⌉ + 2 tests when no state is skipped. A state that cannot be tested (the command
//! exited 125, or the state cannot be built) is skipped as `git bisect` does: the search
//! tests another state of the open range, and when every state left in it is skipped the
//! answer is the range, not one step.

/// What testing one state said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Good,
    Bad,
    Skip,
}

impl Verdict {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::Good => "good",
            Verdict::Bad => "bad",
            Verdict::Skip => "skip",
        }
    }
}

/// How the search ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// State `step` is the first that fails: step `step` broke it.
    Culprit(usize),
    /// The first failing state is one of `from..=to`: the states between could not be tested.
    Range { from: usize, to: usize },
    /// State 0 fails already.
    AlreadyBad,
    /// The last state passes.
    NeverBad,
    /// State 0 (`0`) or the last state cannot be tested.
    Untestable(usize),
    /// No steps.
    Empty,
}

/// The search's result: how it ended, and every test in the order made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Search {
    pub found: Found,
    pub tested: Vec<(usize, Verdict)>,
}

/// Most tests the search makes over `n` steps when nothing is skipped: ⌈log2 n⌉ + 2.
pub fn max_tests(n: usize) -> usize {
    if n <= 1 { 2 } else { (usize::BITS - (n - 1).leading_zeros()) as usize + 2 }
}

/// Bisects states `0..=n` with `test`; an error from `test` ends the search (an abort).
pub fn bisect<E>(n: usize, mut test: impl FnMut(usize) -> Result<Verdict, E>) -> Result<Search, E> {
    let mut tested = Vec::new();
    let mut run = |k: usize, tested: &mut Vec<(usize, Verdict)>| -> Result<Verdict, E> {
        let v = test(k)?;
        tested.push((k, v));
        Ok(v)
    };
    if n == 0 {
        return Ok(Search { found: Found::Empty, tested });
    }
    match run(0, &mut tested)? {
        Verdict::Bad => return Ok(Search { found: Found::AlreadyBad, tested }),
        Verdict::Skip => return Ok(Search { found: Found::Untestable(0), tested }),
        Verdict::Good => {}
    }
    match run(n, &mut tested)? {
        Verdict::Good => return Ok(Search { found: Found::NeverBad, tested }),
        Verdict::Skip => return Ok(Search { found: Found::Untestable(n), tested }),
        Verdict::Bad => {}
    }
    let (mut good, mut bad) = (0usize, n);
    let mut skipped: Vec<usize> = Vec::new();
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        // The untested state nearest the middle of the open range.
        let pick = (0..bad - good)
            .flat_map(|d| [mid.checked_sub(d), mid.checked_add(d)])
            .flatten()
            .find(|k| *k > good && *k < bad && !skipped.contains(k));
        let Some(k) = pick else {
            return Ok(Search { found: Found::Range { from: good + 1, to: bad }, tested });
        };
        match run(k, &mut tested)? {
            Verdict::Good => good = k,
            Verdict::Bad => bad = k,
            Verdict::Skip => skipped.push(k),
        }
    }
    Ok(Search { found: Found::Culprit(bad), tested })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_log2_plus_two() {
        assert_eq!(max_tests(1), 2);
        assert_eq!(max_tests(2), 3);
        assert_eq!(max_tests(12), 6);
        assert_eq!(max_tests(16), 6);
        assert_eq!(max_tests(17), 7);
        assert_eq!(max_tests(64), 8);
    }

    #[test]
    fn ends_say_why_there_is_nothing_to_bisect() {
        assert_eq!(bisect(5, |_| Ok::<_, ()>(Verdict::Bad)).unwrap().found, Found::AlreadyBad);
        assert_eq!(bisect(5, |_| Ok::<_, ()>(Verdict::Good)).unwrap().found, Found::NeverBad);
        assert_eq!(bisect(0, |_| Ok::<_, ()>(Verdict::Good)).unwrap().found, Found::Empty);
        let s = bisect(5, |k| Ok::<_, ()>(if k == 5 { Verdict::Skip } else { Verdict::Good })).unwrap();
        assert_eq!(s.found, Found::Untestable(5));
    }

    #[test]
    fn skipped_states_are_stepped_around_or_give_a_range() {
        // Culprit 6 of 10, state 5 untestable: found all the same.
        let s = bisect(10, |k| {
            Ok::<_, ()>(if k == 5 {
                Verdict::Skip
            } else if k >= 6 {
                Verdict::Bad
            } else {
                Verdict::Good
            })
        })
        .unwrap();
        assert_eq!(s.found, Found::Range { from: 5, to: 6 });
        // Culprit 6, states 4..=5 untestable: the first failing state is 4, 5 or 6.
        let s = bisect(10, |k| {
            Ok::<_, ()>(if (4..=5).contains(&k) {
                Verdict::Skip
            } else if k >= 6 {
                Verdict::Bad
            } else {
                Verdict::Good
            })
        })
        .unwrap();
        assert_eq!(s.found, Found::Range { from: 4, to: 6 });
    }

    #[test]
    fn an_abort_stops_the_search() {
        let mut calls = 0;
        let r = bisect(10, |k| {
            calls += 1;
            if k == 10 { Err("timeout") } else { Ok(Verdict::Good) }
        });
        assert_eq!(r, Err("timeout"));
        assert_eq!(calls, 2);
    }
}
