//! Ogg Opus (RFC 7845) written as a live stream, and read back.
//!
//! A phone on a mobile network wants about 32 kbit/s, where 24 kHz PCM is 384 kbit/s (over 500 as
//! base64). [`OggOpusStream`] takes 48 kHz mono PCM a chunk at a time and gives back whole Ogg pages as
//! soon as a 20 ms Opus frame is full: the first bytes it gives are the two header pages (`OpusHead`,
//! `OpusTags`) followed by the first audio page, so a client that joins the chunks of an answer in order
//! holds a valid Ogg Opus file at every `sentence_end`.
//!
//! A sentence ends whole: at its end the samples still short of a frame and what the encoder holds in
//! its look-ahead are flushed with a few milliseconds of silence (at most the look-ahead plus 2.5 ms,
//! about 9 ms), in frames of 10, 5 and 2.5 ms, so a listener hears all of a sentence without waiting for
//! the next one. The stream ends without an end-of-stream page: a live answer does not know its last
//! page, and decoders (`opusdec`, WebCodecs, browsers) read to the last page they are given.
//!
//! libopus does the coding (the `opus` crate, libopus built from source by `opusic-sys`); the ogg crate
//! frames the pages. The header packets are written here by hand: they are two small fixed layouts
//! (RFC 7845 §5.1 and §5.2) and no maintained crate writes them alone.

use std::io::Cursor;

use ogg::writing::{PacketWriteEndInfo, PacketWriter};

/// The only rate Ogg Opus streams are made at here (Opus's own; the header says the input rate too).
pub const RATE: u32 = 48_000;
/// A 20 ms frame at 48 kHz: what every packet but a sentence's last few holds.
const FRAME: usize = 960;
/// The shorter frames Opus allows, for a sentence's tail (10, 5 and 2.5 ms).
const TAIL_FRAMES: [usize; 3] = [480, 240, 120];
/// The bitrate asked of the encoder: speech at 32 kbit/s is clear at full band.
pub const BITRATE: i32 = 32_000;
/// The stream's serial number (any: one logical stream per answer).
const SERIAL: u32 = 0x6561_7273; // "ears"

/// Encodes one answer: 48 kHz mono 16-bit samples in, Ogg pages out.
pub struct OggOpusStream {
    encoder: opus::Encoder,
    pages: PacketWriter<'static, Vec<u8>>,
    /// Samples not yet a whole frame.
    pending: Vec<i16>,
    /// The encoder's look-ahead in samples: the header's pre-skip, and the silence a sentence's end adds.
    lookahead: usize,
    /// Samples coded so far (the granule position of the last packet: the pre-skip's worth at the front
    /// is the encoder's delay, which a decoder drops).
    granule: u64,
    headers_written: bool,
    /// Samples were pushed since the last sentence's end: there is a sentence to end.
    speaking: bool,
    packet: Vec<u8>,
}

impl OggOpusStream {
    /// A stream for a new answer: a mono 48 kHz encoder at `BITRATE`, no page written yet.
    pub fn new() -> Self {
        let mut encoder = opus::Encoder::new(RATE, opus::Channels::Mono, opus::Application::Voip).expect("libopus opens a mono 48 kHz encoder");
        encoder.set_bitrate(opus::Bitrate::Bits(BITRATE)).expect("a valid bitrate");
        let lookahead = encoder.get_lookahead().expect("libopus reports its look-ahead") as usize;
        OggOpusStream {
            encoder,
            pages: PacketWriter::new(Vec::new()),
            pending: Vec::new(),
            lookahead,
            granule: 0,
            headers_written: false,
            speaking: false,
            packet: vec![0; 4_000],
        }
    }

    /// Samples a decoder gives back for the pages so far (the silence a sentence's end adds counted,
    /// the pre-skip dropped).
    pub fn playable_samples(&self) -> u64 {
        self.granule.saturating_sub(self.lookahead as u64)
    }

    /// Whether any page has gone out (after that the stream is the client's: it cannot start again).
    pub fn started(&self) -> bool {
        self.headers_written
    }

    /// The pre-skip the header announces (samples a decoder drops from the front).
    pub fn pre_skip(&self) -> usize {
        self.lookahead
    }

    /// Takes the next samples of a sentence; gives back the pages finished (none until a frame is full).
    pub fn push(&mut self, samples: &[i16]) -> Vec<u8> {
        self.speaking |= !samples.is_empty();
        self.pending.extend_from_slice(samples);
        let whole = self.pending.len() / FRAME * FRAME;
        if whole == 0 {
            return Vec::new();
        }
        let frames: Vec<i16> = self.pending.drain(..whole).collect();
        let sizes = vec![FRAME; whole / FRAME];
        self.write(&frames, &sizes)
    }

