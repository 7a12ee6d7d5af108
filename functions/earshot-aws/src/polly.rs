//! Amazon Polly as a backend, over `StartSpeechSynthesisStream` (generative engine, PCM at 16 kHz).
//! One stream per conversation: each sentence is a `TextEvent` with a forced flush, and
//! `CloseStreamEvent` ends the stream, whose `StreamClosedEvent` reports the characters billed.
//!
//! Polly's audio events do not say which text they voice. So that each audio chunk can be given to
//! its sentence, the session sends one sentence at a time and takes the sentence as finished once
//! its audio has stopped for a short quiet period; the next sentence's synthesis then overlaps the
//! playback of the one before. Polly closes a stream after 5 s without text: while the agent pauses,
//! the session sends a white-space text event every few seconds, as Polly documents.

use std::collections::VecDeque;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_polly::error::ProvideErrorMetadata;
use aws_sdk_polly::types::error::{StartSpeechSynthesisStreamActionStreamError, StartSpeechSynthesisStreamEventStreamError};
use aws_sdk_polly::types::{
    CloseStreamEvent, Engine, FlushStreamConfiguration, OutputFormat, StartSpeechSynthesisStreamActionStream, StartSpeechSynthesisStreamEventStream, TextEvent,
    VoiceId,
};
use aws_sdk_polly::Client;
use aws_smithy_types::Blob;
use bytes::Bytes;
use earshot_core::protocol::AudioFormat;
use earshot_core::speech::{SessionOptions, SpeechBackend, SpeechCommand, SpeechError, SpeechEvent, SpeechSession, Voice};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

/// Polly's PCM rate.
pub const POLLY_SAMPLE_RATE: u32 = 16_000;

/// Voices that support the generative engine, by earshot name.
const VOICES: &[(&str, &str, &str)] = &[
    ("ruth", "Ruth", "en-US"),
    ("stephen", "Stephen", "en-US"),
    ("matthew", "Matthew", "en-US"),
    ("joanna", "Joanna", "en-US"),
    ("danielle", "Danielle", "en-US"),
    ("amy", "Amy", "en-GB"),
    ("olivia", "Olivia", "en-AU"),
    ("lea", "Lea", "fr-FR"),
    ("remi", "Remi", "fr-FR"),
];

/// How the Polly session behaves.
#[derive(Debug, Clone)]
pub struct PollySettings {
    pub default_voice: String,
    /// A sentence is finished once its audio has paused this long.
    pub quiet: Duration,
    /// A sentence with no audio at all after this long fails.
    pub first_audio_timeout: Duration,
    /// White space is sent after this long without text, to keep the stream open.
    pub keep_alive: Duration,
}

impl Default for PollySettings {
    fn default() -> Self {
        PollySettings {
            default_voice: "ruth".into(),
            quiet: Duration::from_millis(300),
            first_audio_timeout: Duration::from_secs(15),
            keep_alive: Duration::from_secs(3),
        }
    }
}

pub struct PollyBackend {
    client: Client,
    settings: PollySettings,
}

impl PollyBackend {
    pub fn new(config: &aws_config::SdkConfig, settings: PollySettings) -> Result<Self, String> {
        if !VOICES.iter().any(|(name, _, _)| *name == settings.default_voice) {
            return Err(format!("`{}` is not a Polly generative voice of earshot (voices: {})", settings.default_voice, voice_names()));
        }
        Ok(PollyBackend { client: Client::new(config), settings })
    }
}

fn voice_names() -> String {
    VOICES.iter().map(|(n, _, _)| *n).collect::<Vec<_>>().join(", ")
}

/// Polly's exceptions as client-facing errors.
fn polly_error(code: Option<&str>, message: Option<&str>) -> SpeechError {
    let (name, retryable) = match code.unwrap_or("") {
        "ValidationException" => ("polly_validation", false),
        "ThrottlingException" => ("polly_throttled", true),
        "ServiceQuotaExceededException" => ("polly_quota_exceeded", true),
        "ServiceFailureException" => ("polly_service_failure", true),
        _ => ("polly_error", true),
    };
    SpeechError::new(name, format!("Polly: {}{}", code.unwrap_or("error"), message.map(|m| format!(": {m}")).unwrap_or_default()), retryable)
}

fn modeled_name(e: &StartSpeechSynthesisStreamEventStreamError) -> &str {
    match e {
        StartSpeechSynthesisStreamEventStreamError::ValidationException(_) => "ValidationException",
        StartSpeechSynthesisStreamEventStreamError::ThrottlingException(_) => "ThrottlingException",
        StartSpeechSynthesisStreamEventStreamError::ServiceQuotaExceededException(_) => "ServiceQuotaExceededException",
        StartSpeechSynthesisStreamEventStreamError::ServiceFailureException(_) => "ServiceFailureException",
        other => other.code().unwrap_or("UnknownError"),
    }
}

