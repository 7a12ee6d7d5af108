//! Characters spoken per owner over a rolling hour: the arithmetic of one owner's spending, kept the same
//! wherever it is stored (in the process for `earshot serve`, in the shared store on Lambda).
//!
//! A voice bills by the character (Polly's price is per million), so a caller's budget is counted in
//! characters sent to a voice. The hour rolls by the minute: what was spent in each minute is kept for 60
//! minutes and then lapses, so a caller who spent it all waits for the oldest minutes to lapse, not for the
//! clock to strike. A conversation takes its characters in blocks ([`SpendWindow::reserve`]), so that the
//! store is asked once a block rather than once a sentence; what a conversation reserved and did not speak is
//! given back when it ends ([`SpendWindow::refund`]).

use std::collections::BTreeMap;

/// How many minutes a spend counts for, unless a window says otherwise.
pub const WINDOW_MINUTES: u64 = 60;

/// Characters a second of silence costs the budget: about what a voice says in a second (150 words a
/// minute, six characters a word with its space). A silence holds the stream, the connection and the
/// conversation's place as long as speech would, so it is paid for as the speech it stands for.
pub const SILENCE_CHARS_PER_SECOND: u64 = 15;

/// What `silence_ms` of silence costs, in characters (rounded up: any silence costs at least one).
pub fn silence_chars(silence_ms: u32) -> u64 {
    (u64::from(silence_ms) * SILENCE_CHARS_PER_SECOND).div_ceil(1000)
}

/// One owner's spending: characters (or requests) reserved per minute (Unix seconds / 60), the last
/// `span_minutes`' only (an hour, unless made with [`SpendWindow::spanning`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpendWindow {
    minutes: BTreeMap<u64, u64>,
    span_minutes: u64,
}

impl Default for SpendWindow {
    fn default() -> Self {
        SpendWindow::spanning(WINDOW_MINUTES)
    }
}

/// What a reservation got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reservation {
    /// Characters granted: up to what was asked, none when the hour's budget is spent.
    pub granted: u64,
    /// When none was granted: seconds until some of the spending lapses.
    pub retry_after_s: u64,
    /// The minute (Unix seconds / 60) the grant is dated: what is given back of it is given back there.
    pub minute: u64,
}

/// Characters to give back, each where it was reserved: `(minute, characters)`.
pub type Grants = [(u64, u64)];

impl SpendWindow {
    /// An empty window whose spending counts for `minutes` (at least one: the current minute).
    pub fn spanning(minutes: u64) -> Self {
        SpendWindow { minutes: BTreeMap::new(), span_minutes: minutes.max(1) }
    }

    /// The window with stored `(minute, characters)` entries added.
    pub fn with_entries(mut self, entries: impl IntoIterator<Item = (u64, u64)>) -> Self {
        for (minute, chars) in entries {
            *self.minutes.entry(minute).or_default() += chars;
        }
        self
    }

    /// An hour's window from stored `(minute, characters)` entries.
    pub fn from_entries(entries: impl IntoIterator<Item = (u64, u64)>) -> Self {
        SpendWindow::default().with_entries(entries)
    }

    /// The entries to store (the last hour's, oldest first).
    pub fn entries(&self) -> Vec<(u64, u64)> {
        self.minutes.iter().map(|(m, c)| (*m, *c)).collect()
    }

    /// Forgets the minutes that no longer count at `now_s`.
    fn lapse(&mut self, now_s: u64) {
        let first = (now_s / 60).saturating_sub(self.span_minutes - 1);
        self.minutes.retain(|minute, chars| *minute >= first && *chars > 0);
    }

    /// Characters spent in the hour up to `now_s`.
    pub fn spent(&mut self, now_s: u64) -> u64 {
        self.lapse(now_s);
        self.minutes.values().sum()
    }

    /// Takes up to `want` characters at `now_s` without passing `limit` in the hour, and none unless at
    /// least `at_least` are left (a grant too small to be used is no grant).
    pub fn reserve(&mut self, now_s: u64, want: u64, at_least: u64, limit: u64) -> Reservation {
        let at_least = at_least.clamp(1, limit.max(1));
        let left = limit.saturating_sub(self.spent(now_s));
        if left < at_least {
            return Reservation { granted: 0, retry_after_s: self.retry_after_s(now_s, limit - at_least + 1), minute: now_s / 60 };
        }
        let granted = want.min(left);
        *self.minutes.entry(now_s / 60).or_default() += granted;
        Reservation { granted, retry_after_s: 0, minute: now_s / 60 }
    }

    /// Gives back what was reserved and not spoken, each part in the minute it was reserved in (never
    /// below nothing; a minute that has lapsed has nothing to give back). Given back elsewhere (the latest
    /// minutes, say) it would re-date spending: an older minute would keep characters another conversation
    /// spent later, and lapse with them early, so the rolling hour would admit more than its budget.
    pub fn refund(&mut self, now_s: u64, grants: &Grants) {
        self.lapse(now_s);
        for (minute, chars) in grants {
            if let Some(spent) = self.minutes.get_mut(minute) {
                *spent -= (*chars).min(*spent);
            }
        }
        self.lapse(now_s);
    }

