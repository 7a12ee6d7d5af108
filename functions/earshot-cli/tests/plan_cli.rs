//! `earshot plan` as a new user runs it: a capacity given or read from the measurement's JSON, a table and a
//! break-even out, or a JSON plan.

use std::process::{Command, Output};

fn plan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_earshot")).arg("plan").args(args).output().expect("earshot runs")
}

fn text(out: &Output) -> String {
    assert!(out.status.success(), "earshot plan failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).expect("UTF-8")
}

// Prices named, so that a change of docs/prices.json does not move the hand computation.
const PRICES: [&str; 4] = ["--instance-price", "1.408", "--polly-price", "30"];

#[test]
fn the_json_plan_is_the_hand_computation() {
    let mut args = vec!["--capacity", "4", "--answer-characters", "200", "--answer-seconds", "10", "--volumes", "100,1000,10000", "--json"];
    args.extend(PRICES);
    let v: serde_json::Value = serde_json::from_str(&text(&plan(&args))).expect("JSON");
    let rows = v["plan"]["rows"].as_array().expect("rows");
    // Polly: $0.006 an answer. 100 an hour: one instance, $14.08 per 1,000; 1,000: $1.408; 10,000: 7 instances.
    assert_eq!(rows[0]["polly_usd_per_1000_answers"], 6.0);
    assert_eq!(rows[0]["cheapest"], "polly");
    assert_eq!(rows[1]["cheapest"], "kokoro-gpu");
    assert_eq!(rows[2]["self_hosted"][0]["instances"], 7);
    let b = &v["plan"]["break_even"][0];
    assert!((b["answers_per_hour"].as_f64().expect("a break-even") - 234.666_666_666_666_66).abs() < 1e-9);
    assert_eq!((b["min_instances"].as_u64(), b["max_instances"].as_u64()), (Some(1), Some(7)));
}

#[test]
fn a_measurement_file_gives_the_knee_and_the_answer_length_and_the_table_says_where_kokoro_pays() {
    let dir = std::env::temp_dir().join(format!("earshot-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("capacity.json");
    std::fs::write(
        &file,
        r#"{"device": "cuda", "settings": [{"workers": 4, "plan": "paced", "knee_conversations": 8, "knee_bounded": true,
            "levels": [{"answer_audio_s": 10.0}]}]}"#,
    )
    .expect("write");
    let mut args = vec!["--capacity-file", file.to_str().expect("path"), "--answer-characters", "200"];
    args.extend(PRICES);
    let out = text(&plan(&args));
    std::fs::remove_dir_all(&dir).ok();
    assert!(out.contains("8 conversations at once (KOKORO_WORKERS=4, paced plan, on cuda;"), "{out}");
    assert!(out.contains("| 1000 | 2.8 | 6.00 | 1.41 (1) | kokoro-gpu |"), "{out}");
    assert!(out.contains("kokoro-gpu: cheaper than Polly from about 235 answers an hour"), "{out}");
    assert!(out.contains("minInstances 1, maxInstances 4"), "{out}"); // 10,000 an hour keep 27.8 open: 4 of 8
    assert!(out.contains("no CPU price is listed"), "{out}");
}

#[test]
fn a_cpu_voice_is_planned_only_with_its_price_and_wins_where_it_is_cheapest() {
    let mut args = vec!["--capacity", "4", "--answer-characters", "200", "--answer-seconds", "10", "--volumes", "200"];
    args.extend(PRICES);
    args.extend(["--cpu-capacity", "1", "--cpu-price", "0.2", "--cpu-instance-type", "ml.c7i.xlarge"]);
    let out = text(&plan(&args));
    assert!(out.contains("| 200 | 0.6 | 6.00 | 7.04 (1) | 1.00 (1) | kokoro-cpu |"), "{out}");
    let without_price = plan(&["--capacity", "4", "--cpu-capacity", "1"]);
    assert!(!without_price.status.success());
}

/// The CPU knee from the bench's committed capacity run on a 2-core machine (`make bench BENCH_ARGS='--suites
/// capacity'`), read as a new user passes it: the file names its machine, and its answer length is the plan's.
#[test]
fn the_bench_s_capacity_run_plans_a_cpu_voice() {
    let results = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test names the package's folder"))
        .join("../../bench/results/capacity/gateway-cpu/results.json");
    let results = results.to_str().expect("a UTF-8 path");
    let mut args = vec!["--capacity", "4", "--cpu-capacity-file", results, "--cpu-price", "0.1", "--cpu-instance-type", "ml.c7i.large", "--volumes", "100"];
    args.extend(PRICES);
    let out = text(&plan(&args));
    assert!(out.contains("capacity of kokoro-cpu: 2 conversations at once (the bench through earshot serve, on 2 cores of AMD EPYC;"), "{out}");
    assert!(out.contains("results.json), taken as one ml.c7i.large's"), "{out}");
    assert!(out.contains("holding their conversation 10.8 s"), "the answer's length is the bench's: {out}");
    // 100 answers of 10.83 s an hour keep 0.3 open: one CPU instance at $0.10 an hour, $1.00 per 1,000.
    // Its answer is the brief sample, 169 characters: $5.07 per 1,000 on Polly at $30 a million.
    assert!(out.contains("answers of 169 characters holding their conversation 10.8 s"), "{out}");
    assert!(out.contains("| 100 | 0.3 | 5.07 | 14.08 (1) | 1.00 (1) | kokoro-cpu |"), "{out}");
    let quick = std::env::temp_dir().join(format!("earshot-plan-quick-{}.json", std::process::id()));
    std::fs::write(&quick, r#"{"quick": true, "capacity": {"knee": 2, "bounded": true, "answer_audio_s": 1.0}}"#).expect("write");
    let refused = plan(&["--capacity", "4", "--cpu-capacity-file", quick.to_str().expect("path"), "--cpu-price", "0.1", "--cpu-instance-type", "ml.c7i.large"]);
    std::fs::remove_file(&quick).ok();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("quick run"), "{}", String::from_utf8_lossy(&refused.stderr));
    let without_price = plan(&["--capacity", "4", "--cpu-capacity-file", results]);
    assert!(!without_price.status.success(), "a CPU voice needs its price");
}

#[test]
fn what_would_be_ignored_is_refused() {
    for args in [
        &["--capacity", "4", "--cpu-price", "0.1"][..],
        &["--capacity", "4", "--cpu-instance-type", "ml.c7i.large"],
        &["--capacity", "4", "--log", "gateway.log"],
        &["--capacity", "4", "--since", "1h"],
        &["--observed", "gpu", "--instances", "0.5", "--log", "gateway.log"],
        &["--observed", "gpu", "--capacity", "4", "--log", "gateway.log"],
    ] {
        let out = plan(args);
        assert!(!out.status.success(), "{args:?} was accepted: {}", String::from_utf8_lossy(&out.stdout));
    }
}

#[test]
fn no_capacity_is_assumed() {
    let out = plan(&[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--capacity"), "{}", String::from_utf8_lossy(&out.stderr));
    let zero = plan(&["--capacity", "0"]);
    assert!(String::from_utf8_lossy(&zero.stderr).contains("at least 1"));
}
