//! Helpers shared by the property tests of the text path.

/// Cuts `text` into chunks at the given fractions of its length, always at character boundaries (as
/// a UTF-8 stream decoder hands text over); the chunks put together are `text`.
pub fn chunks<'a>(text: &'a str, cuts: &[f64]) -> Vec<&'a str> {
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).chain(std::iter::once(text.len())).collect();
    let mut points: Vec<usize> = cuts.iter().map(|f| bounds[(f * (bounds.len() - 1) as f64) as usize]).collect();
    points.extend([0, text.len()]);
    points.sort_unstable();
    points.dedup();
    points.windows(2).map(|w| &text[w[0]..w[1]]).collect()
}
