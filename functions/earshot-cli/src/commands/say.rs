//! `earshot say`: speak through a running gateway, write the audio as WAV, print the timeline.

use std::path::PathBuf;

use clap::Args;
use earshot_client::{speak, CallOptions, SpeakBody};
use earshot_core::protocol::{Delivery, ServerEvent};

#[derive(Args)]
pub struct SayArgs {
    /// What the agent is asked (the scripted agent knows `brief`, `long` and `pause`).
    #[arg(long, conflicts_with = "text", required_unless_present = "text")]
    prompt: Option<String>,
    /// Text to speak as given.
    #[arg(long)]
    text: Option<String>,
    /// The gateway's base URL.
    #[arg(long, env = "EARSHOT_URL", default_value = "http://127.0.0.1:8787")]
    url: String,
    /// kokoro, polly, synthetic or auto.
    #[arg(long)]
    backend: Option<String>,
    #[arg(long)]
    voice: Option<String>,
    /// incremental or buffered.
    #[arg(long, default_value = "incremental")]
    release: String,
    /// sse or binary.
    #[arg(long, default_value = "sse")]
    format: String,
    /// The audio's format: pcm_8000 … pcm_48000, ulaw_8000, alaw_8000, opus_48000, mp3_24000, aac_24000
    /// or flac_24000 (the gateway's default when left out). The WAV file is 16-bit PCM at its rate
    /// whatever it came as; a file named `*.opus`, `*.ogg`, `*.mp3`, `*.aac` or `*.flac` gets a
    /// compressed answer as it came.
    #[arg(long)]
    output_format: Option<String>,
    /// How fast to speak, 0.5 to 2.0 (1: the voice's own; the gateway's default when left out).
    #[arg(long)]
    rate: Option<f64>,
    /// `ssml`: the text (or the agent's answer) is SSML of the gateway's portable subset.
    #[arg(long)]
    markup: Option<String>,
    /// Where to write the audio.
    #[arg(long, short, default_value = "answer.wav")]
    out: PathBuf,
    /// Print the timeline as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Print, under each sentence, what the Kokoro voice is sent for it: the spoken form its language's
    /// rules give (`$12.50` twelve dollars and fifty cents), to check a pronunciation without reading code.
    /// In the language given (`en`, `fr`, `zh`), else the one the sentence's script is read in.
    #[arg(long)]
    show_spoken: bool,
    /// The answer's language, for `--show-spoken`.
    #[arg(long)]
    language: Option<String>,
    #[command(flatten)]
    access: super::sigv4::Access,
}

pub fn run(args: SayArgs) -> Result<(), String> {
    let delivery = match args.format.as_str() {
        "sse" => Delivery::Sse,
        "binary" => Delivery::Binary,
        other => return Err(format!("unknown format `{other}` (expected sse or binary)")),
    };
    let body = SpeakBody {
        prompt: args.prompt.clone(),
        text: args.text.clone(),
        backend: args.backend.clone(),
        voice: args.voice.clone(),
        release: Some(args.release.clone()),
        format: Some(args.format.clone()),
        output_format: args.output_format.clone(),
        conversation_id: None,
        rate: args.rate,
        markup: args.markup.clone(),
        ..Default::default()
    };
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let signer = args.access.signer(&args.url, &runtime)?;
    let options = CallOptions { delivery, bearer: args.access.token.clone(), signer, ..Default::default() };
    let received = runtime.block_on(speak(&args.url, &body, &options)).map_err(|e| e.to_string())?;
    if !received.audio.is_empty() {
        let as_sent = received.format().is_some_and(|f| f.is_compressed())
            && args.out.extension().is_some_and(|e| ["opus", "ogg", "mp3", "aac", "flac"].iter().any(|x| e.eq_ignore_ascii_case(x)));
        match as_sent {
            true => std::fs::write(&args.out, &received.audio).map_err(|e| format!("cannot write {}: {e}", args.out.display()))?,
            false => received.write_wav(&args.out)?,
        }
    }
    if args.json {
        let out = serde_json::json!({"client": received.marks, "server": received.timeline});
        println!("{}", serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?);
    } else {
        let spoken_in = match (args.show_spoken, args.language.as_deref()) {
            (false, _) => None,
            (true, Some(tag)) => Some(Some(earshot_core::text::language::Language::parse(tag).map_err(|e| format!("--language: {e}"))?)),
            (true, None) => Some(None),
        };
        print_summary(&received, &args.out, spoken_in.as_ref());
    }
    match &received.error {
        Some(e) => Err(format!("the gateway reported an error: {}: {}", e.code, e.message)),
        None if received.timeline.is_none() => Err("the stream ended without `done`".into()),
        None => Ok(()),
    }
}

/// `spoken_in`: print each sentence's spoken form too, in this language (`None` inside: by its script).
fn print_summary(received: &earshot_client::Received, out: &std::path::Path, spoken_in: Option<&Option<earshot_core::text::language::Language>>) {
    let fmt = |v: Option<f64>| v.map(|x| format!("{x:8.1} ms")).unwrap_or_else(|| "       -   ".into());
    if let Some(s) = &received.session {
        println!("backend {} ({}), voice {}, release {}, {} at {} Hz", s.backend, s.backend_reason, s.voice, s.release, s.audio.encoding, s.audio.sample_rate);
    }
    for event in &received.events {
        if let ServerEvent::Sentence(s) = event {
            // A sentence the voice passed over says so at its end.
            let skipped = received.events.iter().find_map(|e| match e {
                ServerEvent::SentenceEnd(end) if end.index == s.index => end.skipped.as_deref(),
                _ => None,
            });
            match skipped {
                Some(why) => println!("  [{}] {}   (not spoken: {why})", s.index, s.text),
                None => println!("  [{}] {}", s.index, s.text),
            }
            if let Some(told) = spoken_in {
                let reading = earshot_core::text::spoken::container_reading(told.as_ref(), &s.text);
                println!("      said: {}", earshot_core::text::spoken::spoken(&s.text, &reading));
            }
        }
    }
    if let Some(t) = &received.timeline {
        let d = t.derive();
        println!("server timeline (since the request arrived)");
        println!("  first agent token      {}", fmt(t.first_agent_token_ms));
        println!("  first sentence complete{}", fmt(t.sentences.first().map(|s| s.complete_ms)));
        println!("  first audio sent       {}   (time to first audio at the server)", fmt(t.first_audio_sent_ms));
        println!("  agent done             {}", fmt(t.agent_done_ms));
        println!("  done                   {}", fmt(t.done_ms));
        println!("  orchestration overhead {}", fmt(d.orchestration_overhead_ms));
        println!("  underruns at real-time playback: {}", d.underruns);
        println!("  sentence  complete   released  tts first   sent first  audio");
        for s in &t.sentences {
            println!(
                "  {:>8}  {}  {}  {}  {}  {:7.0} ms",
                s.index,
                fmt(Some(s.complete_ms)),
                fmt(s.released_ms),
                fmt(s.tts_first_audio_ms),
                fmt(s.first_audio_sent_ms),
                s.audio_ms
            );
        }
    }
    println!("client (since the request was sent)");
    println!("  response headers       {}", fmt(Some(received.marks.response_headers_ms)));
    println!("  first audio decoded    {}", fmt(received.marks.first_audio_decoded_ms));
    println!("  done                   {}", fmt(received.marks.done_ms));
    if !received.audio.is_empty() {
        println!("wrote {} ({:.1} s of audio)", out.display(), received.marks.audio_chunk_ms.iter().sum::<f64>() / 1000.0);
    }
}