    /// The rest of the sentence, flushed through the encoder's look-ahead, as the sentence's last page.
    pub fn end_sentence(&mut self) -> Vec<u8> {
        // A sentence with no audio gets none (not even the flush's silence).
        if !std::mem::take(&mut self.speaking) {
            return Vec::new();
        }
        let mut tail = std::mem::take(&mut self.pending);
        // Silence enough to push the sentence's last sample out of the look-ahead, to a whole 2.5 ms.
        let smallest = TAIL_FRAMES[TAIL_FRAMES.len() - 1];
        let len = (tail.len() + self.lookahead).div_ceil(smallest) * smallest;
        tail.resize(len, 0);
        let mut sizes = vec![FRAME; len / FRAME];
        let mut left = len % FRAME;
        for size in TAIL_FRAMES {
            while left >= size {
                sizes.push(size);
                left -= size;
            }
        }
        self.write(&tail, &sizes)
    }

    /// Codes `samples` as packets of `sizes` and gives back the page that holds them (after the headers,
    /// the first time).
    fn write(&mut self, samples: &[i16], sizes: &[usize]) -> Vec<u8> {
        if !self.headers_written {
            self.write_headers();
        }
        let mut at = 0;
        for (i, &size) in sizes.iter().enumerate() {
            let len = self.encoder.encode(&samples[at..at + size], &mut self.packet).expect("libopus codes a whole frame");
            at += size;
            self.granule += size as u64;
            let end = if i + 1 == sizes.len() { PacketWriteEndInfo::EndPage } else { PacketWriteEndInfo::NormalPacket };
            self.pages.write_packet(self.packet[..len].to_vec(), SERIAL, end, self.granule).expect("writing to memory");
        }
        std::mem::take(self.pages.inner_mut())
    }

    /// `OpusHead` (RFC 7845 §5.1) and `OpusTags` (§5.2), each on its own page as the RFC requires.
    fn write_headers(&mut self) {
        let mut head = b"OpusHead".to_vec();
        head.push(1); // version
        head.push(1); // channels
        head.extend_from_slice(&(self.lookahead as u16).to_le_bytes()); // pre-skip
        head.extend_from_slice(&RATE.to_le_bytes()); // input sample rate
        head.extend_from_slice(&0i16.to_le_bytes()); // output gain
        head.push(0); // channel mapping family 0: mono or stereo, no table
        self.pages.write_packet(head, SERIAL, PacketWriteEndInfo::EndPage, 0).expect("writing to memory");
        let vendor = b"earshot";
        let mut tags = b"OpusTags".to_vec();
        tags.extend_from_slice(&(vendor.len() as u32).to_le_bytes());
        tags.extend_from_slice(vendor);
        tags.extend_from_slice(&0u32.to_le_bytes()); // no comments
        self.pages.write_packet(tags, SERIAL, PacketWriteEndInfo::EndPage, 0).expect("writing to memory");
        self.headers_written = true;
    }
}

impl Default for OggOpusStream {
    fn default() -> Self {
        Self::new()
    }
}

/// How much audio a live Ogg Opus stream's pages hold, page by page, without decoding them: each page's
/// granule position says how many samples the stream has reached (RFC 7845 §4). A client that times
/// playback (when each chunk's audio ends) needs this for every chunk as it arrives; the ogg crate's
/// reader wants a whole seekable stream, so the 27-byte page header is read here by hand.
#[derive(Debug, Default, Clone)]
pub struct PageClock {
    pre_skip: u64,
    /// The playable samples reached so far.
    reached: u64,
}

impl PageClock {
    /// Milliseconds of playable audio in `bytes`, whole pages following those already counted.
    pub fn advance(&mut self, bytes: &[u8]) -> f64 {
        let before = self.reached;
        let mut at = 0;
        while bytes.len() >= at + 27 && &bytes[at..at + 4] == b"OggS" {
            let granule = u64::from_le_bytes(bytes[at + 6..at + 14].try_into().expect("eight bytes"));
            let segments = bytes[at + 26] as usize;
            let Some(table) = bytes.get(at + 27..at + 27 + segments) else { break };
            let body = at + 27 + segments;
            let len: usize = table.iter().map(|&b| b as usize).sum();
            if let Some(head) = bytes.get(body..body + len).filter(|b| b.starts_with(b"OpusHead") && b.len() >= 12) {
                self.pre_skip = u16::from_le_bytes([head[10], head[11]]) as u64;
            }
            // -1 marks a page on which no packet ends.
            if granule != u64::MAX {
                self.reached = self.reached.max(granule.saturating_sub(self.pre_skip));
            }
            at = body + len;
        }
        (self.reached - before) as f64 * 1000.0 / RATE as f64
    }
}

