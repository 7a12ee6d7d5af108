//! PCM from one rate to another as a stream: the chunks a backend sends come through one resampler
//! whose filter state carries from each chunk to the next, so no chunk boundary is heard; at a
//! sentence's end what the filter still holds is given back, and the sentence's output is exactly its
//! input's length at the new rate (rounded), so time and word timings keep their meaning.
//!
//! Built on rubato's FFT resampler (fixed ratio, fixed input chunks of about 10 ms): samples wait in
//! `pending` until a chunk is full, and the filter's own delay is dropped from the front of each
//! sentence. The compute time is what conversion adds to first audio (well under a millisecond: `make
//! bench`, suite `formats`); what the resampler holds back at any moment (a part-filled chunk, the filter's
//! delay, the FFT block's rounding) is some tens of milliseconds of audio at most, sent with the next chunk
//! or at the sentence's end.

use audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Indexing, Resampler};

/// One stream of mono samples (`f32`, full scale ±1) from `from` Hz to `to` Hz.
pub struct StreamResampler {
    from: u32,
    to: u32,
    /// None where the rates are equal: samples pass unchanged.
    inner: Option<Fft<f32>>,
    /// Input not yet a whole chunk.
    pending: Vec<f32>,
    /// Output still to drop at the front of the sentence (the filter's delay).
    skip: usize,
    /// The sentence's input and output so far, in frames.
    consumed: u64,
    produced: u64,
    scratch: Vec<f32>,
}

impl StreamResampler {
    /// A resampler from `from` Hz to `to` Hz; samples pass unchanged where the rates are equal.
    pub fn new(from: u32, to: u32) -> Self {
        let inner = (from != to && from > 0 && to > 0)
            .then(|| Fft::<f32>::new(from as usize, to as usize, (from as usize / 100).max(1), 1, FixedSync::Input).expect("both rates are positive"));
        let skip = inner.as_ref().map_or(0, |r| r.output_delay());
        StreamResampler { from, to, inner, pending: Vec::new(), skip, consumed: 0, produced: 0, scratch: Vec::new() }
    }

    /// The input rate.
    pub fn from_rate(&self) -> u32 {
        self.from
    }

    /// Takes the next samples of the sentence; gives back what the filter has finished.
    pub fn push(&mut self, input: &[f32]) -> Vec<f32> {
        let Some(resampler) = self.inner.as_mut() else { return input.to_vec() };
        self.pending.extend_from_slice(input);
        self.consumed += input.len() as u64;
        let mut out = Vec::new();
        let mut start = 0;
        while self.pending.len() - start >= resampler.input_frames_next() {
            let need = resampler.input_frames_next();
            let written = step(resampler, &self.pending[start..start + need], None, &mut self.scratch);
            start += need;
            emit(&self.scratch[..written], &mut self.skip, &mut self.produced, &mut out);
        }
        self.pending.drain(..start);
        out
    }

    /// Ends the sentence: the rest of its output, so that it comes to its input's length at the new
    /// rate. The next sample starts a new sentence (the filter starts afresh).
    pub fn finish(&mut self) -> Vec<f32> {
        let Some(resampler) = self.inner.as_mut() else { return Vec::new() };
        let expected = (self.consumed * self.to as u64 + self.from as u64 / 2) / self.from as u64;
        let mut out = Vec::new();
        let mut rest = std::mem::take(&mut self.pending);
        // The pending input, then silence, until the sentence's last sample has left the filter (a few
        // steps at most: the delay is under one chunk).
        for _ in 0..64 {
            if self.produced >= expected {
                break;
            }
            let written = step(resampler, &rest, Some(rest.len()), &mut self.scratch);
            rest.clear();
            emit(&self.scratch[..written], &mut self.skip, &mut self.produced, &mut out);
        }
        let extra = self.produced.saturating_sub(expected) as usize;
        out.truncate(out.len().saturating_sub(extra));
        resampler.reset();
        self.skip = resampler.output_delay();
        self.consumed = 0;
        self.produced = 0;
        out
    }
}

/// One chunk through the resampler (`partial`: fewer frames than a chunk, the rest silence); the
/// output is the first frames of `out`, their number returned.
fn step(resampler: &mut Fft<f32>, input: &[f32], partial: Option<usize>, out: &mut Vec<f32>) -> usize {
    let need = resampler.input_frames_next();
    let mut padded;
    let input = if input.len() < need {
        padded = input.to_vec();
        padded.resize(need, 0.0);
        &padded[..]
    } else {
        input
    };
    let frames_out = resampler.output_frames_max();
    out.resize(frames_out, 0.0);
    let buffer_in = InterleavedSlice::new(input, 1, need).expect("the input holds a whole chunk");
    let mut buffer_out = InterleavedSlice::new_mut(&mut out[..], 1, frames_out).expect("the output holds the most a chunk gives");
    let indexing = partial.map(|n| Indexing::new().partial_len(n));
    let (_, written) = resampler.process_into_buffer(&buffer_in, &mut buffer_out, indexing.as_ref()).expect("buffers sized as the resampler asks");
    written
}

