//! The audio format a client plays, and what turns a backend's PCM into it.
//!
//! A backend gives PCM at its own rate (Kokoro 24 kHz, Polly 16 or 8 kHz); a telephone bridge wants
//! G.711 at 8 kHz, a browser may want 48 kHz, and a player that opened at one rate must not have to
//! reopen because failover moved the answer to a voice with another. A request names an
//! [`OutputFormat`] (or the deployment sets one); the scheduler keeps counting time and words on the
//! backend's PCM and hands each chunk to an [`AudioEncoder`] just before it is sent. The encoders
//! themselves (resampling, G.711, Opus, MP3, AAC, FLAC) live in the `earshot-audio` crate: this one only says what they do.

use bytes::Bytes;

use crate::protocol::AudioFormat;

/// A format the client may ask for, by the name it is asked by (`output_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputFormat {
    /// Linear PCM, signed 16-bit little-endian, mono, at this rate.
    Pcm(u32),
    /// G.711 μ-law at 8 kHz (North American and Japanese telephony).
    Ulaw8000,
    /// G.711 A-law at 8 kHz (telephony elsewhere).
    Alaw8000,
    /// Ogg Opus at 48 kHz, about 32 kbit/s (phones on mobile networks, browsers): whole Ogg pages in
    /// each audio message, the headers in the first.
    Opus48000,
    /// MP3 (MPEG-2 Layer III) at 24 kHz, 64 kbit/s: OpenAI's default; whole frames in each audio message.
    Mp3,
    /// AAC-LC in ADTS frames at 24 kHz, about 48 kbit/s; whole frames in each audio message.
    Aac,
    /// FLAC at 24 kHz, lossless: the stream's header in the first audio message, whole frames in each.
    Flac,
}

/// The rate of the formats made at Kokoro's own rate (MP3, AAC, FLAC).
pub const CODED_RATE: u32 = 24_000;

/// The PCM rates a client may ask for.
pub const PCM_RATES: [u32; 6] = [8_000, 16_000, 22_050, 24_000, 44_100, 48_000];

impl OutputFormat {
    /// Every format, by name, in the order the documentation lists them.
    pub fn all() -> Vec<OutputFormat> {
        let mut all: Vec<OutputFormat> = PCM_RATES.iter().map(|&r| OutputFormat::Pcm(r)).collect();
        all.extend([OutputFormat::Ulaw8000, OutputFormat::Alaw8000, OutputFormat::Opus48000, OutputFormat::Mp3, OutputFormat::Aac, OutputFormat::Flac]);
        all
    }

    /// The accepted names, comma-separated (for error messages).
    pub fn accepted() -> String {
        OutputFormat::all().iter().map(|f| f.to_string()).collect::<Vec<_>>().join(", ")
    }

    /// The rate the client plays.
    pub fn sample_rate(self) -> u32 {
        match self {
            OutputFormat::Pcm(rate) => rate,
            OutputFormat::Ulaw8000 | OutputFormat::Alaw8000 => 8_000,
            OutputFormat::Opus48000 => 48_000,
            OutputFormat::Mp3 | OutputFormat::Aac | OutputFormat::Flac => CODED_RATE,
        }
    }

    /// What the `session` message says the audio is.
    pub fn audio_format(self) -> AudioFormat {
        let encoding = match self {
            OutputFormat::Pcm(_) => AudioFormat::PCM_S16LE,
            OutputFormat::Ulaw8000 => AudioFormat::MULAW,
            OutputFormat::Alaw8000 => AudioFormat::ALAW,
            OutputFormat::Opus48000 => AudioFormat::OGG_OPUS,
            OutputFormat::Mp3 => AudioFormat::MP3,
            OutputFormat::Aac => AudioFormat::AAC_ADTS,
            OutputFormat::Flac => AudioFormat::FLAC,
        };
        AudioFormat { encoding: encoding.into(), sample_rate: self.sample_rate(), channels: 1 }
    }

    /// Whether a backend's `source` audio goes out unchanged in this format.
    pub fn passes(self, source: &AudioFormat) -> bool {
        self.audio_format() == *source
    }
}

