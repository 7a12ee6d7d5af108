//! AAC-LC in ADTS frames (OpenAI's `aac`; what Apple's players and most phones decode in hardware),
//! coded a sentence at a time.
//!
//! [`AacStream`] holds a sentence's 24 kHz mono PCM and codes it whole at the sentence's end: the encoder
//! (rusty_aac) chooses each frame's window from the frames around it, so it codes a span it holds whole.
//! Each sentence is coded as a stream of its own, one frame a 1024-sample hop, the first frame's hop
//! the silence before it and the last one's the silence after it (AAC's transform overlaps each hop with
//! the next); since every sentence starts and ends in silence, the frames join without a seam, and an
//! answer's chunks joined in order are a playable `.aac` at every `sentence_end`. Each ADTS frame
//! carries its own header.
//!
//! What this costs: a sentence's first AAC bytes leave when its audio is whole (Kokoro's audio comes
//! a sentence at a time, so little; Polly's streams within a sentence), and each sentence gains up to
//! 85 ms of silence at 24 kHz (its last hop filled, and the hop of silence before the next). A sentence
//! longer than [`LONGEST`] is coded in parts of that length, so that what is held stays bounded.
//! The encoders compared (and why not one that streams within a sentence) are in docs/openai.md.

use rusty_aac::{parse_adts, write_adts_header, AacDecoder, AacEncoder, AacEncoderConfig, AdtsHeader};

/// The only rate AAC streams are made at here (Kokoro's own).
pub const RATE: u32 = 24_000;
/// The bitrate asked: AAC-LC speech at 24 kHz mono is clear at 48 kbit/s.
pub const BITRATE: u32 = 48_000;
/// Samples in one AAC-LC frame.
pub const FRAME: usize = 1024;
/// The most samples held before they are coded (30 s at 24 kHz): a longer sentence is coded in parts.
pub const LONGEST: usize = 30 * RATE as usize;
/// AAC-LC's object type, as ADTS writes it.
const AAC_LC: u8 = 2;

/// Encodes one answer: 24 kHz mono 16-bit samples in, ADTS frames out, a sentence at a time.
pub struct AacStream {
    /// The sentence's samples so far, in `[-1, 1]`.
    held: Vec<f32>,
    /// Frames given out.
    frames: u64,
}

impl AacStream {
    /// A stream for a new answer: nothing written yet.
    pub fn new() -> Self {
        AacStream { held: Vec::new(), frames: 0 }
    }

    /// Takes the next samples of a sentence; gives back nothing until the sentence ends (or a part of it
    /// reaches [`LONGEST`]).
    pub fn push(&mut self, samples: &[i16]) -> Vec<u8> {
        let mut out = Vec::new();
        for &s in samples {
            self.held.push(f32::from(s) / 32768.0);
            if self.held.len() == LONGEST {
                out.extend(self.code());
            }
        }
        out
    }

    /// The sentence, coded.
    pub fn end_sentence(&mut self) -> Vec<u8> {
        if self.held.is_empty() {
            return Vec::new();
        }
        self.code()
    }

    /// Samples a decoder gives back for the frames so far (each sentence's hop of silence counted).
    pub fn playable_samples(&self) -> u64 {
        self.frames * FRAME as u64
    }

    /// Whether any frame has gone out.
    pub fn started(&self) -> bool {
        self.frames > 0
    }

    /// Codes what is held as a stream of its own, each frame behind its ADTS header.
    fn code(&mut self) -> Vec<u8> {
        let mut encoder = AacEncoder::new(AacEncoderConfig { bitrate_bps: BITRATE, ..AacEncoderConfig::default() });
        encoder.push_pcm(&std::mem::take(&mut self.held), 1, RATE).expect("24 kHz mono is an AAC-LC stream");
        encoder.finish();
        let mut out = Vec::new();
        while let Ok(packet) = encoder.next_packet() {
            let header = AdtsHeader { object_type: AAC_LC, sample_rate: RATE, channels: 1, frame_length: 7 + packet.data.len(), header_len: 7 };
            out.extend(write_adts_header(&header));
            out.extend(packet.data);
            self.frames += 1;
        }
        out
    }
}

impl Default for AacStream {
    fn default() -> Self {
        Self::new()
    }
}

/// The samples of a whole ADTS stream (an answer's chunks joined in order), mono.
pub fn decode(bytes: &[u8]) -> Result<Vec<i16>, String> {
    let mut decoder = AacDecoder::new();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let header = parse_adts(&bytes[at..]).map_err(|e| format!("no ADTS header at byte {at}: {e}"))?;
        let frame = bytes.get(at..at + header.frame_length).ok_or_else(|| format!("an ADTS frame cut short at byte {at}"))?;
        let decoded = decoder.decode(frame, None).map_err(|e| format!("an AAC frame did not decode: {e}"))?;
        if decoded.channels != 1 {
            return Err(format!("{} channels (mono expected)", decoded.channels));
        }
        out.extend(decoded.samples.iter().map(|&s| (s * 32768.0).round().clamp(-32768.0, 32767.0) as i16));
        at += header.frame_length;
    }
    Ok(out)
}

/// Samples and rate of the whole ADTS frames in `bytes` (a client's count, from the headers alone).
pub fn samples_in(bytes: &[u8]) -> (u64, u32) {
    let (mut at, mut samples, mut rate) = (0, 0, RATE);
    while let Some(header) = bytes.get(at..).and_then(|b| parse_adts(b).ok()) {
        samples += FRAME as u64;
        rate = header.sample_rate;
        at += header.frame_length;
    }
    (samples, rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_is_coded_whole_at_its_end_and_comes_out_one_hop_later() {
        let mut stream = AacStream::new();
        let mut click = vec![0i16; 3_000];
        (click[1_500], click[1_501]) = (20_000, -20_000);
        assert!(stream.push(&click).is_empty(), "nothing until the sentence ends");
        let first = stream.end_sentence();
        assert_eq!((first[0], first[1] & 0xF6), (0xFF, 0xF0), "an ADTS sync word comes first");
        assert!(stream.end_sentence().is_empty(), "a sentence ends once");
        let second = [stream.push(&click), stream.end_sentence()].concat();
        let decoded = decode(&[first.clone(), second].concat()).unwrap();
        assert_eq!(decoded.len() as u64, stream.playable_samples());
        assert_eq!(samples_in(&first).0, 4 * FRAME as u64, "three hops and the hop of silence before them");
        let loudest = |from: usize| decoded[from..from + 4 * FRAME].iter().enumerate().max_by_key(|(_, s)| s.unsigned_abs()).map(|(i, _)| from + i).unwrap();
        assert!((1_499 + FRAME..=1_502 + FRAME).contains(&loudest(0)), "the first click at {}", loudest(0));
        assert!((1_499 + 5 * FRAME..=1_502 + 5 * FRAME).contains(&loudest(4 * FRAME)), "the second at {}", loudest(4 * FRAME));
        assert!(decoded[..FRAME].iter().all(|&s| s.unsigned_abs() < 50), "the hop before a sentence is silence");
    }

    #[test]
    fn a_sentence_past_the_longest_is_coded_in_parts() {
        let mut stream = AacStream::new();
        let out = stream.push(&vec![100; LONGEST + 10]);
        assert!(!out.is_empty(), "the first part is coded once it reaches the longest held");
        assert!(!stream.end_sentence().is_empty());
    }
}
