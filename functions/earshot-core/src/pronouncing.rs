//! The lexicon as a layer of the session stack: each sentence said as the lexicon says, its words told
//! as written.
//!
//! The layer sits outside the switcher ([`crate::session_stack`]), so every arm a conversation may move
//! to is sent the same rewritten sentence: a failover, or the other arm of an A/B split, says an entry
//! the same way. The sentence cache, inside, keys the sentence as rewritten, so a changed lexicon is a
//! miss and never another entry's sound. The scheduler keeps the written sentence for the client; the
//! words a voice times (those of the sentence it was sent) are mapped back to the written words here,
//! through [`SpokenMap`], so captions, word timings and the heard text show what the answer wrote.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::language::Language;
use crate::session_layer::{relay, Ctx, SessionLayer};
use crate::speech::{SpeechCommand, SpeechEvent, SpeechSession};
use crate::text::Lexicon;
use crate::words::SpokenMap;

/// A sentence sent rewritten and not yet finished.
struct Rewritten {
    written: String,
    spoken: String,
    map: SpokenMap,
}

/// The layer's state; see the module docs.
struct Pronouncing {
    lexicon: Arc<Lexicon>,
    /// The conversation's language, for entries limited to one; a sentence's own overrides it.
    language: Option<Language>,
    live: HashMap<u32, Rewritten>,
}

/// Puts `lexicon` in front of `session`, for a conversation in `language` (where known). A session
/// with an empty lexicon is returned as it is: no layer runs idle.
pub fn wrap(session: SpeechSession, lexicon: Option<Arc<Lexicon>>, language: Option<Language>, cancel: CancellationToken) -> SpeechSession {
    match lexicon.filter(|l| !l.is_empty()) {
        Some(lexicon) => relay(Pronouncing { lexicon, language, live: HashMap::new() }, session, cancel),
        None => session,
    }
}

#[async_trait]
impl SessionLayer for Pronouncing {
    type Note = ();

    async fn command(&mut self, command: SpeechCommand, ctx: &mut Ctx<()>) {
        let mut request = match command {
            SpeechCommand::Speak(request) => request,
            // Prepared as it will be sent: rewritten the same way, nothing kept for it.
            SpeechCommand::Prepare(mut request) => {
                let language = request.language.as_ref().or(self.language.as_ref());
                if let std::borrow::Cow::Owned(spoken) = self.lexicon.apply(&request.text, language) {
                    request.text = spoken;
                }
                ctx.send_on(SpeechCommand::Prepare(request));
                return;
            }
            other => {
                ctx.send_on(other);
                return;
            }
        };
        let language = request.language.as_ref().or(self.language.as_ref());
        let rewritten = match self.lexicon.apply(&request.text, language) {
            std::borrow::Cow::Owned(spoken) => Some(spoken),
            std::borrow::Cow::Borrowed(_) => None,
        };
        if let Some(spoken) = rewritten {
            let map = SpokenMap::new(&request.text, &spoken);
            let written = std::mem::replace(&mut request.text, spoken.clone());
            self.live.insert(request.index, Rewritten { written, spoken, map });
        }
        ctx.send_on(SpeechCommand::Speak(request));
    }

