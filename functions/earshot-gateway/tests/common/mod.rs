//! What the gateway's HTTP tests share: a gateway served on a free port.

#![allow(clippy::disallowed_methods)] // test helpers spawn as they like; clippy.toml keeps the crates on the tracker

use std::sync::Arc;

use earshot_gateway::Gateway;

/// Serves `gateway` on a free port; returns its URL.
pub async fn serve(gateway: Gateway) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let router = earshot_gateway::router(Arc::new(gateway));
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    url
}
