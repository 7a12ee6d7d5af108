//! FLAC written as a live stream (OpenAI's `flac`): lossless, about half of PCM's size for speech.
//!
//! [`FlacStream`] takes 24 kHz mono PCM a chunk at a time and gives back whole FLAC frames of
//! [`BLOCK`] samples as soon as they are full; the first bytes are the stream's marker and its
//! STREAMINFO block, whose length and checksum are "unknown" (zero), as the format allows for a stream
//! written live. A sentence ends with a shorter frame holding the rest of it: the frames are numbered by
//! their first sample (FLAC's variable block size), so no silence is added anywhere, and an answer's
//! chunks joined in order are a playable `.flac` at every `sentence_end`.
//!
//! flacenc codes each frame (pure Rust, Apache-2.0); claxon reads them back.

use flacenc::component::{BitRepr, Frame, FrameOffset, Stream, StreamInfo};
use flacenc::config;
use flacenc::error::Verify;
use flacenc::source::{Fill, FrameBuf};

/// The only rate FLAC streams are made at here (Kokoro's own).
pub const RATE: u32 = 24_000;
/// Samples in a whole frame: 43 ms at 24 kHz, so a frame goes out soon after its samples come.
pub const BLOCK: usize = 1_024;
/// The shortest frame FLAC allows: a sentence's rest shorter than this is filled with silence to it.
const SHORTEST: usize = 16;

/// Encodes one answer: 24 kHz mono 16-bit samples in, FLAC frames out.
pub struct FlacStream {
    config: flacenc::error::Verified<config::Encoder>,
    info: StreamInfo,
    /// Samples not yet a whole frame.
    pending: Vec<i16>,
    /// Samples coded so far: the next frame's first sample.
    coded: u64,
    header_written: bool,
}

impl FlacStream {
    /// A stream for a new answer: nothing written yet.
    pub fn new() -> Self {
        let mut info = StreamInfo::new(RATE as usize, 1, 16).expect("mono 16-bit at 24 kHz is a FLAC stream");
        info.set_block_sizes(SHORTEST, BLOCK).expect("valid block sizes");
        let config = config::Encoder::default().into_verified().expect("flacenc's default configuration");
        FlacStream { config, info, pending: Vec::with_capacity(BLOCK), coded: 0, header_written: false }
    }

    /// Takes the next samples of a sentence; gives back the frames finished (none until one is full).
    pub fn push(&mut self, samples: &[i16]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut samples = samples;
        while !samples.is_empty() {
            let take = (BLOCK - self.pending.len()).min(samples.len());
            self.pending.extend_from_slice(&samples[..take]);
            samples = &samples[take..];
            if self.pending.len() == BLOCK {
                let block = std::mem::take(&mut self.pending);
                self.write(&block, &mut out);
            }
        }
        out
    }

    /// The rest of the sentence, as one shorter frame.
    pub fn end_sentence(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        if !self.pending.is_empty() {
            let mut block = std::mem::take(&mut self.pending);
            if block.len() < SHORTEST {
                block.resize(SHORTEST, 0);
            }
            self.write(&block, &mut out);
        }
        out
    }

    /// Samples a decoder gives back for the frames so far.
    pub fn playable_samples(&self) -> u64 {
        self.coded
    }

    /// Whether any byte has gone out.
    pub fn started(&self) -> bool {
        self.header_written
    }

    /// Codes `block` as one frame numbered by its first sample, after the stream's header the first time.
    fn write(&mut self, block: &[i16], out: &mut Vec<u8>) {
        let mut sink = flacenc::bitsink::ByteSink::new();
        if !self.header_written {
            // The marker and STREAMINFO: a stream of no frames yet writes exactly these.
            Stream::with_stream_info(self.info.clone()).write(&mut sink).expect("writing to memory");
            self.header_written = true;
        }
        let mut buffer = FrameBuf::with_size(1, block.len()).expect("a block size FLAC allows");
        let samples: Vec<i32> = block.iter().map(|&s| i32::from(s)).collect();
        buffer.fill_interleaved(&samples).expect("mono samples fill a mono frame");
        let frame = flacenc::encode_fixed_size_frame(&self.config, &buffer, 0, &self.info).expect("a mono 16-bit frame codes");
        let (mut header, subframes) = frame.into_parts();
        header.set_frame_offset(FrameOffset::StartSample(self.coded));
        let frame = Frame::new(header, subframes.into_iter()).expect("the same frame, numbered by its first sample");
        frame.write(&mut sink).expect("writing to memory");
        self.coded += block.len() as u64;
        out.extend_from_slice(sink.as_slice());
    }
}

impl Default for FlacStream {
    fn default() -> Self {
        Self::new()
    }
}

/// The samples of a whole FLAC stream (an answer's chunks joined in order), mono.
pub fn decode(bytes: &[u8]) -> Result<Vec<i16>, String> {
    let mut reader = claxon::FlacReader::new(std::io::Cursor::new(bytes)).map_err(|e| format!("not a FLAC stream: {e}"))?;
    let info = reader.streaminfo();
    if info.channels != 1 || info.bits_per_sample != 16 {
        return Err(format!("{} channels of {} bits (mono 16-bit expected)", info.channels, info.bits_per_sample));
    }
    let mut out = Vec::new();
    let mut blocks = reader.blocks();
    let mut buffer = Vec::new();
    while let Some(block) = blocks.read_next_or_eof(std::mem::take(&mut buffer)).map_err(|e| format!("a FLAC frame did not decode: {e}"))? {
        out.extend(block.channel(0).iter().map(|&s| s as i16));
        buffer = block.into_buffer();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(len: usize, hz: f32) -> Vec<i16> {
        (0..len).map(|i| ((i as f32 * hz * std::f32::consts::TAU / RATE as f32).sin() * 8_000.0) as i16).collect()
    }

    #[test]
    fn frames_come_whole_and_every_sample_comes_back() {
        let mut stream = FlacStream::new();
        let first_sentence = tone(2_500, 440.0);
        assert!(stream.push(&first_sentence[..500]).is_empty(), "less than a frame gives nothing yet");
        let first = stream.push(&first_sentence[500..]);
        assert!(first.starts_with(b"fLaC"), "the marker and STREAMINFO come first");
        let end = stream.end_sentence();
        assert!(stream.end_sentence().is_empty(), "a sentence ends once");
        let second_sentence = tone(1_100, 220.0);
        let second = [stream.push(&second_sentence), stream.end_sentence()].concat();
        let decoded = decode(&[first, end, second].concat()).unwrap();
        assert_eq!(decoded, [first_sentence, second_sentence].concat(), "lossless, with no silence between sentences");
        assert_eq!(stream.playable_samples(), 3_600);
    }
}
