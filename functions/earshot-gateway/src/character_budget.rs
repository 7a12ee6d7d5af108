//! Characters spoken per owner per rolling hour: no one caller runs up the voices' bill past
//! `max_chars_per_owner_hour`, however many conversations it opens and wherever they run.
//!
//! A conversation reserves its characters in blocks (1,000, or a quarter of a smaller budget: [`block`]) from
//! its owner's budget: the first block before anything upstream is called (less than a block left: `429
//! character_budget_spent` with `Retry-After`, the seconds until a block's worth of spending lapses), the next
//! ones as its sentences use them up. A relay between the scheduler and the voice's session charges each
//! sentence before the voice gets it; a sentence the budget cannot cover is not spoken, the sentences before
//! it are heard whole, and the answer ends with an `error` event `character_budget_spent`. What a conversation
//! reserved and did not speak is given back as its session closes (before `done`). Where the budget ended an
//! answer, the rest of the hour's budget is taken and stays spent, so that the caller's next request is refused
//! before any speech rather than started on a remnant and cut at its first sentence.
//!
//! Where every conversation runs in this process (`earshot serve`) the budgets are kept here; where they run
//! in other processes too (Lambda), in the shared store beside the owner's places
//! ([`ConversationStore::reserve_chars`]). The one `local` owner (no token, no IAM caller) has no budget of
//! its own, as it has no places: every caller of such a server is that owner, and the deployment's spend
//! alarms guard it.
//!
//! What it costs at first audio: one store round trip at the start, made with the owner's place's; the
//! scheduler's sentences pass through one more small channel, and a store round trip every [`BLOCK`]
//! characters (about every ten sentences) waits before the sentence that needs it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use earshot_core::budget::{Grants, Reservation, SpendWindow, WINDOW_MINUTES};
use earshot_core::error::codes::CHARACTER_BUDGET_SPENT;
use earshot_core::session_layer::{Ctx, SessionLayer};
use earshot_core::speech::{SpeechCommand, SpeechError, SpeechEvent};
use earshot_core::store::ConversationStore;
use earshot_core::tasks::Tasks;

use crate::api_error::ApiError;
use crate::interrupts::Interrupts;
use crate::owner::Owner;

/// Characters a conversation reserves at a time, at most.
pub const BLOCK: u64 = 1_000;

/// Characters a conversation reserves at a time under `limit`: [`BLOCK`], or a quarter of a smaller budget
/// (so that one conversation never holds all of it); also the least a new conversation must find left.
pub fn block(limit: u64) -> u64 {
    BLOCK.min(limit / 4).max(1)
}
fn now_s() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Where the budgets are kept.
#[derive(Clone)]
pub enum Ledger {
    /// In this process: each owner's spending by key.
    Local(Arc<Mutex<HashMap<String, SpendWindow>>>),
    /// In the shared store, for every process that uses it.
    Shared(Arc<dyn ConversationStore>),
}

impl Ledger {
    /// The shared store where conversations run in other processes too, else this process.
    pub fn for_interrupts(interrupts: &Interrupts) -> Self {
        match interrupts {
            Interrupts::Shared { store, .. } => Ledger::Shared(store.clone()),
            _ => Ledger::Local(Arc::default()),
        }
    }

    /// Reserves up to `want` of `key`'s hour under `limit`, none unless `at_least` are left.
    async fn reserve(&self, key: &str, want: u64, at_least: u64, limit: u64) -> Result<Reservation, SpeechError> {
        self.reserve_within(key, WINDOW_MINUTES, want, at_least, limit).await
    }

    /// Reserves up to `want` of what `key` may spend in `span_minutes` under `limit` (a key is always used
    /// with one span).
    pub(crate) async fn reserve_within(&self, key: &str, span_minutes: u64, want: u64, at_least: u64, limit: u64) -> Result<Reservation, SpeechError> {
        match self {
            Ledger::Local(budgets) => {
                let mut budgets = budgets.lock().unwrap_or_else(|p| p.into_inner());
                let window = budgets.entry(key.to_string()).or_insert_with(|| SpendWindow::spanning(span_minutes));
                Ok(window.reserve(now_s(), want, at_least, limit))
            }
            Ledger::Shared(store) => store.reserve_chars(key, span_minutes, want, at_least, limit).await,
        }
    }

