//! The env-ctrl backend against a real fixture site served over HTTP: reset
//! through `POST <control_path>/reset`, status and digest through `GET .../status`.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use skillshift_common::{Site, Version};
use skillshift_worker::sites::{Remote, SiteManager};

#[tokio::test]
async fn env_ctrl_resets_and_reads_status_over_http() {
    let addr: std::net::SocketAddr = "127.0.0.1:0".parse().expect("addr");
    let handle = skillshift_sites::serve(Site::Magento, Version::V2, addr).await.expect("serve");
    let cfg = format!(
        r#"{{"backend": "env-ctrl", "control_path": "/env-ctrl", "reset_policy": "after-mutation",
            "sites": {{"magento-v2": {{"url": "{}", "digest": "{}"}}}}}}"#,
        handle.base_url, handle.digest
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sites.json");
    std::fs::write(&path, cfg).expect("write");
    let remote = Remote::load(&path).expect("config");
    assert_eq!(remote.hosts(), vec![(Site::Magento, Version::V2)]);
    remote.reset(Site::Magento, Version::V2).await.expect("reset over http");
    let status = remote.status(Site::Magento, Version::V2).await.expect("status");
    assert_eq!(status["digest"].as_str(), Some(handle.digest.as_str()));
    assert!(!remote.needs_reset(Site::Magento, Version::V2));

    // A wrong control path is a clear reset error naming the site.
    let bad = std::fs::read_to_string(&path).expect("read").replace("/env-ctrl\"", "/nope\"");
    std::fs::write(&path, bad).expect("write");
    let remote = Remote::load(&path).expect("config");
    let e = remote.reset(Site::Magento, Version::V2).await.unwrap_err().to_string();
    assert!(e.contains("magento-v2") && e.contains("404"), "{e}");
}
