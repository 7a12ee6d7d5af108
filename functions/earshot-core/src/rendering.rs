//! SSML as a layer of the session stack: each sentence of an answer read as SSML rendered once, before any
//! arm gets it, its words told as written and its breaks given as silence.
//!
//! The scheduler releases sentences with their tags carried as markers ([`crate::text::markup`]). This
//! layer, the outermost of the stack for such a conversation, renders each ([`Renderer`]): every arm is sent
//! the same words (an alias, characters spelled, a date in the form every language reads, a phoneme marked
//! as [`crate::text::pronounced`] says), at the rate and in the language the SSML gives, so a failover or
//! the other arm of an A/B split says the document the same way. A `<break>` ends its sentence (the reader
//! cuts there), and its silence is given here, as audio of that sentence: before its first audio where the
//! break came before its first letter, after its last otherwise. So the break is exactly as long on every
//! voice, and the timeline, `heard_ms` and the words count it as the audio it is. The voice's word timings
//! are mapped back to the written words ([`SpokenMap`]) and moved by the silence before them.

use std::collections::HashMap;

use async_trait::async_trait;
use bytes::Bytes;

use crate::protocol::{AudioFormat, WordTiming};
use crate::session_layer::{Ctx, SessionLayer};
use crate::speech::{SpeakingRate, SpeechCommand, SpeechEvent};
use crate::text::markup::{Rendered, Renderer};
use crate::words::SpokenMap;

/// A sentence sent rendered and not yet finished.
struct Live {
    rendered: Rendered,
    map: SpokenMap,
    /// Whether any of its audio has been passed on (the silence before it goes just before the first).
    audio_started: bool,
}

/// The layer's state; see the module docs.
pub struct Rendering {
    renderer: Renderer,
    live: HashMap<u32, Live>,
    /// The format of the audio the session gives back (a switch may change it): the silence is made in it.
    format: AudioFormat,
}

impl Rendering {
    /// The layer for a conversation whose session gives audio in `format`.
    pub fn new(format: AudioFormat) -> Self {
        Rendering { renderer: Renderer::new(), live: HashMap::new(), format }
    }

    /// `ms` of silence in the session's format, in pieces of at most [`SILENCE_PIECE_BYTES`] (about 100
    /// ms at 48 kHz): given as audio is, never as one buffer, and cut from a static buffer, so that no
    /// silence allocates anything. The reader caps a pause at `MAX_PAUSE_MS`; so does this.
    fn silence(&self, ms: u32) -> Vec<Bytes> {
        let ms = ms.min(crate::text::ssml::MAX_PAUSE_MS);
        let channels = usize::from(self.format.channels.max(1));
        let samples = (u64::from(self.format.sample_rate) * u64::from(ms) / 1000) as usize * channels;
        let (fill, sample_bytes): (&'static [u8], usize) = match self.format.encoding.as_str() {
            AudioFormat::PCM_S16LE => (&ZEROS, 2),
            // G.711's silence: the code for zero.
            "mulaw" => (&MULAW_ZEROS, 1),
            "alaw" => (&ALAW_ZEROS, 1),
            _ => return Vec::new(),
        };
        let frame = sample_bytes * channels;
        let piece = (fill.len() / frame).max(1) * frame;
        let mut left = samples * sample_bytes;
        let mut out = Vec::with_capacity(left.div_ceil(piece));
        while left > 0 {
            let take = left.min(piece);
            out.push(Bytes::from_static(&fill[..take]));
            left -= take;
        }
        out
    }

    fn tell_silence(&self, index: u32, ms: u32, ctx: &mut Ctx<()>) {
        for pcm in self.silence(ms) {
            ctx.tell(SpeechEvent::Audio { index, pcm });
        }
    }
}

/// The most bytes of silence in one piece: 100 ms of 16-bit stereo at 48 kHz.
pub const SILENCE_PIECE_BYTES: usize = 19_200;
static ZEROS: [u8; SILENCE_PIECE_BYTES] = [0; SILENCE_PIECE_BYTES];
static MULAW_ZEROS: [u8; SILENCE_PIECE_BYTES] = [0xFF; SILENCE_PIECE_BYTES];
static ALAW_ZEROS: [u8; SILENCE_PIECE_BYTES] = [0xD5; SILENCE_PIECE_BYTES];

#[async_trait]
impl SessionLayer for Rendering {
    type Note = ();

    async fn command(&mut self, command: SpeechCommand, ctx: &mut Ctx<()>) {
        let mut request = match command {
            SpeechCommand::Speak(request) => request,
            // The renderer carries elements from sentence to sentence: a sentence is rendered once, when sent.
            SpeechCommand::Prepare(_) => return,
            other => {
                ctx.send_on(other);
                return;
            }
        };
        let rendered = self.renderer.render_in(&request.text, request.language.as_ref());
        request.text = rendered.spoken.clone();
        if rendered.language.is_some() {
            request.language = rendered.language.clone();
        }
        if let Some(percent) = rendered.rate {
            request.rate = SpeakingRate::from_factor(f64::from(percent) / 100.0).ok();
        }
        let cap = crate::text::ssml::MAX_PAUSE_MS;
        request.silence_ms = rendered.pause_before_ms.min(cap) + rendered.pause_after_ms.min(cap);
        let map = SpokenMap::new(&rendered.written, &rendered.spoken);
        self.live.insert(request.index, Live { rendered, map, audio_started: false });
        ctx.send_on(SpeechCommand::Speak(request));
    }

    async fn event(&mut self, event: SpeechEvent, ctx: &mut Ctx<()>) {
        match event {
            SpeechEvent::Audio { index, pcm } => {
                let before = match self.live.get_mut(&index) {
                    Some(live) if !live.audio_started => {
                        live.audio_started = true;
                        live.rendered.pause_before_ms
                    }
                    _ => 0,
                };
                self.tell_silence(index, before, ctx);
                ctx.tell(SpeechEvent::Audio { index, pcm });
            }
            SpeechEvent::Words { index, words } => match self.live.get_mut(&index) {
                Some(live) => {
                    let words = shifted(live.map.push(words), live.rendered.pause_before_ms);
                    if !words.is_empty() {
                        ctx.tell(SpeechEvent::Words { index, words });
                    }
                }
                None => ctx.tell(SpeechEvent::Words { index, words }),
            },
            SpeechEvent::Finished { index, report } => {
                if let Some(mut live) = self.live.remove(&index) {
                    let rest = shifted(live.map.finish(), live.rendered.pause_before_ms);
                    if live.map.timed_any() && !rest.is_empty() {
                        ctx.tell(SpeechEvent::Words { index, words: rest });
                    }
                    if live.audio_started {
                        self.tell_silence(index, live.rendered.pause_after_ms, ctx);
                    }
                }
                ctx.tell(SpeechEvent::Finished { index, report });
            }
            SpeechEvent::Switched(switch) => {
                // The new session speaks every unfinished sentence again, from its first word.
                self.format = switch.format.clone();
                for live in self.live.values_mut() {
                    live.map = SpokenMap::new(&live.rendered.written, &live.rendered.spoken);
                    live.audio_started = false;
                }
                ctx.tell(SpeechEvent::Switched(switch));
            }
            other => ctx.tell(other),
        }
    }
}

/// Word timings moved later by the silence before the sentence's audio.
fn shifted(mut words: Vec<WordTiming>, ms: u32) -> Vec<WordTiming> {
    for word in &mut words {
        word.start_ms += f64::from(ms);
        word.end_ms += f64::from(ms);
    }
    words
}