    /// Gives back `grants` of `key`'s hour, each in the minute it was reserved in.
    pub(crate) async fn refund(&self, key: &str, grants: &Grants) -> Result<(), SpeechError> {
        match self {
            Ledger::Local(budgets) => {
                let mut budgets = budgets.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(window) = budgets.get_mut(key) {
                    window.refund(now_s(), grants);
                }
                // Owners whose spending has all lapsed are forgotten: a long-running server does not grow.
                let now = now_s();
                budgets.retain(|_, window| window.spent(now) > 0);
                Ok(())
            }
            Ledger::Shared(store) => store.refund_chars(key, grants).await,
        }
    }
}

/// One conversation's share of its owner's budget, or of the deployment's ceiling.
pub struct Budget {
    ledger: Ledger,
    key: String,
    limit: u64,
    /// Whether this is the deployment's ceiling ([`crate::spend_ceiling`]) rather than the owner's budget.
    ceiling: bool,
    reserved: u64,
    used: u64,
    /// Each reservation, `(minute, characters)`, oldest first: what is not spoken goes back where it came from.
    grants: Vec<(u64, u64)>,
    tasks: Tasks,
}

/// The message of a caller whose budget is spent.
fn spent_message(limit: u64) -> String {
    format!("this caller has spoken the {limit} characters it may in an hour; the budget frees as the hour rolls on")
}

impl Budget {
    /// The first block of `owner`'s budget for a new conversation, or `429 character_budget_spent`.
    /// `limit` none (or the `local` owner): no budget.
    pub async fn open(ledger: &Ledger, owner: &Owner, limit: Option<u64>, tasks: &Tasks) -> Result<Option<Budget>, ApiError> {
        let Some(limit) = limit.filter(|_| *owner != Owner::local()) else { return Ok(None) };
        Self::first_block(ledger, owner.budget_key(), limit, false, tasks).await.map(Some)
    }

    /// The first block of the deployment's ceiling on characters spoken (`limit` an hour, all callers but
    /// the `local` one together) for `owner`'s new conversation, or `503 spend_ceiling`.
    pub async fn open_ceiling(ledger: &Ledger, owner: &Owner, limit: Option<u64>, tasks: &Tasks) -> Result<Option<Budget>, ApiError> {
        let Some(limit) = limit.filter(|_| *owner != Owner::local()) else { return Ok(None) };
        Self::first_block(ledger, crate::spend_ceiling::deployment().budget_key(), limit, true, tasks).await.map(Some)
    }

    /// Reserves the first block of `key`'s hour under `limit`, or the refusal of the budget it is (`ceiling`:
    /// the deployment's, else an owner's).
    async fn first_block(ledger: &Ledger, key: String, limit: u64, ceiling: bool, tasks: &Tasks) -> Result<Budget, ApiError> {
        let first = ledger.reserve(&key, block(limit), block(limit), limit).await.map_err(ApiError::from_upstream)?;
        if first.granted == 0 {
            return Err(match ceiling {
                true => crate::spend_ceiling::refused(crate::spend_ceiling::Limit::Characters, limit, first.retry_after_s),
                false => ApiError::too_many(CHARACTER_BUDGET_SPENT, spent_message(limit), first.retry_after_s.clamp(1, u32::MAX as u64) as u32),
            });
        }
        let grants = vec![(first.minute, first.granted)];
        Ok(Budget { ledger: ledger.clone(), key, limit, ceiling, reserved: first.granted, used: 0, grants, tasks: tasks.clone() })
    }

    /// The error a sentence this budget cannot cover ends the answer with.
    fn spent(&self) -> SpeechError {
        match self.ceiling {
            true => {
                SpeechError::new(crate::spend_ceiling::SPEND_CEILING, crate::spend_ceiling::message(crate::spend_ceiling::Limit::Characters, self.limit), true)
            }
            false => SpeechError::new(CHARACTER_BUDGET_SPENT, spent_message(self.limit), false),
        }
    }

    /// Charges `chars` for a sentence, reserving more when they are not covered: `Err` where the budget
    /// cannot cover them (the sentence is not to be spoken).
    async fn charge(&mut self, chars: u64) -> Result<(), SpeechError> {
        if self.used + chars > self.reserved {
            let needed = self.used + chars - self.reserved;
            let more = self.ledger.reserve(&self.key, needed.max(block(self.limit)), needed, self.limit).await?;
            self.take(more);
            if self.used + chars > self.reserved {
                // Spent: the rest of the hour's budget is taken and stays spent, so the caller's next request
                // is refused before any speech rather than started on a remnant and cut at its first sentence.
                if let Ok(rest) = self.ledger.reserve(&self.key, self.limit, 1, self.limit).await {
                    self.take(rest);
                }
                self.used = self.reserved;
                return Err(self.spent());
            }
        }
        self.used += chars;
        Ok(())
    }

