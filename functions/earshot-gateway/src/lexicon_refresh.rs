//! A deployment's lexicon kept where an operator keeps it (an S3 object it edits in place), read again
//! while the process lives. A conversation that opens `every` or more after the last reading starts one in
//! the background, and conversations from then on are said by what it holds. A reading that fails, or a
//! lexicon with a bad line, keeps the one before (and says why in the log), as the token keys do
//! ([`crate::auth::TokenAuth::with_refresh`]).
//!
//! Each conversation takes the lexicon current when it opens, whole: a reading never changes a conversation
//! mid-answer, and the sentence cache keeps sentences said under each version apart (its key holds the
//! lexicon's version).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use earshot_core::text::Lexicon;

/// Reads the lexicon's text from where it is kept.
pub type ReadLexicon = Arc<dyn Fn() -> futures_util::future::BoxFuture<'static, Result<String, String>> + Send + Sync>;

/// The lexicon as last read, and when to read it again.
pub struct LexiconRefresh {
    current: Arc<RwLock<Arc<Lexicon>>>,
    every: Duration,
    read: ReadLexicon,
    /// Where it is kept, for the log.
    whence: String,
    last: Mutex<Instant>,
    running: Arc<AtomicBool>,
}

impl LexiconRefresh {
    /// `first`, read at start from `whence`, read again with `read` once `every` has passed.
    pub fn new(first: Arc<Lexicon>, every: Duration, whence: impl Into<String>, read: ReadLexicon) -> Self {
        LexiconRefresh {
            current: Arc::new(RwLock::new(first)),
            every,
            read,
            whence: whence.into(),
            last: Mutex::new(Instant::now()),
            running: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The lexicon as last read; starts a reading when one is due.
    pub fn current(&self) -> Arc<Lexicon> {
        self.refresh_if_due();
        self.current.read().expect("the lexicon").clone()
    }

    fn refresh_if_due(&self) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        {
            let mut last = self.last.lock().expect("the refresh clock");
            if last.elapsed() < self.every || self.running.swap(true, Ordering::SeqCst) {
                return;
            }
            *last = Instant::now();
        }
        let (read, current, running, whence) = (self.read.clone(), self.current.clone(), self.running.clone(), self.whence.clone());
        // On the tracker of the conversation that found it due: a reading is short, and shutdown waits for it.
        earshot_core::tasks::spawn(async move {
            match read().await.and_then(|text| Lexicon::parse(&text).map_err(|e| e.to_string())) {
                Ok(fresh) => {
                    let mut held = current.write().expect("the lexicon");
                    if held.version() != fresh.version() {
                        tracing::info!("the lexicon read again from {whence}: {} entries (version {})", fresh.entries().len(), fresh.version());
                        *held = Arc::new(fresh);
                    }
                }
                Err(e) => tracing::warn!("cannot read the lexicon again from {whence} (the one read before stays): {e}"),
            }
            running.store(false, Ordering::SeqCst);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(texts: Arc<Mutex<Vec<Result<String, String>>>>) -> ReadLexicon {
        // Each reading takes the next text; the last one stays for any reading after it.
        Arc::new(move || {
            let mut texts = texts.lock().unwrap();
            let next = if texts.len() > 1 { texts.remove(0) } else { texts[0].clone() };
            Box::pin(async move { next })
        })
    }

    /// Asks for the lexicon until its version is not `before` (or a second passes): the reading runs in the background.
    async fn after_a_reading(refresh: &LexiconRefresh, before: &str) -> Arc<Lexicon> {
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            let now = refresh.current();
            if now.version() != before && !refresh.running.load(Ordering::SeqCst) {
                return now;
            }
        }
        refresh.current()
    }

    #[tokio::test]
    async fn a_reading_replaces_the_lexicon_and_a_bad_one_keeps_what_was_read_before() {
        let first = Arc::new(Lexicon::parse("SQL = sequel\n").unwrap());
        let texts = Arc::new(Mutex::new(vec![Ok("SQL = ess cue ell\n".to_string()), Ok("no equals sign\n".to_string()), Err("AccessDenied".to_string())]));
        let refresh = LexiconRefresh::new(first.clone(), Duration::ZERO, "s3://b/k", reader(texts.clone()));
        let second = after_a_reading(&refresh, first.version()).await;
        assert_eq!(second.apply("Use SQL.", None), "Use ess cue ell.");
        // A bad line, then an unreadable object, read again and again: the second reading stays.
        let kept = after_a_reading(&refresh, second.version()).await;
        assert_eq!(kept.version(), second.version());
        assert_eq!(texts.lock().unwrap().len(), 1, "the bad line and the unreadable object were both read");
    }

    #[tokio::test]
    async fn nothing_is_read_before_its_time() {
        let first = Arc::new(Lexicon::parse("SQL = sequel\n").unwrap());
        let texts = Arc::new(Mutex::new(vec![Ok("SQL = ess cue ell\n".to_string())]));
        let refresh = LexiconRefresh::new(first.clone(), Duration::from_secs(300), "s3://b/k", reader(texts.clone()));
        for _ in 0..3 {
            assert_eq!(refresh.current().version(), first.version());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(texts.lock().unwrap().len(), 1, "not read within its five minutes");
    }
}
