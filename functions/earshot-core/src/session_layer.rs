//! A layer around a speech session, and the one relay every layer runs in.
//!
//! Between the scheduler and a voice sit a few layers, each with one rule of its own: the owner's
//! character budget charges each sentence before any voice gets it, the [`crate::switcher`] changes the
//! arm before the first audio, the sentence cache ([`crate::cached_session`]) answers a sentence heard
//! before. Each looks like a [`SpeechSession`] to the one outside it and holds the one inside it. What
//! they share is written once, here, as [`relay`]:
//!
//! - **one task**, on the conversation's tracker ([`crate::tasks`]);
//! - **one channel size** ([`LAYER_CHANNEL`]) on each side towards the layer outside;
//! - **one backpressure rule**: a layer holds what it has to send in two queues ([`Ctx::send_on`] towards
//!   the voice, [`Ctx::tell`] towards the scheduler); a command from outside is read only once every
//!   command it led to has been taken by the session, and an event from inside only once every event
//!   before it has been taken by the layer outside. Each side is never waited on while the other could be
//!   waiting on it, so the bounded channels on both sides keep their backpressure and no cycle of full
//!   channels can form;
//! - **one way to end**: the conversation's cancellation, the layer outside letting go (its command or
//!   event channel closed), a `Closed` event passed on, or the session inside ending with nothing left
//!   to pass on ([`SessionLayer::inner_ended`] may replace it instead, as a failover does). Ending drops
//!   the session inside, which cancels it.
//!
//! A layer writes only its rule: what a command from outside becomes ([`SessionLayer::command`]), what an
//! event from inside becomes ([`SessionLayer::event`]), and, where it starts background work (the cache's
//! fetches from its shared tier), what the work's answer does ([`SessionLayer::note`]). The hooks may
//! await (a budget's ledger, an arm opening); the relay waits for them, as a layer in the middle of its
//! rule should not be read from.
//!
//! The order of the layers is [`crate::session_stack`]'s.

use std::collections::VecDeque;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::speech::{SpeechCommand, SpeechEvent, SpeechSession};

/// Each layer's channels towards the layer outside it: small, since each side's own channel already
/// buffers.
pub const LAYER_CHANNEL: usize = 8;

/// One layer's rule; see the module docs.
#[async_trait]
pub trait SessionLayer: Send + 'static {
    /// What the layer's background work tells it (the cache's fetched sentences); `()` where it starts
    /// none.
    type Note: Send + 'static;

    /// Whether a command from outside may be read now (every command it led to has been taken already).
    /// The switcher holds the first one until it could announce a switch.
    fn takes_command(&self, _ctx: &Ctx<Self::Note>) -> bool {
        true
    }

    /// A command from outside.
    async fn command(&mut self, command: SpeechCommand, ctx: &mut Ctx<Self::Note>);

    /// An event from the session inside; passed on unchanged by default.
    async fn event(&mut self, event: SpeechEvent, ctx: &mut Ctx<Self::Note>) {
        ctx.tell(event);
    }

    /// The session inside has ended (its event channel closed); by default the layer ends once what it
    /// holds for the scheduler has been taken.
    async fn inner_ended(&mut self, ctx: &mut Ctx<Self::Note>) {
        ctx.end();
    }

    /// An answer from the layer's background work ([`Ctx::notes`]).
    async fn note(&mut self, _note: Self::Note, _ctx: &mut Ctx<Self::Note>) {}
}

/// What a layer's hooks act on: the session inside and the two queues.
pub struct Ctx<N> {
    inner: SpeechSession,
    inner_ended: bool,
    to_inner: VecDeque<SpeechCommand>,
    to_outer: VecDeque<SpeechEvent>,
    ending: bool,
    notes: mpsc::UnboundedSender<N>,
    cancel: CancellationToken,
}

impl<N> Ctx<N> {
    /// Queues `command` for the session inside.
    pub fn send_on(&mut self, command: SpeechCommand) {
        self.to_inner.push_back(command);
    }

    /// Queues `event` for the layer outside.
    pub fn tell(&mut self, event: SpeechEvent) {
        self.to_outer.push_back(event);
    }

    /// Commands queued for the session inside and not yet taken.
    pub fn commands_queued(&self) -> usize {
        self.to_inner.len()
    }

    /// Events queued for the layer outside and not yet taken.
    pub fn events_queued(&self) -> usize {
        self.to_outer.len()
    }

    /// Drops what is queued for the session inside (a session being replaced).
    pub fn clear_commands(&mut self) {
        self.to_inner.clear();
    }