    fn take(&mut self, granted: Reservation) {
        if granted.granted > 0 {
            self.reserved += granted.granted;
            self.grants.push((granted.minute, granted.granted));
        }
    }

    /// What was reserved and not spoken, as the latest reservations' parts: `(minute, characters)`.
    fn unspoken(&self) -> Vec<(u64, u64)> {
        let mut left = self.reserved - self.used;
        let mut back = Vec::new();
        for &(minute, granted) in self.grants.iter().rev() {
            if left == 0 {
                break;
            }
            back.push((minute, granted.min(left)));
            left -= granted.min(left);
        }
        back
    }

    /// Gives back now what was reserved and not spoken (the session closed: nothing more is spoken).
    async fn settle(&mut self) {
        let unspoken = self.reserved - self.used;
        if unspoken == 0 {
            return;
        }
        match self.ledger.refund(&self.key, &self.unspoken()).await {
            Ok(()) => self.reserved = self.used,
            Err(e) => tracing::warn!(
                "cannot give back {unspoken} unspoken characters of an owner's budget (they lapse within the hour): {}",
                earshot_core::redact::redact(&e.to_string())
            ),
        }
    }
}

impl Drop for Budget {
    /// Gives back what was reserved and not spoken, in a task (a store call).
    fn drop(&mut self) {
        let unspoken = self.reserved - self.used;
        if unspoken == 0 {
            return;
        }
        let (ledger, key, grants) = (self.ledger.clone(), std::mem::take(&mut self.key), self.unspoken());
        self.tasks.spawn(async move {
            if let Err(e) = ledger.refund(&key, &grants).await {
                tracing::warn!(
                    "cannot give back {unspoken} unspoken characters of an owner's budget (they lapse within the hour): {}",
                    earshot_core::redact::redact(&e.to_string())
                );
            }
        });
    }
}

/// The budgets as a layer around a conversation's session ([`earshot_core::session_layer`]): each sentence
/// is charged before the voice gets it, to its owner's budget and to the deployment's ceiling where there
/// is one. A sentence a budget cannot cover is not sent; the voice is told to finish the sentences it has,
/// and the session's close is turned into that budget's failure (`character_budget_spent`, or
/// `spend_ceiling`), so that the audio of every sentence charged before it is heard whole and the answer
/// ends there.
pub struct Charging {
    /// The owner's budget, then the ceiling's: a sentence is charged to each in turn.
    budgets: Vec<Budget>,
    /// The conversation's lexicon and language: a sentence is charged as the voice will be sent it, after
    /// the lexicon's rewrites (an entry such as `AWS = Amazon Web Services` sends more than is written).
    lexicon: Option<(std::sync::Arc<earshot_core::text::Lexicon>, Option<earshot_core::language::Language>)>,
    /// The refusal, until the session's close reports it.
    refusal: Option<SpeechError>,
    /// A sentence was refused: what the scheduler still sends is not spoken.
    refused: bool,
}

impl Charging {
    /// The layer charging `budgets` (at least one), nothing refused yet.
    pub fn new(budgets: Vec<Budget>) -> Self {
        Charging { budgets, lexicon: None, refusal: None, refused: false }
    }

    /// Each sentence charged as `lexicon` rewrites it in `language` (the conversation's, where the sentence
    /// names none).
    pub fn after(mut self, lexicon: Option<std::sync::Arc<earshot_core::text::Lexicon>>, language: Option<earshot_core::language::Language>) -> Self {
        self.lexicon = lexicon.map(|l| (l, language));
        self
    }

    /// The characters `request` costs: what the voice is sent (after SSML's rendering outside this layer,
    /// and the lexicon's inside it), and the silence given with it.
    fn cost(&self, request: &earshot_core::speech::SpeechRequest) -> u64 {
        let sent = match &self.lexicon {
            Some((lexicon, language)) => lexicon.apply(&request.text, request.language.as_ref().or(language.as_ref())).chars().count(),
            None => request.text.chars().count(),
        };
        sent as u64 + earshot_core::budget::silence_chars(request.silence_ms)
    }
}

#[async_trait]
impl SessionLayer for Charging {
    type Note = ();

    async fn command(&mut self, command: SpeechCommand, ctx: &mut Ctx<()>) {
        if self.refused {
            return;
        }
        if let SpeechCommand::Speak(request) = &command {
            let charge = self.cost(request);
            for at in 0..self.budgets.len() {
                if let Err(e) = self.budgets[at].charge(charge).await {
                    for earlier in &mut self.budgets[..at] {
                        earlier.used = earlier.used.saturating_sub(charge);
                    }
                    // What an earlier budget charged for the sentence is not spent (it is not spoken), and is
                    // given back as the session closes. The session lives on (dropping it would cancel it)
                    // until the scheduler, told of the refusal at the session's close, lets go.
                    (self.refusal, self.refused) = (Some(e), true);
                    ctx.send_on(SpeechCommand::Finish);
                    return;
                }
            }
        }
        ctx.send_on(command);
    }

