use earshot_core::text::*;
use std::time::Instant;
fn main() {
    let mut text = String::new();
    while text.len() < 10_000_000 { text.push_str("The service covers everything you asked about in your last message. It runs the settings you changed earlier this week! "); }
    for chunk in std::env::args().skip(1).map(|a| a.parse::<usize>().unwrap()) {
        let pieces: Vec<&str> = { let mut v=vec![]; let mut i=0; while i<text.len(){ let e=(i+chunk).min(text.len()); v.push(&text[i..e]); i=e;} v };
        let t = Instant::now();
        let mut seg = Segmenter::default(); let mut n=0;
        for p in &pieces { n += seg.push(p).count(); }
        n += seg.flush().count();
        let s = t.elapsed().as_secs_f64();
        println!("chunk {chunk}: {:.1} MB/s ({n} sentences)", text.len() as f64/1e6/s);
    }
}
