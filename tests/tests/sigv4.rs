//! `earshot say --sigv4`, the tested example of a server-side caller of a gateway behind IAM: the request
//! it sends is captured, and botocore (the AWS SDK for Python, `tests/judges/sigv4_check.py`) recomputes
//! the SigV4 signature for the `lambda` service and must find the same one.

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Uri};
use earshot_e2e::earshot_bin;

#[derive(Default, Clone)]
struct Captured {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

#[tokio::test]
async fn earshot_say_signs_for_a_function_url_as_botocore_would() {
    let captured = Arc::new(Mutex::new(None::<Captured>));
    let store = captured.clone();
    let app = axum::Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
        let store = store.clone();
        async move {
            let headers = headers.iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string())).collect();
            *store.lock().unwrap() = Some(Captured { method: method.to_string(), path: uri.to_string(), headers, body: body.to_vec() });
            (axum::http::StatusCode::FORBIDDEN, axum::Json(serde_json::json!({"Message": "Forbidden"})))
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let (access, secret, session) = ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token-of-a-role");
    let out = tokio::task::spawn_blocking({
        let url = url.clone();
        move || {
            Command::new(earshot_bin())
                .args(["say", "--sigv4", "--region", "eu-west-1", "--url", &url, "--text", "Hello there.", "--out", "/dev/null"])
                .env("AWS_ACCESS_KEY_ID", access)
                .env("AWS_SECRET_ACCESS_KEY", secret)
                .env("AWS_SESSION_TOKEN", session)
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .env("AWS_CONFIG_FILE", "/dev/null")
                .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the stand-in refuses with 403, so say fails");
    assert!(stderr.contains("403"), "{stderr}");
    let request = captured.lock().unwrap().clone().expect("the request arrived");
    let header = |name: &str| request.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    assert!(header("authorization").unwrap().starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"));
    assert_eq!(header("x-amz-security-token").as_deref(), Some(session));

    let judged = {
        let input = serde_json::json!({
            "method": request.method,
            "url": format!("{url}{}", request.path),
            "headers": request.headers.iter().cloned().collect::<std::collections::HashMap<_, _>>(),
            "body_hex": request.body.iter().map(|b| format!("{b:02x}")).collect::<String>(),
            "access_key": access, "secret_key": secret, "session_token": session, "region": "eu-west-1",
        });
        let mut child = Command::new(earshot_e2e::moto::judges_python())
            .arg(earshot_e2e::package_dir().join("judges/sigv4_check.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python with botocore (moto's environment)");
        use std::io::Write;
        child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "sigv4_check.py: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    assert_eq!(judged["match"], true, "botocore computes another signature: {judged}");
    assert!(judged["scope"].as_str().unwrap().ends_with("/eu-west-1/lambda/aws4_request"), "{judged}");
    let signed: Vec<&str> = judged["signed_headers"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    for h in ["host", "x-amz-date", "content-type", "x-amz-security-token"] {
        assert!(signed.contains(&h), "{h} is signed: {signed:?}");
    }
}