type Action = Result<StartSpeechSynthesisStreamActionStream, StartSpeechSynthesisStreamActionStreamError>;

#[async_trait]
impl SpeechBackend for PollyBackend {
    fn name(&self) -> &str {
        "polly"
    }

    fn voices(&self) -> Vec<Voice> {
        VOICES
            .iter()
            .map(|(id, name, lang)| Voice { id: id.to_string(), language: lang.to_string(), description: format!("Polly {name} (generative)") })
            .collect()
    }

    fn default_voice(&self) -> String {
        self.settings.default_voice.clone()
    }

    async fn open(&self, options: SessionOptions) -> Result<SpeechSession, SpeechError> {
        let Some((_, polly_name, _)) = VOICES.iter().find(|(id, _, _)| *id == options.voice) else {
            return Err(SpeechError::new("unknown_voice", format!("Polly has no earshot voice `{}` (voices: {})", options.voice, voice_names()), false));
        };
        let (actions, action_stream) = mpsc::channel::<Action>(16);
        let output = self
            .client
            .start_speech_synthesis_stream()
            .engine(Engine::Generative)
            .output_format(OutputFormat::Pcm)
            .sample_rate(POLLY_SAMPLE_RATE.to_string())
            .voice_id(VoiceId::from(*polly_name))
            .action_stream(ReceiverStream::new(action_stream).into())
            .send()
            .await
            .map_err(|e| match e.as_service_error() {
                Some(s) => polly_error(s.code(), s.message()),
                None => SpeechError::new("backend_unreachable", format!("cannot reach Polly: {e:?}"), true),
            })?;
        let (events_tx, events) = mpsc::channel(32);
        let (polly_tx, polly_rx) = mpsc::channel(32);
        let mut stream = output.event_stream;
        tokio::spawn(async move {
            loop {
                let item = match stream.recv().await {
                    Ok(Some(event)) => Ok(event),
                    Ok(None) => break,
                    Err(e) => Err(match e.as_service_error() {
                        // The modeled exceptions are told by their variant (their metadata may not
                        // carry a code).
                        Some(s) => polly_error(Some(modeled_name(s)), s.message()),
                        None => SpeechError::new("backend_gone", format!("the Polly stream broke: {e:?}"), true),
                    }),
                };
                let failed = item.is_err();
                if polly_tx.send(item).await.is_err() || failed {
                    break;
                }
            }
        });
        let (commands_tx, commands) = mpsc::channel(32);
        let session = Session {
            settings: self.settings.clone(),
            actions: Some(actions),
            events: events_tx,
            cancel: options.cancel.clone(),
            queue: VecDeque::new(),
            current: None,
            last_text: Instant::now(),
            finishing: false,
            close_sent: false,
        };
        tokio::spawn(session.drive(commands, polly_rx));
        Ok(SpeechSession { commands: commands_tx, events, format: AudioFormat::pcm_s16le(POLLY_SAMPLE_RATE), voice: options.voice })
    }

    async fn health(&self) -> Result<(), SpeechError> {
        Ok(())
    }
}

/// The sentence being voiced.
struct Current {
    index: u32,
    sent_at: Instant,
    last_audio: Option<Instant>,
}

struct Session {
    settings: PollySettings,
    actions: Option<mpsc::Sender<Action>>,
    events: mpsc::Sender<SpeechEvent>,
    cancel: CancellationToken,
    queue: VecDeque<(u32, String)>,
    current: Option<Current>,
    last_text: Instant,
    finishing: bool,
    close_sent: bool,
}

enum Next {
    Go,
    End,
}