/// The 48 kHz samples of a whole Ogg Opus stream (as an answer's chunks joined in order), the pre-skip
/// dropped. What a client without a platform decoder does (`earshot say`, the tests).
pub fn decode(bytes: &[u8]) -> Result<Vec<i16>, String> {
    let mut reader = ogg::reading::PacketReader::new(Cursor::new(bytes));
    let head = reader.read_packet().map_err(|e| format!("not an Ogg stream: {e}"))?.ok_or("an empty Ogg stream")?;
    if !head.data.starts_with(b"OpusHead") || head.data.len() < 19 {
        return Err("the first Ogg packet is not an OpusHead".into());
    }
    let channels = head.data[9];
    if channels != 1 {
        return Err(format!("{channels} channels (mono expected)"));
    }
    let pre_skip = u16::from_le_bytes([head.data[10], head.data[11]]) as usize;
    let tags = reader.read_packet().map_err(|e| e.to_string())?.ok_or("no OpusTags packet")?;
    if !tags.data.starts_with(b"OpusTags") {
        return Err("the second Ogg packet is not OpusTags".into());
    }
    let mut decoder = opus::Decoder::new(RATE, opus::Channels::Mono).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut frame = vec![0i16; 5_760]; // 120 ms, Opus's longest packet
    while let Some(packet) = reader.read_packet().map_err(|e| e.to_string())? {
        let n = decoder.decode(&packet.data, &mut frame, false).map_err(|e| format!("an Opus packet did not decode: {e}"))?;
        out.extend_from_slice(&frame[..n]);
    }
    Ok(out.split_off(pre_skip.min(out.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(len: usize, hz: f32) -> Vec<i16> {
        (0..len).map(|i| ((i as f32 * hz * std::f32::consts::TAU / RATE as f32).sin() * 8_000.0) as i16).collect()
    }

    fn rms(samples: &[i16]) -> f64 {
        (samples.iter().map(|&s| (s as f64).powi(2)).sum::<f64>() / samples.len().max(1) as f64).sqrt()
    }

    #[test]
    fn the_first_bytes_are_the_headers_then_every_chunk_is_whole_pages() {
        let mut stream = OggOpusStream::new();
        assert!(stream.push(&tone(500, 440.0)).is_empty(), "less than a frame gives nothing yet");
        let first = stream.push(&tone(1_000, 440.0));
        assert!(first.starts_with(b"OggS"));
        assert!(first.windows(8).any(|w| w == b"OpusHead") && first.windows(8).any(|w| w == b"OpusTags"));
        let tail = stream.end_sentence();
        assert!(tail.starts_with(b"OggS"), "a sentence's end is a page of its own");
        let next = stream.push(&tone(2_000, 220.0));
        assert!(next.starts_with(b"OggS") && !next.windows(8).any(|w| w == b"OpusHead"), "the headers come once");
        assert!(!stream.end_sentence().is_empty());
        assert!(stream.end_sentence().is_empty(), "a sentence with no audio gets none, not the flush's silence");
    }

    #[test]
    fn a_sentence_decodes_whole_to_its_length_and_loudness() {
        let mut stream = OggOpusStream::new();
        let input = tone(RATE as usize, 440.0);
        let mut bytes = Vec::new();
        for chunk in input.chunks(1_234) {
            bytes.extend(stream.push(chunk));
        }
        bytes.extend(stream.end_sentence());
        let out = decode(&bytes).unwrap();
        // The sentence's end adds the look-ahead and rounds to 2.5 ms: never more than 9 ms.
        assert!(out.len() >= input.len() && out.len() <= input.len() + stream.pre_skip() + 120, "{} samples for {}", out.len(), input.len());
        let (a, b) = (rms(&input[4_800..43_200]), rms(&out[4_800..43_200]));
        assert!((a - b).abs() / a < 0.1, "loudness {b} against {a}");
        // The sentence's last 10 ms is in the stream before any later audio (the look-ahead was flushed).
        assert!(rms(&out[input.len() - 480..input.len()]) > a * 0.5);
    }

    #[test]
    fn an_answer_of_several_sentences_is_one_stream() {
        let mut stream = OggOpusStream::new();
        let mut bytes = Vec::new();
        let mut expected = 0;
        for len in [9_600, 7_777, 130] {
            bytes.extend(stream.push(&tone(len, 300.0)));
            bytes.extend(stream.end_sentence());
            expected += len;
        }
        let out = decode(&bytes).unwrap();
        assert!(out.len() >= expected && out.len() <= expected + 3 * (stream.pre_skip() + 120), "{} for {expected}", out.len());
        assert!(decode(b"not ogg").is_err());
    }

    #[test]
    fn the_page_clock_counts_what_each_chunk_will_play() {
        let mut stream = OggOpusStream::new();
        let mut clock = PageClock::default();
        let mut counted = 0.0;
        let mut bytes = Vec::new();
        for chunk in tone(30_000, 500.0).chunks(4_000) {
            let pages = stream.push(chunk);
            counted += clock.advance(&pages);
            bytes.extend(pages);
        }
        let pages = stream.end_sentence();
        counted += clock.advance(&pages);
        bytes.extend(pages);
        assert_eq!(counted * 48.0, decode(&bytes).unwrap().len() as f64);
        assert_eq!(counted * 48.0, stream.playable_samples() as f64);
    }
}
