//! A sweep's export on disk: `per_task.jsonl` (every attempt), written
//! atomically, and `contract.json` beside it.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use futures::StreamExt;
use skillshift_coordinator::client::{Client, ExportItem};

/// `contract.json` beside the records file.
pub fn contract_path(out: &Path) -> PathBuf {
    out.parent().map(|p| p.join("contract.json")).unwrap_or_else(|| PathBuf::from("contract.json"))
}

/// `contract.json` beside the records file `out`, as written by [`export`].
pub fn read_contract(out: &Path) -> anyhow::Result<serde_json::Value> {
    let path = contract_path(out);
    let text = skillshift_common::bounded::read_to_string(&path, skillshift_common::bounded::MAX_FILE_BYTES)
        .with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))
}

/// Streams a sweep's records into `out` (atomically) and its contract beside it; returns
/// the number of records.
pub async fn export(client: &mut Client, id: &str, out: &Path) -> anyhow::Result<usize> {
    if let Some(dir) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let tmp = out.with_extension("jsonl.partial");
    let file = std::fs::File::create(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let mut stream = client.export(id).await?;
    let mut contract = None;
    let mut n = 0;
    while let Some(item) = stream.next().await {
        match item? {
            ExportItem::Contract(c) => contract = Some(c),
            ExportItem::Record(r) => {
                serde_json::to_writer(&mut w, &r)?;
                w.write_all(b"\n")?;
                n += 1;
            }
        }
    }
    w.flush()?;
    drop(w);
    let contract = contract.context("the coordinator sent no contract")?;
    std::fs::rename(&tmp, out).with_context(|| format!("writing {}", out.display()))?;
    let cpath = contract_path(out);
    std::fs::write(&cpath, serde_json::to_string_pretty(&contract)? + "\n")
        .with_context(|| format!("writing {}", cpath.display()))?;
    Ok(n)
}