impl Session {
    async fn drive(
        mut self,
        mut commands: mpsc::Receiver<SpeechCommand>,
        mut polly: mpsc::Receiver<Result<StartSpeechSynthesisStreamEventStream, SpeechError>>,
    ) {
        loop {
            if let Next::End = self.advance().await {
                return;
            }
            let wake = self.next_wake();
            let next = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => Next::End,
                command = commands.recv(), if !self.finishing => match command {
                    Some(SpeechCommand::Speak(r)) => {
                        self.queue.push_back((r.index, r.text));
                        Next::Go
                    }
                    Some(SpeechCommand::Finish) => {
                        self.finishing = true;
                        Next::Go
                    }
                    None => Next::End,
                },
                event = polly.recv() => self.on_polly(event).await,
                _ = tokio::time::sleep_until(wake) => self.on_timer().await,
            };
            if let Next::End = next {
                return;
            }
        }
    }

    /// Sends the next sentence when none is being voiced, or closes the stream when all is said.
    async fn advance(&mut self) -> Next {
        if self.current.is_some() {
            return Next::Go;
        }
        if let Some((index, text)) = self.queue.pop_front() {
            let event = TextEvent::builder().text(text).flush_stream_configuration(FlushStreamConfiguration::builder().force(true).build()).build();
            let Ok(event) = event else { return self.fail(SpeechError::new("polly_validation", "an empty sentence", false)).await };
            if !self.act(StartSpeechSynthesisStreamActionStream::TextEvent(event)).await {
                return self.fail(SpeechError::new("backend_gone", "the Polly stream is closed", true)).await;
            }
            self.current = Some(Current { index, sent_at: Instant::now(), last_audio: None });
        } else if self.finishing && !self.close_sent {
            self.close_sent = true;
            if !self.act(StartSpeechSynthesisStreamActionStream::CloseStreamEvent(CloseStreamEvent::builder().build())).await {
                return self.fail(SpeechError::new("backend_gone", "the Polly stream is closed", true)).await;
            }
        }
        Next::Go
    }

    async fn act(&mut self, action: StartSpeechSynthesisStreamActionStream) -> bool {
        self.last_text = Instant::now();
        match &self.actions {
            Some(actions) => actions.send(Ok(action)).await.is_ok(),
            None => false,
        }
    }

    fn next_wake(&self) -> Instant {
        match &self.current {
            Some(c) => match c.last_audio {
                Some(at) => at + self.settings.quiet,
                None => c.sent_at + self.settings.first_audio_timeout,
            },
            None => self.last_text + self.settings.keep_alive,
        }
    }

    async fn on_timer(&mut self) -> Next {
        let now = Instant::now();
        match &self.current {
            Some(c) if c.last_audio.is_some_and(|at| now >= at + self.settings.quiet) => {
                let index = c.index;
                self.current = None;
                self.emit(SpeechEvent::Finished { index }).await
            }
            Some(c) if c.last_audio.is_none() && now >= c.sent_at + self.settings.first_audio_timeout => {
                self.fail(SpeechError::new("polly_timeout", "Polly sent no audio for a sentence", true)).await
            }
            None if !self.close_sent && now >= self.last_text + self.settings.keep_alive => {
                // Keep the stream open while the agent pauses: white space, no flush.
                let event = TextEvent::builder().text(" ").build().expect("a text event");
                if self.act(StartSpeechSynthesisStreamActionStream::TextEvent(event)).await {
                    Next::Go
                } else {
                    self.fail(SpeechError::new("backend_gone", "the Polly stream is closed", true)).await
                }
            }
            _ => Next::Go,
        }
    }

    async fn on_polly(&mut self, event: Option<Result<StartSpeechSynthesisStreamEventStream, SpeechError>>) -> Next {
        match event {
            Some(Ok(StartSpeechSynthesisStreamEventStream::AudioEvent(audio))) => {
                let pcm = audio.audio_chunk.map(Blob::into_inner).unwrap_or_default();
                match self.current.as_mut() {
                    Some(c) if !pcm.is_empty() => {
                        c.last_audio = Some(Instant::now());
                        let index = c.index;
                        self.emit(SpeechEvent::Audio { index, pcm: Bytes::from(pcm) }).await
                    }
                    _ => Next::Go,
                }
            }
            Some(Ok(StartSpeechSynthesisStreamEventStream::StreamClosedEvent(closed))) => {
                if let Some(c) = self.current.take() {
                    if let Next::End = self.emit(SpeechEvent::Finished { index: c.index }).await {
                        return Next::End;
                    }
                }
                let billed = Some(closed.request_characters.max(0) as u64);
                let _ = self.emit(SpeechEvent::Closed { billed_characters: billed }).await;
                Next::End
            }
            Some(Ok(_)) => Next::Go,
            Some(Err(e)) => self.fail(e).await,
            None => self.fail(SpeechError::new("backend_gone", "the Polly stream ended", true)).await,
        }
    }

    async fn emit(&self, event: SpeechEvent) -> Next {
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Next::End,
            sent = self.events.send(event) => if sent.is_ok() { Next::Go } else { Next::End },
        }
    }

    async fn fail(&mut self, error: SpeechError) -> Next {
        let _ = self.emit(SpeechEvent::Failed(error)).await;
        self.actions = None;
        Next::End
    }
}
