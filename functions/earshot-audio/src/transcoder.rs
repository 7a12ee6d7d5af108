//! The scheduler's encoder for one conversation: the backend's PCM resampled to the client's rate, then
//! packed as the client's samples (PCM or G.711) or coded (Ogg Opus pages, MP3, ADTS or FLAC frames).

use bytes::Bytes;
use earshot_core::output::{AudioEncoder, OutputFormat};
use earshot_core::protocol::AudioFormat;

use crate::coded::{stream_for, CodedStream};
use crate::g711;
use crate::resample::{to_float, to_i16, StreamResampler};

/// Converts a stream of 16-bit mono PCM to `format`, whatever rate the backend speaks at (a switch of
/// backend may change it; the client's format never changes).
pub struct Transcoder {
    format: OutputFormat,
    resampler: StreamResampler,
    /// A byte of a sample split between two chunks.
    carry: Option<u8>,
    /// The compressed stream, for a compressed format.
    coded: Option<Box<dyn CodedStream>>,
    /// Milliseconds of audio in the last output (what the client will play of it).
    last_ms: f64,
}

impl Transcoder {
    /// A transcoder to `format`, taking PCM at the format's own rate until `source` names the backend's rate.
    pub fn new(format: OutputFormat) -> Self {
        let coded = stream_for(format);
        Transcoder { format, resampler: StreamResampler::new(format.sample_rate(), format.sample_rate()), carry: None, coded, last_ms: 0.0 }
    }

    /// The 16-bit samples in `pcm`, with the byte carried from the last chunk.
    fn samples(&mut self, pcm: &[u8]) -> Vec<i16> {
        let mut bytes = Vec::with_capacity(pcm.len() + 1);
        bytes.extend(self.carry.take());
        bytes.extend_from_slice(pcm);
        if bytes.len() % 2 == 1 {
            self.carry = bytes.pop();
        }
        bytes.chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]])).collect()
    }

    /// Samples in the client's packing (a compressed format: the packets they finished; `end` flushes
    /// the sentence).
    fn pack(&mut self, samples: &[f32], end: bool) -> Bytes {
        let rate = self.format.sample_rate() as f64;
        let samples = to_i16(samples);
        if let Some(coded) = self.coded.as_mut() {
            let before = coded.playable_samples();
            let mut packets = coded.push(&samples.collect::<Vec<i16>>());
            if end {
                packets.extend(coded.end_sentence());
            }
            self.last_ms = (coded.playable_samples() - before) as f64 * 1000.0 / rate;
            return packets.into();
        }
        let bytes: Vec<u8> = match self.format {
            OutputFormat::Ulaw8000 => samples.map(g711::linear_to_ulaw).collect(),
            OutputFormat::Alaw8000 => samples.map(g711::linear_to_alaw).collect(),
            _ => samples.flat_map(i16::to_le_bytes).collect(),
        };
        self.last_ms = self.format.audio_format().duration_ms(bytes.len());
        bytes.into()
    }
}

impl AudioEncoder for Transcoder {
    fn output(&self) -> AudioFormat {
        self.format.audio_format()
    }

    fn source(&mut self, format: &AudioFormat) {
        // A switch comes before any audio went out: what the resampler and the Opus encoder hold of the voice
        // that failed (samples short of a chunk or a frame, a filter's delay, a look-ahead) must not sound
        // before the new voice.
        self.resampler = StreamResampler::new(format.sample_rate, self.format.sample_rate());
        self.carry = None;
        if self.coded.as_ref().is_some_and(|c| !c.started()) {
            self.coded = stream_for(self.format);
        }
    }

    fn encode(&mut self, pcm: &[u8]) -> Bytes {
        // PCM at the backend's own rate goes out byte for byte (no sample is ever split: backends send
        // whole samples, and the carry stays empty).
        if self.carry.is_none() && pcm.len().is_multiple_of(2) && self.format == OutputFormat::Pcm(self.resampler.from_rate()) {
            return Bytes::copy_from_slice(pcm);
        }
        let samples = self.samples(pcm);
        let out = self.resampler.push(&to_float(samples));
        self.pack(&out, false)
    }

    fn end_sentence(&mut self) -> Bytes {
        self.carry = None;
        let out = self.resampler.finish();
        self.pack(&out, true)
    }

    fn duration_ms(&self, bytes: &[u8]) -> f64 {
        match self.coded {
            Some(_) => self.last_ms,
            None => self.format.audio_format().duration_ms(bytes.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcm(samples: &[i16]) -> Vec<u8> {
        samples.iter().flat_map(|s| s.to_le_bytes()).collect()
    }

    #[test]
    fn pcm_at_the_backends_rate_goes_out_byte_for_byte() {
        let mut t = Transcoder::new(OutputFormat::Pcm(24_000));
        t.source(&AudioFormat::pcm_s16le(24_000));
        let input = pcm(&[0, 1, -1, 1234, i16::MIN, i16::MAX]);
        let mut out = t.encode(&input[..5]).to_vec();
        out.extend_from_slice(&t.encode(&input[5..]));
        out.extend_from_slice(&t.end_sentence());
        assert_eq!(out, input);
    }

    #[test]
    fn ulaw_is_a_byte_a_sample_at_8_khz_from_any_rate() {
        let mut t = Transcoder::new(OutputFormat::Ulaw8000);
        assert_eq!(t.output(), AudioFormat { encoding: "mulaw".into(), sample_rate: 8_000, channels: 1 });
        t.source(&AudioFormat::pcm_s16le(24_000));
        let input = pcm(&vec![1000; 2_400]);
        let out: Vec<u8> = t.encode(&input).iter().chain(t.end_sentence().iter()).copied().collect();
        assert_eq!(out.len(), 800);
        // A failover to a 16 kHz voice keeps the client's format.
        t.source(&AudioFormat::pcm_s16le(16_000));
        let input = pcm(&vec![1000; 1_600]);
        let out: Vec<u8> = t.encode(&input).iter().chain(t.end_sentence().iter()).copied().collect();
        assert_eq!(out.len(), 800);
        assert_eq!(t.output().sample_rate, 8_000);
    }

    #[test]
    fn opus_pages_say_how_much_audio_they_hold() {
        let mut t = Transcoder::new(OutputFormat::Opus48000);
        t.source(&AudioFormat::pcm_s16le(24_000));
        let first = t.encode(&pcm(&vec![1000; 2_400]));
        assert!(first.starts_with(b"OggS"));
        // 100 ms in: whole 20 ms frames are out, the rest waits for the sentence's end.
        let sent = t.duration_ms(&first);
        assert!(sent > 40.0 && sent <= 100.0, "{sent} ms");
        let rest = t.end_sentence();
        let total = sent + t.duration_ms(&rest);
        assert!((100.0..=110.0).contains(&total), "{total} ms for 100 ms of speech");
        let decoded = crate::ogg_opus::decode(&[first, rest].concat()).unwrap();
        assert!((decoded.len() as f64 - total * 48.0).abs() < 1.0);
    }
}
