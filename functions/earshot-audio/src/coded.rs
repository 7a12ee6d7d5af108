//! What the compressed formats share: a stream of one answer that takes PCM at its own rate, gives back
//! whole packets (Ogg pages, MP3 or ADTS frames, FLAC frames) as soon as they are full, and ends each
//! sentence whole, so that an answer's chunks joined in order are a playable file at every
//! `sentence_end`. The [`Transcoder`](crate::Transcoder) holds one for a compressed format.

use earshot_core::output::OutputFormat;

use crate::aac::AacStream;
use crate::flac::FlacStream;
use crate::mp3::Mp3Stream;
use crate::ogg_opus::OggOpusStream;

/// One answer's compressed stream.
pub trait CodedStream: Send {
    /// Takes the next samples of a sentence (mono, at the format's rate); gives back the packets finished.
    fn push(&mut self, samples: &[i16]) -> Vec<u8>;
    /// The rest of the sentence, so that it ends with its `sentence_end`.
    fn end_sentence(&mut self) -> Vec<u8>;
    /// Samples a decoder gives back for the bytes given so far.
    fn playable_samples(&self) -> u64;
    /// Whether any byte has gone out (after that the stream is the client's: it cannot start again).
    fn started(&self) -> bool;
}

macro_rules! coded_stream {
    ($($stream:ty),*) => {$(
        impl CodedStream for $stream {
            fn push(&mut self, samples: &[i16]) -> Vec<u8> {
                <$stream>::push(self, samples)
            }
            fn end_sentence(&mut self) -> Vec<u8> {
                <$stream>::end_sentence(self)
            }
            fn playable_samples(&self) -> u64 {
                <$stream>::playable_samples(self)
            }
            fn started(&self) -> bool {
                <$stream>::started(self)
            }
        }
    )*};
}

coded_stream!(OggOpusStream, Mp3Stream, AacStream, FlacStream);

/// The most silence a compressed `encoding` adds to a sentence's end (and, for MP3 and AAC, the priming
/// at the stream's start, which the first sentence's count includes), in milliseconds: Opus's look-ahead
/// (9 ms), MP3's encoder and decoder delay rounded to a frame (68 ms at 24 kHz), AAC's last hop and the
/// hop before the next sentence (86 ms), FLAC's shortest frame (1 ms). Zero for a format whose bytes are samples.
pub fn most_silence_added_ms(encoding: &str) -> f64 {
    use earshot_core::protocol::AudioFormat;
    match encoding {
        AudioFormat::OGG_OPUS => 9.0,
        AudioFormat::MP3 => ((crate::mp3::DELAY + crate::mp3::FRAME) as f64 * 1000.0 / crate::mp3::RATE as f64).ceil(),
        AudioFormat::AAC_ADTS => (2 * crate::aac::FRAME) as f64 * 1000.0 / crate::aac::RATE as f64,
        AudioFormat::FLAC => 1.0,
        _ => 0.0,
    }
}

/// Milliseconds a decoder plays before a sentence's first sample, past where a client's count of the
/// chunks puts the sentence's start: MP3's priming through the codec's delay (the stream carries no tag
/// to drop it), AAC's hop of silence before each sentence; none for the others (Opus's pre-skip is
/// dropped by the decoder, and the clock counts without it).
pub fn lead_ms(encoding: &str) -> f64 {
    use earshot_core::protocol::AudioFormat;
    match encoding {
        AudioFormat::MP3 => crate::mp3::DELAY as f64 * 1000.0 / crate::mp3::RATE as f64,
        AudioFormat::AAC_ADTS => crate::aac::FRAME as f64 * 1000.0 / crate::aac::RATE as f64,
        _ => 0.0,
    }
}

/// A new stream for `format`, or none for a format whose bytes are samples (PCM, G.711).
pub fn stream_for(format: OutputFormat) -> Option<Box<dyn CodedStream>> {
    match format {
        OutputFormat::Opus48000 => Some(Box::new(OggOpusStream::new())),
        OutputFormat::Mp3 => Some(Box::new(Mp3Stream::new())),
        OutputFormat::Aac => Some(Box::new(AacStream::new())),
        OutputFormat::Flac => Some(Box::new(FlacStream::new())),
        OutputFormat::Pcm(_) | OutputFormat::Ulaw8000 | OutputFormat::Alaw8000 => None,
    }
}

/// How much audio each chunk of a compressed answer holds, as a client counts it chunk by chunk (when
/// each chunk's audio will have played): from the packets' own headers (Ogg's granule, MP3's and ADTS's
/// frame headers) or, for FLAC, whose frames do not say their length in bytes, by reading the frames.
pub enum ChunkClock {
    /// Ogg Opus: the pages' granule positions.
    Opus(crate::ogg_opus::PageClock),
    /// MP3: a frame's header says its length and its samples.
    Mp3,
    /// AAC in ADTS: 1024 samples a frame, whose header says its length.
    Aac,
    /// FLAC: the stream's header is still ahead (the first chunk starts with it).
    Flac {
        /// The marker and metadata blocks are yet to be passed over.
        header_ahead: bool,
    },
}

