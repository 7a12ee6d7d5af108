//! Resampling PCM s16le by linear interpolation: enough for a stand-in to turn Kokoro's 24 kHz into
//! Polly's 16 kHz (a production voice would use a proper filter).

pub fn resample(pcm: &[u8], from: u32, to: u32) -> Vec<u8> {
    let input: Vec<i16> = pcm.chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]])).collect();
    if input.is_empty() || from == to {
        return pcm.to_vec();
    }
    let out_len = (input.len() as u64 * to as u64 / from as u64) as usize;
    let step = from as f64 / to as f64;
    let mut out = Vec::with_capacity(out_len * 2);
    for n in 0..out_len {
        let pos = n as f64 * step;
        let i = pos as usize;
        let frac = pos - i as f64;
        let a = input[i.min(input.len() - 1)] as f64;
        let b = input[(i + 1).min(input.len() - 1)] as f64;
        let sample = (a + (b - a) * frac).round().clamp(i16::MIN as f64, i16::MAX as f64) as i16;
        out.extend_from_slice(&sample.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::resample;

    #[test]
    fn two_thirds_of_the_samples_remain() {
        let pcm: Vec<u8> = (0..300i16).flat_map(|s| (s * 100).to_le_bytes()).collect();
        let out = resample(&pcm, 24_000, 16_000);
        assert_eq!(out.len(), 200 * 2);
        assert_eq!(i16::from_le_bytes([out[2], out[3]]), 150);
    }
}
