//! G.711 μ-law and A-law: 8-bit logarithmic samples, the formats of telephony (Amazon Connect, Twilio
//! media streams, SIP). Written by hand after the ITU-T G.711 reference code, as CPython's `audioop`
//! carries it (its `st_14linear2ulaw`, `st_linear2alaw` and their inverses): a few lines of table-free
//! arithmetic with no crate maintained for it. The tests check every one of the 65,536 samples against
//! vectors `audioop` wrote.

const BIAS: i32 = 0x84;
const CLIP: i32 = 8159;
const QUANT_MASK: u8 = 0x0F;
const SEG_SHIFT: u8 = 4;
const SEG_MASK: u8 = 0x70;
const SIGN_BIT: u8 = 0x80;
const SEG_UEND: [i32; 8] = [0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF];
const SEG_AEND: [i32; 8] = [0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF];

/// The segment `value` falls in: the first whose end it does not pass (8: past them all).
fn segment(value: i32, ends: &[i32; 8]) -> u8 {
    ends.iter().position(|&end| value <= end).unwrap_or(8) as u8
}

/// One 16-bit sample as μ-law.
pub fn linear_to_ulaw(sample: i16) -> u8 {
    let mut value = (sample as i32) >> 2;
    let mask = if value < 0 {
        value = -value;
        0x7F
    } else {
        0xFF
    };
    let value = value.min(CLIP) + (BIAS >> 2);
    let seg = segment(value, &SEG_UEND);
    if seg >= 8 {
        return 0x7F ^ mask;
    }
    ((seg << 4) | ((value >> (seg + 1)) as u8 & QUANT_MASK)) ^ mask
}

/// One μ-law byte as a 16-bit sample.
pub fn ulaw_to_linear(byte: u8) -> i16 {
    let u = !byte;
    let t = ((((u & QUANT_MASK) as i32) << 3) + BIAS) << ((u & SEG_MASK) >> SEG_SHIFT);
    (if u & SIGN_BIT != 0 { BIAS - t } else { t - BIAS }) as i16
}

/// One 16-bit sample as A-law.
pub fn linear_to_alaw(sample: i16) -> u8 {
    let mut value = (sample as i32) >> 3;
    let mask = if value >= 0 {
        0xD5
    } else {
        value = -value - 1;
        0x55
    };
    let seg = segment(value, &SEG_AEND);
    if seg >= 8 {
        return 0x7F ^ mask;
    }
    let shift = if seg < 2 { 1 } else { seg };
    ((seg << SEG_SHIFT) | ((value >> shift) as u8 & QUANT_MASK)) ^ mask
}

/// One A-law byte as a 16-bit sample.
pub fn alaw_to_linear(byte: u8) -> i16 {
    let a = byte ^ 0x55;
    let mut t = ((a & QUANT_MASK) as i32) << 4;
    match (a & SEG_MASK) >> SEG_SHIFT {
        0 => t += 8,
        1 => t += 0x108,
        seg => t = (t + 0x108) << (seg - 1),
    }
    (if a & SIGN_BIT != 0 { t } else { -t }) as i16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tests/g711_vectors.txt`, written by CPython's `audioop` (`tests/write_g711_vectors.py`): for each
    /// law the byte of every 16-bit sample, as runs, and for every byte its sample decoded.
    struct Vectors {
        ulaw: Vec<(i32, u8)>,
        alaw: Vec<(i32, u8)>,
        decode: Vec<(u8, i16, i16)>,
    }

    fn vectors() -> Vectors {
        let mut v = Vectors { ulaw: Vec::new(), alaw: Vec::new(), decode: Vec::new() };
        for line in include_str!("../tests/g711_vectors.txt").lines().filter(|l| !l.starts_with('#')) {
            let hex = |f: &str| u8::from_str_radix(f, 16).unwrap();
            match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["u", first, byte] => v.ulaw.push((first.parse().unwrap(), hex(byte))),
                ["a", first, byte] => v.alaw.push((first.parse().unwrap(), hex(byte))),
                ["d", byte, u, a] => v.decode.push((hex(byte), u.parse().unwrap(), a.parse().unwrap())),
                _ => panic!("bad vector line {line}"),
            }
        }
        v
    }

    /// Every sample's byte from the runs: each run holds to the next one's first sample.
    fn expand(runs: &[(i32, u8)]) -> Vec<(i16, u8)> {
        let mut all = Vec::new();
        for (i, &(first, byte)) in runs.iter().enumerate() {
            let end = runs.get(i + 1).map_or(32_768, |r| r.0);
            all.extend((first..end).map(|s| (s as i16, byte)));
        }
        all
    }

    #[test]
    fn every_sample_encodes_as_audioop_encodes_it() {
        let v = vectors();
        let (ulaw, alaw) = (expand(&v.ulaw), expand(&v.alaw));
        assert_eq!((ulaw.len(), alaw.len()), (65_536, 65_536));
        for (sample, byte) in ulaw {
            assert_eq!(linear_to_ulaw(sample), byte, "μ-law of {sample}");
        }
        for (sample, byte) in alaw {
            assert_eq!(linear_to_alaw(sample), byte, "A-law of {sample}");
        }
    }

    #[test]
    fn every_byte_decodes_as_audioop_decodes_it() {
        let v = vectors();
        assert_eq!(v.decode.len(), 256);
        for (byte, ulaw, alaw) in v.decode {
            assert_eq!(ulaw_to_linear(byte), ulaw, "μ-law byte {byte:#04x}");
            assert_eq!(alaw_to_linear(byte), alaw, "A-law byte {byte:#04x}");
        }
    }

    #[test]
    fn a_round_trip_stays_within_a_step() {
        for sample in [0i16, 1, -1, 100, -100, 1000, -1000, 12_345, -12_345, i16::MAX, i16::MIN] {
            let error = |decoded: i16| (decoded as i32 - sample as i32).abs();
            let step = (sample as i32).abs() / 16 + 16;
            assert!(error(ulaw_to_linear(linear_to_ulaw(sample))) <= step, "μ-law {sample}");
            assert!(error(alaw_to_linear(linear_to_alaw(sample))) <= step, "A-law {sample}");
        }
    }
}