impl ChunkClock {
    /// The clock for a compressed `encoding` (`AudioFormat::encoding`), or none for one whose bytes are samples.
    pub fn for_encoding(encoding: &str) -> Option<Self> {
        use earshot_core::protocol::AudioFormat;
        match encoding {
            AudioFormat::OGG_OPUS => Some(ChunkClock::Opus(Default::default())),
            AudioFormat::MP3 => Some(ChunkClock::Mp3),
            AudioFormat::AAC_ADTS => Some(ChunkClock::Aac),
            AudioFormat::FLAC => Some(ChunkClock::Flac { header_ahead: true }),
            _ => None,
        }
    }

    /// Milliseconds of audio in `bytes`, whole packets following those already counted.
    pub fn advance(&mut self, bytes: &[u8]) -> f64 {
        let (samples, rate) = match self {
            ChunkClock::Opus(pages) => return pages.advance(bytes),
            ChunkClock::Mp3 => mp3_samples(bytes),
            ChunkClock::Aac => crate::aac::samples_in(bytes),
            ChunkClock::Flac { header_ahead } => {
                let at = if std::mem::take(header_ahead) { flac_header_len(bytes) } else { 0 };
                flac_samples(bytes.get(at..).unwrap_or_default())
            }
        };
        samples as f64 * 1000.0 / rate.max(1) as f64
    }
}

/// Samples and rate of the whole MP3 frames in `bytes`.
fn mp3_samples(bytes: &[u8]) -> (u64, u32) {
    let (mut at, mut samples, mut rate) = (0, 0, 0);
    while let Some(head) = bytes.get(at..at + 4) {
        let Ok(header) = rusty_mp3::header::FrameHeader::parse([head[0], head[1], head[2], head[3]]) else { break };
        samples += header.version.samples_per_frame() as u64;
        rate = header.sample_rate;
        at += header.frame_size().max(4);
    }
    (samples, rate)
}

/// The length of a FLAC stream's marker and metadata blocks at the front of `bytes`.
fn flac_header_len(bytes: &[u8]) -> usize {
    if !bytes.starts_with(b"fLaC") {
        return 0;
    }
    let mut at = 4;
    while let Some(block) = bytes.get(at..at + 4) {
        at += 4 + u32::from_be_bytes([0, block[1], block[2], block[3]]) as usize;
        if block[0] & 0x80 != 0 {
            break;
        }
    }
    at
}

/// Samples and rate of the whole FLAC frames in `bytes` (read through: their headers do not say their length).
fn flac_samples(bytes: &[u8]) -> (u64, u32) {
    let mut frames = claxon::frame::FrameReader::new(claxon::input::BufferedReader::new(std::io::Cursor::new(bytes)));
    let mut samples = 0;
    let mut buffer = Vec::new();
    while let Ok(Some(block)) = frames.read_next_or_eof(std::mem::take(&mut buffer)) {
        samples += block.duration() as u64;
        buffer = block.into_buffer();
    }
    (samples, crate::flac::RATE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Transcoder;
    use earshot_core::output::AudioEncoder;
    use earshot_core::protocol::AudioFormat;

    fn speech_like(len: usize) -> Vec<u8> {
        (0..len).map(|i| (((i as f32 * 0.03).sin() * (i as f32 * 0.001).sin()) * 9_000.0) as i16).flat_map(i16::to_le_bytes).collect()
    }

    #[test]
    fn a_client_counts_each_chunk_as_the_encoder_did_and_the_decoder_agrees() {
        for format in [OutputFormat::Opus48000, OutputFormat::Mp3, OutputFormat::Aac, OutputFormat::Flac] {
            let mut encoder = Transcoder::new(format);
            encoder.source(&AudioFormat::pcm_s16le(24_000));
            let mut clock = ChunkClock::for_encoding(&format.audio_format().encoding).unwrap();
            let (mut joined, mut counted, mut told) = (Vec::new(), 0.0, 0.0);
            // Two sentences of 15,000 and 3,500 samples at 24 kHz (bytes: two a sample).
            for sentence in [speech_like(15_000), speech_like(3_500)] {
                for chunk in sentence.chunks(9_000) {
                    let bytes = encoder.encode(chunk);
                    (counted, told) = (counted + clock.advance(&bytes), told + encoder.duration_ms(&bytes));
                    joined.extend_from_slice(&bytes);
                }
                let bytes = encoder.end_sentence();
                (counted, told) = (counted + clock.advance(&bytes), told + encoder.duration_ms(&bytes));
                joined.extend_from_slice(&bytes);
            }
            let decoded = crate::decode(&format.audio_format(), &joined).unwrap();
            let decoded_ms = decoded.len() as f64 * 1000.0 / format.sample_rate() as f64;
            assert!((counted - told).abs() < 0.01, "{format}: the client counts {counted} ms, the encoder {told} ms");
            assert!((decoded_ms - told).abs() < 0.01, "{format}: {decoded_ms} ms decoded, {told} ms told");
            let spoken = 18_500.0 / 24.0;
            assert!(told > spoken - 0.01 && told < spoken + 200.0, "{format}: {told} ms for {spoken} ms of speech");
        }
    }
}
