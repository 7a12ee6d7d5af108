//! A scripted agent: streams a fixed answer as LLM-like tokens at a chosen rate, with optional pauses
//! (as when an agent calls a tool), through the same interface as a real agent.
//!
//! Scripts are text with marks: `Let me check.{pause:2000} It shipped today.` pauses 2 s after the
//! first sentence and signals the pause to the scheduler, as a tool call would; `{wait:2000}` goes
//! quiet for 2 s without a signal, as a model that stalls does.

use std::time::Duration;

use async_trait::async_trait;
use earshot_core::agent::{AgentError, AgentEvent, AgentInput, AgentSource, AgentStream, AGENT_CHANNEL};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::tokens::llm_tokens;

/// One step of a script.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptItem {
    /// Text to stream as tokens.
    Text(String),
    /// A signalled pause (a tool call).
    Pause(Duration),
    /// Silence with no signal (a stalled model).
    Wait(Duration),
}

/// An answer to stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Script(pub Vec<ScriptItem>);

impl Script {
    /// Parses text with `{pause:MS}` and `{wait:MS}` marks.
    pub fn parse(source: &str) -> Script {
        let mut items = Vec::new();
        let mut rest = source;
        while let Some(start) = rest.find('{') {
            let Some(len) = rest[start..].find('}') else { break };
            let mark = &rest[start + 1..start + len];
            let parsed = mark.split_once(':').and_then(|(kind, ms)| {
                let duration = Duration::from_millis(ms.trim().parse::<u64>().ok()?);
                match kind {
                    "pause" => Some(ScriptItem::Pause(duration)),
                    "wait" => Some(ScriptItem::Wait(duration)),
                    _ => None,
                }
            });
            let Some(item) = parsed else {
                // Not a pause mark after all: keep it as text.
                items.push(ScriptItem::Text(rest[..start + len + 1].to_string()));
                rest = &rest[start + len + 1..];
                continue;
            };
            if start > 0 {
                items.push(ScriptItem::Text(rest[..start].to_string()));
            }
            items.push(item);
            rest = &rest[start + len + 1..];
        }
        if !rest.is_empty() {
            items.push(ScriptItem::Text(rest.to_string()));
        }
        Script(items)
    }

    /// Text as given, with no pauses.
    pub fn plain(text: &str) -> Script {
        Script(vec![ScriptItem::Text(text.to_string())])
    }

    /// The text the script speaks.
    pub fn text(&self) -> String {
        self.0
            .iter()
            .filter_map(|i| match i {
                ScriptItem::Text(t) => Some(t.as_str()),
                ScriptItem::Pause(_) | ScriptItem::Wait(_) => None,
            })
            .collect()
    }
}

/// The built-in sample answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample {
    /// A brief support reply: an acknowledgement, then the substance.
    Brief,
    /// A long explanation in Markdown, several paragraphs and a list.
    Long,
    /// An answer with a tool call between its first sentence and the rest.
    Pause,
    /// The brief reply in French, with what French answers write: an amount in euros, a time, a title.
    French,
    /// The brief reply in Mandarin, with a date, a time and an amount in yuan.
    Mandarin,
}

impl Sample {
    /// Every sample, in the order they are listed.
    pub const ALL: [Sample; 5] = [Sample::Brief, Sample::Long, Sample::Pause, Sample::French, Sample::Mandarin];

