//! TLS on the listener (`--tls-cert`, `--tls-key`): a rustls server configuration from PEM
//! files, HTTP/1.1 by ALPN.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::ServeError;

/// The server configuration for a certificate chain and its private key (PEM).
pub(crate) fn server_config(
    cert_pem: &[u8],
    key_pem: &[u8],
) -> Result<Arc<rustls::ServerConfig>, ServeError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| ServeError::Tls(format!("--tls-cert: not a PEM certificate chain: {e}")))?;
    if certs.is_empty() {
        return Err(ServeError::Tls(
            "--tls-cert: no CERTIFICATE block in the file".to_string(),
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| ServeError::Tls(format!("--tls-key: no PEM private key: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServeError::Tls(format!("TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            ServeError::Tls(format!(
                "--tls-cert / --tls-key: the key does not go with the certificate, or cannot be used: {e}"
            ))
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
