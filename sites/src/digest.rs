//! Stable per-site-version digests, recorded in `data/DIGESTS.json` under
//! image names such as `gitlab-v1`. A digest covers the code identity of the
//! fixture sites ([`SITES_CODE_VERSION`]) and everything the seed renders
//! into tasks, reference solutions and answers, so any change to the seeded
//! data or to the site's page structure that moves a locator changes it.

use sha2::{Digest, Sha256};
use skillshift_common::{Site, Version};

/// Bumped whenever a site's pages change in a way the tasks do not capture.
pub const SITES_CODE_VERSION: &str = "skillshift-sites/1";

/// `sha256:<hex>` of one site-version.
pub fn digest(site: Site, version: Version) -> String {
    let mut hasher = Sha256::new();
    hasher.update(SITES_CODE_VERSION.as_bytes());
    hasher.update(b"\0");
    hasher.update(site.image(version).as_bytes());
    hasher.update(b"\0");
    for generated in crate::tasks(site, version) {
        // Serialising these plain data types cannot fail; an empty string would only weaken the digest.
        hasher.update(serde_json::to_string(&generated.task).unwrap_or_default().as_bytes());
        hasher.update(b"\0");
        hasher.update(serde_json::to_string(&generated.solution).unwrap_or_default().as_bytes());
        hasher.update(b"\0");
    }
    for step in crate::app(site, version).login_steps() {
        hasher.update(serde_json::to_string(&step).unwrap_or_default().as_bytes());
    }
    format!("sha256:{}", hex::encode(hasher.finalize()))
}

/// The digests of all six site-versions, keyed by image name, in table order.
pub fn all_digests() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for &site in Site::ALL {
        for &version in Version::ALL {
            out.push((site.image(version), digest(site, version)));
        }
    }
    out
}
