//! A self-signed certificate for `localhost` and `127.0.0.1`, and a TLS server configuration that
//! offers HTTP/2 and HTTP/1.1 through ALPN, as AWS endpoints do.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A certificate and the server configuration that presents it.
pub struct Tls {
    /// The certificate, in PEM, for clients to trust.
    pub cert_pem: String,
    pub server: Arc<rustls::ServerConfig>,
}

pub fn self_signed() -> Tls {
    let key = rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()]).expect("a self-signed certificate");
    let cert_pem = key.cert.pem();
    let cert = CertificateDer::from(key.cert.der().to_vec());
    let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.signing_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert], private)
        .expect("a server certificate");
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Tls { cert_pem, server: Arc::new(server) }
}
