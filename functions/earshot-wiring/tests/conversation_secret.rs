//! Where a gateway's conversation secret comes from: the variable, the file, or (for `earshot serve`
//! given none) one drawn for the process. Each is told apart by the conversation keys the built
//! gateway derives, the only thing a secret is used for.

use earshot_gateway::{ConversationSecret, Owner};
use earshot_wiring::{build, Place, Settings};

async fn key_of(vars: &[(&str, &str)]) -> Result<String, String> {
    let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let get = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let settings = Settings::from_vars(get, Place::Serve)?;
    let built = build(&settings, Place::Serve).await?;
    Ok(Owner::local().key(&built.settings.conversation_secret, "c-1"))
}

fn expected(secret: &str) -> String {
    Owner::local().key(&ConversationSecret::new(secret.as_bytes()).unwrap(), "c-1")
}

#[tokio::test]
async fn a_secret_given_as_a_variable_or_a_file_keys_every_conversation() {
    let secret = "a secret of this deployment, 32 bytes or more";
    assert_eq!(key_of(&[("EARSHOT_BACKENDS", "synthetic"), ("EARSHOT_CONVERSATION_SECRET", secret)]).await.unwrap(), expected(secret));

    let file = std::env::temp_dir().join(format!("earshot-conversation-secret-{}", std::process::id()));
    std::fs::write(&file, format!("{secret}\n")).unwrap();
    let from_file = key_of(&[("EARSHOT_BACKENDS", "synthetic"), ("EARSHOT_CONVERSATION_SECRET_FILE", file.to_str().unwrap())]).await;
    std::fs::remove_file(&file).unwrap();
    let from_file = from_file.unwrap();
    assert_eq!(from_file, expected(secret), "the file's closing newline is not part of the secret");
}

#[tokio::test]
async fn serve_given_none_draws_one_per_process_and_a_bad_one_is_refused_by_name() {
    let drawn = [key_of(&[("EARSHOT_BACKENDS", "synthetic")]).await.unwrap(), key_of(&[("EARSHOT_BACKENDS", "synthetic")]).await.unwrap()];
    assert_ne!(drawn[0], drawn[1], "each gateway built without a secret draws its own");

    let short = key_of(&[("EARSHOT_BACKENDS", "synthetic"), ("EARSHOT_CONVERSATION_SECRET", "short")]).await.unwrap_err();
    assert_eq!(short, "EARSHOT_CONVERSATION_SECRET (--conversation-secret): the conversation secret has 5 bytes; it needs at least 32");
    let missing = key_of(&[("EARSHOT_BACKENDS", "synthetic"), ("EARSHOT_CONVERSATION_SECRET_FILE", "/nonexistent/secret")]).await.unwrap_err();
    assert!(missing.starts_with("EARSHOT_CONVERSATION_SECRET_FILE (--conversation-secret-file): cannot read /nonexistent/secret"), "{missing}");
}
