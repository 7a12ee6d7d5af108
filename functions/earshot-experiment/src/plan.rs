//! When self-hosted Kokoro pays: dollars per 1,000 answers for Polly and for each self-hosted voice at
//! the volumes asked, from an instance's measured capacity, the answers' length and the prices.
//!
//! Polly bills by the character, so its cost per answer is flat. An endpoint bills by the instance-hour
//! whether it speaks or not, so its cost per answer falls as volume grows, until an instance is full and
//! another is added. How full an instance may be is the knee `infra/kokoro/measure_capacity.py` measures
//! (conversations at once within the first-audio budget, no gap heard). By Little's law, `V` answers an
//! hour that each hold their conversation `S` seconds keep `V × S / 3600` conversations open on average;
//! the instances needed are that over the knee, rounded up, and never fewer than the endpoint's minimum
//! (a real-time endpoint does not scale to zero). An average is not a peak: the plan says so and leaves
//! the headroom to the minimum and maximum it prints. The Lambda's cost is the same whichever voice
//! speaks, so it is left out of the comparison.

use serde::Serialize;

/// Seconds in an hour.
const HOUR: f64 = 3600.0;

/// What an answer is, on average.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Workload {
    /// Characters sent to speech per answer (what Polly bills).
    pub characters: f64,
    /// Seconds an answer holds its conversation (about its audio's length).
    pub seconds: f64,
}

/// A self-hosted voice: an instance type, its price and how many conversations one instance holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelfHosted {
    /// The voice's name in the plan (`kokoro-gpu`, `kokoro-cpu`).
    pub name: String,
    /// The endpoint's instance type (`ml.g5.xlarge`).
    pub instance_type: String,
    /// What one instance costs an hour, in US dollars.
    pub usd_per_instance_hour: f64,
    /// Conversations at once one instance holds: the measured knee.
    pub conversations_per_instance: u32,
    /// The endpoint's minimum instances (at least one).
    pub min_instances: u32,
}

impl SelfHosted {
    /// Answers an hour one full instance serves.
    pub fn answers_per_instance_hour(&self, workload: &Workload) -> f64 {
        f64::from(self.conversations_per_instance) * HOUR / workload.seconds
    }

    /// Instances the endpoint needs for `answers_per_hour` (the minimum when fewer would do).
    pub fn instances(&self, workload: &Workload, answers_per_hour: f64) -> u32 {
        let open = answers_per_hour * workload.seconds / HOUR;
        let needed = (open / f64::from(self.conversations_per_instance)).ceil();
        (needed as u32).max(self.min_instances).max(1)
    }
}

/// One self-hosted voice at one volume.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AtVolume {
    /// The voice's name.
    pub name: String,
    /// Instances the endpoint needs at this volume.
    pub instances: u32,
    /// What those instances cost an hour, in US dollars.
    pub usd_per_hour: f64,
    /// Dollars per 1,000 answers at this volume.
    pub usd_per_1000_answers: f64,
}

/// Every voice at one volume.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The volume: answers an hour.
    pub answers_per_hour: f64,
    /// Conversations open on average (Little's law).
    pub conversations_open: f64,
    /// What Polly would bill an hour for these answers, in US dollars.
    pub polly_usd_per_hour: f64,
    /// Dollars per 1,000 answers with Polly (the same at every volume).
    pub polly_usd_per_1000_answers: f64,
    /// Each self-hosted voice at this volume, in the order given.
    pub self_hosted: Vec<AtVolume>,
    /// `polly` or a self-hosted voice's name.
    pub cheapest: String,
}

/// Where a self-hosted voice becomes cheaper than Polly.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakEven {
    /// The voice's name.
    pub name: String,
    /// The volume from which its minimum instances cost less than Polly would for the same answers; `None`
    /// when an instance costs more an hour than Polly would for all the answers it can hold.
    pub answers_per_hour: Option<f64>,
    /// How many Polly answers an instance-hour buys.
    pub instance_hour_in_polly_answers: f64,
    /// Answers an hour one full instance serves.
    pub answers_per_instance_hour: f64,
    /// The endpoint's minimum and maximum instances for the volumes asked.
    pub min_instances: u32,
    /// The most instances any of the volumes asked needs.
    pub max_instances: u32,
}

/// The plan: one row per volume, and each self-hosted voice's break-even.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The average answer the plan assumes.
    pub workload: Workload,
    /// Polly's price per million characters, in US dollars.
    pub polly_usd_per_million_characters: f64,
    /// One row per volume asked, in the order given.
    pub rows: Vec<Row>,
    /// Each self-hosted voice's break-even with Polly, in the order given.
    pub break_even: Vec<BreakEven>,
}