    async fn event(&mut self, event: SpeechEvent, ctx: &mut Ctx<()>) {
        match event {
            SpeechEvent::Words { index, words } => match self.live.get_mut(&index) {
                Some(rewritten) => {
                    let words = rewritten.map.push(words);
                    if !words.is_empty() {
                        ctx.tell(SpeechEvent::Words { index, words });
                    }
                }
                None => ctx.tell(SpeechEvent::Words { index, words }),
            },
            SpeechEvent::Finished { index, report } => {
                // The written words still owed, where the voice timed any (one that times none has its
                // words estimated from the written sentence by the scheduler).
                if let Some(mut rewritten) = self.live.remove(&index) {
                    let rest = rewritten.map.finish();
                    if rewritten.map.timed_any() && !rest.is_empty() {
                        ctx.tell(SpeechEvent::Words { index, words: rest });
                    }
                }
                ctx.tell(SpeechEvent::Finished { index, report });
            }
            SpeechEvent::Switched(switch) => {
                // The new session speaks every unfinished sentence again, from its first word.
                for rewritten in self.live.values_mut() {
                    rewritten.map = SpokenMap::new(&rewritten.written, &rewritten.spoken);
                }
                ctx.tell(SpeechEvent::Switched(switch));
            }
            other => ctx.tell(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AudioFormat, WordTiming};
    use crate::speech::{FinishReport, SpeechRequest};
    use tokio::sync::mpsc;

    fn timed(words: &[&str]) -> Vec<WordTiming> {
        words.iter().enumerate().map(|(i, w)| WordTiming { text: w.to_string(), start_ms: i as f64 * 100.0, end_ms: i as f64 * 100.0 + 80.0 }).collect()
    }

    /// A voice that times each word it was sent, 100 ms apart, and says what it was sent.
    fn voice() -> (SpeechSession, mpsc::Receiver<SpeechCommand>, mpsc::Sender<SpeechEvent>) {
        let (commands, commands_rx) = mpsc::channel(8);
        let (events_tx, events) = mpsc::channel(8);
        (SpeechSession { commands, events, format: AudioFormat::pcm_s16le(24_000), voice: "v".into() }, commands_rx, events_tx)
    }

    #[tokio::test]
    async fn the_voice_is_sent_the_entry_and_the_words_come_back_as_written() {
        let (inner, mut sent, events) = voice();
        let lexicon = Arc::new(Lexicon::parse("SQL = sequel\nkubectl = cube control\n").unwrap());
        let mut outer = wrap(inner, Some(lexicon), None, CancellationToken::new());
        let request = SpeechRequest { index: 0, text: "Run kubectl with SQL.".into(), language: None, rate: None, silence_ms: 0 };
        outer.commands.send(SpeechCommand::Speak(request)).await.unwrap();
        let SpeechCommand::Speak(got) = sent.recv().await.unwrap() else { panic!("a sentence") };
        assert_eq!(got.text, "Run cube control with sequel.");
        events.send(SpeechEvent::Words { index: 0, words: timed(&["Run", "cube", "control", "with", "sequel"]) }).await.unwrap();
        events.send(SpeechEvent::Finished { index: 0, report: FinishReport::default() }).await.unwrap();
        let SpeechEvent::Words { words, .. } = outer.events.recv().await.unwrap() else { panic!("words") };
        let texts: Vec<(&str, f64, f64)> = words.iter().map(|w| (w.text.as_str(), w.start_ms, w.end_ms)).collect();
        // `kubectl` spans both words said for it; `SQL` the one.
        assert_eq!(texts, [("Run", 0.0, 80.0), ("kubectl", 100.0, 280.0), ("with", 300.0, 380.0), ("SQL", 400.0, 480.0)]);
        assert!(matches!(outer.events.recv().await.unwrap(), SpeechEvent::Finished { index: 0, .. }));
    }

    #[tokio::test]
    async fn a_sentence_with_no_entry_and_a_voice_that_times_none_pass_as_they_are() {
        let (inner, mut sent, events) = voice();
        let mut outer = wrap(inner, Some(Arc::new(Lexicon::parse("SQL = sequel\n").unwrap())), None, CancellationToken::new());
        for (index, text) in [(0, "Plain words."), (1, "Some SQL.")] {
            outer.commands.send(SpeechCommand::Speak(SpeechRequest { index, text: text.into(), language: None, rate: None, silence_ms: 0 })).await.unwrap();
        }
        let texts: Vec<String> = [sent.recv().await, sent.recv().await]
            .into_iter()
            .map(|c| match c {
                Some(SpeechCommand::Speak(r)) => r.text,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(texts, ["Plain words.", "Some sequel."]);
        events.send(SpeechEvent::Words { index: 0, words: timed(&["Plain", "words"]) }).await.unwrap();
        events.send(SpeechEvent::Finished { index: 0, report: FinishReport::default() }).await.unwrap();
        events.send(SpeechEvent::Finished { index: 1, report: FinishReport::default() }).await.unwrap();
        assert!(matches!(outer.events.recv().await.unwrap(), SpeechEvent::Words { index: 0, .. }));
        assert!(matches!(outer.events.recv().await.unwrap(), SpeechEvent::Finished { index: 0, .. }));
        // Sentence 1's voice timed nothing: no words are made up here (the scheduler estimates them).
        assert!(matches!(outer.events.recv().await.unwrap(), SpeechEvent::Finished { index: 1, .. }));
    }

    #[tokio::test]
    async fn no_lexicon_or_an_empty_one_adds_no_layer() {
        for lexicon in [None, Some(Arc::new(Lexicon::empty()))] {
            let (inner, _sent, _events) = voice();
            let voice_s_own = inner.commands.clone();
            let outer = wrap(inner, lexicon, None, CancellationToken::new());
            assert!(outer.commands.same_channel(&voice_s_own), "the session is the voice's own, with no relay in front");
        }
    }
}
