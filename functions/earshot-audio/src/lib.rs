//! earshot-audio: the audio a client plays, made from the PCM a backend gives.
//!
//! - [`resample`]: PCM from one rate to another as a stream, the filter's state kept from chunk to chunk
//!   so that no chunk boundary can be heard, each sentence ended whole;
//! - [`g711`]: μ-law and A-law (ITU-T G.711), the formats of telephony;
//! - [`ogg_opus`]: Ogg Opus written as a live stream of pages (phones, browsers), and read back;
//! - [`mp3`], [`aac`], [`flac`]: OpenAI's other formats, each written as a live stream of whole frames
//!   (pure-Rust codecs), and read back; [`coded`]: what the compressed streams share;
//! - [`Transcoder`]: the scheduler's [`AudioEncoder`](earshot_core::output::AudioEncoder) for an
//!   [`OutputFormat`], built of the two;
//! - [`decode`]: what a client does with the bytes (`earshot say`, the tests, the benchmarks).

#![warn(missing_docs)]

pub mod aac;
pub mod coded;
pub mod flac;
pub mod g711;
pub mod mp3;
pub mod ogg_opus;
pub mod resample;
mod transcoder;

pub use transcoder::Transcoder;

use earshot_core::output::OutputFormat;
use earshot_core::protocol::AudioFormat;

/// The encoder for `format`, or none where the backend's PCM may go out as it comes (no format asked).
pub fn encoder_for(format: Option<OutputFormat>) -> Option<Box<dyn earshot_core::output::AudioEncoder>> {
    format.map(|f| Box::new(Transcoder::new(f)) as Box<dyn earshot_core::output::AudioEncoder>)
}

/// Why bytes could not be decoded.
#[derive(Debug, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

/// The samples in `bytes` of audio in `format` (mono: channels are left interleaved). Ogg Opus must be
/// the whole stream from its first page (an answer's audio joined in order).
pub fn decode(format: &AudioFormat, bytes: &[u8]) -> Result<Vec<i16>, DecodeError> {
    match format.encoding.as_str() {
        AudioFormat::PCM_S16LE => Ok(bytes.chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]])).collect()),
        AudioFormat::MULAW => Ok(bytes.iter().map(|&b| g711::ulaw_to_linear(b)).collect()),
        AudioFormat::ALAW => Ok(bytes.iter().map(|&b| g711::alaw_to_linear(b)).collect()),
        AudioFormat::OGG_OPUS => ogg_opus::decode(bytes).map_err(DecodeError),
        AudioFormat::MP3 => mp3::decode(bytes).map_err(DecodeError),
        AudioFormat::AAC_ADTS => aac::decode(bytes).map_err(DecodeError),
        AudioFormat::FLAC => flac::decode(bytes).map_err(DecodeError),
        other => Err(DecodeError(format!("earshot-audio cannot decode `{other}`"))),
    }
}