/// The plan for `volumes` (answers an hour, each above zero).
pub fn plan(workload: Workload, polly_usd_per_million_characters: f64, voices: &[SelfHosted], volumes: &[f64]) -> Plan {
    let polly_per_answer = workload.characters * polly_usd_per_million_characters / 1e6;
    let rows = volumes
        .iter()
        .map(|&v| {
            let self_hosted: Vec<AtVolume> = voices
                .iter()
                .map(|voice| {
                    let instances = voice.instances(&workload, v);
                    let usd_per_hour = f64::from(instances) * voice.usd_per_instance_hour;
                    AtVolume { name: voice.name.clone(), instances, usd_per_hour, usd_per_1000_answers: usd_per_hour / v * 1000.0 }
                })
                .collect();
            let polly_usd_per_1000_answers = polly_per_answer * 1000.0;
            let cheapest = self_hosted
                .iter()
                .filter(|a| a.usd_per_1000_answers < polly_usd_per_1000_answers)
                .min_by(|a, b| a.usd_per_1000_answers.total_cmp(&b.usd_per_1000_answers))
                .map_or_else(|| "polly".to_string(), |a| a.name.clone());
            Row {
                answers_per_hour: v,
                conversations_open: v * workload.seconds / HOUR,
                polly_usd_per_hour: polly_per_answer * v,
                polly_usd_per_1000_answers,
                self_hosted,
                cheapest,
            }
        })
        .collect();
    let break_even = voices
        .iter()
        .map(|voice| {
            let in_answers = voice.usd_per_instance_hour / polly_per_answer;
            let full = voice.answers_per_instance_hour(&workload);
            let counts = volumes.iter().map(|&v| voice.instances(&workload, v));
            BreakEven {
                name: voice.name.clone(),
                // n instances beat Polly from n × in_answers answers an hour, which they can hold only if one
                // instance holds at least in_answers: then the minimum's break-even is the first.
                answers_per_hour: (in_answers <= full).then(|| f64::from(voice.min_instances.max(1)) * in_answers),
                instance_hour_in_polly_answers: in_answers,
                answers_per_instance_hour: full,
                min_instances: counts.clone().min().unwrap_or(voice.min_instances),
                max_instances: counts.max().unwrap_or(voice.min_instances),
            }
        })
        .collect();
    Plan { workload, polly_usd_per_million_characters, rows, break_even }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(knee: u32) -> SelfHosted {
        SelfHosted {
            name: "kokoro-gpu".into(),
            instance_type: "ml.g5.xlarge".into(),
            usd_per_instance_hour: 1.408,
            conversations_per_instance: knee,
            min_instances: 1,
        }
    }

    const ANSWER: Workload = Workload { characters: 200.0, seconds: 10.0 };

    #[test]
    fn the_figures_are_the_hand_computation() {
        // Polly: 200 characters at $30 a million = $0.006 an answer, $6 per 1,000.
        // 1,000 answers an hour of 10 s keep 2.78 conversations open: one instance of knee 4 holds them,
        // $1.408 an hour, $1.408 per 1,000. 10,000 an hour keep 27.8 open: 7 instances, $9.856 an hour.
        let p = plan(ANSWER, 30.0, &[gpu(4)], &[100.0, 1000.0, 10_000.0]);
        let [low, mid, high] = &p.rows[..] else { panic!("three rows") };
        assert!((low.polly_usd_per_1000_answers - 6.0).abs() < 1e-9);
        assert!((low.polly_usd_per_hour - 0.6).abs() < 1e-9);
        assert_eq!(low.self_hosted[0].instances, 1);
        assert!((low.self_hosted[0].usd_per_1000_answers - 14.08).abs() < 1e-9); // $1.408 for 100 answers
        assert_eq!(low.cheapest, "polly");
        assert!((mid.conversations_open - 2.777_777_777_777_778).abs() < 1e-9);
        assert!((mid.self_hosted[0].usd_per_1000_answers - 1.408).abs() < 1e-9);
        assert_eq!(mid.cheapest, "kokoro-gpu");
        assert_eq!(high.self_hosted[0].instances, 7);
        assert!((high.self_hosted[0].usd_per_hour - 9.856).abs() < 1e-9);

        // An instance-hour buys 1.408 / 0.006 = 234.67 Polly answers; a full instance serves 4 × 360 = 1,440.
        let b = &p.break_even[0];
        assert!((b.instance_hour_in_polly_answers - 234.666_666_666_666_66).abs() < 1e-9);
        assert!((b.answers_per_instance_hour - 1440.0).abs() < 1e-9);
        assert!((b.answers_per_hour.expect("breaks even") - 234.666_666_666_666_66).abs() < 1e-9);
        assert_eq!((b.min_instances, b.max_instances), (1, 7));
    }

    #[test]
    fn an_instance_that_holds_fewer_answers_than_its_hour_buys_on_polly_never_pays() {
        // Knee 1: 360 answers an hour at most, while its hour buys 2,346 answers of 20 characters on Polly.
        let short = Workload { characters: 20.0, seconds: 10.0 };
        let p = plan(short, 30.0, &[gpu(1)], &[100.0, 10_000.0]);
        assert_eq!(p.break_even[0].answers_per_hour, None);
        assert!(p.rows.iter().all(|r| r.cheapest == "polly"));
    }

    #[test]
    fn the_minimum_instances_are_paid_before_the_break_even() {
        let mut two = gpu(4);
        two.min_instances = 2;
        let p = plan(ANSWER, 30.0, &[two], &[100.0]);
        assert_eq!(p.rows[0].self_hosted[0].instances, 2);
        assert!((p.break_even[0].answers_per_hour.expect("breaks even") - 2.0 * 234.666_666_666_666_66).abs() < 1e-9);
    }

    #[test]
    fn the_cheapest_of_several_self_hosted_voices_is_named() {
        let cpu = SelfHosted {
            name: "kokoro-cpu".into(),
            instance_type: "ml.c7i.xlarge".into(),
            usd_per_instance_hour: 0.2,
            conversations_per_instance: 1,
            min_instances: 1,
        };
        // 200 an hour: 0.56 open; the CPU instance ($0.20) beats the GPU one ($1.408) and Polly ($1.20).
        let p = plan(ANSWER, 30.0, &[gpu(4), cpu], &[200.0]);
        assert_eq!(p.rows[0].cheapest, "kokoro-cpu");
    }
}
