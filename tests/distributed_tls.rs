//! TLS between real processes: a coordinator with a certificate, workers and
//! control clients that verify it, and mutual TLS that admits only clients
//! with a certificate the coordinator trusts. The certificates are test
//! material under tests/fixtures/tls.

mod support;

#[path = "support/cli.rs"]
mod cli;

use std::process::{Command, Output};
use std::time::Duration;

use support::{outcome, tls_file, units, Options, Sandbox, Tls, BIN};

fn list(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["sweep", "list", "--token", "sandbox-token"])
        .args(args)
        .env_remove("SKILLSHIFT_TOKEN")
        .env_remove("SKILLSHIFT_COORDINATOR")
        .output()
        .expect("run skillshift sweep list")
}

/// [`cli::refused_in`], with no blank line around the one line either.
fn refused(out: &Output, what: &str) -> String {
    let err = cli::refused_in(out, what);
    assert_eq!(err.lines().count(), 1, "{what}: one line: {err}");
    err
}

#[test]
fn a_sweep_runs_over_tls_and_clients_that_cannot_verify_the_coordinator_are_refused() {
    let sb = Sandbox::start_with(2, 20, Options { tls: Tls::Server, ..Options::default() });
    let id = sb.submit(3, &[]);
    let st = sb.wait_state(&id, "done", Duration::from_secs(60));
    assert_eq!(st["units"]["total"], 18);
    let records = sb.export(&id, "per_task.jsonl");
    let by_unit = units(&records);
    assert_eq!(by_unit.len(), 18);
    let decided = by_unit.values().filter(|rs| outcome(rs).is_some()).count() as u64;
    assert_eq!(decided, st["units"]["done"].as_u64().unwrap_or(0));

    let url = sb.url();
    assert!(url.starts_with("https://"));
    let ok = list(&["--coordinator", &url, "--ca", &tls_file("ca.pem")]);
    assert!(ok.status.success() && String::from_utf8_lossy(&ok.stdout).contains(&id));

    // Plain HTTP/2 to the TLS port, a CA that did not sign the certificate, and the web PKI roots.
    let plain = format!("http://{}", sb.addr);
    refused(&list(&["--coordinator", &plain]), "plain text to a TLS coordinator");
    let err = refused(&list(&["--coordinator", &url, "--ca", &tls_file("other-ca.pem")]), "the wrong CA");
    assert!(err.contains("unreachable"), "{err}");
    refused(&list(&["--coordinator", &url]), "a self-signed chain against the web PKI roots");
    // A CA file that does not exist is named.
    let err = refused(&list(&["--coordinator", &url, "--ca", "/nonexistent/ca.pem"]), "a missing CA file");
    assert!(err.contains("/nonexistent/ca.pem"), "{err}");
}

#[test]
fn mutual_tls_admits_only_clients_with_a_certificate_the_coordinator_trusts() {
    // The sandbox's worker and its `sweep` calls present client.pem.
    let sb = Sandbox::start_with(1, 20, Options { tls: Tls::Mutual, ..Options::default() });
    let id = sb.submit(1, &[]);
    sb.wait_state(&id, "done", Duration::from_secs(60));
    assert_eq!(units(&sb.export(&id, "per_task.jsonl")).len(), 6);

    let url = sb.url();
    let with_cert = list(&[
        "--coordinator",
        &url,
        "--ca",
        &tls_file("ca.pem"),
        "--tls-cert",
        &tls_file("client.pem"),
        "--tls-key",
        &tls_file("client.key"),
    ]);
    assert!(with_cert.status.success(), "{}", String::from_utf8_lossy(&with_cert.stderr));
    refused(&list(&["--coordinator", &url, "--ca", &tls_file("ca.pem")]), "a client without a certificate");
    // The server's certificate is signed by the same CA but only for server authentication.
    refused(
        &list(&[
            "--coordinator",
            &url,
            "--ca",
            &tls_file("ca.pem"),
            "--tls-cert",
            &tls_file("server.pem"),
            "--tls-key",
            &tls_file("server.key"),
        ]),
        "a certificate not issued for client authentication",
    );
}