    /// The layer ends once what it holds for the layer outside has been taken.
    pub fn end(&mut self) {
        self.ending = true;
    }

    /// The session inside.
    pub fn inner(&self) -> &SpeechSession {
        &self.inner
    }

    /// Puts `session` inside in place of the current one (which is dropped, and so cancelled).
    pub fn replace_inner(&mut self, session: SpeechSession) {
        self.inner = session;
        self.inner_ended = false;
    }

    /// Where the layer's background work sends its answers ([`SessionLayer::note`]).
    pub fn notes(&self) -> mpsc::UnboundedSender<N> {
        self.notes.clone()
    }

    /// The conversation's cancellation.
    pub fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }
}

/// What a turn of the relay took in.
enum Step<N> {
    None,
    Command(SpeechCommand),
    Event(SpeechEvent),
    InnerEnded,
    Note(N),
}

/// Puts `layer` around `inner`, in a relay task on the current tracker; see the module docs. The session
/// it returns is what the layer outside speaks to (the format and voice are `inner`'s).
pub fn relay<L: SessionLayer>(layer: L, inner: SpeechSession, cancel: CancellationToken) -> SpeechSession {
    let (commands, from_outer) = mpsc::channel(LAYER_CHANNEL);
    let (to_outer, events) = mpsc::channel(LAYER_CHANNEL);
    let (format, voice) = (inner.format.clone(), inner.voice.clone());
    let (notes, from_work) = mpsc::unbounded_channel();
    let ctx = Ctx { inner, inner_ended: false, to_inner: VecDeque::new(), to_outer: VecDeque::new(), ending: false, notes, cancel };
    drop(crate::tasks::spawn(run(layer, ctx, from_outer, to_outer, from_work)));
    SpeechSession { commands, events, format, voice }
}

