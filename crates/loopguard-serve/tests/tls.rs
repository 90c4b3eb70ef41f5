//! TLS on the listener: a certificate made by the test (rcgen), a real rustls client
//! trusting only the test's authority, on a loopback port.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use loopguard_serve::{ServeError, Server};
use support::Running;

/// A CA, and a server certificate for 127.0.0.1 and localhost signed by it (PEM).
struct Pki {
    ca: rustls::pki_types::CertificateDer<'static>,
    cert_pem: String,
    key_pem: String,
}

fn pki() -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "loopguard test CA");
    let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("server key");
    let params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .expect("server params");
    let cert = params.signed_by(&key, &issuer).expect("server certificate");
    Pki {
        ca: ca_cert.der().clone(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

/// `GET path` over TLS, trusting only `ca`: the status line and body.
fn get_tls(
    server: &Running,
    ca: &rustls::pki_types::CertificateDer<'static>,
    path: &str,
) -> (String, String) {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).expect("the CA");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("a name");
    let conn = rustls::ClientConnection::new(Arc::new(config), name).expect("a TLS client");
    let tcp = TcpStream::connect(server.addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a timeout");
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .expect("the request over TLS");
    let mut out = Vec::new();
    // The server closes after answering (Connection: close); rustls reports an EOF
    // without close_notify as an error once the bytes are read.
    let _ = tls.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

#[test]
fn the_listener_speaks_tls_with_the_given_certificate() {
    let p = pki();
    let server = Running::start(Server::builder().tls(
        p.cert_pem.clone().into_bytes(),
        p.key_pem.clone().into_bytes(),
    ));
    let (status, body) = get_tls(&server, &p.ca, "/healthz");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    assert_eq!(body, r#"{"status":"ok"}"#);
    // Plain HTTP to a TLS port gets no HTTP answer.
    let mut plain = TcpStream::connect(server.addr).expect("connect");
    plain
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a timeout");
    plain
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("a request");
    let mut out = Vec::new();
    let _ = plain.read_to_end(&mut out);
    assert!(
        !String::from_utf8_lossy(&out).contains("200 OK"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    // The server still answers over TLS.
    assert_eq!(get_tls(&server, &p.ca, "/healthz").0, "HTTP/1.1 200 OK");
}

#[test]
fn unusable_certificates_are_refused_at_build_naming_the_flag() {
    let p = pki();
    let err = |cert: &str, key: &str| {
        Server::builder()
            .store("memory")
            .tls(cert.as_bytes().to_vec(), key.as_bytes().to_vec())
            .build()
            .expect_err("refused")
    };
    let e = err("not a certificate", &p.key_pem);
    assert!(
        matches!(e, ServeError::Tls(_)) && e.to_string().contains("--tls-cert"),
        "{e}"
    );
    let e = err(&p.cert_pem, "not a key");
    assert!(e.to_string().contains("--tls-key"), "{e}");
    // A key that is not the certificate's.
    let other = pki();
    let e = err(&p.cert_pem, &other.key_pem);
    assert!(e.to_string().contains("--tls-key"), "{e}");
}