    /// The sample's name, as a prompt asks for it (`brief`, `long`, `pause`, `french`, `mandarin`).
    pub fn name(self) -> &'static str {
        match self {
            Sample::Brief => "brief",
            Sample::Long => "long",
            Sample::Pause => "pause",
            Sample::French => "french",
            Sample::Mandarin => "mandarin",
        }
    }

    /// The sample with this name, if any.
    pub fn from_name(name: &str) -> Option<Sample> {
        Sample::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The sample's script source: its text, with any `{pause:MS}` marks.
    pub fn source(self) -> &'static str {
        match self {
            Sample::Brief => {
                "Sure. I found your order, and it shipped this morning from our warehouse in Leeds. \
                 It should arrive by Thursday before 6 p.m. Is there anything else I can help you with?"
            }
            Sample::Long => {
                "Great question! Streaming speech works in three steps.\n\n\
                 1. **Listen to the agent.** The gateway reads the model's answer a few tokens at a time, \
                 as it is written.\n\
                 2. **Find sentences early.** A sentence is sent to the voice the moment it is complete, \
                 so the first words can be heard while the rest is still being written. Abbreviations \
                 like Dr. or e.g. and numbers like 3.14 do not fool it.\n\
                 3. **Speak in order.** Audio streams back sentence by sentence, and the next sentence is \
                 usually ready before the previous one has finished playing.\n\n\
                 The result is that time to first audio depends on the first sentence, not on the whole \
                 answer. For a long answer like this one, that is the difference between a pause of a \
                 second and a pause of ten. See https://example.com/docs/streaming.html for the details."
            }
            Sample::Pause => {
                "Let me check that for you.{pause:2000} Your order shipped this morning. It should arrive \
                 on Thursday, and the tracking number is in your e-mail."
            }
            Sample::French => {
                "Bien sûr, votre commande est partie ce matin de notre entrepôt de Lyon. Elle arrivera \
                 jeudi avant 18 h 30, et la livraison coûte 4,90 €. M. Martin, votre conseiller, reste à \
                 votre disposition."
            }
            Sample::Mandarin => "好的！您的订单今天早上已经从上海仓库发出。预计12月3日下午3:30之前送达，运费是¥12.5。还有什么可以帮您的吗？",
        }
    }

    /// The sample's source, parsed.
    pub fn script(self) -> Script {
        Script::parse(self.source())
    }
}

/// How a scripted answer is cut into the tokens it streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tokens {
    /// Shaped like an LLM's ([`llm_tokens`]): a word with its leading space, punctuation on its own.
    #[default]
    Llm,
    /// Pieces of this many characters, cut anywhere, as a benchmark feeds two systems the very same
    /// stream (`earshot-bench --suites peer` feeds pipecat and earshot pieces of 4).
    Chars(usize),
}

impl Tokens {
    /// The text as this cut makes it.
    pub fn cut(self, text: &str) -> Vec<String> {
        match self {
            Tokens::Llm => llm_tokens(text),
            Tokens::Chars(n) => {
                let chars: Vec<char> = text.chars().collect();
                chars.chunks(n.max(1)).map(|piece| piece.iter().collect()).collect()
            }
        }
    }
}

/// Pace of a scripted agent.
#[derive(Debug, Clone)]
pub struct ScriptedConfig {
    /// Tokens per second. Each token is due a whole number of intervals after the first (after a
    /// pause, after the pause's end), so the pace does not drift by a timer's rounding per token.
    pub tokens_per_second: f64,
    /// Delay before the first token (an LLM's time to first token).
    pub first_token_delay: Duration,
    /// How the answer is cut into tokens.
    pub tokens: Tokens,
}

impl Default for ScriptedConfig {
    fn default() -> Self {
        ScriptedConfig { tokens_per_second: 30.0, first_token_delay: Duration::from_millis(200), tokens: Tokens::Llm }
    }
}

/// The scripted agent.
#[derive(Debug, Clone, Default)]
pub struct ScriptedAgent {
    /// The pace the answers stream at.
    pub config: ScriptedConfig,
    /// Named scripts, answered when a prompt is exactly their name.
    pub scripts: Vec<(String, Script)>,
}

impl ScriptedAgent {
    /// An agent at this pace, with no named scripts: it answers with the samples.
    pub fn new(config: ScriptedConfig) -> Self {
        ScriptedAgent { config, scripts: Vec::new() }
    }

    /// Adds a named script (its source may hold `{pause:MS}` and `{wait:MS}` marks).
    pub fn with_script(mut self, name: &str, source: &str) -> Self {
        self.scripts.push((name.to_string(), Script::parse(source)));
        self
    }