async fn run<L: SessionLayer>(
    mut layer: L,
    mut ctx: Ctx<L::Note>,
    mut from_outer: mpsc::Receiver<SpeechCommand>,
    to_outer: mpsc::Sender<SpeechEvent>,
    mut from_work: mpsc::UnboundedReceiver<L::Note>,
) {
    let mut step = Step::None;
    loop {
        if ctx.ending && ctx.to_outer.is_empty() {
            return;
        }
        let takes_command = ctx.to_inner.is_empty() && layer.takes_command(&ctx);
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => return,
            // The layer outside has ended: whatever the session inside is doing, let it go.
            _ = to_outer.closed() => return,
            permit = to_outer.reserve(), if !ctx.to_outer.is_empty() => {
                let Ok(permit) = permit else { return };
                let event = ctx.to_outer.pop_front().expect("an event to send");
                let closed = matches!(event, SpeechEvent::Closed { .. });
                permit.send(event);
                if closed {
                    return;
                }
            }
            permit = ctx.inner.commands.reserve(), if !ctx.to_inner.is_empty() => {
                // A session that is gone says so on its event channel; its commands are dropped.
                match permit {
                    Ok(permit) => permit.send(ctx.to_inner.pop_front().expect("a command to send")),
                    Err(_) => ctx.to_inner.clear(),
                }
            }
            Some(note) = from_work.recv() => step = Step::Note(note),
            command = from_outer.recv(), if takes_command && !ctx.ending => match command {
                Some(command) => step = Step::Command(command),
                // The layer outside let go: dropping the session inside cancels it.
                None => return,
            },
            event = ctx.inner.events.recv(), if ctx.to_outer.is_empty() && !ctx.inner_ended && !ctx.ending => match event {
                Some(event) => step = Step::Event(event),
                None => {
                    ctx.inner_ended = true;
                    step = Step::InnerEnded;
                }
            },
        }
        // Outside the select: its branches borrow the channels.
        match std::mem::replace(&mut step, Step::None) {
            Step::Command(command) => layer.command(command, &mut ctx).await,
            Step::Event(event) => layer.event(event, &mut ctx).await,
            Step::InnerEnded => layer.inner_ended(&mut ctx).await,
            Step::Note(note) => layer.note(note, &mut ctx).await,
            Step::None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    //! The relay's rules, once, in virtual time, with a layer that adds nothing: order, backpressure,
    //! cancellation and the ways it ends. Each layer's own rule is tested beside it.
    use super::*;
    use crate::protocol::AudioFormat;
    use crate::speech::SpeechRequest;
    use bytes::Bytes;
    use std::time::Duration;

    struct Through;

    #[async_trait]
    impl SessionLayer for Through {
        type Note = ();
        async fn command(&mut self, command: SpeechCommand, ctx: &mut Ctx<()>) {
            ctx.send_on(command);
        }
    }

    /// A session whose far ends the test holds: what the layer sends it, and what it says.
    fn voice() -> (SpeechSession, mpsc::Receiver<SpeechCommand>, mpsc::Sender<SpeechEvent>) {
        let (commands, heard) = mpsc::channel(4);
        let (say, events) = mpsc::channel(4);
        (SpeechSession { commands, events, format: AudioFormat::pcm_s16le(24_000), voice: "v".into() }, heard, say)
    }

    fn speak(index: u32) -> SpeechCommand {
        SpeechCommand::Speak(SpeechRequest { index, text: format!("Sentence {index}."), language: None, rate: None, silence_ms: 0 })
    }

    fn audio(index: u32) -> SpeechEvent {
        SpeechEvent::Audio { index, pcm: Bytes::from_static(&[0, 0]) }
    }

    #[tokio::test(start_paused = true)]
    async fn commands_and_events_pass_in_their_order() {
        let (inner, mut heard, say) = voice();
        let mut outer = relay(Through, inner, CancellationToken::new());
        for i in 0..3 {
            outer.commands.send(speak(i)).await.unwrap();
        }
        for i in 0..3 {
            assert!(matches!(heard.recv().await, Some(SpeechCommand::Speak(r)) if r.index == i));
            say.send(audio(i)).await.unwrap();
        }
        for i in 0..3 {
            assert!(matches!(outer.events.recv().await, Some(SpeechEvent::Audio { index, .. }) if index == i));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_side_that_does_not_read_holds_the_other_back_within_the_channels() {
        let (inner, _heard, say) = voice();
        let outer = relay(Through, inner, CancellationToken::new());
        // The layer outside never reads: the voice can get at most its own channel, the relay's one held
        // event and the relay's channel ahead of it.
        let mut sent = 0;
        while tokio::time::timeout(Duration::from_secs(1), say.send(audio(sent))).await.is_ok() {
            sent += 1;
            assert!(sent < 100, "the relay read without bound");
        }
        assert_eq!(sent as usize, LAYER_CHANNEL + 1 + 4);
        drop(outer);
    }

    #[tokio::test(start_paused = true)]
    async fn cancellation_or_the_outside_letting_go_drops_the_session_inside() {
        for cancelled in [true, false] {
            let (inner, mut heard, _say) = voice();
            let cancel = CancellationToken::new();
            let outer = relay(Through, inner, cancel.clone());
            if cancelled {
                cancel.cancel();
                tokio::time::sleep(Duration::from_millis(1)).await;
                assert!(outer.events.is_closed() || outer.commands.is_closed(), "the relay ended");
            } else {
                drop(outer);
            }
            // The session inside sees its commands end: it is dropped, which cancels it.
            assert!(tokio::time::timeout(Duration::from_secs(1), heard.recv()).await.expect("dropped").is_none());
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_relay_ends_after_passing_on_a_close_or_what_was_left_when_the_session_ended() {
        // A close: passed on, then the relay ends.
        let (inner, _heard, say) = voice();
        let mut outer = relay(Through, inner, CancellationToken::new());
        say.send(SpeechEvent::Closed { billed_characters: None }).await.unwrap();
        assert!(matches!(outer.events.recv().await, Some(SpeechEvent::Closed { .. })));
        assert!(outer.events.recv().await.is_none());
        // A session that ends: what it said is passed on first.
        let (inner, _heard, say) = voice();
        let mut outer = relay(Through, inner, CancellationToken::new());
        say.send(audio(0)).await.unwrap();
        drop(say);
        assert!(matches!(outer.events.recv().await, Some(SpeechEvent::Audio { index: 0, .. })));
        assert!(outer.events.recv().await.is_none());
    }

    /// A layer whose background work answers it: what `note` hears.
    struct Echo;

    #[async_trait]
    impl SessionLayer for Echo {
        type Note = u32;
        async fn command(&mut self, command: SpeechCommand, ctx: &mut Ctx<u32>) {
            if let SpeechCommand::Speak(r) = &command {
                let (notes, index) = (ctx.notes(), r.index);
                crate::tasks::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let _ = notes.send(index);
                });
            }
        }
        async fn note(&mut self, index: u32, ctx: &mut Ctx<u32>) {
            ctx.tell(audio(index));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn background_work_answers_its_layer() {
        let (inner, _heard, _say) = voice();
        let mut outer = relay(Echo, inner, CancellationToken::new());
        outer.commands.send(speak(7)).await.unwrap();
        assert!(matches!(outer.events.recv().await, Some(SpeechEvent::Audio { index: 7, .. })));
    }
}