    /// Seconds from `now_s` until the spending falls under `limit` (0 when it is under already); the
    /// window has lapsed to `now_s`.
    fn retry_after_s(&self, now_s: u64, limit: u64) -> u64 {
        let mut spent: u64 = self.minutes.values().sum();
        for (minute, chars) in &self.minutes {
            if spent < limit {
                break;
            }
            spent -= chars;
            if spent < limit {
                // This minute lapses when the window's first minute passes it.
                return ((minute + self.span_minutes) * 60).saturating_sub(now_s).max(1);
            }
        }
        if spent < limit {
            0
        } else {
            self.span_minutes * 60
        }
    }

    /// The last Unix second at which the window still counts anything (a stored copy may expire then).
    pub fn expires_at_s(&self) -> u64 {
        self.minutes.keys().next_back().map_or(0, |m| (m + self.span_minutes) * 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: u64 = 1_800_000_000; // a minute's start

    #[test]
    fn a_budget_is_granted_up_to_its_limit_then_refused_until_the_oldest_minutes_lapse() {
        let mut w = SpendWindow::default();
        assert_eq!(w.reserve(T, 1_000, 1, 1_500), Reservation { granted: 1_000, retry_after_s: 0, minute: T / 60 });
        assert_eq!(w.reserve(T + 600, 1_000, 100, 1_500).granted, 500, "what is left of the hour");
        let refused = w.reserve(T + 1_200, 10, 1, 1_500);
        assert_eq!(refused.granted, 0);
        // The first minute's 1,000 lapse an hour after it began.
        assert_eq!(refused.retry_after_s, 3_600 - 1_200);
        assert_eq!(w.reserve(T + 3_600, 10, 1, 1_500).granted, 10, "the oldest minute has lapsed");
        assert_eq!(w.spent(T + 3_600), 510);
        // Less left than the least a caller can use: nothing granted, nothing taken.
        let mut w = SpendWindow::default();
        w.reserve(T, 900, 1, 1_000);
        w.reserve(T + 120, 50, 1, 1_000);
        let refused = w.reserve(T + 180, 200, 200, 1_000);
        assert_eq!(refused.granted, 0);
        assert_eq!(w.spent(T + 180), 950);
        // 200 are left once the first minute's 900 lapse, not when 50 would be.
        assert_eq!(refused.retry_after_s, 3_600 - 180);
    }

    #[test]
    fn a_window_of_a_minute_counts_the_current_minute_only() {
        let mut w = SpendWindow::spanning(1);
        assert_eq!(w.reserve(T + 10, 1, 1, 2).granted, 1);
        assert_eq!(w.reserve(T + 20, 1, 1, 2).granted, 1);
        let refused = w.reserve(T + 30, 1, 1, 2);
        assert_eq!((refused.granted, refused.retry_after_s), (0, 30), "free when the minute ends");
        assert_eq!(w.reserve(T + 60, 1, 1, 2).granted, 1, "a new minute");
        assert_eq!(w.expires_at_s(), T + 120);
        assert_eq!(SpendWindow::spanning(1).with_entries([(T / 60, 2)]).reserve(T + 59, 1, 1, 2).granted, 0);
    }

    #[test]
    fn what_was_reserved_and_not_spoken_is_given_back_where_it_was_reserved() {
        let mut w = SpendWindow::default();
        w.reserve(T, 1_000, 1, 2_000);
        w.reserve(T + 60, 1_000, 1, 2_000);
        w.refund(T + 90, &[(T / 60, 900)]);
        assert_eq!(w.entries(), vec![(T / 60, 100), (T / 60 + 1, 1_000)], "given back in its own minute, not the latest");
        w.refund(T + 90, &[(T / 60, 5_000), (T / 60 + 1, 5_000)]);
        assert_eq!(w.spent(T + 90), 0, "never below nothing, emptied minutes forgotten");
        assert_eq!(SpendWindow::from_entries([(T / 60, 5), (T / 60, 7)]).entries(), vec![(T / 60, 12)]);
    }

    #[test]
    fn a_refund_never_lets_the_rolling_hour_admit_more_than_its_budget() {
        // A reserves 1,000 at minute 0 and speaks 100; B reserves the other 1,000 at minute 30 and speaks all;
        // A gives back its 900 at minute 31. At minute 60 A's minute lapses: 100 free, not 1,000.
        let mut w = SpendWindow::default();
        let a = w.reserve(T, 1_000, 1, 2_000);
        w.reserve(T + 30 * 60, 1_000, 1, 2_000);
        w.refund(T + 31 * 60, &[(a.minute, 900)]);
        assert_eq!(w.reserve(T + 60 * 60, 2_000, 1, 2_000).granted, 1_000, "B's 1,000 still count");
    }

    #[test]
    fn a_window_says_when_a_stored_copy_may_expire() {
        let mut w = SpendWindow::default();
        assert_eq!(w.expires_at_s(), 0);
        w.reserve(T + 30, 1, 1, 10);
        assert_eq!(w.expires_at_s(), T + 3_600);
    }
}