impl std::fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutputFormat::Pcm(rate) => {
                f.write_str("pcm_")?;
                rate.fmt(f)
            }
            OutputFormat::Ulaw8000 => f.write_str("ulaw_8000"),
            OutputFormat::Alaw8000 => f.write_str("alaw_8000"),
            OutputFormat::Opus48000 => f.write_str("opus_48000"),
            OutputFormat::Mp3 => f.write_str("mp3_24000"),
            OutputFormat::Aac => f.write_str("aac_24000"),
            OutputFormat::Flac => f.write_str("flac_24000"),
        }
    }
}

impl std::str::FromStr for OutputFormat {
    type Err = String;

    /// A name as [`Display`](std::fmt::Display) writes it; otherwise a message naming the accepted ones.
    fn from_str(name: &str) -> Result<Self, String> {
        OutputFormat::all()
            .into_iter()
            .find(|f| f.to_string() == name)
            .ok_or_else(|| format!("unknown output format `{name}` (accepted: {})", OutputFormat::accepted()))
    }
}

impl serde::Serialize for OutputFormat {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for OutputFormat {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// Turns a backend's PCM into the client's format, a chunk at a time, keeping whatever state a
/// conversion carries from one chunk to the next (a resampler's filter) so that no boundary between
/// chunks can be heard. A sentence's audio is whole once [`end_sentence`](Self::end_sentence) has
/// given back what was held.
pub trait AudioEncoder: Send {
    /// The format the client receives.
    fn output(&self) -> AudioFormat;
    /// The backend's PCM from now on (a switch of backend may change its rate). Called before the
    /// first chunk and at a switch, where no sentence's audio is partly converted.
    fn source(&mut self, format: &AudioFormat);
    /// Converts one chunk; may hold some of it back (a resampler's delay) and give back nothing yet.
    fn encode(&mut self, pcm: &[u8]) -> Bytes;
    /// The rest of the current sentence's audio, so that it ends with its `sentence_end`; the next
    /// chunk starts a sentence.
    fn end_sentence(&mut self) -> Bytes;
    /// Milliseconds of audio in `bytes`, the last output of [`encode`](Self::encode) or
    /// [`end_sentence`](Self::end_sentence) (a compressed format's bytes do not say it themselves).
    fn duration_ms(&self, bytes: &[u8]) -> f64 {
        self.output().duration_ms(bytes.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_as_itself() {
        for format in OutputFormat::all() {
            assert_eq!(format.to_string().parse::<OutputFormat>(), Ok(format));
        }
        assert_eq!("pcm_16000".parse::<OutputFormat>(), Ok(OutputFormat::Pcm(16_000)));
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_accepted_ones() {
        let error = "pcm_11025".parse::<OutputFormat>().unwrap_err();
        assert!(error.contains("`pcm_11025`"), "{error}");
        assert!(
            error.contains(
                "pcm_8000, pcm_16000, pcm_22050, pcm_24000, pcm_44100, pcm_48000, ulaw_8000, alaw_8000, opus_48000, mp3_24000, aac_24000, flac_24000"
            ),
            "{error}"
        );
        assert!("ULAW_8000".parse::<OutputFormat>().is_err());
    }

    #[test]
    fn the_session_says_the_encoding_and_rate() {
        assert_eq!(OutputFormat::Ulaw8000.audio_format(), AudioFormat { encoding: "mulaw".into(), sample_rate: 8_000, channels: 1 });
        assert!(OutputFormat::Pcm(24_000).passes(&AudioFormat::pcm_s16le(24_000)));
        assert!(!OutputFormat::Pcm(24_000).passes(&AudioFormat::pcm_s16le(16_000)));
        assert_eq!(serde_json::to_string(&OutputFormat::Alaw8000).unwrap(), "\"alaw_8000\"");
        assert_eq!(OutputFormat::Opus48000.audio_format(), AudioFormat { encoding: "ogg_opus".into(), sample_rate: 48_000, channels: 1 });
        assert!(OutputFormat::Opus48000.audio_format().is_compressed());
    }
}