    async fn event(&mut self, event: SpeechEvent, ctx: &mut Ctx<()>) {
        let SpeechEvent::Closed { billed_characters } = event else { return ctx.tell(event) };
        // Given back before the scheduler sends `done`: the caller's next request sees it.
        for budget in &mut self.budgets {
            budget.settle().await;
        }
        match self.refusal.take() {
            Some(e) => {
                // The cut ends the answer, but what the voice billed for it is still counted.
                if let Some(characters) = billed_characters {
                    ctx.tell(SpeechEvent::Billed { characters });
                }
                ctx.tell(SpeechEvent::Failed(e));
            }
            None => ctx.tell(event),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(name: &str) -> Owner {
        Owner::subject(name)
    }

    #[tokio::test]
    async fn a_conversation_reserves_in_blocks_and_gives_back_what_it_did_not_speak() {
        let ledger = Ledger::Local(Arc::default());
        let tasks = Tasks::new();
        let mut budget = Budget::open(&ledger, &owner("a"), Some(5_000), &tasks).await.unwrap().expect("a budget");
        assert_eq!(budget.reserved, BLOCK);
        budget.charge(900).await.unwrap();
        budget.charge(300).await.unwrap();
        assert_eq!((budget.reserved, budget.used), (2_000, 1_200), "a second block when the first ran out");
        budget.settle().await;
        assert_eq!(budget.reserved, 1_200, "settled as the session closes");
        drop(budget);
        tasks.close();
        tasks.wait().await;
        let Ledger::Local(budgets) = &ledger else { unreachable!() };
        assert_eq!(budgets.lock().unwrap().get_mut(&owner("a").budget_key()).unwrap().spent(now_s()), 1_200);
        // The local owner, and no limit, have no budget.
        assert!(Budget::open(&ledger, &Owner::local(), Some(10), &tasks).await.unwrap().is_none());
        assert!(Budget::open(&ledger, &owner("a"), None, &tasks).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_sentence_the_budget_cannot_cover_is_refused_and_the_next_request_too() {
        let ledger = Ledger::Local(Arc::default());
        let tasks = Tasks::new();
        // A budget of 100 is taken 25 at a time: one conversation never holds all of it.
        let mut budget = Budget::open(&ledger, &owner("b"), Some(100), &tasks).await.unwrap().unwrap();
        assert_eq!(budget.reserved, 25);
        budget.charge(60).await.unwrap();
        let error = budget.charge(60).await.unwrap_err();
        assert_eq!(error.code, CHARACTER_BUDGET_SPENT);
        drop(budget);
        tasks.close();
        tasks.wait().await;
        let refused = Budget::open(&ledger, &owner("b"), Some(100), &tasks).await.err().expect("refused");
        assert_eq!((refused.status.as_u16(), refused.error.code.as_str()), (429, CHARACTER_BUDGET_SPENT));
        assert!(refused.retry_after.is_some_and(|s| s > 3_000), "{:?}", refused.retry_after);
        assert!(Budget::open(&ledger, &owner("c"), Some(100), &tasks).await.unwrap().is_some(), "another caller has its own");
    }

    #[tokio::test]
    async fn an_answer_the_budget_cuts_still_counts_what_the_voice_billed() {
        use earshot_core::protocol::AudioFormat;
        use earshot_core::speech::{SpeechCommand, SpeechRequest, SpeechSession};
        let ledger = Ledger::Local(Arc::default());
        let tasks = Tasks::new();
        let budget = Budget::open(&ledger, &owner("d"), Some(100), &tasks).await.unwrap().unwrap();
        // A voice that closes, having billed 42 characters, once it is told to finish.
        let (commands, mut voice_commands) = tokio::sync::mpsc::channel(8);
        let (voice_events, events) = tokio::sync::mpsc::channel(8);
        tokio::spawn(async move {
            while let Some(command) = voice_commands.recv().await {
                if matches!(command, SpeechCommand::Finish) {
                    let _ = voice_events.send(SpeechEvent::Closed { billed_characters: Some(42) }).await;
                }
            }
        });
        let inner = SpeechSession { commands, events, format: AudioFormat::pcm_s16le(16_000), voice: "v".into() };
        let mut session = earshot_core::session_layer::relay(Charging::new(vec![budget]), inner, tokio_util::sync::CancellationToken::new());
        let sentence =
            |index: u32, chars: usize| SpeechCommand::Speak(SpeechRequest { index, text: "x".repeat(chars), language: None, rate: None, silence_ms: 0 });
        session.commands.send(sentence(0, 20)).await.unwrap();
        session.commands.send(sentence(1, 200)).await.unwrap();
        let billed = session.events.recv().await;
        assert!(matches!(billed, Some(SpeechEvent::Billed { characters: 42 })), "{billed:?}");
        let failed = session.events.recv().await;
        assert!(matches!(&failed, Some(SpeechEvent::Failed(e)) if e.code == CHARACTER_BUDGET_SPENT), "{failed:?}");
    }

    #[tokio::test]
    async fn a_sentence_is_charged_as_sent_after_the_lexicon_with_its_silence() {
        use earshot_core::speech::SpeechRequest;
        let ledger = Ledger::Local(Arc::default());
        let tasks = Tasks::new();
        let budget = Budget::open(&ledger, &owner("e"), Some(1_000), &tasks).await.unwrap().unwrap();
        let lexicon = Arc::new(earshot_core::text::Lexicon::parse("AWS = Amazon Web Services").unwrap());
        let charging = Charging::new(vec![budget]).after(Some(lexicon), None);
        let request = |text: &str, silence_ms| SpeechRequest { index: 0, text: text.into(), language: None, rate: None, silence_ms };
        assert_eq!(charging.cost(&request("Use AWS.", 0)), "Use Amazon Web Services.".chars().count() as u64, "the rewrite is what is sent");
        assert_eq!(charging.cost(&request("Hi.", 2_000)), 3 + 30, "two seconds of silence at 15 characters a second");
        assert_eq!(charging.cost(&request("Hi.", 1)), 3 + 1, "any silence costs at least one");
    }

    #[tokio::test]
    async fn a_sentence_past_the_ceiling_ends_the_answer_with_spend_ceiling_and_its_owner_is_not_charged_for_it() {
        use earshot_core::protocol::AudioFormat;
        use earshot_core::speech::{SpeechCommand, SpeechRequest, SpeechSession};
        let ledger = Ledger::Local(Arc::default());
        let tasks = Tasks::new();
        let own = Budget::open(&ledger, &owner("f"), Some(10_000), &tasks).await.unwrap().unwrap();
        let ceiling = Budget::open_ceiling(&ledger, &owner("f"), Some(40), &tasks).await.unwrap().unwrap();
        let (commands, mut voice_commands) = tokio::sync::mpsc::channel(8);
        let (voice_events, events) = tokio::sync::mpsc::channel(8);
        tokio::spawn(async move {
            while let Some(command) = voice_commands.recv().await {
                if matches!(command, SpeechCommand::Finish) {
                    let _ = voice_events.send(SpeechEvent::Closed { billed_characters: None }).await;
                }
            }
        });
        let inner = SpeechSession { commands, events, format: AudioFormat::pcm_s16le(16_000), voice: "v".into() };
        let mut session = earshot_core::session_layer::relay(Charging::new(vec![own, ceiling]), inner, tokio_util::sync::CancellationToken::new());
        let sentence =
            |index: u32, chars: usize| SpeechCommand::Speak(SpeechRequest { index, text: "x".repeat(chars), language: None, rate: None, silence_ms: 0 });
        session.commands.send(sentence(0, 20)).await.unwrap();
        session.commands.send(sentence(1, 30)).await.unwrap();
        let failed = session.events.recv().await;
        assert!(matches!(&failed, Some(SpeechEvent::Failed(e)) if e.code == crate::spend_ceiling::SPEND_CEILING), "{failed:?}");
        drop(session);
        tasks.close();
        tasks.wait().await;
        let Ledger::Local(budgets) = &ledger else { unreachable!() };
        let spent = budgets.lock().unwrap().get_mut(&owner("f").budget_key()).unwrap().spent(now_s());
        assert_eq!(spent, 20, "the owner paid for the sentence spoken, not for the one the ceiling refused");
        // The ceiling refuses the next conversation before anything is spoken.
        let refused = Budget::open_ceiling(&ledger, &owner("g"), Some(40), &tasks).await.err().expect("the ceiling is spent");
        assert_eq!((refused.status.as_u16(), refused.error.code.as_str()), (503, crate::spend_ceiling::SPEND_CEILING));
        assert!(refused.retry_after.is_some());
    }
}
