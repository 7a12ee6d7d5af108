//! A listener at real-time playback, simulated: the one definition of a gap that the timeline's
//! metrics, the client's measurements and the benchmarks all use.
//!
//! Pieces of audio (sentences, or chunks as a player receives them) play in order, each when it is
//! ready or when the piece before it ends, whichever is later, as the demo page's player schedules
//! them. The silence a listener hears before a piece is its gap.

/// One piece of audio, as it played.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Played {
    /// When the piece was there to play.
    pub ready_ms: f64,
    /// When it started playing: when it was ready, or when the piece before it ended, whichever is later.
    pub start_ms: f64,
    /// When it finished playing: its start plus its length.
    pub end_ms: f64,
    /// The silence before it; `None` for the first piece (before it there is only waiting, which is
    /// time to first audio, not a gap).
    pub gap_ms: Option<f64>,
}

/// Plays `(ready_ms, duration_ms)` pieces in order.
pub fn play(pieces: impl IntoIterator<Item = (f64, f64)>) -> Vec<Played> {
    let mut played: Vec<Played> = Vec::new();
    for (ready_ms, duration_ms) in pieces {
        let (start_ms, gap_ms) = match played.last() {
            None => (ready_ms, None),
            Some(before) => (ready_ms.max(before.end_ms), Some((ready_ms - before.end_ms).max(0.0))),
        };
        played.push(Played { ready_ms, start_ms, end_ms: start_ms + duration_ms, gap_ms });
    }
    played
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_piece_waits_for_the_one_before_and_a_late_one_leaves_a_gap() {
        // 0..100, then ready at 50 (plays 100..150), then ready at 180: 30 ms of silence.
        let played = play([(0.0, 100.0), (50.0, 50.0), (180.0, 10.0)]);
        assert_eq!(played.iter().map(|p| p.start_ms).collect::<Vec<_>>(), vec![0.0, 100.0, 180.0]);
        assert_eq!(played.iter().map(|p| p.gap_ms).collect::<Vec<_>>(), vec![None, Some(0.0), Some(30.0)]);
        assert_eq!(played[2].end_ms, 190.0);
    }
}
