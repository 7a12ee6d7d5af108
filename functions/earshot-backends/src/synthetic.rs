//! A synthetic voice: after a fixed first-audio latency it emits a tone at real-time pace, as long as
//! the sentence would take to say. It is not a model: it exists to load the orchestrator with many
//! conversations where a real model could not serve them on one machine, and reports name it
//! plainly as synthetic.
//!
//! It behaves like a backend faster than real time: a sentence's latency runs from the moment it
//! was requested, overlapping the audio of the sentences before it, so a sentence requested early
//! enough follows the previous one with no gap. Any gap a client hears is then the orchestrator's.
//!
//! With [`SyntheticConfig::sessions`] it also stands in for a container of known capacity: it serves that
//! many sessions at once, and a session past them waits, before anything else, for one to end (a pool of
//! workers with a queue). It is what the capacity benchmark's knee detection is checked against: the knee
//! must come out at exactly that number.

use std::collections::VecDeque;
use std::f32::consts::TAU;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use earshot_core::language::Language;
use earshot_core::protocol::AudioFormat;
use earshot_core::speech::{SessionOptions, SpeechBackend, SpeechCommand, SpeechError, SpeechEvent, SpeechRequest, SpeechSession, Voice};
use tokio::sync::{mpsc, Semaphore};
use tokio::time::Instant;

/// How the synthetic voice behaves.
#[derive(Debug, Clone)]
pub struct SyntheticConfig {
    /// The rate of the PCM it emits, in Hz.
    pub sample_rate: u32,
    /// Delay from a sentence's request to its first audio.
    pub first_audio: Duration,
    /// Speaking rate: a sentence lasts `chars / chars_per_second`.
    pub chars_per_second: f64,
    /// Audio per chunk; chunks leave at real-time pace.
    pub chunk: Duration,
    /// Sessions served at once; a session past them waits for one to end before it speaks. `None`: any
    /// number.
    pub sessions: Option<usize>,
    /// How far ahead of its playback audio is sent, as a backend faster than real time sends it. Zero sends
    /// each chunk when it would start playing, so any delay in scheduling is a gap the listener hears.
    pub lead: Duration,
    /// How long a session takes to close once it ends, however it ends (a real service's closing
    /// handshake): the session counts as live until then.
    pub closing: Duration,
}

impl Default for SyntheticConfig {
    fn default() -> Self {
        SyntheticConfig {
            sample_rate: 24_000,
            first_audio: Duration::from_millis(200),
            chars_per_second: 15.0,
            chunk: Duration::from_millis(100),
            sessions: None,
            lead: Duration::ZERO,
            closing: Duration::ZERO,
        }
    }
}

#[derive(Debug, Clone, Default)]
/// The synthetic voice as a backend (`synthetic`): a tone at real-time pace, not a model.
pub struct SyntheticBackend {
    /// How the voice behaves.
    pub config: SyntheticConfig,
    live: Arc<AtomicUsize>,
    /// One permit a session, when the sessions served at once are limited.
    workers: Option<Arc<Semaphore>>,
}

impl SyntheticBackend {
    /// A backend that behaves as `config` says.
    pub fn new(config: SyntheticConfig) -> Self {
        let workers = config.sessions.map(|n| Arc::new(Semaphore::new(n.min(Semaphore::MAX_PERMITS))));
        SyntheticBackend { config, live: Arc::default(), workers }
    }

    /// Sessions whose task is still running: after a conversation ends, none of its own.
    pub fn live_sessions(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }
}

/// Counts a session's task as live until it ends, however it ends.
struct LiveGuard(Arc<AtomicUsize>);