    /// The script for an input: a prompt naming a script or a sample (`brief`, `long`, `pause`,
    /// `french`, `mandarin`) gets it; a prompt in French or Chinese gets the answer in its language (as
    /// a real agent answers in the user's); a prompt mentioning a tool or a pause gets the pause sample,
    /// one asking to explain gets the long one, any other the brief one. Text is spoken as given.
    pub fn script_for(&self, input: &AgentInput) -> Script {
        match input {
            AgentInput::Text(text) => Script::plain(text),
            AgentInput::Prompt { prompt, .. } => {
                let p = prompt.trim().to_lowercase();
                if let Some((_, script)) = self.scripts.iter().find(|(name, _)| name.to_lowercase() == p) {
                    return script.clone();
                }
                if let Some(sample) = Sample::from_name(&p) {
                    return sample.script();
                }
                match earshot_core::language::detect(prompt).as_ref().map(|l| l.as_str()) {
                    Some("fr") => return Sample::French.script(),
                    Some("zh") => return Sample::Mandarin.script(),
                    _ => {}
                }
                let sample = if p.contains("pause") || p.contains("tool") || p.contains("check") {
                    Sample::Pause
                } else if p.contains("explain") || p.contains("how") || p.contains("long") {
                    Sample::Long
                } else {
                    Sample::Brief
                };
                sample.script()
            }
        }
    }

    /// Streams a script through a channel, at the configured pace.
    pub fn stream(&self, script: Script, cancel: CancellationToken) -> AgentStream {
        let (tx, rx) = mpsc::channel(AGENT_CHANNEL);
        let interval = Duration::from_secs_f64(1.0 / self.config.tokens_per_second.max(0.001));
        let first_delay = self.config.first_token_delay;
        let cut = self.config.tokens;
        earshot_core::tasks::spawn(async move {
            let send = |event| {
                let tx = tx.clone();
                let cancel = cancel.clone();
                async move {
                    tokio::select! {
                        _ = cancel.cancelled() => false,
                        sent = tx.send(Ok(event)) => sent.is_ok(),
                    }
                }
            };
            let pause = |duration| {
                let cancel = cancel.clone();
                async move {
                    tokio::select! {
                        _ = cancel.cancelled() => false,
                        _ = tokio::time::sleep(duration) => true,
                    }
                }
            };
            let until = |due: tokio::time::Instant| {
                let cancel = cancel.clone();
                async move {
                    tokio::select! {
                        _ = cancel.cancelled() => false,
                        _ = tokio::time::sleep_until(due) => true,
                    }
                }
            };
            if !pause(first_delay).await {
                return;
            }
            // When the next token is due: none before the first is sent; after a pause, an interval after its end.
            let mut due: Option<tokio::time::Instant> = None;
            for item in script.0 {
                match item {
                    ScriptItem::Text(text) => {
                        for token in cut.cut(&text) {
                            if let Some(at) = due {
                                if !until(at).await {
                                    return;
                                }
                            }
                            due = Some(due.unwrap_or_else(tokio::time::Instant::now) + interval);
                            if !send(AgentEvent::Delta(token)).await {
                                return;
                            }
                        }
                    }
                    ScriptItem::Pause(duration) => {
                        if !send(AgentEvent::Pause).await || !pause(duration).await {
                            return;
                        }
                        due = due.map(|_| tokio::time::Instant::now() + interval);
                    }
                    ScriptItem::Wait(duration) => {
                        if !pause(duration).await {
                            return;
                        }
                        due = due.map(|_| tokio::time::Instant::now() + interval);
                    }
                }
            }
            let _ = send(AgentEvent::Done).await;
        });
        rx
    }
}

#[async_trait]
impl AgentSource for ScriptedAgent {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn start(&self, input: AgentInput, cancel: CancellationToken) -> Result<AgentStream, AgentError> {
        Ok(self.stream(self.script_for(&input), cancel))
    }

