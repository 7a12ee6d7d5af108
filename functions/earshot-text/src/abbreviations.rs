//! The word lists that tell an abbreviation's dot from a full stop.
//!
//! Lists are deliberately short: only abbreviations whose dot is followed by a capitalised word or a
//! number while the sentence goes on need listing. Any abbreviation followed by a lower-case word
//! (`co. at noon`, `etc., and`) already continues its sentence by the general rule.

use crate::language::Language;

/// Lower-cases a short ASCII-ish word into a fixed buffer, so look-ups allocate nothing.
fn lower<'a>(word: &str, buf: &'a mut [u8; 16]) -> Option<&'a str> {
    if word.len() > buf.len() {
        return None;
    }
    for (dst, src) in buf.iter_mut().zip(word.bytes()) {
        *dst = src.to_ascii_lowercase();
    }
    std::str::from_utf8(&buf[..word.len()]).ok()
}

/// The titles the spoken forms say in full before a name (`Dr. Watson` → "Doctor Watson"), as written and
/// as said: one table, so that every title the voice is sent in full is one the segmenter reads past
/// ([`is_title`] holds each: a test says so).
pub const SPOKEN_TITLES_EN: [(&str, &str); 5] = [("Dr", "Doctor"), ("Mr", "Mister"), ("Mrs", "Missus"), ("Ms", "Miz"), ("Prof", "Professor")];

/// Whether a full stop after `word` may be an abbreviation's rather than a sentence's end, in a text of
/// `language`: the word lists here taken together (titles, words before a number, abbreviations that
/// never end a sentence) and the abbreviations of companies, places and lists (`etc.`, `Inc.`, `Ave.`).
/// What the idle release asks before it releases a sentence early ([`crate::certainty`]); ordinary words
/// that double as abbreviations (`No.`, `in.`) are left out, so that a sentence ending in one is not held.
pub fn is_abbreviation(word: &str, language: Option<&Language>) -> bool {
    let mut buf = [0u8; 16];
    let Some(w) = lower(word, &mut buf) else { return false };
    let listed =
        matches!(w, "etc" | "inc" | "ltd" | "co" | "corp" | "bros" | "dept" | "est" | "ave" | "blvd" | "rd" | "bd" | "av" | "cie" | "env" | "jr" | "sr");
    listed || is_title(word, language) || never_ends(word) || (precedes_number(word) && !matches!(w, "no" | "nos"))
}

/// Titles and other words whose dot is followed by a name: `Dr. Watson`, `St. Michael's`, in a text of
/// `language` (`None`: not known).
pub fn is_title(word: &str, language: Option<&Language>) -> bool {
    let mut buf = [0u8; 16];
    let Some(w) = lower(word, &mut buf) else { return false };
    let english = matches!(
        w,
        "mr" | "mrs"
            | "ms"
            | "mx"
            | "dr"
            | "prof"
            | "st"
            | "mt"
            | "ft"
            | "gen"
            | "sen"
            | "rep"
            | "gov"
            | "pres"
            | "capt"
            | "cpt"
            | "lt"
            | "col"
            | "maj"
            | "sgt"
            | "cmdr"
            | "adm"
            | "rev"
            | "hon"
            | "fr"
            | "br"
            | "sr"
            | "jr"
            | "messrs"
            | "mmes"
            | "msgr"
            | "supt"
            | "insp"
            | "det"
            | "gov't"
            | "esq"
            | "sra"
            | "srta"
            | "lic"
            | "ing"
            | "arq"
    );
    // `bât. C`: a building's letter follows as a name does.
    let french = matches!(w, "mme" | "mlle" | "mgr" | "pr" | "ste" | "mm" | "me" | "bât" | "pl" | "av" | "bd");
    match language.map(Language::as_str) {
        Some("fr") => english || french,
        // Any other language, or none known: `Mme. Curie` is a title there too, but `Me.` is an English
        // word at the end of a sentence.
        _ => english || (french && w != "me"),
    }
}

/// Words whose dot is followed by a number: `p. 55`, `No. 5`, `N°. 1026`, `Fig. 3`.
pub fn precedes_number(word: &str) -> bool {
    let mut buf = [0u8; 16];
    let Some(w) = lower(word, &mut buf) else {
        return word == "N°" || word == "n°";
    };
    matches!(
        w,
        "p" | "pp"
            | "no"
            | "nos"
            | "nr"
            | "vol"
            | "vols"
            | "fig"
            | "figs"
            | "ch"
            | "chap"
            | "sec"
            | "art"
            | "approx"
            | "ca"
            | "cf"
            | "tel"
            | "op"
            | "ed"
            | "eq"
            | "eqs"
            | "pt"
            | "pts"
            | "para"
            | "ver"
            | "v"
            | "vs"
            | "n°"
            | "rm"
            | "apt"
            | "ste"
            | "bldg"
            | "ext"
            | "min"
            | "max"
            | "est"
            | "nº"
            | "jan"
            | "feb"
            | "mar"
            | "apr"
            | "jun"
            | "jul"
            | "aug"
            | "sep"
            | "sept"
            | "oct"
            | "nov"
            | "dec"
            | "a.d"
            // French: `env. 2 300`, `déc. 2026`, and the months cut short.
            | "env"
            | "janv"
            | "févr"
            | "fév"
            | "avr"
            | "juil"
            | "déc"
    )
}