impl LiveGuard {
    fn new(counter: &Arc<AtomicUsize>) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        LiveGuard(counter.clone())
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl SpeechBackend for SyntheticBackend {
    fn name(&self) -> &str {
        "synthetic"
    }

    fn voices(&self) -> Vec<Voice> {
        vec![Voice { id: "tone".into(), language: "any".into(), description: "a 220 Hz tone at speaking pace (load tests)".into() }]
    }

    fn default_voice(&self) -> String {
        "tone".into()
    }

    /// A tone sounds the same in every language.
    fn reading_language(&self, _voice: &str, _session: Option<&Language>, _sentence: Option<&Language>, _text: &str) -> Option<Language> {
        None
    }

    /// A tone has no language: it stands in for any.
    fn voice_for_language(&self, _language: &Language) -> Option<String> {
        Some("tone".into())
    }

    fn voice_speaks(&self, voice: &str, _language: &Language) -> bool {
        voice == "tone"
    }

    async fn open(&self, options: SessionOptions) -> Result<SpeechSession, SpeechError> {
        if options.voice != "tone" {
            return Err(SpeechError::new("unknown_voice", format!("the synthetic backend has no voice `{}`", options.voice), false));
        }
        let (commands_tx, commands_rx) = mpsc::channel(32);
        let (events_tx, events_rx) = mpsc::channel(32);
        let guard = LiveGuard::new(&self.live);
        let config = self.config.clone();
        let workers = self.workers.clone();
        earshot_core::tasks::spawn(async move {
            let _guard = guard;
            let closing = config.closing;
            async move {
                // Held until the session ends, however it ends. Commands queue in the channel meanwhile, and a
                // sentence's latency runs from when a worker takes it.
                let _worker = match workers {
                    Some(workers) => tokio::select! {
                        _ = options.cancel.cancelled() => return,
                        _ = events_tx.closed() => return,
                        permit = workers.acquire_owned() => Some(permit.expect("the semaphore is never closed")),
                    },
                    None => None,
                };
                drive(config, commands_rx, events_tx, options).await
            }
            .await;
            tokio::time::sleep(closing).await;
        });
        Ok(SpeechSession { commands: commands_tx, events: events_rx, format: AudioFormat::pcm_s16le(self.config.sample_rate), voice: "tone".into() })
    }

    async fn health(&self) -> Result<(), SpeechError> {
        Ok(())
    }
}

/// The sentence being spoken.
struct Current {
    index: u32,
    samples_left: usize,
    /// When the next chunk starts playing.
    next_at: Instant,
    /// Its first audio's moment: nothing of it leaves before, whatever the lead.
    ready: Instant,
    phase: f32,
}

async fn drive(cfg: SyntheticConfig, mut commands: mpsc::Receiver<SpeechCommand>, events: mpsc::Sender<SpeechEvent>, options: SessionOptions) {
    // Each request with the moment it arrived: its latency runs from then.
    let mut queue: VecDeque<(SpeechRequest, Instant)> = VecDeque::new();
    let mut current: Option<Current> = None;
    // When the audio sent so far ends at real-time playback.
    let mut audio_ends: Option<Instant> = None;
    let mut finishing = false;
    let chunk_samples = (cfg.sample_rate as f64 * cfg.chunk.as_secs_f64()).max(1.0) as usize;
    loop {
        if current.is_none() {
            if let Some((request, arrived)) = queue.pop_front() {
                let seconds = request.text.chars().count() as f64 / cfg.chars_per_second.max(0.1);
                let ready = arrived + cfg.first_audio;
                current = Some(Current {
                    index: request.index,
                    samples_left: ((seconds * cfg.sample_rate as f64) as usize).max(1),
                    next_at: audio_ends.map_or(ready, |end| end.max(ready)),
                    ready,
                    phase: 0.0,
                });
            } else if finishing {
                let _ = events.send(SpeechEvent::Closed { billed_characters: None }).await;
                return;
            }
        }
        let wake = current.as_ref().map(|c| c.next_at.checked_sub(cfg.lead).unwrap_or(c.next_at).max(c.ready));
        tokio::select! {
            biased;
            _ = options.cancel.cancelled() => return,
            command = commands.recv(), if !finishing => match command {
                Some(SpeechCommand::Speak(request)) => queue.push_back((request, Instant::now())),
                Some(SpeechCommand::Finish) => finishing = true,
                // Its sentence takes as long whenever it starts: nothing to gain from starting early.
                Some(SpeechCommand::Prepare(_)) => {}
                None => return,
            },
            _ = sleep_until(wake), if wake.is_some() => {
                let Some(c) = current.as_mut() else { continue };
                let n = c.samples_left.min(chunk_samples);
                let pcm = tone(n, cfg.sample_rate, &mut c.phase);
                c.samples_left -= n;
                c.next_at += Duration::from_secs_f64(n as f64 / cfg.sample_rate as f64);
                audio_ends = Some(c.next_at);
                let index = c.index;
                if events.send(SpeechEvent::Audio { index, pcm }).await.is_err() {
                    return;
                }
                if c.samples_left == 0 {
                    current = None;
                    if events.send(SpeechEvent::Finished { index, report: Default::default() }).await.is_err() {
                        return;
                    }
                }
            }
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// `n` samples of a 220 Hz tone at a fifth of full scale.
fn tone(n: usize, sample_rate: u32, phase: &mut f32) -> Bytes {
    let step = TAU * 220.0 / sample_rate as f32;
    let mut out = Vec::with_capacity(n * 2);
    for _ in 0..n {
        let sample = (phase.sin() * 0.2 * i16::MAX as f32) as i16;
        out.extend_from_slice(&sample.to_le_bytes());
        *phase = (*phase + step) % TAU;
    }
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use earshot_core::speech::SpeechRequest;
    use tokio_util::sync::CancellationToken;

    /// Options for a session in the synthetic voice `tone`.
    fn tone_options(conversation_id: &str) -> SessionOptions {
        SessionOptions {
            voice: "tone".into(),
            language: None,
            sample_rate: None,
            speaking_rate: Default::default(),
            conversation_id: conversation_id.into(),
            cancel: CancellationToken::new(),
        }
    }

    /// Sentences requested together play back to back: the second one's latency overlapped the
    /// first one's audio. In virtual time, so the figures are exact on any machine.
    #[tokio::test(start_paused = true)]
    async fn a_sentence_requested_early_follows_the_previous_one_without_a_gap() {
        let backend = SyntheticBackend::new(SyntheticConfig {
            first_audio: Duration::from_millis(400),
            chars_per_second: 50.0,
            chunk: Duration::from_millis(50),
            ..Default::default()
        });
        let options = tone_options("c");
        let mut session = backend.open(options).await.expect("open");
        let started = Instant::now();
        for (index, text) in ["ten chars.", "ten chars."].into_iter().enumerate() {
            session
                .commands
                .send(SpeechCommand::Speak(SpeechRequest { index: index as u32, text: text.into(), language: None, rate: None, silence_ms: 0 }))
                .await
                .unwrap();
        }
        session.commands.send(SpeechCommand::Finish).await.unwrap();
        let mut first_audio = Vec::new();
        let mut samples = 0usize;
        while let Some(event) = session.events.recv().await {
            match event {
                SpeechEvent::Audio { index, pcm } => {
                    samples += pcm.len() / 2;
                    if first_audio.len() == index as usize {
                        first_audio.push(started.elapsed());
                    }
                }
                SpeechEvent::Closed { .. } => break,
                _ => {}
            }
        }
        // Each sentence is 200 ms of audio; a backend that waited its latency again after the first
        // sentence would start the second one 600 ms after the first.
        assert_eq!(samples, 2 * 24_000 / 5);
        assert_eq!(first_audio[0], Duration::from_millis(400));
        assert_eq!(first_audio[1] - first_audio[0], Duration::from_millis(200), "the second sentence follows the first's audio at once");
    }

    /// With a lead, audio leaves ahead of its playback, but never before the sentence's first audio.
    #[tokio::test(start_paused = true)]
    async fn a_lead_sends_audio_ahead_of_playback_but_not_before_first_audio() {
        let backend = SyntheticBackend::new(SyntheticConfig {
            first_audio: Duration::from_millis(100),
            chars_per_second: 25.0,
            lead: Duration::from_millis(250),
            ..Default::default()
        });
        let options = tone_options("c");
        let mut session = backend.open(options).await.expect("open");
        let started = Instant::now();
        // 400 ms of audio in four 100 ms chunks.
        session
            .commands
            .send(SpeechCommand::Speak(SpeechRequest { index: 0, text: "ten chars.".into(), language: None, rate: None, silence_ms: 0 }))
            .await
            .unwrap();
        session.commands.send(SpeechCommand::Finish).await.unwrap();
        let mut sent = Vec::new();
        while let Some(event) = session.events.recv().await {
            match event {
                SpeechEvent::Audio { .. } => sent.push(started.elapsed().as_millis()),
                SpeechEvent::Closed { .. } => break,
                _ => {}
            }
        }
        // Playback starts at 100 ms: chunks play at 100, 200, 300 and 400 ms, and leave 250 ms before,
        // but not before 100 ms.
        assert_eq!(sent, [100, 100, 100, 150]);
    }

    /// With one session served at once, a second session speaks only once the first has ended, and
    /// its latency runs from then. In virtual time.
    #[tokio::test(start_paused = true)]
    async fn a_session_past_the_limit_waits_for_one_to_end() {
        let backend =
            SyntheticBackend::new(SyntheticConfig { first_audio: Duration::from_millis(100), chars_per_second: 50.0, sessions: Some(1), ..Default::default() });
        let started = Instant::now();
        let mut ends = Vec::new();
        let mut sessions = Vec::new();
        for id in ["first", "second"] {
            let options = tone_options(id);
            let session = backend.open(options).await.expect("open: the limit queues, it does not refuse");
            session
                .commands
                .send(SpeechCommand::Speak(SpeechRequest { index: 0, text: "ten chars.".into(), language: None, rate: None, silence_ms: 0 }))
                .await
                .unwrap();
            session.commands.send(SpeechCommand::Finish).await.unwrap();
            sessions.push(session);
        }
        let mut first_audio = Vec::new();
        for session in &mut sessions {
            let mut heard = None;
            while let Some(event) = session.events.recv().await {
                match event {
                    SpeechEvent::Audio { .. } => {
                        heard.get_or_insert(started.elapsed());
                    }
                    SpeechEvent::Closed { .. } => break,
                    _ => {}
                }
            }
            first_audio.push(heard.expect("audio"));
            ends.push(started.elapsed());
        }
        assert_eq!(first_audio[0], Duration::from_millis(100));
        // The first session's 200 ms of audio leave at real-time pace, the last chunk at 200 ms: it closes
        // then, and the second session's latency runs from there.
        assert_eq!(first_audio[1], ends[0] + Duration::from_millis(100), "the second waited for the first to end");
        drop(sessions);
        tokio::task::yield_now().await;
        assert_eq!(backend.live_sessions(), 0);
    }
}