    /// Paced as the scripted answers are: a stand-in for a model streams what it is given as a model
    /// would, so that `text` mode exercises the same release path at the same pace (the benches rely on it).
    async fn speak_text(&self, text: String, cancel: CancellationToken) -> Result<AgentStream, AgentError> {
        Ok(self.stream(Script::plain(&text), cancel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pause_marks() {
        let s = Script::parse("One.{pause:250} Two.{wait:5}{pause:x} {x}");
        assert_eq!(
            s.0,
            vec![
                ScriptItem::Text("One.".into()),
                ScriptItem::Pause(Duration::from_millis(250)),
                ScriptItem::Text(" Two.".into()),
                ScriptItem::Wait(Duration::from_millis(5)),
                ScriptItem::Text("{pause:x}".into()),
                ScriptItem::Text(" {x}".into()),
            ]
        );
    }

    #[test]
    fn a_prompt_in_french_or_chinese_is_answered_in_its_language() {
        let agent = ScriptedAgent::default();
        let answer = |prompt: &str| agent.script_for(&AgentInput::prompt(prompt)).text();
        assert_eq!(answer("Bonjour, où en est ma commande, s'il vous plaît ?"), Sample::French.script().text());
        assert_eq!(answer("我的订单什么时候到？"), Sample::Mandarin.script().text());
        assert_eq!(answer("mandarin"), Sample::Mandarin.script().text());
        assert_eq!(answer("Where is my order?"), Sample::Brief.script().text());
    }

    #[tokio::test]
    async fn streams_the_whole_answer_then_done() {
        let agent = ScriptedAgent::new(ScriptedConfig { tokens_per_second: 1000.0, first_token_delay: Duration::ZERO, ..Default::default() });
        let mut rx = agent.start(AgentInput::prompt("pause"), CancellationToken::new()).await.unwrap();
        let (mut text, mut pauses, mut done) = (String::new(), 0, false);
        while let Some(event) = rx.recv().await {
            match event.unwrap() {
                AgentEvent::Delta(t) => text.push_str(&t),
                AgentEvent::Pause => pauses += 1,
                AgentEvent::Done | AgentEvent::DoneUnmarked => done = true,
            }
        }
        assert_eq!(text, Sample::Pause.script().text());
        assert_eq!(pauses, 1);
        assert!(done);
    }

    #[tokio::test]
    async fn cancelling_stops_the_stream() {
        let agent = ScriptedAgent::new(ScriptedConfig { tokens_per_second: 10.0, first_token_delay: Duration::ZERO, ..Default::default() });
        let cancel = CancellationToken::new();
        let mut rx = agent.start(AgentInput::prompt("long"), cancel.clone()).await.unwrap();
        assert!(matches!(rx.recv().await, Some(Ok(AgentEvent::Delta(_)))));
        cancel.cancel();
        // The task ends and drops its sender: the stream closes without Done.
        let mut rest = Vec::new();
        while let Some(e) = rx.recv().await {
            rest.push(e.unwrap());
        }
        assert!(rest.len() <= 1 && !rest.contains(&AgentEvent::Done), "{rest:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn pieces_of_n_characters_come_each_at_its_due_time() {
        // The peer benchmark's stream: "Sure" then ". I f" … at 30 a second, the n-th at n intervals after the
        // first however long each send took (tokio's timer fires at the millisecond at or after the due time, so
        // 233.3 ms reads 234), and a signalled pause moves the rest by its length and one interval.
        let config = ScriptedConfig { tokens_per_second: 30.0, first_token_delay: Duration::from_millis(200), tokens: Tokens::Chars(4) };
        let agent = ScriptedAgent::new(config).with_script("peer", "Sure. I found it.{pause:500}Bye.");
        let started = tokio::time::Instant::now();
        let mut rx = agent.start(AgentInput::prompt("peer"), CancellationToken::new()).await.unwrap();
        let mut seen = Vec::new();
        while let Some(event) = rx.recv().await {
            let at = started.elapsed().as_secs_f64() * 1000.0;
            match event.unwrap() {
                AgentEvent::Delta(t) => seen.push((t, at.round() as u64)),
                AgentEvent::Pause => seen.push(("<pause>".into(), at.round() as u64)),
                AgentEvent::Done | AgentEvent::DoneUnmarked => break,
            }
        }
        let expected: Vec<(String, u64)> = [("Sure", 200), (". I ", 234), ("foun", 267), ("d it", 300), (".", 334), ("<pause>", 334), ("Bye.", 868)]
            .into_iter()
            .map(|(t, ms)| (t.to_string(), ms))
            .collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn a_cut_of_n_characters_keeps_every_character_and_counts_characters_not_bytes() {
        assert_eq!(Tokens::Chars(4).cut("Sure. Ça va ?"), vec!["Sure", ". Ça", " va ", "?"]);
        assert_eq!(Tokens::Chars(2).cut("好的！您"), vec!["好的", "！您"]);
        assert_eq!(Tokens::Llm.cut("Sure. I"), vec!["Sure", ".", " I"]);
    }
}