/// Appends a step's output, less what is still owed to the filter's delay.
fn emit(samples: &[f32], skip: &mut usize, produced: &mut u64, out: &mut Vec<f32>) {
    let dropped = (*skip).min(samples.len());
    *skip -= dropped;
    out.extend_from_slice(&samples[dropped..]);
    *produced += (samples.len() - dropped) as u64;
}

/// 16-bit samples as `f32` at full scale ±1.
pub fn to_float(samples: impl IntoIterator<Item = i16>) -> Vec<f32> {
    samples.into_iter().map(|s| s as f32 / 32_768.0).collect()
}

/// `f32` samples back to 16 bits, rounded and clipped.
pub fn to_i16(samples: &[f32]) -> impl Iterator<Item = i16> + '_ {
    samples.iter().map(|&x| (x * 32_768.0).round().clamp(-32_768.0, 32_767.0) as i16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(rate: u32, hz: f32, frames: usize) -> Vec<f32> {
        (0..frames).map(|i| 0.5 * (2.0 * std::f32::consts::PI * hz * i as f32 / rate as f32).sin()).collect()
    }

    /// The stream in chunks of the given sizes, then finished.
    fn through(from: u32, to: u32, input: &[f32], chunks: &[usize]) -> Vec<f32> {
        let mut r = StreamResampler::new(from, to);
        let (mut out, mut at) = (Vec::new(), 0);
        for &size in chunks.iter().cycle() {
            if at >= input.len() {
                break;
            }
            let end = (at + size).min(input.len());
            out.extend(r.push(&input[at..end]));
            at = end;
        }
        out.extend(r.finish());
        out
    }

    #[test]
    fn a_sentence_comes_out_at_its_length_at_the_new_rate() {
        for (from, to) in [(24_000, 8_000), (24_000, 22_050), (16_000, 48_000), (16_000, 44_100), (24_000, 16_000), (8_000, 24_000)] {
            let input = tone(from, 440.0, 12_345);
            let out = through(from, to, &input, &[1_000]);
            let expected = (12_345u64 * to as u64 + from as u64 / 2) / from as u64;
            assert_eq!(out.len() as u64, expected, "{from} → {to}");
        }
    }

    #[test]
    fn how_the_stream_is_cut_does_not_change_a_sample() {
        let input = tone(24_000, 300.0, 9_000);
        let whole = through(24_000, 8_000, &input, &[9_000]);
        let ragged = through(24_000, 8_000, &input, &[1, 77, 480, 13, 2_000]);
        assert_eq!(whole.len(), ragged.len());
        let worst = whole.iter().zip(&ragged).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(worst < 1e-4, "chunking moved a sample by {worst}");
    }

    #[test]
    fn a_tone_keeps_its_pitch_and_loudness_with_no_seam() {
        let (from, to) = (24_000, 16_000);
        let out = through(from, to, &tone(from, 440.0, 24_000), &[2_400]);
        // Away from the ends: the tone at the new rate, within the filter's ripple.
        let expected = tone(to, 440.0, out.len());
        let middle = 400..out.len() - 400;
        let worst = middle.clone().map(|i| (out[i] - expected[i]).abs()).fold(0.0, f32::max);
        assert!(worst < 0.01, "a sample strays by {worst}");
        // No jump between neighbours larger than the tone's own steepest step.
        let steepest = 0.5 * 2.0 * std::f32::consts::PI * 440.0 / to as f32;
        let jump = middle.map(|i| (out[i] - out[i - 1]).abs()).fold(0.0, f32::max);
        assert!(jump <= steepest * 1.05, "a jump of {jump} against the tone's {steepest}");
    }

    #[test]
    fn each_sentence_starts_afresh() {
        let mut r = StreamResampler::new(24_000, 8_000);
        let input = tone(24_000, 200.0, 4_800);
        let first: Vec<f32> = r.push(&input).into_iter().chain(r.finish()).collect();
        let second: Vec<f32> = r.push(&input).into_iter().chain(r.finish()).collect();
        assert_eq!(first, second);
    }

    #[test]
    fn equal_rates_pass_samples_unchanged() {
        let mut r = StreamResampler::new(16_000, 16_000);
        let input = tone(16_000, 440.0, 100);
        assert_eq!(r.push(&input), input);
        assert!(r.finish().is_empty());
        assert_eq!(to_i16(&to_float([i16::MIN, -1, 0, 1, i16::MAX])).collect::<Vec<_>>(), vec![i16::MIN, -1, 0, 1, i16::MAX]);
    }
}
