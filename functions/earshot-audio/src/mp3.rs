//! MP3 written as a live stream: OpenAI's default `response_format`, what most players and every
//! browser take without a codec of their own.
//!
//! [`Mp3Stream`] takes 24 kHz mono PCM (Kokoro's own rate; MPEG-2 Layer III) a chunk at a time and
//! gives back whole MP3 frames as soon as their 576 samples are in. Every frame is self-describing (a
//! sync word and a header), so an answer's chunks joined in order are a playable `.mp3` at every
//! `sentence_end`, and a client may start decoding at any frame.
//!
//! A sentence ends whole: the encoder holds about 1,060 samples (its own delay and the decoder's), so
//! at a sentence's end silence is pushed through until the last sample is in a frame (44 to 68 ms at
//! 24 kHz). A live stream cannot know its length, so the LAME "Info" tag that a file's first frame
//! carries (its counts are only known at the end) is left out: a decoder plays the encoder's
//! priming (about 44 ms of silence) at the start, as it does for any stream without the tag.
//!
//! rusty_mp3 does the coding (pure Rust, Apache-2.0): see docs/openai.md for the encoders compared.

use rusty_mp3::{Mp3Decoder, Mp3Encoder, Mp3EncoderConfig};

/// The only rate MP3 streams are made at here (Kokoro's own: MPEG-2 Layer III).
pub const RATE: u32 = 24_000;
/// Constant bitrate: speech at 24 kHz mono is clear at 64 kbit/s (OpenAI's own MP3 is about that).
pub const BITRATE_KBPS: u32 = 64;
/// Samples in one MPEG-2 Layer III frame.
pub const FRAME: usize = 576;
/// Samples between a sample going in and coming out of a decoder: the encoder's delay and the decoder's
/// (rusty_mp3's `ENCODER_DELAY` and `DECODER_DELAY`).
pub const DELAY: usize = 528 + 529;

/// Encodes one answer: 24 kHz mono 16-bit samples in, MP3 frames out.
pub struct Mp3Stream {
    encoder: Mp3Encoder,
    /// Samples pushed since the last whole frame (what the encoder holds short of a frame).
    pending: usize,
    /// Frames given out (the Info tag not counted).
    frames: u64,
    /// The Info tag placeholder is still to be dropped from the front.
    tag_ahead: bool,
    /// Samples were pushed since the last sentence's end: there is a sentence to end.
    speaking: bool,
}

impl Mp3Stream {
    /// A stream for a new answer: nothing written yet.
    pub fn new() -> Self {
        let encoder = Mp3Encoder::new(Mp3EncoderConfig { bitrate_kbps: BITRATE_KBPS, vbr_quality: None });
        Mp3Stream { encoder, pending: 0, frames: 0, tag_ahead: true, speaking: false }
    }

    /// Takes the next samples of a sentence; gives back the frames finished (none until one is full).
    pub fn push(&mut self, samples: &[i16]) -> Vec<u8> {
        if samples.is_empty() {
            return Vec::new();
        }
        self.speaking = true;
        self.pending = (self.pending + samples.len()) % FRAME;
        self.encoder.push_pcm_s16(samples, 1, RATE).expect("24 kHz is an MPEG-2 Layer III rate");
        self.drain()
    }

    /// The rest of the sentence: silence pushed until its last sample is in a frame.
    pub fn end_sentence(&mut self) -> Vec<u8> {
        if !std::mem::take(&mut self.speaking) {
            return Vec::new();
        }
        let silence = (self.pending + DELAY).div_ceil(FRAME) * FRAME - self.pending;
        self.pending = 0;
        self.encoder.push_pcm_s16(&vec![0; silence], 1, RATE).expect("24 kHz is an MPEG-2 Layer III rate");
        self.drain()
    }

    /// Samples a decoder gives back for the frames so far (the priming at the front counted: no tag
    /// tells a decoder to drop it).
    pub fn playable_samples(&self) -> u64 {
        self.frames * FRAME as u64
    }

    /// Whether any frame has gone out.
    pub fn started(&self) -> bool {
        self.frames > 0
    }

    fn drain(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        while let Ok(frame) = self.encoder.next_packet() {
            if std::mem::take(&mut self.tag_ahead) {
                // The Info tag's placeholder: its counts would say a stream of no frames.
                continue;
            }
            self.frames += 1;
            out.extend_from_slice(&frame);
        }
        out
    }
}

impl Default for Mp3Stream {
    fn default() -> Self {
        Self::new()
    }
}

/// The samples of a whole MP3 stream (an answer's chunks joined in order), at its own rate, mono.
pub fn decode(bytes: &[u8]) -> Result<Vec<i16>, String> {
    let mut decoder = Mp3Decoder::new();
    decoder.push(bytes);
    decoder.flush();
    let mut out = Vec::new();
    loop {
        match decoder.next_frame() {
            Ok(frame) => {
                if frame.channels != 1 {
                    return Err(format!("{} channels (mono expected)", frame.channels));
                }
                out.extend(frame.samples.iter().map(|&s| (s * 32768.0).round().clamp(-32768.0, 32767.0) as i16));
            }
            Err(rusty_mp3::Error::Again | rusty_mp3::Error::Eof) => return Ok(out),
            Err(e) => return Err(format!("an MP3 frame did not decode: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(len: usize, hz: f32) -> Vec<i16> {
        (0..len).map(|i| ((i as f32 * hz * std::f32::consts::TAU / RATE as f32).sin() * 8_000.0) as i16).collect()
    }

    #[test]
    fn frames_come_as_soon_as_they_are_full_and_a_sentence_ends_whole() {
        let mut stream = Mp3Stream::new();
        assert!(stream.push(&tone(500, 440.0)).is_empty(), "less than a frame gives nothing yet");
        let first = stream.push(&tone(2_400, 440.0));
        assert_eq!(&first[..2], &[0xFF, 0xF3][..2], "an MPEG-2 Layer III frame header comes first (no Info tag)");
        let rest = stream.end_sentence();
        assert!(stream.end_sentence().is_empty(), "a sentence ends once");
        let decoded = decode(&[first, rest].concat()).unwrap();
        assert_eq!(decoded.len() as u64, stream.playable_samples());
        // The priming first, then the tone, then the sentence's whole tail before the flush's silence.
        let tail = &decoded[DELAY + 2_800..DELAY + 2_900];
        assert!(tail.iter().any(|s| s.unsigned_abs() > 2_000), "the sentence's last samples are in the frames given out");
        let extra = decoded.len() - 2_900;
        assert!((DELAY..DELAY + FRAME).contains(&extra), "{extra} samples of priming and flush");
    }
}