/// A street's type cut short after a house number, before the street's name: `8 pl. Bellecour`,
/// `5 av. Foch`, `12 bd. Haussmann`.
pub fn is_street(word: &str) -> bool {
    let mut buf = [0u8; 16];
    let Some(w) = lower(word, &mut buf) else { return false };
    matches!(w, "pl" | "av" | "bd" | "bld" | "rte" | "ch" | "imp")
}

/// Units written after a number and before another (`5 ft. 6 in.`, `2 lb. 4 oz.`).
pub fn is_unit(word: &str) -> bool {
    let mut buf = [0u8; 16];
    let Some(w) = lower(word, &mut buf) else { return false };
    matches!(w, "ft" | "in" | "yd" | "mi" | "lb" | "lbs" | "oz" | "hr" | "hrs" | "min" | "sec" | "gal" | "qt" | "pt" | "sq" | "cu")
}

/// Dotted abbreviations of places and bodies, which often stand before a name (`U.S. Government`,
/// `U.N. Security Council`). Other dotted abbreviations (`Ph.D.`, `B.C.`) end their sentence before a
/// capitalised word.
pub fn is_proper_abbreviation(word: &str) -> bool {
    let mut buf = [0u8; 16];
    let Some(w) = lower(word, &mut buf) else { return false };
    matches!(w, "u.s" | "u.s.a" | "u.k" | "u.n" | "e.u" | "n.y" | "d.c" | "l.a" | "s.f" | "n.j" | "u.a.e")
}

/// Abbreviations that never end a sentence in practice: `e.g.`, `i.e.`, `vs.`, `cf.`, `viz.`, and French
/// `av.` and `apr.` before `J.-C.`.
pub fn never_ends(word: &str) -> bool {
    let mut buf = [0u8; 16];
    let Some(w) = lower(word, &mut buf) else { return false };
    matches!(w, "e.g" | "i.e" | "vs" | "cf" | "viz" | "a.k.a" | "approx" | "ca" | "resp" | "av" | "apr")
}

/// Abbreviations of a time (`a.m.`, `P.M.`, `B.C.`, `A.D.`): they end a sentence that has a subject
/// (`He left at 6 P.M. Mr. Smith then…`) and go on in an opening time phrase (`In 44 B.C. Caesar…`).
pub fn is_time_of_day(word: &str) -> bool {
    let mut buf = [0u8; 16];
    let Some(w) = lower(word, &mut buf) else { return false };
    matches!(w, "a.m" | "p.m" | "b.c" | "a.d" | "c.e" | "b.c.e")
}

/// Prepositions that open a time phrase (`At 5 a.m. Mr. Smith went`, `On Monday at 6 a.m. Mr. Smith
/// arrived`): a sentence that opens with one has no subject yet when it reaches the time.
pub fn is_time_preposition(word: &str) -> bool {
    let mut buf = [0u8; 16];
    let Some(w) = lower(word, &mut buf) else { return false };
    matches!(w, "at" | "on" | "in" | "by" | "before" | "after" | "until" | "till" | "from" | "since" | "around" | "about" | "during")
}

/// Words that commonly start an English sentence: pronouns, determiners, question words,
/// conjunctions, auxiliaries. After a multi-dot abbreviation (`U.S.`, `E.U.`) such a word starts a
/// new sentence, while any other capitalised word (`U.S. Government`) continues it.
pub fn is_sentence_starter(word: &str) -> bool {
    let mut buf = [0u8; 16];
    let Some(w) = lower(word, &mut buf) else { return false };
    matches!(
        w,
        "i" | "you"
            | "he"
            | "she"
            | "it"
            | "we"
            | "they"
            | "this"
            | "that"
            | "these"
            | "those"
            | "there"
            | "here"
            | "the"
            | "a"
            | "an"
            | "my"
            | "your"
            | "his"
            | "her"
            | "its"
            | "our"
            | "their"
            | "how"
            | "what"
            | "why"
            | "when"
            | "where"
            | "who"
            | "which"
            | "whose"
            | "is"
            | "are"
            | "was"
            | "were"
            | "do"
            | "does"
            | "did"
            | "can"
            | "could"
            | "will"
            | "would"
            | "should"
            | "may"
            | "might"
            | "must"
            | "have"
            | "has"
            | "had"
            | "but"
            | "and"
            | "so"
            | "or"
            | "yet"
            | "if"
            | "as"
            | "in"
            | "on"
            | "at"
            | "for"
            | "with"
            | "after"
            | "before"
            | "then"
            | "now"
            | "also"
            | "however"
            | "please"
            | "let"
            | "let's"
            | "yes"
            | "no"
            | "not"
            | "some"
            | "many"
            | "most"
            | "all"
            | "each"
            | "every"
            | "thanks"
            | "thank"
            | "sure"
            | "ok"
            | "okay"
            | "well"
            | "next"
            | "first"
            | "finally"
            | "meanwhile"
            | "still"
            | "although"
            | "because"
            | "since"
            | "while"
            | "during"
            | "i'm"
            | "it's"
            | "that's"
            | "there's"
            | "we're"
            | "they're"
            | "you're"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_title_the_voice_is_sent_in_full_is_one_the_segmenter_reads_past() {
        for (written, _) in SPOKEN_TITLES_EN {
            assert!(is_title(written, None) && is_abbreviation(written, None), "{written}");
        }
        assert!(is_abbreviation("etc", None) && is_abbreviation("Inc", None) && !is_abbreviation("No", None) && !is_abbreviation("today", None));
    }
}
